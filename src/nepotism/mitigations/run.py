"""Run an experiment's audit under each mitigation of its ``[mitigate]`` table.

`run_mitigations` (1) generates the missing responses and judges the experiment's planned tasks
(the baseline), (2) judges every self-evaluation pair also with the third-party judges (condition
``third-party``), (3) for each perturbation builds the perturbed pairs (`perturb_pairs`) and judges
them under ``"<name>:<judge>"`` by the judge and by the third-party judges, (4) judges the
self-evaluation pairs again under each judge-side option, (5) grades every response where the
instance allows it (a multiple-choice letter in ``reference_answer``, or ``metadata.tests`` run in
the sandbox), (6) computes the effect records (`nepotism.mitigations.analysis`) and (7) writes the
judgment tables, the graded answers, the records (``mitigations.jsonl``, `write_records`) and
``run.json`` listing them into the output folder (`export_run`). When
the experiment asks recognition questions, each perturbation asks them again on the perturbed
texts (`_perturbed_recognition`), so recognition and its association with preference can be
compared before and after. With graded answers, the records also hold the baseline's accuracy
figures (`nepotism.mitigations.accuracy`: judge accuracy on self-evaluation, third-party and all
examples, task accuracy, own win rate by ground truth and by the judge's own judgment). Every model
call goes through the store's cache, so a rerun repeats nothing. The judging protocol functions,
the endpoints, the text model and the sandbox runner can be injected (tests use fakes).
"""

from __future__ import annotations

import importlib
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nepotism.mitigations.accuracy import accuracy_records
from nepotism.mitigations.analysis import THIRD_PARTY, calibration_records, jury_records, option_records, perturbation_records
from nepotism.mitigations.calibration import split_heldout
from nepotism.mitigations.config import PERTURBATIONS, MitigationConfig, MitigationPlan
from nepotism.mitigations.perturb import Pair, PairTexts, TextModel, perturb_pairs
from nepotism.mitigations.perturbed_pairs import perturbed_pair_items
from nepotism.mitigations.rows import pair_truth, preference_truth, side_rows
from nepotism.mitigations.rubric import agreement_records, rubric_rows
from nepotism.records import Instance, Judgment, Message, Response
from nepotism.results import Results

if TYPE_CHECKING:  # types only: run_mitigations imports these when it runs
    from nepotism.experiment import Experiment
    from nepotism.judging import JudgeTask
    from nepotism.models import Registry
    from nepotism.runner import Endpoint, ProgressView, Runner, RunStats
    from nepotism.runner.calls import CallResult
    from nepotism.store import Store
    from nepotism.store.annotations import AnnotationItem

#: a comparison a failed generation prevented: (task, the generator, the error)
_Prevented = tuple["JudgeTask", str, str]
#: (judge, own response id, opponent response id) of a self-evaluation pair
_PairKey = tuple[str, str, str]

__all__ = [
    "RECORDS_FILE",
    "MitigationResult",
    "export_run",
    "grade_responses",
    "run_mitigations",
    "store_text_model",
    "write_results",
]

#: The results document in the output folder (`MitigationResult.results`), listed in its ``run.json``
#: under ``results``.
RECORDS_FILE = "mitigations.json"


@dataclass
class MitigationResult:
    records: list[dict[str, Any]]  # mitigation-effect records
    summary: dict[str, Any] = field(default_factory=dict)
    baseline: list[dict[str, Any]] = field(default_factory=list)  # the baseline's accuracy records (`.accuracy`)

    @property
    def results(self) -> Results:
        """The run as the one results document holds it: the effects, then the baseline's accuracy
        records, with the summary (what ``nepotism mitigate --json`` prints and `RECORDS_FILE` holds)."""
        return Results(self.records + self.baseline, summary=self.summary)


def store_text_model(
    store: Store,
    endpoints: Mapping[str, Endpoint],
    *,
    run_id: str | None = None,
    seed: int = 0,
    stats: dict[str, Any] | None = None,
    phases: list[RunStats] | None = None,
) -> TextModel:
    """A `TextModel` that runs generation calls through the store's cache and the endpoints;
    each batch's counters (`RunStats`, phase ``rewrite``) are added to ``phases`` when given (a
    runner's `Runner.phases`: the command says from them how many calls failed)."""
    from nepotism.backends.base import Request
    from nepotism.runner import CallExecutor, RunStats, plan_call

    async def call(calls: Sequence[tuple[str, tuple[Message, ...], int]]) -> list[str | None]:
        planned = [
            plan_call(endpoints[m], Request(model=m, messages=msgs, max_tokens=max_tokens, temperature=0.0, seed=seed))
            for m, msgs, max_tokens in calls
        ]
        out: list[str | None] = [None] * len(planned)
        index = {id(c): i for i, c in enumerate(planned)}

        def take(result: CallResult) -> None:
            done = result.completion
            out[index[id(result.call)]] = done.text if done.ok and (done.text or "").strip() else None

        run_stats = RunStats(phase="rewrite", total=len(planned))
        if phases is not None:
            phases.append(run_stats)
        await CallExecutor(store, endpoints, run_id=run_id, stats=run_stats, seed=seed).run(planned, take)
        if stats is not None:  # planned (as judge_calls), and how many of them were sent or came from the cache
            for key, n in (
                ("rewrite_calls", len(planned)),
                ("rewrite_calls_sent", run_stats.sent),
                ("rewrite_calls_cached", run_stats.cached),
                ("rewrite_failed", sum(o is None for o in out)),
            ):
                stats[key] = stats.get(key, 0) + n
        return out

    return call


async def _familiarity(
    runner: Runner, exp: Experiment, instances: Sequence[Instance], responses: Sequence[Response]
) -> tuple[dict[tuple[str, str, str], float], dict[str, Any]]:
    """Each judge's familiarity with each response: its mean per-token log-probability, i.e. minus
    the log-perplexity (paper 001), scored by the run's perplexity step
    (`nepotism.runner.perplexity.score_perplexity`: the same calls and cache as a ``[perplexity]``
    table with ``responses = "all"`` and the experiment's ``prompt``); and the scores' counts
    (``ok``, ``failed`` with each reason). Failed scores are left out of the mapping (their rows
    get weight 1 in `familiarity_weights`)."""
    from nepotism.experiment import PerplexityConfig
    from nepotism.runner.perplexity import score_perplexity

    config = PerplexityConfig(responses="all", prompt=exp.perplexity.prompt if exp.perplexity else "auto")
    scored = await score_perplexity(runner, exp, instances, responses, (), config=config)
    familiarity = {
        (s.scorer, s.instance_id, s.model): -s.log_perplexity
        for s in scored.scores
        if s.status == "ok" and s.log_perplexity is not None
    }
    reasons: dict[str, int] = {}
    for s in scored.scores:
        if s.status != "ok":
            reasons[s.reason or "failed"] = reasons.get(s.reason or "failed", 0) + 1
    return familiarity, {"ok": len(familiarity), "failed": reasons}


def grade_responses(
    instances: Sequence[Instance], responses: Sequence[Response], *, sandbox_runner: Callable[..., Any] | None = None
) -> dict[tuple[str, str], bool | None]:
    """(instance_id, generator) -> correct (True / False / None when it cannot be graded)."""
    from nepotism.grading.code import grade_code
    from nepotism.grading.multiple_choice import grade_multiple_choice

    by_id = {i.id: i for i in instances}
    out: dict[tuple[str, str], bool | None] = {}
    for r in responses:
        inst = by_id.get(r.instance_id)
        if inst is None:
            continue
        tests = (inst.metadata or {}).get("tests")
        if tests:
            result = grade_code(r.text, tests, entry_point=(inst.metadata or {}).get("entry_point"), runner=sandbox_runner)
        elif inst.reference_answer and re.fullmatch(r"[A-Ja-j]", inst.reference_answer.strip()):
            result = grade_multiple_choice(r.text, inst.reference_answer.strip().upper())
        else:
            continue
        out[(r.instance_id, r.generator)] = result.correct
    return out


def write_results(target: str | os.PathLike[str], results: Results) -> Path:
    """``results`` as the results document (`Results.to_json`), written atomically."""
    from nepotism._files import atomic_write_bytes

    return atomic_write_bytes(target, (results.to_json() + "\n").encode("utf-8"))


def export_run(
    exp: Experiment,
    store: Store,
    tasks: Sequence[JudgeTask],
    correct: Mapping[tuple[str, str], bool | None],
    run_id: str,
    records: Sequence[Mapping[str, Any]] | None = None,
    plan: str | None = None,
    summary: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """Write the judgment tables (every condition, perturbed ones as ``<name>:<judge>``; with
    ``plan``, `JudgingOutcome.plan`, only the judgments of this run's calls), the graded
    answers as a ``correctness-ref`` table, ``records`` with ``summary`` (to which ``exports``, the
    tables and references written, is added) as the results document `RECORDS_FILE` and
    ``run.json`` listing them into the experiment's output folder, so that ``nepotism metrics``
    and ``nepotism report`` take the folder (recognition per condition; the report adds the
    mitigation effects). Returns the tables and references written."""
    if exp.output_dir is None:
        return {}

    from nepotism.run_folder import write_manifest
    from nepotism.runner.experiment_run import export_judgments
    from nepotism.tables import write_table

    tables = export_judgments(exp, store, tasks, plan=plan)
    references: dict[str, str] = {}
    graded = [(i, m, bool(v)) for (i, m), v in sorted(correct.items()) if v is not None]
    if graded:
        target = Path(exp.output_dir) / f"reference.{exp.output_format}"
        write_table(pd.DataFrame(graded, columns=["instance_id", "model", "correct"]), target)
        references["correctness-ref"] = str(target)
    results: dict[str, str] = {}
    if records is not None:
        document = Results(records, summary={**(summary or {}), "exports": tables | references})
        results["mitigation-effects"] = str(write_results(Path(exp.output_dir) / RECORDS_FILE, document))
    write_manifest(
        exp.output_dir,
        experiment=exp.name,
        run_id=run_id,
        tables=tables,
        references=references,
        registry_files=exp.registry_files,
        results=results,
    )
    return tables | references


def _export_pairs(exp: Experiment, items: list[AnnotationItem]) -> dict[str, Any]:
    """``perturbed-pairs.jsonl`` in the output folder: every perturbed text beside its original, as
    `nepotism annotate` pairs (`nepotism.mitigations.perturbed_pairs`); the file and the item count."""
    if exp.output_dir is None or not items:
        return {"items": len(items)}
    from nepotism.mitigations.perturbed_pairs import write_perturbed_pairs

    target = Path(exp.output_dir) / "perturbed-pairs.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)  # written before the tables (`export_run` makes it too)
    return {"file": str(target), "items": write_perturbed_pairs(items, target)}


def human_study_records(plan: MitigationPlan) -> list[dict[str, Any]]:
    """The human quality test of each perturbation whose name tags labels of ``[mitigate] human_study``."""
    if not plan.human_study:
        return []
    from nepotism.mitigations.human_study import quality_test
    from nepotism.tables import read_table

    labels = pd.concat([read_table(f, kind="preference-ref").frame for f in plan.human_study], ignore_index=True)
    return [quality_test(labels, cfg.name) for cfg in plan.conditions if cfg.kind in PERTURBATIONS]


def _self_tasks(tasks: Iterable[JudgeTask], baseline: str, is_target: Callable[[str, str], bool]) -> list[JudgeTask]:
    """The baseline pairwise tasks with exactly one candidate the judge may favour (``is_target``)."""
    return [t for t in tasks if _is_self(t, baseline, is_target)]


def _is_self(task: JudgeTask, baseline: str, is_target: Callable[[str, str], bool]) -> bool:
    return (
        task.protocol == "pairwise"
        and task.condition == baseline
        and sum(is_target(task.judge, c.generator) for c in task.candidates) == 1
    )


def _third_party_tasks(task: JudgeTask, judges: Sequence[str], is_target: Callable[[str, str], bool]) -> list[JudgeTask]:
    """A self-evaluation task judged by each third party (condition ``third-party``)."""
    return [_with(task, judge=j, condition=THIRD_PARTY) for j in _third_party_judges(task, judges, is_target)]


def _mitigated(
    task: JudgeTask,
    cfg: MitigationConfig,
    judges: Sequence[str],
    plan: MitigationPlan,
    is_target: Callable[[str, str], bool],
    candidates: tuple[Response, ...] | None = None,
) -> list[JudgeTask]:
    """The tasks a self-evaluation task becomes under mitigation ``cfg``: a perturbation's (the
    ``candidates`` perturbed, condition ``<name>:<judge>``, and the third parties' with
    ``[mitigate] control``) or a judge-side option's; none for the others (juries, calibration
    and rubric agreement read the baseline's judgments)."""
    if cfg.kind in PERTURBATIONS:
        condition = f"{cfg.name}:{task.judge}"
        made = [_with(task, candidates=candidates, condition=condition)]
        if plan.control:
            made += [
                _with(task, judge=j, candidates=candidates, condition=condition)
                for j in _third_party_judges(task, judges, is_target)
            ]
        return made
    if cfg.kind == "judge-option":
        return [_with(task, condition=cfg.name, options=_option_set(task.options, cfg.params["options"]))]
    return []


def _prevented(
    blocked: Iterable[_Prevented],
    plan: MitigationPlan,
    judges: Sequence[str],
    baseline: str,
    is_target: Callable[[str, str], bool],
) -> list[_Prevented]:
    """The mitigation's tasks the failed generations prevented, as ``(task, generator, error)``:
    the experiment's (``blocked``: `nepotism.runner.judge_plan.prevented_tasks`) and, of its
    self-evaluation tasks, the third parties' and each mitigation's, as the run makes them from
    the tasks it can judge (their candidates: the stand-ins; a perturbation has nothing to
    perturb). Recognition questions asked again on perturbed texts are left out: the baseline's
    question about the missing response is its one failed row."""
    out: dict[str, _Prevented] = {}
    for task, generator, error in blocked:
        out.setdefault(task.key, (task, generator, error))
        if _is_self(task, baseline, is_target):
            made = _third_party_tasks(task, judges, is_target)
            made += [v for cfg in plan.conditions for v in _mitigated(task, cfg, judges, plan, is_target)]
            for v in made:
                out.setdefault(v.key, (v, generator, error))
    return list(out.values())


def _with(
    task: JudgeTask,
    *,
    judge: str | None = None,
    candidates: tuple[Response, ...] | None = None,
    condition: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> JudgeTask:
    from nepotism.judging import JudgeTask

    return JudgeTask(
        task.protocol,
        judge or task.judge,
        task.instance,
        candidates or task.candidates,
        condition=condition or task.condition,
        replicate=task.replicate,
        options=options if options is not None else dict(task.options),
    )


def _third_party_judges(task: JudgeTask, judges: Sequence[str], is_target: Callable[[str, str], bool]) -> list[str]:
    """The judges that wrote neither answer and are not the target relation (self, teacher, family)
    of either: a teacher judging its student's pair is not a third party."""
    names = {c.generator for c in task.candidates}
    return [j for j in judges if j not in names and not any(is_target(j, g) for g in names)]


def _option_set(task_options: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    opts = dict(task_options) | dict(extra)
    if opts.get("reasoning", "none") != "none" and "mode" not in extra:
        opts["mode"] = "text"
    return opts


async def run_mitigations(
    plan: MitigationPlan,
    store: Store,
    *,
    registry: Registry | None = None,
    endpoints: Mapping[str, Endpoint] | None = None,
    judging: ModuleType | None = None,
    text_model: TextModel | None = None,
    sandbox_runner: Callable[..., Any] | None = None,
    view: ProgressView | None = None,
) -> MitigationResult:
    """Run the baseline and every mitigation; see the module docstring."""
    from nepotism.models import load_registry
    from nepotism.runner import Runner
    from nepotism.runner import experiment_run as er
    from nepotism.runner.experiment_run import build_endpoints, load_dataset, plan_tasks
    from nepotism.runner.judge_plan import prevented_tasks

    exp = plan.experiment
    judging = judging or importlib.import_module("nepotism.judging")
    registry = registry or load_registry(exp.registry_files)
    instances, recorded = load_dataset(exp, store)
    er.store_instances(store, instances, None if exp.dataset.from_store else exp.dataset_file())
    if recorded:
        store.add_responses(recorded)
    own_endpoints = endpoints is None
    endpoints = dict(endpoints) if endpoints is not None else build_endpoints(exp, registry)
    stats: dict[str, Any] = {}
    try:
        with store.recording_run({"experiment": exp.as_config(), "mitigate": [c.name for c in plan.conditions]}) as run_id:
            runner = Runner(store, endpoints, run_id=run_id, view=view, seed=exp.seed, source=f"mitigate:{exp.name}")
            text_model = text_model or store_text_model(
                store, endpoints, run_id=run_id, seed=exp.seed, stats=stats, phases=runner.phases
            )
            # the responses a run of the experiment would judge, found and made as it finds and makes them
            have, planned = er._generation_plan(store, exp, runner, instances, recorded)
            generated = await runner.generate(instances, er._generators(exp), have=have, planned=planned)
            candidates = er._unique(generated.responses)
            base_tasks = plan_tasks(exp, instances, candidates, judging)
            baseline = exp.conditions[0].name
            relation = _scopes(registry)

            def is_target(judge: str, model: str) -> bool:
                return relation(judge, model) == plan.target

            self_tasks = _self_tasks(base_tasks, baseline, is_target)
            judges = list(exp.judges)
            tasks = list(base_tasks)
            tasks += [v for t in self_tasks for v in _third_party_tasks(t, judges, is_target)]
            perturb_info: dict[str, dict[str, Any]] = {}
            pair_items: list[AnnotationItem] = []
            recognition = [t for t in base_tasks if t.protocol.startswith("recognition") and t.condition == baseline]
            for cfg in plan.conditions:
                if cfg.kind in PERTURBATIONS:
                    made, info, items = await _perturbed_tasks(
                        cfg,
                        self_tasks,
                        judges,
                        plan,
                        text_model,
                        sandbox_runner,
                        recognition,
                        callable_models=set(endpoints),
                        is_target=is_target,
                    )
                    tasks += made
                    perturb_info[cfg.name] = info
                    pair_items += items
                elif cfg.kind == "judge-option":
                    tasks += [v for t in self_tasks for v in _mitigated(t, cfg, judges, plan, is_target)]
            unique = list({t.key: t for t in tasks}.values())
            judged = await runner.judge(unique, judging.render, judging.interpret_all)
            # the comparisons a failed generation prevented: failed judgments (`record_prevented`),
            # in the exports and in every count of what was left out, under the conditions they
            # would have been judged in
            blocked = _prevented(
                prevented_tasks(exp, instances, candidates, generated.failures, judging), plan, judges, baseline, is_target
            )
            prevented: list[Judgment] = []
            prevented_counts, _ = er.record_prevented(
                store,
                exp,
                instances,
                candidates,
                generated.failures,
                planned,
                judging,
                run_id=run_id,
                plan=judged.plan,
                tasks=blocked,
                source=f"mitigate:{exp.name}",
                keep=prevented,
            )
            familiarity, familiarity_counts = None, None
            if any(c.kind == "jury" and c.params.get("vote") == "perplexity" for c in plan.conditions):
                familiarity, familiarity_counts = await _familiarity(runner, exp, instances, candidates)
    finally:
        if own_endpoints:
            for endpoint in endpoints.values():
                if endpoint.backend is not None:
                    await endpoint.backend.aclose()
    correct = grade_responses(instances, candidates, sandbox_runner=sandbox_runner)
    judgments = judged.judgments + prevented
    rows = side_rows(judgments, rule=plan.rule)
    rows = rows[rows["replicate"] == 0].reset_index(drop=True)
    ambiguous = {str(c): int(n) // 2 for c, n in rows[rows["ambiguous"]].groupby("condition").size().items()}
    rows["truth"] = pair_truth(rows, correct)
    if plan.preference_ref:  # human labels decide the pairs they cover (paper 000 §5.8)
        from nepotism.tables import read_table

        labels = pd.concat([read_table(f, kind="preference-ref").frame for f in plan.preference_ref], ignore_index=True)
        human = preference_truth(rows, labels)
        rows["truth"] = np.where(np.isfinite(human), human, rows["truth"])
    rows["own"] = [is_target(j, s) for j, s in zip(rows["judge"], rows["side"])]
    records, summary = _analyse(plan, rows, judges, baseline, relation, instances, familiarity)
    accuracy = (
        _no_nan(accuracy_records(rows, judges, baseline, THIRD_PARTY, correct, plan.bootstrap))
        if any(v is not None for v in correct.values())
        else []
    )
    accuracy += human_study_records(plan)
    rubric, unparsed_rubric = rubric_rows(judgments)
    for cfg in plan.conditions:
        if cfg.kind == "rubric-agreement":
            filtered, summary["analysis"][cfg.name] = agreement_records(rubric, cfg, judges, baseline, plan.bootstrap)
            summary["analysis"][cfg.name]["unparsed_rubric_verdicts"] = sum(unparsed_rubric.values())
            if unparsed_rubric:  # by reason, as every metric counts them
                summary["analysis"][cfg.name]["rubric_verdicts_excluded"] = unparsed_rubric
            records += filtered
    summary.update(
        {
            "run_id": run_id,
            "status": "done",
            "instances": len(instances),
            "responses": len(candidates),
            "judge_calls": len(unique),
            "judge_calls_sent": judged.stats.sent,
            "judge_calls_cached": judged.stats.cached,
            "judgments": _count(judgments),
            "perturbations": perturb_info,
            "graded": {
                "correct": sum(v is True for v in correct.values()),
                "wrong": sum(v is False for v in correct.values()),
                "ungraded": sum(v is None for v in correct.values()),
            },
            "generation_failures": len(generated.failures),
            "rule": plan.rule,
            "ambiguous_comparisons": ambiguous,
            **stats,
            # every phase's calls (generation, rewrites, judging, ...): the command exits 3 when some failed
            "calls": [phase.as_dict() for phase in runner.phases],
        }
    )
    if familiarity_counts is not None:  # the perplexity-weighted jury's scores, failures with reasons
        summary["familiarity_scores"] = familiarity_counts
    if prevented_counts:  # judgments a failed generation prevented, by reason (as `nepotism run` says)
        summary["prevented"] = prevented_counts
    summary["perturbed_pairs"] = _export_pairs(exp, pair_items)
    if exp.output_dir is not None:
        summary["records_file"] = str(Path(exp.output_dir) / RECORDS_FILE)
    summary["exports"] = export_run(
        exp,
        store,
        unique + [t for t, _, _ in blocked],
        correct,
        run_id,
        records=records + accuracy,
        plan=judged.plan,
        summary=summary,
    )
    return MitigationResult(records, summary, accuracy)


def _count(judgments: Iterable[Judgment]) -> dict[str, int]:
    out: dict[str, int] = {}
    for j in judgments:
        out[j.status] = out.get(j.status, 0) + 1
    return out


async def _perturbed_tasks(
    cfg: MitigationConfig,
    self_tasks: Sequence[JudgeTask],
    judges: Sequence[str],
    plan: MitigationPlan,
    text_model: TextModel,
    sandbox_runner: Callable[..., Any] | None,
    recognition: Sequence[JudgeTask] = (),
    callable_models: set[str] | None = None,
    is_target: Callable[[str, str], bool] | None = None,
) -> tuple[list[JudgeTask], dict[str, Any], list[AnnotationItem]]:
    is_target = is_target or (lambda judge, model: judge == model)
    pairs_by_key: dict[_PairKey, Pair] = {}
    for t in self_tasks:
        own = next(c for c in t.candidates if is_target(t.judge, c.generator))
        opp = next(c for c in t.candidates if not is_target(t.judge, c.generator))
        pairs_by_key.setdefault((t.judge, own.id, opp.id), Pair(t.judge, t.instance, own, opp))
    keys = list(pairs_by_key)
    texts = await perturb_pairs(
        cfg.kind,
        cfg.params,
        [pairs_by_key[k] for k in keys],
        text_model=text_model,
        rewriter=plan.rewriter,
        sandbox_runner=sandbox_runner,
        seed=plan.experiment.seed,
        callable_models=callable_models,
    )
    done = dict(zip(keys, texts))
    failures: dict[str, int] = {}
    for result in texts:
        if not result.ok:
            failures[result.reason or "failed"] = failures.get(result.reason or "failed", 0) + 1
    made: list[JudgeTask] = []
    for t in self_tasks:
        own = next(c for c in t.candidates if is_target(t.judge, c.generator))
        opp = next(c for c in t.candidates if not is_target(t.judge, c.generator))
        result = done[(t.judge, own.id, opp.id)]
        if result.own is None or result.opponent is None:  # not `PairTexts.ok`
            continue
        new = {
            own.id: Response(own.instance_id, own.generator, result.own, {"perturbation": cfg.name}),
            opp.id: Response(opp.instance_id, opp.generator, result.opponent, {"perturbation": cfg.name}),
        }
        cands = tuple(new[c.id] for c in t.candidates)
        made += _mitigated(t, cfg, judges, plan, is_target, candidates=cands)
    asked = _perturbed_recognition(cfg.name, recognition, done)
    info: dict[str, Any] = {"pairs": len(texts), "perturbed": sum(r.ok for r in texts), "failed": failures}
    if recognition:
        info["recognition_questions"] = len(asked)
    items = perturbed_pair_items(cfg.name, [pairs_by_key[k] for k in keys], texts)
    return made + asked, info, items


def _perturbed_recognition(name: str, recognition: Iterable[JudgeTask], done: Mapping[_PairKey, PairTexts]) -> list[JudgeTask]:
    """The recognition questions of the baseline asked again on the perturbed texts (003 Figs. 7/11/14).

    A judge is asked about a text only as the perturbation showed it to that judge: a two-answer
    question ("which did you write?") about its own answer and an opponent takes that pair's two
    perturbed texts; a one-answer question ("did you write this?") takes the text the response had
    in the first perturbed pair it is in. Questions about texts the judge never saw perturbed
    (failed perturbations, pairs not judged by it) are not asked under the condition.
    """
    by_pair: dict[_PairKey, tuple[str, str]] = {}  # the two texts of each perturbed pair
    for key, r in done.items():
        if r.own is not None and r.opponent is not None:  # `PairTexts.ok`
            by_pair[key] = (r.own, r.opponent)
    by_text: dict[tuple[str, str], str] = {}
    for (judge, own_id, opp_id), (own_text, opp_text) in by_pair.items():
        by_text.setdefault((judge, own_id), own_text)
        by_text.setdefault((judge, opp_id), opp_text)
    made: list[JudgeTask] = []
    for t in recognition:
        texts: dict[str, str] | None = None
        if len(t.candidates) == 2:
            own = [c for c in t.candidates if c.generator == t.judge]
            if len(own) == 1:
                opp = next(c for c in t.candidates if c is not own[0])
                pair = by_pair.get((t.judge, own[0].id, opp.id))
                texts = None if pair is None else {own[0].id: pair[0], opp.id: pair[1]}
        else:
            text = by_text.get((t.judge, t.candidates[0].id))
            texts = None if text is None else {t.candidates[0].id: text}
        if texts is None:
            continue
        cands = tuple(Response(c.instance_id, c.generator, texts[c.id], {"perturbation": name}) for c in t.candidates)
        made.append(_with(t, candidates=cands, condition=f"{name}:{t.judge}"))
    return made


def _scopes(registry: Registry) -> Callable[[str, str], str]:
    """``relation(judge, model)``: `Registry.scope` (the one scope rule), each pair asked once."""
    memo: dict[tuple[str, str], str] = {}

    def relation(judge: str, model: str) -> str:
        if (judge, model) not in memo:
            memo[(judge, model)] = registry.scope(judge, model)
        return memo[(judge, model)]

    return relation


def _analyse(
    plan: MitigationPlan,
    rows: pd.DataFrame,
    judges: Sequence[str],
    baseline: str,
    relation: Callable[[str, str], str],
    instances: Sequence[Instance],
    familiarity: Mapping[tuple[str, str, str], float] | None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    boot, target = plan.bootstrap, plan.target
    split = split_heldout([i.id for i in instances], plan.heldout_fraction, seed=plan.experiment.seed)
    contexts = {i.id: i.category or "" for i in instances}
    records: list[dict[str, Any]] = []
    info: dict[str, Any] = {}
    for cfg in plan.conditions:
        if cfg.kind in PERTURBATIONS:
            records += perturbation_records(rows, cfg, judges, baseline, boot, control=plan.control, target=target)
        elif cfg.kind == "judge-option":
            records += option_records(rows, cfg, judges, baseline, boot, target=target)
        elif cfg.kind in ("jury", "exclude-relatives"):
            made, info[cfg.name] = jury_records(
                rows, cfg, judges, baseline, boot, relation=relation, familiarity=familiarity, split=split, target=target
            )
            records += made
        elif cfg.kind == "calibration":
            made, info[cfg.name] = calibration_records(
                rows, cfg, judges, baseline, boot, split=split, contexts=contexts, target=target
            )
            records += made
    return _no_nan(records), {"analysis": info, "baseline_condition": baseline, "target": target}


def _no_nan(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for rec in records:
        for key in ("value", "ci_low", "ci_high", "value_baseline", "value_mitigated"):
            if isinstance(rec.get(key), float) and math.isnan(rec[key]):
                rec[key] = None
    return records
