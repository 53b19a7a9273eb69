"""`run_leakage`: the whole preference-leakage experiment of paper 000 against one store.

Steps: read both pools and refuse overlap; the data generators answer the training pool (cached
calls, as in `nepotism run`); write the synthetic data in the chosen trainer formats; make every
student (ICL prompts, SFT/DPO training, external models; an inheriting entry's students learn from
the answers of an earlier entry's students, paper 000 §5.2), write their lineage into
``students.toml`` and load the registry with it; the students answer the evaluation pool; every
judge compares every pair of students of a group in both orders; then recognition, question-type
and judgment-dimension labelling; PLS and the analyses become records, written as the results
document ``results.json`` (`nepotism.results.Results`: the run's facts and timings in its summary)
and ``results.csv``. A trained student whose every evaluation answer
is already cached is not trained again, and one whose saved adapter matches its training data is
reloaded instead of retrained. ``dry_run=True`` stops after planning and reports counts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pandas as pd

from nepotism._files import atomic_write
from nepotism.backends.local_models import ModelFileError
from nepotism.leakage.config import LeakageConfig, StudentConfig
from nepotism.leakage.exports import PreferencePair, SyntheticExample, export_dataset
from nepotism.leakage.lineage import Student, registry_with_students, student_id, write_student_registry
from nepotism.leakage.pools import PoolItem, check_disjoint, load_pool
from nepotism.leakage.students import ICLSpec, data_digest, icl_demonstrations, mix_examples, preference_pairs
from nepotism.metrics.leakage import PLS_TIE_RULES
from nepotism.records import Response
from nepotism.results import Results
from nepotism.runner.calls import Endpoint
from nepotism.runner.engine import GenerationSpec, Runner
from nepotism.runner.limits import Limiter
from nepotism.runner.progress import RunStats

__all__ = ["run_leakage"]


def _spec(cfg: LeakageConfig, model: str, **over: Any) -> GenerationSpec:
    gen = cfg.experiment.generation
    return GenerationSpec(model=model, max_tokens=gen.max_tokens, temperature=gen.temperature, seed=cfg.experiment.seed, **over)


def _examples(responses: Sequence[Response], prompts: Mapping[str, str]) -> dict[str, list[SyntheticExample]]:
    out: dict[str, list[SyntheticExample]] = {}
    for r in responses:
        out.setdefault(r.generator, []).append(SyntheticExample(r.instance_id, prompts[r.instance_id], r.text, r.generator))
    return {g: sorted(v, key=lambda e: e.instance_id) for g, v in out.items()}


class _Timer:
    def __init__(self) -> None:
        self.phases: dict[str, dict[str, float]] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        """Time the block as phase ``name`` (wall and CPU seconds), also when it raises."""
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.phases[name] = {
                "wall_s": round(time.perf_counter() - wall, 2),
                "cpu_s": round(time.process_time() - cpu, 2),
            }


def _training_sets(
    sc: StudentConfig, gen: str, synthetic: Mapping[str, list[SyntheticExample]], human: list[SyntheticExample], seed: int
) -> list[tuple[dict[str, Any], list[SyntheticExample]]]:
    own = synthetic.get(gen, [])
    if not sc.mix:
        return [({}, own)]
    if sc.mix_with == "human":
        other, label = human, "human"
    else:
        other = [e for m in sc.mix_with for e in synthetic.get(m, [])]
        label = "+".join(sc.mix_with)
    total = sc.mix_total or max(1, len(own) // 2)
    return [({"mix": r, "mix_with": label}, mix_examples(own, other, r, total, seed=seed)) for r in sc.mix]


def _inheritance_items(sc: StudentConfig, train_items: Sequence[Any], inherit_items: Sequence[Any]) -> Sequence[Any]:
    """The instructions an inheriting entry's parents answer: the training pool again, or other ones."""
    return train_items if sc.instructions == "same" else inherit_items


async def _inherited_sets(
    cfg: LeakageConfig,
    sc: StudentConfig,
    runner: Runner,
    parents: Sequence[Student],
    specs: Mapping[str, GenerationSpec],
    items: Sequence[Any],
    notes: list[str],
    dry: bool,
) -> list[tuple[str, dict[str, Any], list[SyntheticExample], str]]:
    """Paper 000 §5.2: each parent student answers ``items``; its answers teach a new student of the
    same generator. Returns (generator, variant, examples, teacher = the parent) per parent."""
    variant = {"inherit": sc.inherit, "instructions": sc.instructions}
    live = [p for p in parents if p.id in specs]
    if dry:
        return [(p.generator, variant, [SyntheticExample(it.id, it.prompt, "x", p.id) for it in items], p.id) for p in live]
    prompts = {it.id: it.prompt for it in items}
    made = await runner.generate([it.instance() for it in items], [specs[p.id] for p in live])
    if made.failures:
        notes.append(f"inheritance {sc.inherit} -> {sc.name or sc.method}: {len(made.failures)} parent answers failed")
    answers = _examples(made.responses, prompts)
    return [(p.generator, variant, answers.get(p.id, []), p.id) for p in live]


async def _make_students(
    cfg: LeakageConfig,
    runner: Runner,
    endpoints: dict[str, Endpoint],
    store: Any,
    synthetic: Mapping[str, list[SyntheticExample]],
    human: list[SyntheticExample],
    train_items: Sequence[Any],
    eval_instances: Sequence[Any],
    out_dir: Path,
    notes: list[str],
    dry: bool,
    inherit_items: Sequence[Any] = (),
) -> tuple[list[Student], dict[str, GenerationSpec]]:
    seed = cfg.experiment.seed
    students: list[Student] = []
    specs: dict[str, GenerationSpec] = {}
    by_name: dict[str, list[Student]] = {}
    # instructions a named entry's students must answer for the entries inheriting from it
    answers_for: dict[str, list[Any]] = {}
    for sc in cfg.students:
        if sc.inherit is not None:
            answers_for.setdefault(sc.inherit, []).extend(_inheritance_items(sc, train_items, inherit_items))
    for sc in cfg.students:
        gens = sc.generators or cfg.experiment.generation.generators
        made_here: list[Student] = []
        if sc.method == "external":
            for gen, model in sc.models.items():
                sid = model
                made_here.append(
                    Student(sid, "external", sc.base or model, gen, group=sc.name or "external", how={"model": model})
                )
                specs[sid] = _spec(cfg, model)
            students += made_here
            if sc.name:
                by_name[sc.name] = made_here
            continue
        base = sc.base
        if base is None:  # (a StudentConfig made in Python: `load_leakage` asks every such entry for one)
            raise ValueError(f"a {sc.method} student needs a base model")
        pairs_by_gen: dict[str, list[PreferencePair]] = {}
        if sc.method == "dpo":
            pairs_by_gen = await _dpo_pairs(cfg, sc, runner, endpoints, train_items, gens, notes, dry)
        jobs: Sequence[tuple[str, dict[str, Any], Sequence[SyntheticExample] | Sequence[PreferencePair], str | None]]
        if sc.inherit is not None:
            jobs = await _inherited_sets(
                cfg,
                sc,
                runner,
                by_name.get(sc.inherit, []),
                specs,
                _inheritance_items(sc, train_items, inherit_items),
                notes,
                dry,
            )
        else:
            sets: list[tuple[str, dict[str, Any], Sequence[SyntheticExample] | Sequence[PreferencePair]]] = []
            for gen in gens:
                if sc.method == "dpo":
                    sets.append((gen, {}, pairs_by_gen.get(gen, [])))
                else:
                    sets += [(gen, variant, data) for variant, data in _training_sets(sc, gen, synthetic, human, seed)]
            jobs = [(gen, variant, data, None) for gen, variant, data in sets]
        for gen, variant, data, teacher in jobs:
            suffix = "-".join(f"{k}{v}" for k, v in sorted(variant.items()) if k == "mix")
            suffix = suffix.replace("0.", "") if suffix else ""
            if sc.inherit is not None and not sc.name:
                suffix = f"inherits-{sc.inherit}-{sc.instructions}"
            sid = student_id(sc.method, base, gen, (sc.name or "") + suffix)
            group = ":".join(
                x for x in (sc.name or sc.method, base, ",".join(f"{k}={v}" for k, v in sorted(variant.items()))) if x
            )
            how: dict[str, Any] = {"data_digest": data_digest(data) if data else None, "examples": len(data)}
            if teacher is not None:
                how.update(teacher=teacher, instructions=sc.instructions)
            if sc.method == "icl":
                how.update(k=sc.k, max_demo_chars=sc.max_demo_chars, prompt_format=sc.prompt_format)
                examples = [e for e in data if isinstance(e, SyntheticExample)]  # (all of them: only DPO has pairs)
                demos = () if dry else icl_demonstrations(examples, sc.k, seed=seed, max_chars=sc.max_demo_chars)
                base_ep = endpoints[base]
                endpoints[sid] = dataclasses.replace(
                    base_ep, model=sid, served_model=f"{base_ep.served_model}+icl:{how['data_digest']}", limiter=Limiter(1)
                )
                specs[sid] = ICLSpec(
                    model=sid,
                    max_tokens=cfg.experiment.generation.max_tokens,
                    temperature=cfg.experiment.generation.temperature,
                    seed=seed,
                    demonstrations=demos,
                    prompt_format=sc.prompt_format,
                )
            else:
                how.update(preset=sc.preset, tuning=sc.tuning)
                warm = human if sc.sft_first == "human" else []  # 000 §5.3: SFT on human data, then DPO
                served = f"{base}+{sc.tuning}:{sc.method}:{sc.preset}:{how['data_digest']}"
                if sc.sft_first:
                    how["sft_first"] = {
                        "data": sc.sft_first,
                        "examples": len(warm),
                        "data_digest": data_digest(warm) if warm else None,
                    }
                    served += f":sft-{sc.sft_first}:{how['sft_first']['data_digest']}"
                endpoints[sid] = Endpoint(model=sid, backend=None, kind="transformers", served_model=served, limiter=Limiter(1))
                specs[sid] = _spec(cfg, sid)
                if not dry:
                    # a parent of an inheriting entry must also answer that entry's instructions
                    wanted = [*eval_instances, *(it.instance() for it in answers_for.get(sc.name or "", []))]
                    planned = runner.plan_generation(wanted, [specs[sid]])
                    cached = store.get_calls([c.key for c, _, _ in planned])
                    if len(cached) == len(planned) and all(c.ok for c in cached.values()):
                        how["training"] = "skipped: every evaluation answer is cached"
                    elif not data or (sc.sft_first and not warm):
                        why = "no training data" if not data else "no human-written answer in the training pool for sft_first"
                        notes.append(f"{sid}: {why}; student left out")
                        endpoints.pop(sid)
                        specs.pop(sid)
                        continue
                    else:
                        from nepotism.leakage.training import TrainedBackend, load_trained, train_student

                        folder = out_dir / "students" / sid
                        made = await asyncio.to_thread(
                            load_trained, sc.method, base, data, folder, config=sc.preset, tuning=sc.tuning, sft_first=warm
                        )
                        if made is None:
                            made = await asyncio.to_thread(
                                train_student,
                                sc.method,
                                base,
                                data,
                                folder,
                                config=sc.preset,
                                tuning=sc.tuning,
                                sft_first=warm,
                            )
                        model, tok, manifest = made
                        endpoints[sid].backend = TrainedBackend(model, tok, name=sid)
                        how.update(
                            steps=manifest["steps"],
                            train_seconds=manifest["seconds"],
                            final_loss=(manifest["losses"] or [None])[-1],
                        )
                        how.update({k: manifest[k] for k in ("adapter", "weights") if k in manifest})
                        if manifest.get("reused"):
                            how["training"] = "reused: the saved student matches this training data"
            made_here.append(Student(sid, sc.method, base, gen, group, variant, how, teacher=teacher))
        students += made_here
        if sc.name:
            by_name[sc.name] = made_here
    return students, specs


async def _dpo_pairs(
    cfg: LeakageConfig,
    sc: StudentConfig,
    runner: Runner,
    endpoints: dict[str, Endpoint],
    train_items: Sequence[PoolItem],
    gens: Sequence[str],
    notes: list[str],
    dry: bool,
) -> dict[str, list[PreferencePair]]:
    """Two sampled answers per training instruction; each generator labels them (both orders)."""
    import nepotism.judging as judging

    sampler = sc.pair_sampler
    if sampler is None:  # (a StudentConfig made in Python: `load_leakage` asks a DPO entry for one)
        raise ValueError("a DPO student needs a pair_sampler model")
    names = [f"{sampler}#sample{i}" for i in (1, 2)]
    base_ep = endpoints[sampler]
    for i, n in enumerate(names):
        endpoints[n] = dataclasses.replace(base_ep, model=n, served_model=f"{base_ep.served_model}#{i + 1}")
    if dry:
        return {}
    instances = [it.instance() for it in train_items]
    specs = [_spec(cfg, n, temperature=max(0.7, cfg.experiment.generation.temperature)) for n in names]
    specs = [dataclasses.replace(s, seed=cfg.experiment.seed + i + 1) for i, s in enumerate(specs)]
    made = await runner.generate(instances, specs)
    by_instance: dict[str, list[Response]] = {}
    for r in made.responses:
        by_instance.setdefault(r.instance_id, []).append(r)
    prompts = {it.id: it.prompt for it in train_items}
    samples = {(r.instance_id, r.generator): r.text for r in made.responses}
    out = {}
    for gen in gens:
        tasks = judging.plan_pairwise(
            instances,
            by_instance,
            [gen],
            pairs=[(names[0], names[1])],
            both_orders=True,
            options=dict(cfg.judge_options),
            condition="dpo-feedback",
        )
        judged = await runner.judge(tasks, judging.render, judging.interpret_all)
        pairs, dropped = preference_pairs(judged.judgments, samples, prompts, gen)
        if dropped:
            notes.append(f"DPO pairs labelled by {gen}: dropped {dropped}")
        out[gen] = pairs
    return out


async def _ablated_answers(
    features: Sequence[str],
    rewriter: str | None,
    responses: Sequence[Response],
    store: Any,
    endpoints: Mapping[str, Endpoint],
    run_id: Any,
    seed: int,
    notes: list[str],
    phases: list[RunStats] | None = None,
) -> dict[str, list[Response]]:
    """Paper 000 §5.7: every student answer rewritten by ``rewriter`` without one spurious feature,
    per feature (condition ``no-<feature>``). A rewrite that fails its checks
    (`nepotism.mitigations.rewrite.read_rewrite`) leaves that answer out of the condition, counted
    in the notes; the comparisons it would have entered are then missing, not guessed."""
    from nepotism.mitigations.rewrite import ablation_prompt, read_rewrite, rewrite_budget
    from nepotism.mitigations.run import store_text_model

    assert rewriter is not None, "the config requires a rewriter with ablations"
    text_model = store_text_model(store, endpoints, run_id=run_id, seed=seed, phases=phases)
    answers = [r for r in responses if r.text and r.text.strip()]
    out: dict[str, list[Response]] = {}
    for feature in features:
        condition = f"no-{feature}"
        texts = await text_model([(rewriter, ablation_prompt(r.text, feature), rewrite_budget(r.text)) for r in answers])
        kept: list[Response] = []
        reasons: dict[str | None, int] = {}
        for r, text in zip(answers, texts):
            result = read_rewrite(r.text, text, method=condition)
            if result.ok and result.text is not None:
                kept.append(dataclasses.replace(r, text=result.text))
            else:
                reasons[result.reason] = reasons.get(result.reason, 0) + 1
        if reasons:
            notes.append(
                f"{condition}: {sum(reasons.values())} of {len(answers)} rewrites unusable ("
                + ", ".join(f"{why}: {n}" for why, n in sorted(reasons.items(), key=str))
                + ")"
            )
        out[condition] = kept
    return out


#: The judge's options that hold for every question it is asked, not only the pairwise comparison:
#: how its answer is read (mode, min_label_mass, strip_think) and how it samples (temperature).
_JUDGE_WIDE = ("mode", "min_label_mass", "strip_think", "temperature")


def _judge_wide_options(judge_options: Mapping[str, Any]) -> dict[str, Any]:
    """The pairwise protocol's judge-wide options (`_JUDGE_WIDE`) for the run's other questions
    (student recognition, question types), so that every judgment of a run is read by one rule —
    with a ``min_label_mass`` floor, a label verdict whose labels hold less is unparsed
    (``low_label_mass``) in the recognition questions too, as in the pairwise comparisons — and sampled alike (a
    ``temperature`` given for the judge changes these questions' requests, hence their cache keys)."""
    return {"mode": "text"} | {k: judge_options[k] for k in _JUDGE_WIDE if k in judge_options}


def _write(out_dir: Path, results: Results) -> dict[str, str]:
    """``results.json`` (the results document) and ``results.csv`` (one row per record)."""
    body = results.to_json() + "\n"
    files = {"json": str(atomic_write(out_dir / "results.json", lambda t: t.write_text(body, encoding="utf-8")))}
    frame = pd.DataFrame.from_records(results.to_dicts())
    for column in ("variant", "excluded", "pair", "relation", "students", "judges"):
        if column in frame:
            frame[column] = frame[column].map(lambda v: json.dumps(v, default=str) if isinstance(v, (dict, list)) else v)
    files["csv"] = str(atomic_write(out_dir / "results.csv", lambda t: frame.to_csv(t, index=False)))
    return files


async def run_leakage(
    cfg: LeakageConfig,
    store: Any,
    *,
    registry: Any = None,
    endpoints: Mapping[str, Endpoint] | None = None,
    dry_run: bool = False,
    view: Any = None,
) -> Results | dict[str, Any]:
    """Run the experiment (see the module docstring) and return its `Results` (the records, and in
    ``summary`` the run's facts: students, judgments, calls, timings, notes, the files written),
    what ``results.json`` holds; with ``dry_run``, the plan's counts (a dict)."""
    import nepotism.judging as judging
    from nepotism.leakage import categories as cat
    from nepotism.leakage.recognition import classifier_records, plan_student_recognition, recognition_records
    from nepotism.leakage.scores import pls_records, comparisons_frame
    from nepotism.models import load_registry
    from nepotism.runner.experiment_run import build_endpoints, record_prevented, store_instances
    from nepotism.runner.judge_plan import prevented_by

    exp = cfg.experiment
    timer = _Timer()
    notes: list[str] = []
    registry = registry or load_registry(exp.registry_files)
    train = load_pool(cfg.train_pool, limit=cfg.train_limit)
    eval_path = exp.dataset.path
    if not eval_path:
        from nepotism.errors import InputError

        raise InputError("the evaluation pool must be a file ([dataset] path)", path=exp.path, field="dataset")
    evaluation = load_pool(eval_path, limit=exp.dataset.limit)
    check_disjoint(train, evaluation, train_path=cfg.train_pool, eval_path=eval_path)
    inherit_path = cfg.inherit_pool
    inherit = load_pool(inherit_path) if inherit_path else []
    if inherit_path and inherit:
        check_disjoint(inherit, evaluation, train_path=inherit_path, eval_path=eval_path)
        check_disjoint(train, inherit, train_path=cfg.train_pool, eval_path=inherit_path)
    out_dir = Path(exp.output_dir or Path(exp.path).parent / "results")
    if not dry_run:  # a dry run leaves no file behind (its students' registry goes to a scratch folder)
        out_dir.mkdir(parents=True, exist_ok=True)
    eps = dict(endpoints) if endpoints is not None else build_endpoints(exp, registry, connect=not dry_run)
    train_instances = [it.instance() for it in train]
    eval_instances = [it.instance() for it in evaluation]
    pools = [
        (cfg.train_pool, train_instances),
        (exp.dataset.path, eval_instances),
        (cfg.inherit_pool, [it.instance() for it in inherit]),
    ]
    store_instances(store, [i for _, part in pools for i in part], {i.id: path for path, part in pools if path for i in part})
    prompts = {it.id: it.prompt for it in train}
    recording = nullcontext() if dry_run else store.recording_run({"experiment": exp.as_config(), "kind": "leakage"})
    try:
        with recording as run_id:
            runner = Runner(store, eps, run_id=run_id, view=view, seed=exp.seed, source=f"leakage:{exp.name}")
            runner.endpoints = eps  # students are added to the same dict as they are made
            mixers = {m for sc in cfg.students if sc.mix and sc.mix_with != "human" for m in sc.mix_with}
            data_models = list(dict.fromkeys([*exp.generation.generators, *sorted(mixers)]))
            if dry_run:
                synthetic = {g: [SyntheticExample(it.id, it.prompt, "x", g) for it in train] for g in data_models}
            else:
                with timer("synthetic data"):
                    made = await runner.generate(train_instances, [_spec(cfg, g) for g in data_models])
                if made.failures:
                    notes.append(f"synthetic data: {len(made.failures)} generation calls failed")
                synthetic = _examples(made.responses, prompts)
                for gen, rows in synthetic.items():
                    for fmt in cfg.exports:
                        export_dataset(rows, out_dir / "synthetic", gen, fmt)
            human = [SyntheticExample(it.id, it.prompt, it.response, "human") for it in train if it.response]
            with timer("students"):
                students, specs = await _make_students(
                    cfg, runner, eps, store, synthetic, human, train, eval_instances, out_dir, notes, dry_run, inherit
                )
            if dry_run:  # written all the same: it checks the students' ids and lineage
                with tempfile.TemporaryDirectory(prefix="nepotism-leakage-dry-run-") as scratch:
                    write_student_registry(students, registry, Path(scratch) / "students.toml")
            else:
                reg_path = write_student_registry(students, registry, out_dir / "students.toml")
                registry = registry_with_students(exp.registry_files, reg_path)
            groups: dict[str, list[Student]] = {}
            for s in students:
                groups.setdefault(s.group, []).append(s)
            pairs = [(a.id, b.id) for members in groups.values() for i, a in enumerate(members) for b in members[i + 1 :]]
            if dry_run:
                n_eval = len(eval_instances)
                # paper 000 §5.2: each parent student answers the instructions its inheritors learn from
                inherited = {(s.teacher, s.variant.get("instructions")) for s in students if s.variant.get("inherit")}
                parent_calls = sum(len(train) if how == "same" else len(inherit) for _, how in inherited)
                return {
                    "experiment": exp.name,
                    "dry_run": True,
                    "train_instructions": len(train),
                    "eval_instructions": n_eval,
                    "students": [s.as_dict() for s in students],
                    "generation_calls": len(train) * len(data_models) + parent_calls + n_eval * len(students),
                    "rewrite_calls": n_eval * len(students) * len(cfg.analyses.ablations),
                    "judge_calls": n_eval * len(pairs) * 2 * len(exp.judges) * (1 + len(cfg.analyses.ablations)),
                    "notes": notes,
                }
            with timer("student answers"):
                calls = runner.plan_generation(eval_instances, list(specs.values()))
                answered = await runner.generate(eval_instances, list(specs.values()), planned=calls)
            a = cfg.analyses
            rewritten: dict[str, list[Response]] = {}
            if a.ablations:
                with timer("ablation rewrites"):
                    rewritten = await _ablated_answers(
                        a.ablations, a.rewriter, answered.responses, store, eps, run_id, exp.seed, notes, phases=runner.phases
                    )

            def student_tasks(
                instances: Sequence[Any], answers: Sequence[Response], ablated: Mapping[str, Sequence[Response]]
            ) -> list[Any]:
                """The judge tasks of the students' ``answers`` and their ``ablated`` rewrites."""
                out = []
                for condition, responses in {"default": answers, **ablated}.items():
                    by_instance: dict[str, list[Response]] = {}
                    for r in responses:
                        by_instance.setdefault(r.instance_id, []).append(r)
                    out += judging.plan_pairwise(
                        instances,
                        by_instance,
                        list(exp.judges),
                        pairs=pairs,
                        both_orders=True,
                        options=dict(cfg.judge_options),
                        condition=condition,
                    )
                if a.recognition:
                    out += plan_student_recognition(
                        instances,
                        answers,
                        students,
                        cfg.judge_of,
                        pointwise="pointwise" in a.recognition,
                        pairwise="pairwise" in a.recognition,
                        options=_judge_wide_options(cfg.judge_options),
                    )
                if a.categoriser and a.question_types:
                    out += cat.plan_question_types(instances, a.categoriser, options=_judge_wide_options(cfg.judge_options))
                return out

            tasks = student_tasks(eval_instances, answered.responses, rewritten)
            with timer("judging"):
                judged = await runner.judge(tasks, judging.render, judging.interpret_all)
            # the judgments a student's failed answer prevented: failed judgments with its reason
            # (`record_prevented`), stored and counted in every analysis' exclusions
            prevented: list[Any] = []
            blocked = prevented_by(
                lambda hit, shown: student_tasks(
                    [i for i in eval_instances if i.id in hit], shown, {c: shown for c in rewritten}
                ),
                answered.responses,
                answered.failures,
            )
            prevented_counts, _ = record_prevented(
                store,
                exp,
                eval_instances,
                answered.responses,
                answered.failures,
                calls,
                judging,
                run_id=run_id,
                tasks=blocked,
                source=f"leakage:{exp.name}",
                keep=prevented,
            )
            judgments = judged.judgments + prevented
            pairwise = [j for j in judgments if j.protocol == "pairwise"]
            # the other analyses read the students' own answers (the ablations only add PLS conditions)
            original = [j for j in pairwise if j.condition == "default"]
            dims: dict[str, Any] = {}
            if a.categoriser and a.dimensions:
                several = a.dimension_labels == "several"
                plan = cat.plan_dimension_flags if several else cat.plan_dimensions
                dim_tasks = plan(eval_instances, original, a.categoriser)
                if not dim_tasks:
                    notes.append("dimensions: the judges wrote no rationale (use mode='text', reasoning='cot')")
                with timer("dimension labels"):
                    dim_judged = await runner.judge(dim_tasks, judging.render, judging.interpret_all) if dim_tasks else None
                if dim_judged:
                    dims, missing = (
                        cat.dimension_flags(dim_judged.judgments)
                        if several
                        else cat.labels_from(dim_judged.judgments, target="response")
                    )
                    if missing:
                        notes.append(f"dimensions: {missing} labels unreadable (those rationales left out of them)")
    finally:
        closed = set()
        for ep in eps.values():
            if ep.backend is not None and id(ep.backend) not in closed:
                closed.add(id(ep.backend))
                await ep.backend.aclose()
    boot = cfg.bootstrap
    with timer("metrics"):
        comp = comparisons_frame(pairwise)
        records = pls_records(comp, students, cfg.judge_of, registry, bootstrap=boot, ties=PLS_TIE_RULES)
        if a.recognition:
            records += recognition_records(judgments, students, cfg.judge_of, bootstrap=boot)
        for classifier in a.classifier:
            try:
                records += classifier_records(answered.responses, students, seed=exp.seed, bootstrap=boot, classifier=classifier)
            except ImportError:
                notes.append(
                    f"classifier {classifier}: scikit-learn, torch or transformers is missing (install the 'train' extra)"
                )
            except ModelFileError as err:  # the packaged encoder is absent or damaged: said, not guessed
                notes.append(f"classifier {classifier}: {err}")
        qtypes = cat.labels_from(judgments, target="instance")[0] if a.categoriser and a.question_types else {}
        records += cat.category_records(
            original, students, cfg.judge_of, registry, question_types=qtypes, dimensions=dims, bootstrap=boot
        )
    if a.mitigation:
        notes.append(
            "mitigation (paper 000 §5.8): run `nepotism mitigate` on the students' answers with "
            '[mitigate] target = "student" and human labels as preference_ref (Error Bias per mitigation)'
        )
    counts: dict[str, int] = {}
    for j in judgments:
        counts[f"{j.protocol}:{j.status}"] = counts.get(f"{j.protocol}:{j.status}", 0) + 1
    summary = {
        "experiment": exp.name,
        "run_id": run_id,
        "judge_of": dict(cfg.judge_of),
        "students": [s.as_dict() for s in students],
        "registry_file": str(reg_path),
        "train_instructions": len(train),
        "eval_instructions": len(eval_instances),
        "judgments": counts,
        "generation_failures": len(answered.failures),
        # every phase's calls (synthetic data, students' answers, rewrites, judging): exit 3 when some failed
        "calls": [phase.as_dict() for phase in runner.phases],
        "timings": timer.phases,
        "notes": notes,
        "options": boot.as_dict(),
    }
    if prevented_counts:  # judgments a failed student answer prevented, by reason (as `nepotism run` says)
        summary["prevented"] = prevented_counts
    results = Results(records, summary=summary)
    results.summary["files"] = _write(out_dir, results)
    return results
