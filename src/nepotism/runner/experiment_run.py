"""Running an experiment file: endpoints, dataset, plan, generation, judging, export.

`run_experiment` does a whole run against a store: it loads the dataset (adding its instances
and any recorded responses to the store), records a run, generates the responses the listed
generators still lack and, while it does, plans the judge tasks (each protocol under each
condition) of each instance whose responses are all made and judges them through the cache
(`Runner.generate_and_judge`), records each judgment a failed generation prevented as a failed
judgment (`record_prevented`: reason ``generation:<error class>``), grades every response when the experiment has a ``[grading]`` table (its truth
is checked before any call; see `nepotism.runner.grade_step`), ends the run (``done``, or
``interrupted`` when cancelled, ``failed`` on an error) and exports the judgments in the recorded
table formats, next to the graded references and the jury's rubric reference (``[reference]``,
`nepotism.runner.reference_step`). `dry_run` builds the same plan
without any backend and prices it. Left out: metrics (run ``nepotism metrics`` on the exports).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from nepotism._files import base_suffix, jsonl_rows
from nepotism.errors import InputError
from nepotism.experiment import Experiment, ModelConfig
from nepotism.records import Instance, Message, Response, RubricItem
from nepotism.runner.calls import Endpoint, PlannedCall, plan_call
from nepotism.runner.engine import GenerationSpec, Runner
from nepotism.runner.grade_step import grade_run, grading_truth
from nepotism.runner.limits import Limiter, estimate_prompt_tokens
from nepotism.runner.judge_plan import (
    CHUNK_CALLS,
    GENERATION_FAILED,
    KeySet,
    _judging,
    _table_kind,
    in_chunks,
    iter_tasks,
    plan_tasks,
    prevented_tasks,
)
from nepotism.runner.plan_memo import ChunkPlan
from nepotism.runner.reference_step import jury_step
from nepotism.runner.retry import RetryPolicy
from nepotism.runner.shards import Shard, shard_key, shard_output_dir
from nepotism.store import Store

__all__ = [
    "RunSummary",
    "build_endpoints",
    "check_inputs",
    "dry_run",
    "export_judgments",
    "load_dataset",
    "plan_tasks",
    "record_prevented",
    "run_experiment",
    "store_instances",
]


@dataclass
class RunSummary:
    """What a run did: its id and status, per-phase counters, failures and exported files."""

    run_id: str
    status: str
    instances: int
    generation: dict[str, Any]
    judging: dict[str, Any]
    judgments: dict[str, int]
    generation_failures: list[dict[str, str]] = field(default_factory=list)
    exports: dict[str, str] = field(default_factory=dict)
    grading: dict[str, Any] = field(default_factory=dict)
    #: the ``[reference] jury`` step: jurors, rows of the reference, how its items were decided
    reference: dict[str, Any] = field(default_factory=dict)
    #: per model with several endpoints (replicas): per URL, requests, answers, failures, failovers
    endpoints: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    #: the ``[perplexity]`` step: its call counters and scores by status (empty without the table)
    perplexity: dict[str, Any] = field(default_factory=dict)
    #: judgments a failed generation prevented, by reason (``generation:<error class>``): stored
    #: and exported as ``failed`` rows (`record_prevented`)
    prevented: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def phases(self) -> dict[str, dict[str, Any]]:
        """The call counters of each phase the run had, in order: ``generation``, ``judging`` and,
        when the experiment scored perplexities, ``perplexity`` (what `nepotism run` prints per
        phase and counts for its exit status)."""
        out = {"generation": self.generation, "judging": self.judging}
        if self.perplexity:
            out["perplexity"] = self.perplexity
        return out


# -- endpoints -------------------------------------------------------------------------------


def _backend(cfg: ModelConfig) -> Any:
    """The backend ``cfg`` names, built by its module (`nepotism.backends.registry`), after its
    extra is checked (`MissingExtra`: the install command)."""
    from nepotism.backends import registry
    from nepotism.extras import require

    spec = registry.get(cfg.backend)
    if spec.extra is not None:
        require(spec.extra, purpose=f"model '{cfg.id}' (backend {spec.name}: {spec.summary})")
    return spec.build(cfg)


def build_endpoints(experiment: Experiment, registry: Any, *, connect: bool = True) -> dict[str, Endpoint]:
    """One `Endpoint` per configured model; without ``connect`` no backend is created."""
    from nepotism.backends.registry import is_in_process

    out = {}
    for model_id, cfg in experiment.models.items():
        info = registry.get(model_id) if registry.knows(model_id) else None
        if not is_in_process(cfg.backend):
            served = cfg.model
        else:  # the weights: a packaged id, or the file's hash (else its name)
            served = cfg.model or cfg.sha256 or Path(cfg.path or "").name
        out[model_id] = Endpoint(
            model=model_id,
            backend=_backend(cfg) if connect else None,
            kind=cfg.backend,
            served_model=served,
            limiter=Limiter(cfg.concurrency, rpm=cfg.rpm, tpm=cfg.tpm),
            retry=RetryPolicy(
                max_attempts=cfg.max_attempts, base_delay_s=cfg.retry_base_delay_s, max_delay_s=cfg.retry_max_delay_s
            ),
            price_input_per_mtok=getattr(info, "price_input_per_mtok", None),
            price_output_per_mtok=getattr(info, "price_output_per_mtok", None),
        )
    return out


async def _close(endpoints: Mapping[str, Endpoint]) -> None:
    for endpoint in endpoints.values():
        if endpoint.backend is not None:
            await endpoint.backend.aclose()


# -- dataset -------------------------------------------------------------------------------

_PLURAL = {"prompt": "prompts", "reference_answer": "reference answers", "category": "categories", "rubric": "rubrics"}


def _instance(row: dict[str, Any], path: str, line: int) -> Instance:
    def bad(field_: str, message: str) -> InputError:
        return InputError(message, path=path, line=line, field=field_)

    ident = row.get("id", row.get("instance_id"))
    if not isinstance(ident, (str, int)) or isinstance(ident, bool) or ident == "":
        raise bad("id", "each row needs an id (or instance_id)")
    prompt = row.get("prompt")
    if isinstance(prompt, list):
        try:
            prompt = tuple(Message(m["role"], m["content"]) for m in prompt)
        except (KeyError, TypeError):
            raise bad("prompt", "a message list holds {role, content} objects") from None
        if not prompt or any(m.role not in ("system", "user", "assistant") or not isinstance(m.content, str) for m in prompt):
            raise bad("prompt", "messages need a role (system, user, assistant) and string content")
    elif not isinstance(prompt, str) or not prompt.strip():
        raise bad("prompt", "each row needs a prompt (a string or a message list)")
    rubric = []
    for i, item in enumerate(row.get("rubric") or []):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise bad(f"rubric[{i}]", "a rubric item is {id, text, points}")
        points = item.get("points", 1.0)
        if isinstance(points, bool) or not isinstance(points, (int, float)):
            raise bad(f"rubric[{i}].points", "must be a number")
        if not math.isfinite(points):
            raise bad(f"rubric[{i}].points", f"must be a finite number, not {points!r}")
        rubric.append(RubricItem(str(item.get("id", f"r{i + 1}")), item["text"], float(points), item.get("category")))
    ref, meta = row.get("reference_answer"), row.get("metadata")
    return Instance(
        str(ident),
        prompt,
        reference_answer=ref if isinstance(ref, str) else None,
        rubric=tuple(rubric),
        category=row.get("category") if isinstance(row.get("category"), str) else None,
        metadata=meta if isinstance(meta, dict) else {},
    )


def _dataset_rows(path: Path) -> list[tuple[int, Any]]:
    """``(line, row)`` of the dataset file: JSON Lines read without pandas (importing it cost a
    run ≈ 0.5 s before its first call), any other table format through `nepotism.tables.read_rows`."""
    if base_suffix(path) in (".jsonl", ".ndjson"):
        return jsonl_rows(path)
    from nepotism.tables import read_rows

    return read_rows(path)


def load_dataset(experiment: Experiment, store: Store | None = None) -> tuple[list[Instance], list[Response]]:
    """The experiment's instances (in file order, ``limit`` applied) and recorded responses."""
    ds = experiment.dataset
    if ds.from_store:
        if store is None:
            raise InputError("dataset.from_store needs a store", path=experiment.path, field="dataset")
        instances = store.instances()
        if ds.limit is not None:
            instances = instances[: ds.limit]
        if not instances:
            raise InputError("the store holds no instances", path=str(store.path), field="dataset.from_store")
        return instances, []
    path = experiment.dataset_file()
    if path is None:  # (an Experiment built in Python with no dataset source: `load_experiment` refuses it)
        raise InputError("give exactly one of path, bundled and from_store", path=experiment.path, field="dataset")
    if not path.is_file():
        raise InputError("dataset file not found", path=str(path))
    by_id: dict[str, Instance] = {}
    responses: dict[tuple[str, str], Response] = {}
    for line, row in _dataset_rows(path):
        if not isinstance(row, dict):
            raise InputError("each line must be a JSON object", path=str(path), line=line)
        inst = _instance(row, str(path), line)
        known = by_id.get(inst.id)
        if known is None:
            if ds.limit is not None and len(by_id) >= ds.limit:
                continue
            by_id[inst.id] = inst
        else:  # a row repeating the instance (another recorded response) may leave out what it said
            merged: dict[str, Any] = {}
            for field_ in ("prompt", "reference_answer", "category", "rubric"):
                given, before = getattr(inst, field_), getattr(known, field_)
                if given and before and given != before:  # (every row gives a prompt: `_instance`)
                    raise InputError(
                        f"instance {inst.id!r} appears with two different {_PLURAL[field_]}",
                        path=str(path),
                        line=line,
                        field=field_,
                    )
                if given and not before:
                    merged[field_] = given
            if merged:
                by_id[inst.id] = replace(known, **merged)
        generator = row.get("generator", row.get("model"))
        text = row.get("text")
        if generator is not None or text is not None:
            if not isinstance(generator, str) or not generator or not isinstance(text, str):
                raise InputError(
                    "a recorded response needs model (or generator) and text strings", path=str(path), line=line, field="text"
                )
            if (inst.id, generator) in responses:
                raise InputError(f"a second response of {generator!r} to {inst.id!r}", path=str(path), line=line, field="model")
            responses[(inst.id, generator)] = Response(inst.id, generator, text)
    if not by_id:
        raise InputError("the dataset holds no instances", path=str(path))
    return list(by_id.values()), list(responses.values())


def store_instances(store: Store, instances: Sequence[Instance], dataset: str | Path | Mapping[str, str | Path] | None) -> None:
    """`Store.add_instances` with the dataset file each instance was read from (``dataset``: one
    file, or a file per instance id; None for a store dataset). An id the store holds with other
    content from another dataset file is an `InputError` naming this file, the item's line and its
    id field (exit status 2), and nothing is written."""
    from nepotism.store.database import InstanceConflict

    if dataset is None or isinstance(dataset, (str, Path)):
        sources: str | dict[str, str] | None = None if dataset is None else str(Path(dataset).resolve())
    else:
        resolved: dict[Path, str] = {}
        sources = {i: resolved.setdefault(Path(p), str(Path(p).resolve())) for i, p in dataset.items()}
    try:
        store.add_instances(instances, dataset=sources)
    except InstanceConflict as err:
        line, key = _line_of(Path(err.path or ""), err.instance_id)
        raise InputError(err.message, path=err.path, line=line, field=key) from None


def _line_of(path: Path, ident: str) -> tuple[int | None, str]:
    """The line of the row of ``path`` with id ``ident``, and the key giving it (``id`` or
    ``instance_id``); (None, ``id``) when not found."""
    try:
        for line, row in _dataset_rows(path):
            if isinstance(row, dict):
                for key in ("id", "instance_id"):
                    if key in row and str(row[key]) == ident:
                        return line, key
    except (OSError, InputError):
        pass
    return None, "id"


def check_inputs(
    experiment: Experiment, *, keys: bool = True, output: bool = True
) -> tuple[list[Instance], list[Response]] | None:
    """Read and check everything a run needs from outside the store *before* the store is opened,
    so that a bad input leaves no file behind: the dataset (file, line, field), the grading truth,
    ``$NEPOTISM_MODEL_THREADS`` when an in-process model takes its thread count from it, (with
    ``keys``; a dry run lists these as its models' problems instead) the extra each model's backend
    needs (`MissingExtra`, naming the install command) and the API-key variables each model names
    and (with ``output``; a dry run writes nothing) that the output folder can be written
    (`nepotism.run_folder.check_output_dir`). Returns the dataset (None for a store dataset) to
    pass to `run_experiment` or `dry_run` as ``dataset``."""
    from nepotism.backends import model_threads, registry
    from nepotism.backends.base import read_api_key
    from nepotism.extras import require
    from nepotism.run_folder import check_output_dir

    for cfg in experiment.models.values():
        if registry.is_in_process(cfg.backend):
            model_threads(cfg.n_threads)
    for model_id, cfg in experiment.models.items() if keys else ():
        spec = registry.get(cfg.backend)
        if spec.extra is not None:
            require(spec.extra, purpose=f"model '{model_id}' (backend {spec.name}: {spec.summary})")
        try:
            read_api_key(cfg.api_key_env)
        except InputError as err:
            raise InputError(err.message, path=experiment.path, field=f"models.{model_id}.api_key_env") from None
    if experiment.dataset.from_store:
        dataset = None
    else:
        instances, recorded = load_dataset(experiment)
        grading_truth(experiment, instances)
        dataset = instances, recorded
    if output and experiment.output_dir is not None:
        check_output_dir(experiment.output_dir)
    return dataset


# -- planning --------------------------------------------------------------------------------


def _generators(experiment: Experiment) -> list[GenerationSpec]:
    gen = experiment.generation
    return [
        GenerationSpec(model=g, max_tokens=gen.max_tokens, temperature=gen.temperature, seed=experiment.seed)
        for g in gen.generators
    ]


_GenerationPlan = tuple[list[Response], list[tuple[PlannedCall, Instance, GenerationSpec]]]


def _stored(store: Store, experiment: Experiment) -> dict[str, list[Response]]:
    """The stored responses of the experiment's generators, by instance id, in the store's order."""
    generators = [spec.model for spec in _generators(experiment)]
    out: dict[str, list[Response]] = {}
    for r in store.responses(generator=generators) if generators else ():
        out.setdefault(r.instance_id, []).append(r)
    return out


def _generation_plan(
    stored: Store | Mapping[str, Sequence[Response]],
    experiment: Experiment,
    runner: Runner,
    instances: Sequence[Instance],
    recorded: Sequence[Response],
) -> _GenerationPlan:
    """The responses a run starts from and the generation calls it still makes, each call planned once.

    The responses: the dataset's ``recorded`` ones, then the stored responses of the
    experiment's generators that the plan's own generation call made (in ``stored``'s order). A
    stored response made by another call (the item's prompt or a generation option edited
    since) answers another request: it is left out, and the call its check planned is the one
    the run makes (sent, or replayed from the store) as in a fresh store. A stored response with
    no call key (loaded, recorded) is kept. The calls: `Runner.plan_generation`'s for the pairs
    those responses leave unanswered. ``stored``: the store, or its responses read by `_stored`
    (of these instances or more)."""
    if isinstance(stored, Store):
        stored = _stored(stored, experiment)
    specs = {spec.model: spec for spec in _generators(experiment)}
    by_id = {i.id: i for i in instances}
    recorded_pairs = {(r.instance_id, r.generator) for r in recorded}
    have = list(recorded)
    unanswered: dict[tuple[str, str], PlannedCall] = {}  # calls checked, made by no stored response
    last, call = None, None  # (the store's responses of one pair come one after the other)
    for responses in stored.values():
        for r in responses:
            pair = (r.instance_id, r.generator)
            instance = by_id.get(r.instance_id)
            if instance is None or pair in recorded_pairs:
                continue
            made_by = r.metadata.get("call_key")
            if made_by is not None:
                if pair != last or call is None:
                    last, call = pair, plan_call(runner.endpoints[r.generator], specs[r.generator].request(instance))
                if made_by != call.key:
                    unanswered[pair] = call
                    continue
            have.append(r)
    return have, runner.plan_generation(instances, list(specs.values()), have, planned=unanswered)


def _chunked_generation(
    store: Store, experiment: Experiment, runner: Runner, recorded: Sequence[Response]
) -> Callable[[Sequence[Instance]], _GenerationPlan]:
    """`_generation_plan` of any chunk of instances (the dry run and the batch rounds plan a
    chunk at a time), the stored responses read once; a chunk's responses come instance by
    instance (its recorded ones, then its stored ones), as grouped from the whole plan's."""
    stored = _stored(store, experiment)
    recorded_by: dict[str, list[Response]] = {}
    for r in recorded:
        recorded_by.setdefault(r.instance_id, []).append(r)

    def plan(part: Sequence[Instance]) -> _GenerationPlan:
        have, calls = _generation_plan(
            {i.id: stored.get(i.id, ()) for i in part},
            experiment,
            runner,
            part,
            [r for i in part for r in recorded_by.get(i.id, ())],
        )
        by_instance: dict[str, list[Response]] = {}
        for r in have:
            by_instance.setdefault(r.instance_id, []).append(r)
        return [r for i in part for r in by_instance.get(i.id, ())], calls

    return plan


class _ChunkCalls(NamedTuple):
    """A chunk's calls as `_PlanChunks` plans them: its generation calls, the stored calls of those
    keys that have one (``stored``), then the judge calls of its candidates (``judge``), one per task."""

    generation: list[PlannedCall]
    stored: dict[str, Any]
    judge: list[PlannedCall]


class _PlanChunks:
    """The plan of an experiment a chunk of instances at a time, as the dry run and a batch judge
    round read it (`in_chunks` cuts the chunks): calling it with a chunk gives the chunk's calls
    (`_ChunkCalls`); `generation` is the chunk's `_generation_plan` alone (a batch generation
    round). A chunk's candidates are its recorded and stored responses (`_chunked_generation`)
    and the answers stored ok for its generation calls, as a run makes them (a blank answer is
    no response: the run records it as a failure, ``empty_text``); with ``unmade``, a generation
    call with no answer stored ok (never sent, or failed: the run sends it) is shown as
    ``unmade(key, max_tokens)`` (the dry run's `_placeholder`). With a ``[perplexity]`` step,
    what each chunk shows to whom is kept (`perplexity_triples` plans its calls after the last
    chunk; a plan read again starts from `anew`)."""

    def __init__(
        self,
        store: Store,
        experiment: Experiment,
        runner: Runner,
        judging: Any,
        recorded: Sequence[Response],
        *,
        unmade: Callable[[str, int], str] | None = None,
    ) -> None:
        from nepotism.runner.perplexity import Shown

        self.store, self.experiment, self.runner, self.judging, self.unmade = store, experiment, runner, judging, unmade
        self.generation = _chunked_generation(store, experiment, runner, recorded)
        self.seen: Shown = ({}, {})  # what the plan shows each perplexity scorer, chunk after chunk
        self.made: list[Response] = []  # every candidate (perplexity scores them)

    def anew(self) -> _PlanChunks:
        """The same plan, to be read again from its first chunk: the stored responses read once
        are shared, what the chunks showed starts empty."""
        again = copy.copy(self)
        again.seen, again.made = ({}, {}), []
        return again

    def __call__(self, part: Sequence[Instance]) -> _ChunkCalls:
        have, gen_plan = self.generation(part)
        gen_calls = [call for call, _, _ in gen_plan]
        stored = self.store.get_calls([c.key for c in gen_calls])
        answers = []
        for call, instance, spec in gen_plan:
            hit = stored.get(call.key)
            if hit is not None and hit.ok:
                text = hit.text or ""
                if text.strip():
                    answers.append(Response(instance.id, spec.model, text))
            elif self.unmade is not None:
                answers.append(Response(instance.id, spec.model, self.unmade(call.key, spec.max_tokens)))
        candidates = _unique(have + answers)
        tasks = plan_tasks(self.experiment, part, candidates, self.judging)
        if self.experiment.perplexity is not None:
            from nepotism.runner.perplexity import shown_to_scorers

            shown_to_scorers(tasks, self.seen)
            self.made.extend(candidates)
        return _ChunkCalls(gen_calls, stored, self.runner.plan_judging(tasks, self.judging.render))

    def perplexity_triples(self, instances: Sequence[Instance]) -> list[tuple[str, Instance, Response]]:
        """The ``[perplexity]`` step's (scorer, instance, response) triples, once every chunk of
        ``instances`` is planned: what the whole plan showed, scored once each."""
        from nepotism.runner.perplexity import perplexity_triples

        assert self.experiment.perplexity is not None
        return perplexity_triples(self.experiment.perplexity, self.experiment.judges, instances, self.made, self.seen)


def _in_shard(
    shard: Shard | None, instances: Sequence[Instance], recorded: Sequence[Response]
) -> tuple[list[Instance], list[Response]]:
    """The instances (and their recorded responses) of ``shard``; everything without one."""
    if shard is None:
        return list(instances), list(recorded)
    mine = [i for i in instances if shard.holds(shard_key(i))]
    ids = {i.id for i in mine}
    return mine, [r for r in recorded if r.instance_id in ids]


def _unique(responses: Sequence[Response]) -> list[Response]:
    seen: dict[tuple[str, str], Response] = {}
    for r in responses:
        seen.setdefault((r.instance_id, r.generator), r)
    return list(seen.values())


# -- running ---------------------------------------------------------------------------------


async def run_experiment(
    experiment: Experiment,
    store: Store,
    *,
    view: Any = None,
    judging: Any = None,
    registry: Any = None,
    endpoints: Mapping[str, Endpoint] | None = None,
    dataset: tuple[list[Instance], list[Response]] | None = None,
    shard: Shard | None = None,
    offline: bool = False,
) -> RunSummary:
    """Run ``experiment`` against ``store`` (see the module docstring); returns a summary.
    ``dataset`` is what `check_inputs` returned (else the dataset is read here). With ``shard``
    only that shard's instances are generated and judged (`nepotism.runner.shards`), and the
    exports go to the shard's own folder inside ``output.dir``. With ``offline`` nothing is sent:
    every call must be stored already (ok, or failed: then it stays a failure), as after reading
    batch results (`nepotism.runner.batch`); no backend is created. A read-only store (`Store.read_only`)
    runs offline: the run is served from it whole, or stops at what it would have to write. The
    output folder is checked before anything is sent (`nepotism.run_folder.check_output_dir`)."""
    from nepotism.models import load_registry
    from nepotism.run_folder import check_output_dir

    judging = judging or _judging()
    offline = offline or store.readonly
    if experiment.output_dir is not None:
        check_output_dir(experiment.output_dir)
    registry = registry or load_registry(experiment.registry_files)
    instances, recorded = dataset if dataset is not None else load_dataset(experiment, store)
    instances, recorded = _in_shard(shard, instances, recorded)
    if shard is not None:
        experiment = replace(experiment, output_dir=shard_output_dir(experiment.output_dir, shard))
    truth = grading_truth(experiment, instances)
    store_instances(store, instances, None if experiment.dataset.from_store else experiment.dataset_file())
    if recorded:
        store.add_responses(recorded)
    endpoints = dict(endpoints) if endpoints is not None else build_endpoints(experiment, registry, connect=not offline)
    # room for the answers not yet stored when the disk fills up (none lost): a slot holds one
    store.reserve_space(sum(e.limiter.concurrency if e.limiter is not None else 1 for e in endpoints.values()))
    try:
        config = {"experiment": experiment.as_config()}
        if shard is not None:
            config["shard"] = {"index": shard.index, "count": shard.count}
        with store.recording_run(config) as run_id:
            runner = Runner(
                store, endpoints, run_id=run_id, view=view, seed=experiment.seed, source=f"run:{experiment.name}", offline=offline
            )
            have, generation = _generation_plan(store, experiment, runner, instances, recorded)
            chunks: list[ChunkPlan] = []  # (their kinds: the exported tables, from the tasks planned)

            def plan(chunk: list[Instance], responses: list[Response]) -> ChunkPlan:
                # planned by the judge phase, unless the judge-plan memo counts the chunk
                chunks.append(ChunkPlan(experiment, chunk, _unique(responses), judging))
                return chunks[-1]

            # each instance is judged once its responses are made, while the others are generated
            generated, judged = await runner.generate_and_judge(
                instances,
                _generators(experiment),
                have,
                plan,
                judging.render,
                judging.interpret_all,
                keep=False,
                identify=getattr(judging, "judgment_ids", None),
                planned=generation,
            )
            candidates = _unique(generated.responses)
            prevented, prevented_kinds = record_prevented(
                store, experiment, instances, candidates, generated.failures, generation, judging, run_id=run_id, plan=judged.plan
            )
            scored = None
            if experiment.perplexity is not None:
                from nepotism.runner.perplexity import score_perplexity

                tasks = iter_tasks(experiment, instances, candidates, judging)  # the plan, read once
                scored = await score_perplexity(runner, experiment, instances, candidates, tasks)
            graded, references = grade_run(experiment, truth, candidates, store) if truth else ({}, {})
            counts = judged.counts  # (the judgments are in the store, not kept in memory)
            summary = RunSummary(
                run_id=run_id,
                status="done",
                instances=len(instances),
                generation=generated.stats.as_dict(),
                judging=judged.stats.as_dict(),
                judgments=counts,
                generation_failures=[{"instance_id": i, "generator": g, "error": e} for i, g, e in generated.failures],
                prevented=prevented,
            )
            # inside the run: an export that fails (a full or read-only output folder) fails the run
            kinds = {kind for part in chunks for kind in part.kinds} | prevented_kinds
            tables = export_judgments(experiment, store, (), plan=judged.plan, kinds=kinds)
            if judged.plan is not None:
                store.drop_plan(judged.plan)
            if scored is not None:
                from nepotism.runner.perplexity import export_perplexity

                summary.perplexity = {**scored.stats.as_dict(), "scores": scored.counts()}
                references = references | export_perplexity(experiment, scored.scores, tables)
            summary.reference, jury_refs = jury_step(experiment, store, registry, tables, instances)
            references = references | jury_refs
            summary.exports = tables | references
            summary.grading = graded
            summary.endpoints = _replica_counts(endpoints)
            if experiment.output_dir is not None:
                from nepotism.run_folder import write_manifest

                write_manifest(
                    experiment.output_dir,
                    experiment=experiment.name,
                    run_id=run_id,
                    tables=tables,
                    references=references,
                    registry_files=experiment.registry_files,
                )
    finally:
        store.drop_reserve()
        await _close(endpoints)
    return summary


def record_prevented(
    store: Store,
    experiment: Experiment,
    instances: Sequence[Instance],
    candidates: Sequence[Response],
    failures: Sequence[tuple[str, str, str]],
    calls: Iterable[tuple[PlannedCall, Instance, Any]],
    judging: Any,
    *,
    run_id: str | None = None,
    plan: str | None = None,
    tasks: Iterable[tuple[Any, str, str]] | None = None,
    source: str | None = None,
    keep: list[Any] | None = None,
) -> tuple[dict[str, int], set[str]]:
    """Store, as ``failed`` judgments, the judgments the failed generations prevented, and add
    them to the run's ``plan`` (so its exports hold them): each read from a failed completion whose
    error class is ``generation:<the generation call's error class>`` (`GENERATION_FAILED`),
    through the judging's own ``interpret_all``, as a failed judge call is. Failures are data: a
    comparison that could not be made is a row counted in every metric's exclusions with its
    reason, not a row missing from the tables. ``calls`` are the generation calls the run made
    (`_generation_plan`'s, as `Runner.generate` took them: (call, instance, spec)); each
    judgment is stored with its failed call's key (when that call is stored as failed; none for
    an empty answer, a call that succeeded): a rerun whose generation succeeds replaces it with
    the real judgment, and a rerun whose judge call then fails, with that failure. ``tasks``: the
    prevented ``(task, generator, error)`` of another plan than the experiment's
    (`nepotism.runner.judge_plan.prevented_by`: the mitigations', the leakage run's), stored
    under ``source`` (default ``run:<experiment>``); ``keep``: a list the judgments are added
    to, for a caller that analyses them. Returns the count per reason and the exported table
    kinds they go to. Without failures nothing is written."""
    if not failures:
        return {}, set()
    from nepotism.backends.base import Completion
    from nepotism.store.fastread import call_statuses

    failed = {(i, g) for i, g, _ in failures}
    keys = {(instance.id, spec.model): call.key for call, instance, spec in calls if (instance.id, spec.model) in failed}
    stored = call_statuses(store, list(keys.values()))
    counts: dict[str, int] = {}
    kinds: set[str] = set()
    batch: list[Any] = []
    call_keys: dict[str, str] = {}

    def flush() -> None:
        ids = [j.id for j in batch]
        store.add_judgments(
            batch, source=source or f"run:{experiment.name}", call_keys=call_keys, run_id=run_id, replace=True, ids=ids
        )
        if keep is not None:
            keep.extend(batch)
        if plan is not None:
            store.add_plan_ids(plan, ids)
        batch.clear()
        call_keys.clear()

    if tasks is None:
        tasks = prevented_tasks(experiment, instances, candidates, failures, judging)
    for task, generator, error in tasks:
        cause = error.split(": ", 1)[0]
        completion = Completion(
            text=None,
            status="failed",
            error=f"{GENERATION_FAILED}{cause}: the response of {generator} could not be generated ({error})",
        )
        key = keys.get((task.instance.id, generator))
        for judgment in judging.interpret_all(task, completion):
            batch.append(judgment)
            if key is not None and stored.get(key) == "failed":
                call_keys[judgment.id] = key
            counts[judgment.reason] = counts.get(judgment.reason, 0) + 1
        kinds.add(_table_kind(task))
        if len(batch) >= 2048:
            flush()
    if batch:
        flush()
    return dict(sorted(counts.items())), kinds


def _replica_counts(endpoints: Mapping[str, Endpoint]) -> dict[str, dict[str, dict[str, int]]]:
    """Per model served by several endpoints, the backend's per-endpoint counters."""
    out = {}
    for model, endpoint in endpoints.items():
        stats = getattr(endpoint.backend, "endpoint_stats", None)
        counts = stats() if stats is not None else {}
        if len(counts) > 1:
            out[model] = counts
    return out


def export_judgments(
    experiment: Experiment, store: Store, tasks: Sequence[Any], plan: str | None = None, *, kinds: Iterable[str] = ()
) -> dict[str, str]:
    """Write each judged protocol's judgments to ``output.dir``: those read from the calls of
    ``plan`` (`JudgingOutcome.plan`, the run's own), else every one of the store's. The tables
    are those of ``tasks``' protocols and ``kinds`` (`_table_kind`).

    A store that has run an earlier version of the experiment (a judge option edited since) holds
    that version's judgments too; with ``plan`` they stay out of this run's tables."""
    if experiment.output_dir is None:
        return {}
    out_dir = Path(experiment.output_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create the output folder ({err.strerror or err})", path=str(out_dir)) from None
    written = {}
    for protocol in sorted({_table_kind(t) for t in tasks} | set(kinds)):
        target = out_dir / f"{protocol}.{experiment.output_format}"
        try:
            store.export("judgments", target, fmt=experiment.output_format, protocol=protocol, plan=plan)
        except OSError as err:
            raise InputError(
                f"cannot write the output ({err.strerror or err}); the judgments are in the store (nepotism store export)",
                path=str(target),
            ) from None
        written[protocol] = str(target)
    return written


# -- dry run ----------------------------------------------------------------------------------


def _model_problems(experiment: Experiment, *, timeout: float = 5.0) -> dict[str, str]:
    """Why each configured model could not be used, by model id (empty when every one can).

    Any model: its backend's extra is missing. An in-process model (gguf, transformers): its files
    are missing or fail their SHA-256 (checked without loading them). An OpenAI-compatible HTTP model:
    none of its servers can be reached (one GET of ``<base_url>/models`` each; any HTTP answer, even
    401 or 404, counts as reached); a LiteLLM model's provider is not contacted. Nothing is
    generated or judged, so nothing is paid.
    """
    import httpx

    from nepotism.backends import registry
    from nepotism.backends.local_models import ModelFileError
    from nepotism.extras import MissingExtra, require

    problems: dict[str, str] = {}
    reached: dict[str, str | None] = {}
    for model_id, cfg in experiment.models.items():
        if cfg.backend == "openai":
            why = []
            for url in [u.rstrip("/") for u in (cfg.base_urls or (cfg.base_url or "",))]:
                if url not in reached:
                    try:
                        httpx.get(f"{url}/models", timeout=timeout)
                        reached[url] = None
                    except httpx.HTTPError as err:
                        reached[url] = f"cannot reach {url} ({type(err).__name__}: {err})"
                why.append(reached[url])
            if all(why):  # replicas: usable while one of them answers
                problems[model_id] = "; ".join([w for w in why if w is not None])
            continue
        spec = registry.get(cfg.backend)
        try:
            if spec.extra is not None:
                require(spec.extra, purpose=f"model '{model_id}' (backend {spec.name}: {spec.summary})")
            if spec.in_process:
                _backend(cfg).check()
        except (MissingExtra, ModelFileError) as err:
            problems[model_id] = str(err)
    return problems


def dry_run(
    experiment: Experiment,
    store: Store,
    *,
    judging: Any = None,
    registry: Any = None,
    dataset: tuple[list[Instance], list[Response]] | None = None,
    shard: Shard | None = None,
    chunk_calls: int = CHUNK_CALLS,
) -> dict[str, Any]:
    """Plan and price the experiment without calling anything, a chunk of instances at a time
    (`in_chunks`, about ``chunk_calls`` calls a chunk: memory grows with the instances and the
    distinct keys planned, not with the calls' prompts).

    Token counts are estimates: prompts are characters / 4; outputs are each request's
    ``max_tokens`` (1 for label verdicts), an upper bound. Responses not generated yet are
    assumed to be ``generation.max_tokens`` tokens long (4 characters each), so judge prompts
    that will include them are estimated from placeholders, and those calls are never cached (an
    answer stored blank shows nothing: the run records it as a failed generation). A call whose key was already planned (instances with the same prompt share their generation
    calls, then their judge calls) is counted as ``shared``, not again as to send: the run sends it
    once. Costs use the registry's prices (USD per million tokens); models without a price show
    none. With ``shard``, the plan of that shard only.
    """
    from nepotism.models import load_registry

    judging = judging or _judging()
    registry = registry or load_registry(experiment.registry_files)
    instances, recorded = dataset if dataset is not None else load_dataset(experiment, store)
    instances, recorded = _in_shard(shard, instances, recorded)
    truth = grading_truth(experiment, instances)
    endpoints = build_endpoints(experiment, registry, connect=False)
    runner = Runner(store, endpoints)
    chunks = _PlanChunks(store, experiment, runner, judging, recorded, unmade=_placeholder)
    models: dict[str, dict[str, Any]] = {}
    counted = KeySet()  # the keys already counted: a call planned twice (instances with the same
    # prompt share their calls) is sent, and paid, once
    planned = {"generate": 0, "judge": 0, "perplexity": 0}

    def count(phase: str, calls: Sequence[PlannedCall], cached: Mapping[str, Any]) -> None:
        planned[phase] += len(calls)
        for call, new in zip(calls, counted.add([c.key for c in calls]), strict=True):
            _count(models, endpoints[call.model], phase, call, cached.get(call.key), again=not new)

    def plan(part: Sequence[Instance]) -> list[PlannedCall]:
        chunk = chunks(part)
        cached = chunk.stored | store.get_calls([c.key for c in chunk.judge])
        count("generate", chunk.generation, cached)
        count("judge", chunk.judge, cached)
        return chunk.generation + chunk.judge

    # a chunk of instances at a time: the plan is never held whole (10M judge calls would not fit)
    for _ in in_chunks(instances, plan, calls=chunk_calls):
        pass
    if experiment.perplexity is not None:  # what the whole plan shows: scored once each, after judging
        from nepotism.runner.perplexity import planned_calls

        ppl_calls = planned_calls(runner, experiment, chunks.perplexity_triples(instances))
        count("perplexity", ppl_calls, store.get_calls([c.key for c in ppl_calls]))
    by_model = {endpoint.model: endpoint for endpoint in endpoints.values()}
    for model, row in models.items():  # priced once from its token totals (the price is linear in them)
        if row["cost_usd"] is not None:
            row["cost_usd"] = round(
                by_model[model].cost({"prompt_tokens": row["prompt_tokens"], "completion_tokens": row["output_tokens"]}), 6
            )
    totals = {
        k: sum(m[k] for m in models.values()) for k in ("calls", "cached", "shared", "to_send", "prompt_tokens", "output_tokens")
    }
    priced = [m["cost_usd"] for m in models.values() if m["cost_usd"] is not None]
    totals["cost_usd"] = round(sum(priced), 6) if priced else None
    return {
        "experiment": experiment.name,
        "instances": len(instances),
        "recorded_responses": len(recorded),
        "generation_calls": planned["generate"],
        "judge_calls": planned["judge"],
        "perplexity_calls": planned["perplexity"],
        "models": models,
        "totals": totals,
        "graded_instances": {
            task: sum(1 for t, _, _ in truth.values() if t == task) for task in sorted({t for t, _, _ in truth.values()})
        },
        "estimate": "prompt tokens = characters / 4; output tokens = max_tokens (upper bound)",
        "problems": _model_problems(experiment),
    }


def _placeholder(key: str, max_tokens: int) -> str:
    """A response not generated yet, for pricing the judge calls that will show it: as long as
    ``max_tokens`` tokens (4 characters each) and told apart by its generation call's key, so that
    the judge prompts of different responses differ (both orders of a pair are two calls) and those
    of one shared generation call (instances with the same prompt) are one call, as in the run."""
    size = 4 * max_tokens
    return (f"[{key[:16]}] " + "x" * size)[:size]


def _count(
    models: dict[str, dict[str, Any]], endpoint: Endpoint, phase: str, call: PlannedCall, hit: Any, *, again: bool = False
) -> None:
    """Count ``call`` in its model's row: cached, ``shared`` (``again``: its key was planned
    before in this plan, so the run sends it once) or to send, with its estimated tokens (the
    row's cost is priced from its token totals at the end)."""
    row = models.setdefault(
        endpoint.model,
        {
            "generate": 0,
            "judge": 0,
            "perplexity": 0,
            "calls": 0,
            "cached": 0,
            "shared": 0,
            "to_send": 0,
            "prompt_tokens": 0,
            "output_tokens": 0,
            "cost_usd": None if endpoint.price_input_per_mtok is None and endpoint.price_output_per_mtok is None else 0.0,
        },
    )
    row[phase] += 1
    row["calls"] += 1
    if hit is not None and hit.ok:
        row["cached"] += 1
        return
    if again:
        row["shared"] += 1
        return
    row["to_send"] += 1
    prompt = estimate_prompt_tokens(call.request)
    output = 1 if call.request.mode != "generate" else call.request.max_tokens
    row["prompt_tokens"] += prompt
    row["output_tokens"] += output
