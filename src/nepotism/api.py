"""`nepotism.audit`: the one entry point from recorded judgments to typed results.

A notebook calls it, and so do ``nepotism metrics``, ``nepotism report`` and ``nepotism demo``:
the same input gives the same records whichever way it comes in.

``source`` is a DataFrame (a recorded table of any judged kind), a `nepotism.tables.Table`, the
path of a recorded table (CSV, JSONL, Parquet), the path of a store (its judgments exported in
the recorded format), a run's output folder (the tables its ``run.json`` lists: judgment tables
are audited, reference tables used as references, and its copies of the experiment's registry
files extend the registry), a partitioned Parquet dataset — a folder of ``column=value``
subfolders such as ``nepotism store export judgments --partition-by judge`` writes, or a glob
pattern of Parquet files (`nepotism.datasets`: one table, each file validated and named in
errors) — another folder (every table in it, and its Inspect AI logs), an Inspect AI eval log
(``.eval`` or ``.json``: its model-graded scores, `nepotism.importers.inspect_log`; several logs,
one per evaluated model as Inspect writes them, are one pointwise table), or a list of these (one
table per judged kind).

`explain` finds the cases behind one judge verdict (`nepotism.analyses.cases`: the comparisons it
rests on, with both answers' texts when given) and `explain_verdicts` those of every verdict, for
the report; they read the source as `audit` does.

Validation happens before anything is computed, with the same rules for frames and files
(`nepotism.tables.validate`): kinds, values, verdicts, duplicate keys, then registry membership
(every judge must be a model the registry knows; a generator it does not know is audited as
unrelated and listed in the summary). A `nepotism.errors.ValidationError` names the file, line and
field of a file, or the row and column of a frame.

What is computed, per judgment table: pairwise — the first audit (win-rate, self-preference-ratio,
demographic-parity-bias, paired-win-rate-gap for each opponent population), the metric suite and
the leaderboard ranks with all and with unrelated judges; other kinds — the metric suite (and the
leaderboard of a pointwise table). ``committees`` add majority-vote judges, ``agreement`` repeats
the rubric suite on the rubrics judges agree on, ``correlate`` adds Pearson r across judges.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import pandas as pd

from nepotism.analyses.audit import OPPONENT_POPULATIONS, AuditOptions, audit_pairwise
from nepotism.analyses.cases import CASE_LIMIT
from nepotism.analyses.comparisons import build_comparisons, candidates
from nepotism.analyses.suite import (
    REFERENCE_VOTES,
    SuiteOptions,
    agreement_filter,
    committee,
    flagged_candidates,
    labels_per_pair,
    run_suite,
)
from nepotism.analyses.verdicts import MIN_PROMPTS, judge_verdicts, relation_census
from nepotism.analyses.suite import correlate as correlate_metrics
from nepotism._files import is_store
from nepotism.datasets import is_dataset, is_pattern, read_dataset
from nepotism.errors import InputError, ValidationError
from nepotism.importers.inspect_log import is_inspect_log
from nepotism.metrics.bootstrap import Bootstrap, settings
from nepotism.metrics.catalogue import METRICS
from nepotism.metrics.stats import pearson_across
from nepotism.results import Results
from nepotism.run_folder import is_run_folder, read_manifest
from nepotism.tables import Table, read_table, text_values, validate

if TYPE_CHECKING:
    from nepotism.analyses.cases import CaseFinder, Explanation
    from nepotism.analyses.comparisons import Comparisons
    from nepotism.models import Registry
    from nepotism.results import Verdict

__all__ = ["JUDGED_KINDS", "audit", "check_registry", "explain", "explain_verdicts", "read_source"]

#: Table kinds that hold judgments (the others are references).
JUDGED_KINDS = ("pairwise", "pointwise", "rubric", "recognition", "recognition-pairwise")
_TABLE_SUFFIXES = (".csv", ".jsonl", ".ndjson", ".parquet", ".csv.gz", ".jsonl.gz")

#: What `audit` reads: a frame, a validated table, or a path (file, store, run folder, dataset).
Source: TypeAlias = "pd.DataFrame | Table | str | Path"


def _store_table(path: Path, protocol: str | None, kind: str | None) -> Table:
    from nepotism.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "judgments.parquet"
        with Store(path) as store:
            if store.export("judgments", out, fmt="parquet", protocol=protocol) == 0:
                raise InputError("the store holds no judgments", path=str(path))
        table = read_table(out, kind=kind)
    return Table(kind=table.kind, frame=table.frame, path=str(path))


def _inspect_logs(paths: Sequence[Path]) -> Table:
    """Inspect AI eval logs (`nepotism.importers.inspect_log`), imported together as one pointwise
    table (one log per evaluated model is how Inspect writes them); a row's line is the position of
    its sample in its log."""
    from nepotism.importers import import_source

    imported = import_source("inspect-log", list(paths))
    frame = imported.tables[imported.main]
    content = frame.drop(columns=[c for c in ("source_file", "source_record") if c in frame])
    content["score"] = content["score"].astype(object).where(content["score"].notna(), None)  # empty, not NaN
    table = validate(content, "pointwise")
    located = table.frame.assign(_line=frame["source_record"].to_numpy())
    return Table(kind=table.kind, frame=located, path=", ".join(str(p) for p in paths))


def _is_log(item: object) -> bool:
    return isinstance(item, (str, Path)) and is_inspect_log(item)


def read_source(source: Source | Sequence[Source], *, kind: str | None = None, protocol: str | None = None) -> list[Table]:
    """Every validated table of ``source`` (see the module docstring for what a source is)."""
    if isinstance(source, (list, tuple)):
        if kind is not None and len(source) > 1:
            raise InputError("kind applies to a single source", field="kind")
        logs = [Path(item) for item in source if _is_log(item)]
        return ([_inspect_logs(logs)] if logs else []) + [
            t for item in source if not _is_log(item) for t in read_source(item, kind=kind, protocol=protocol)
        ]
    if isinstance(source, Table):
        return [source]
    if isinstance(source, pd.DataFrame):
        return [validate(source, kind)]
    if not isinstance(source, (str, Path)):
        raise TypeError(f"source must be a DataFrame, a Table, a path or a list of them, not {type(source).__name__}")
    if is_pattern(source):
        return [read_dataset(source, kind=kind)]
    path = Path(source)
    if is_run_folder(path):
        folder = read_manifest(path)
        return [read_table(p, kind=k) for k, p in folder.tables.items()] + [
            read_table(p, kind=k) for k, p in folder.references.items()
        ]
    if is_dataset(path):
        return [read_dataset(path, kind=kind)]
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.name.lower().endswith(_TABLE_SUFFIXES))
        logs = sorted(p for p in path.iterdir() if p.is_file() and p.name.lower().endswith(".eval"))
        if not files and not logs:
            raise InputError(
                "the folder holds no recorded table (.csv, .jsonl, .parquet) and no Inspect AI log (.eval)", path=str(path)
            )
        return ([_inspect_logs(logs)] if logs else []) + [read_table(p) for p in files]
    if not path.exists():
        raise InputError("file not found", path=str(path))
    if is_store(path):
        return [_store_table(path, protocol, kind)]
    if is_inspect_log(path):
        return [_inspect_logs([path])]
    return [read_table(path, kind=kind)]


def run_folder_models(source: Source | Sequence[Source]) -> list[str]:
    """The registry files of every run output folder among ``source`` (`nepotism.run_folder`)."""
    items = source if isinstance(source, (list, tuple)) else [source]
    return [str(p) for item in items if isinstance(item, (str, Path)) and is_run_folder(item) for p in read_manifest(item).models]


def check_registry(table: Table, registry: Registry, *, also: Iterable[str] = ()) -> None:
    """Every judge of ``table`` must be a model the registry knows (or one of ``also``, e.g. a
    committee's name); raises a `ValidationError` at the judge's first row."""
    known = set(also)
    judges = text_values(table.frame["judge"])
    for judge in pd.unique(judges):
        if judge in known or registry.knows(judge):
            continue
        position = int((judges == judge).argmax())
        where = table.where(position, "judge")
        if "_file" in table.frame:  # a dataset: the row's own file
            where["path"] = table.frame["_file"].iloc[position]
        raise ValidationError(
            f"judge '{judge}' is not in the model registry; name it in a models file passed "
            f'with --models: [aliases] "{judge}" = "<the registry\'s name>" for a model it '
            "knows under another name (`nepotism models list`), else a [models] entry with its "
            "family",
            **where,
        )


def _references(
    references: Sequence[Source] | Mapping[str, Source], judged_refs: Mapping[str, pd.DataFrame]
) -> tuple[dict[str, pd.DataFrame], list[str]]:
    refs = dict(judged_refs)
    names: list[str] = []
    items = references.items() if isinstance(references, Mapping) else [(None, r) for r in references]
    for kind, ref in items:
        table = (
            ref
            if isinstance(ref, Table)
            else (validate(ref, kind) if isinstance(ref, pd.DataFrame) else read_table(ref, kind=kind))
        )
        if table.kind in JUDGED_KINDS:
            raise InputError(f"a {table.kind} table is a judgment table: pass it as the source", path=table.path)
        refs[table.kind] = table.frame
        names.append(table.path or f"<{table.kind} frame>")
    return refs, names


def _with_committees(table: Table, committees: Sequence[Sequence[str]]) -> Table:
    if not committees:
        return table
    if table.kind not in ("rubric", "pairwise"):
        raise InputError(f"a committee needs a rubric or pairwise table, not {table.kind}", path=table.path, field="committee")
    frames = [table.frame]
    for members in committees:
        missing = sorted(set(members) - set(table.frame["judge"]))
        if missing:
            raise InputError(
                f"committee member(s) not among the judges: {', '.join(missing)}", path=table.path, field="committee"
            )
        frames.append(committee(table.frame, list(members)))
    return Table(kind=table.kind, frame=pd.concat(frames, ignore_index=True), path=table.path)


def _pairwise_summary(table: Table, comparisons: Comparisons, registry: Registry, rule: str) -> dict[str, Any]:
    frame = comparisons.frame
    models = candidates(frame)
    return {
        "comparisons": int(len(frame)),
        "single_order_comparisons": int((frame["n_orders"] == 1).sum()),
        "excluded_comparisons": {f"{j} / {c}": v for (j, c), v in comparisons.excluded.items()},
        "instances": int(frame["instance_id"].nunique()),
        "judges": sorted(frame["judge"].unique()),
        "generators": int(len(models)),
        "generators_not_in_registry": sorted(m for m in models if not registry.knows(m)),
        "aggregation_rule": rule,
    }


def _clean(x: Any) -> Any:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _correlation_record(records: list[dict[str, Any]], x: str, y: str, bootstrap: Bootstrap) -> dict[str, Any]:
    """Pearson r across judges (004 Figs. 1–4): its interval resamples the judges (`pearson_across`);
    the Fisher-z interval and the t-test p-value of the same r ride along."""
    result = correlate_metrics(records, x, y, confidence=bootstrap.confidence_level)
    xs, ys = result["x"], result["y"]
    estimate = pearson_across(xs, ys, bootstrap=bootstrap).as_dict()
    return {
        "metric": "correlation",
        "judge": None,
        "condition": None,
        "generator": None,
        "pair": None,
        "scope": None,
        "variant": {"x": x, "y": y, "across": "judges", "interval": "bootstrap over judges"},
        **estimate,
        "p_value": _clean(result["p_value"]),
        "fisher_z_ci": [_clean(result["ci_low"]), _clean(result["ci_high"])],
        "keys": result["keys"],
    }


def _streamed(
    source: Source | Sequence[Source],
    *,
    references: Sequence[Source] | Mapping[str, Source],
    registry: Registry,
    bootstrap: Bootstrap,
    kind: str | None,
    rule: str,
    opponents: Sequence[str],
    ranked: bool,
    slices: Sequence[str],
    committees: Sequence[Sequence[str]],
    agreement: float | None,
    correlate: Sequence[tuple[str, str]],
    min_prompts: int,
) -> Results:
    """`audit` of a pairwise dataset read one partition at a time (`nepotism.analyses.stream`)."""
    from nepotism.analyses.stream import stream_pairwise

    items = list(source) if isinstance(source, (list, tuple)) else [source]
    if len(items) != 1 or not isinstance(items[0], (str, Path)) or not (is_pattern(items[0]) or is_dataset(Path(items[0]))):
        raise InputError(
            "--stream reads one partitioned Parquet dataset (a folder of judge=NAME folders, as "
            "`nepotism store export judgments --partition-by judge` writes, or a glob of Parquet "
            "files); run without --stream for other sources",
            field="--stream",
        )
    for given, option in ((slices, "--slice"), (committees, "--committee"), (agreement is not None, "--agreement")):
        if given:
            raise InputError(
                f"{option} is not available with --stream (it needs the whole table in memory): run without --stream",
                field=option,
            )
    refs, ref_names = _references(references, {})
    records, summary = stream_pairwise(
        items[0],
        registry,
        bootstrap=bootstrap,
        rule=rule,
        opponents=tuple(opponents),
        kind=kind,
        reference_kinds=tuple(refs),
        ranked=ranked,
        check=lambda table: check_registry(table, registry),
    )
    summary = {
        "source": str(items[0]),
        **summary,
        "options": bootstrap.as_dict(),
        "references": [str(p) for p in ref_names],
        "flagged_candidates": flagged_candidates(records),
    }
    for x, y in correlate:
        records.append(_correlation_record(records, x, y, bootstrap))
    verdicts = judge_verdicts(records, min_prompts=min_prompts)
    summary["min_prompts"] = min_prompts
    return Results(records, summary=summary, findings=[v.sentence for v in verdicts], verdicts=verdicts)


def audit(
    source: Source | Sequence[Source],
    *,
    references: Sequence[Source] | Mapping[str, Source] = (),
    models: Sequence[str | Path] = (),
    registry: Registry | None = None,
    bootstrap: Bootstrap | None = None,
    kind: str | None = None,
    rule: str = "consistent",
    opponents: Sequence[str] = OPPONENT_POPULATIONS,
    protocol: str | None = None,
    leaderboard: Mapping[str, float] | None = None,
    rank_against: str | None = None,
    slices: Sequence[str] = (),
    recognition_target: str = "self",
    perplexity_bins: int = 5,
    perplexity_difference: str = "perplexity",
    committees: Sequence[Sequence[str]] = (),
    agreement: float | None = None,
    correlate: Sequence[tuple[str, str]] = (),
    stream: bool = False,
    reference_vote: str = "each",
    min_prompts: int = MIN_PROMPTS,
) -> Results:
    """Audit recorded judgments with every metric whose inputs are present (module docstring).

    ``references``: reference tables (paths, frames — a mapping gives each frame's kind — or
    Tables). ``models``: registry TOML files extending the bundled registry (or pass ``registry``).
    ``bootstrap``: the resampling settings (`nepotism.metrics.Bootstrap`; default 1,000 resamples of
    prompts, seed 0). ``rule``: how the two presentation orders combine (``consistent``, paper 004
    Eq. 1, or ``strict``, paper 003). ``opponents``: which opponent populations the self-preference
    ratio and demographic-parity bias of related candidates use. Returns `nepotism.results.Results`
    with ``summary`` (what was read and what was left out; ``flagged_candidates``: the generators
    whose judgments a judge left without a verdict far more often than its others, a sign that
    their text games the verdict reader — docs/verdicts.md) and ``findings`` (plain sentences).
    ``stream``: read a pairwise dataset (folder or glob) one partition at a time, keeping per-prompt
    sums instead of rows (`nepotism.analyses.stream`): the first audit, excluded-verdicts,
    position-consistency and the leaderboards, identical to the in-memory records; every other metric is listed as not
    computed (a record without a value saying why, and ``summary["not_computed_when_streaming"]``).
    ``reference_vote``: several human labels of one pair count one row each (``each``, paper 001's
    one vote per battle) or as the pair's plurality label (``majority``, paper 000 App. C.3).
    ``min_prompts``: the fewest prompts a judge verdict's number may rest on (``Results.verdicts``,
    `nepotism.analyses.verdicts`; docs/answer.md).
    """
    bootstrap = settings(bootstrap)
    if reference_vote not in REFERENCE_VOTES:
        raise InputError(f"reference_vote must be one of {', '.join(REFERENCE_VOTES)}", field="reference_vote")
    if isinstance(min_prompts, bool) or not isinstance(min_prompts, int) or min_prompts < 1:
        raise InputError("min_prompts must be a whole number of at least 1", field="min_prompts")
    if perplexity_difference not in ("perplexity", "log"):
        raise InputError("perplexity_difference must be 'perplexity' or 'log'", field="perplexity_difference")
    if registry is None:
        from nepotism.models import load_registry

        files = [str(m) for m in models]
        registry = load_registry(files + [m for m in run_folder_models(source) if m not in files])
    if agreement is not None and not 0.0 <= agreement <= 1.0:
        raise InputError("agreement must be in [0, 1]", field="agreement")
    for pair in correlate:
        unknown = [m for m in pair if m not in METRICS]
        if unknown or len(pair) != 2:
            raise InputError(
                "correlate takes pairs of metric ids, e.g. (judge-accuracy, self-preference-ratio); "
                f"unknown: {', '.join(unknown) or pair}",
                field="correlate",
            )
    if stream:
        return _streamed(
            source,
            references=references,
            registry=registry,
            bootstrap=bootstrap,
            kind=kind,
            rule=rule,
            opponents=opponents,
            ranked=bool(leaderboard or rank_against),
            slices=slices,
            committees=committees,
            agreement=agreement,
            correlate=correlate,
            min_prompts=min_prompts,
        )
    tables = read_source(source, kind=kind, protocol=protocol)
    judged = [t for t in tables if t.kind in JUDGED_KINDS]
    folder_refs = {t.kind: t.frame for t in tables if t.kind not in JUDGED_KINDS}
    if not judged:
        raise InputError("no judgment table in the source", path=tables[0].path if tables else None)
    kinds = [t.kind for t in judged]
    for dup in sorted({k for k in kinds if kinds.count(k) > 1}):
        raise InputError(f"two {dup} tables given; merge them into one file", field="source")
    refs, ref_names = _references(references, folder_refs)
    names = [", ".join(map(str, m)) for m in committees]
    for table in judged:
        check_registry(table, registry)

    suite_options = SuiteOptions(
        bootstrap=bootstrap,
        rule=rule,
        include_audit=False,
        slices=tuple(slices),
        leaderboard=dict(leaderboard) if leaderboard else None,
        rank_against=rank_against,
        recognition_target=recognition_target,
        perplexity_bins=perplexity_bins,
        perplexity_difference=perplexity_difference,
        opponents=tuple(opponents),
        reference_vote=reference_vote,
    )
    by_kind = {t.kind: t for t in judged}
    records: list[dict[str, Any]] = []
    boards: list[dict[str, Any]] = []
    first = judged[0]
    summary: dict[str, Any] = {
        "source": str(first.path) if first.path else "<DataFrame>",
        "rows": len(first),
        "kind": first.kind,
        "options": bootstrap.as_dict(),
        "references": [str(p) for p in ref_names],
    }
    if len(judged) > 1:
        summary["tables"] = [{"source": t.path or "<DataFrame>", "kind": t.kind, "rows": len(t)} for t in judged]
    summarised = False
    census: list[dict[str, Any]] = []
    for table in judged:
        table = _with_committees(table, committees)
        table_refs = dict(refs)
        if table.kind in ("recognition", "recognition-pairwise") and "pairwise" in by_kind:
            table_refs["pairwise"] = by_kind["pairwise"].frame
        comparisons = None
        if table.kind == "pairwise":
            from nepotism.analyses.derived import leaderboard_records

            comparisons = build_comparisons(table.frame, rule=rule)
            options = AuditOptions(bootstrap=bootstrap, opponents=tuple(opponents))
            records += audit_pairwise(comparisons, registry, options=options)
            boards += leaderboard_records(comparisons.frame, registry, bootstrap=bootstrap)
            if not summarised:
                summary.update(_pairwise_summary(table, comparisons, registry, rule))
                summarised = True
        elif table.kind == "pointwise":
            from nepotism.analyses.derived import pointwise_leaderboard_records

            boards += pointwise_leaderboard_records(table.frame, registry, bootstrap=bootstrap)
        records += run_suite(
            table.frame, table.kind, registry, references=table_refs, options=suite_options, comparisons=comparisons
        ).records
        if table.kind in ("pairwise", "pointwise", "rubric"):
            census += relation_census(table.frame, table.kind, registry)
        if agreement is not None and table.kind == "rubric":
            filtered, _ = agreement_filter(table.frame, agreement)
            for r in run_suite(filtered, "rubric", registry, references=table_refs, options=suite_options).records:
                r["variant"] = {**r["variant"], "agreement_at_least": agreement}
                records.append(r)
    if not summarised:
        summary.update(
            {"instances": int(first.frame["instance_id"].nunique()), "judges": sorted(map(str, first.frame["judge"].unique()))}
        )
        if "model" in first.frame:
            summary["generators_not_in_registry"] = sorted(
                m for m in map(str, first.frame["model"].unique()) if not registry.knows(m)
            )
    if names:
        summary["committees"] = names
    pref = refs.get("preference-ref")
    if pref is not None:
        summary["reference_labels_per_pair"] = labels_per_pair(pref)
        summary["reference_vote"] = reference_vote
    summary["flagged_candidates"] = flagged_candidates(records)
    records += boards
    for x, y in correlate:
        records.append(_correlation_record(records, x, y, bootstrap))
    summary["relations"] = census
    summary["min_prompts"] = min_prompts
    verdicts = judge_verdicts(records, census, min_prompts=min_prompts)
    return Results(records, summary=summary, findings=[v.sentence for v in verdicts], verdicts=verdicts)


def _case_finder(
    source: Source | Sequence[Source],
    *,
    references: Sequence[Source] | Mapping[str, Source],
    registry: Registry,
    kind: str | None,
    protocol: str | None,
    records: Iterable[Mapping[str, Any]],
    rule: str,
    reference_vote: str,
    tables: Sequence[Table] | None = None,
) -> CaseFinder:
    """A `CaseFinder` over the judged tables and references of ``source`` (as `audit` reads them)."""
    from nepotism.analyses.cases import CaseFinder

    tables = list(tables) if tables is not None else read_source(source, kind=kind, protocol=protocol)
    folder_refs = {t.kind: t.frame for t in tables if t.kind not in JUDGED_KINDS}
    refs, _ = _references(references, folder_refs)
    judged = {t.kind: t.frame for t in tables if t.kind in JUDGED_KINDS}
    return CaseFinder(judged, refs, registry, records=records, rule=rule, reference_vote=reference_vote)


def _registry_for(source: Source | Sequence[Source], models: Sequence[str | Path], registry: Registry | None) -> Registry:
    if registry is not None:
        return registry
    from nepotism.models import load_registry

    files = [str(m) for m in models]
    return load_registry(files + [m for m in run_folder_models(source) if m not in files])


def explain(
    source: Source | Sequence[Source],
    *,
    judge: str,
    scope: str = "self",
    condition: str | None = None,
    references: Sequence[Source] | Mapping[str, Source] = (),
    models: Sequence[str | Path] = (),
    registry: Registry | None = None,
    bootstrap: Bootstrap | None = None,
    kind: str | None = None,
    rule: str = "consistent",
    protocol: str | None = None,
    reference_vote: str = "each",
    min_prompts: int = MIN_PROMPTS,
    texts: str | Path | None = None,
    limit: int = CASE_LIMIT,
) -> Explanation:
    """The cases behind one judge verdict (`nepotism.analyses.cases`; docs/answer.md).

    Audits ``source`` as `audit` does (the same ``references``, ``models``, ``bootstrap``, ``rule``,
    ``reference_vote`` and ``min_prompts``), takes the verdict of ``judge`` (its name in the data
    or its registry id) for ``scope`` (self, family, student, family-student) under ``condition``
    (needed only when the judge was audited under several) and returns the comparisons behind it:
    at most ``limit`` per direction, with both answers and the prompt from ``texts`` (JSON Lines
    as ``nepotism import --texts-out`` writes them, or a store) when given. An unknown judge, scope
    or condition is an `InputError` naming the choices."""
    from nepotism.analyses.cases import find_verdict, read_texts, wanted_answers, with_texts

    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InputError("limit must be a whole number of at least 0", field="limit")
    registry = _registry_for(source, models, registry)
    tables = read_source(source, kind=kind, protocol=protocol)
    results = audit(
        tables,
        references=references,
        registry=registry,
        bootstrap=bootstrap,
        rule=rule,
        reference_vote=reference_vote,
        min_prompts=min_prompts,
    )
    verdict = find_verdict(results.verdicts, judge, scope, condition)
    finder = _case_finder(
        source,
        references=references,
        registry=registry,
        kind=kind,
        protocol=protocol,
        records=results.to_dicts(),
        rule=rule,
        reference_vote=reference_vote,
        tables=tables,
    )
    explanation = finder.explain(verdict, limit=limit)
    if texts is not None:
        explanation = with_texts(explanation, read_texts(texts, wanted_answers([explanation]), registry=registry))
    return explanation


def explain_verdicts(
    source: Source | Sequence[Source],
    verdicts: Sequence[Verdict],
    records: Iterable[Mapping[str, Any]],
    *,
    references: Sequence[Source] | Mapping[str, Source] = (),
    models: Sequence[str | Path] = (),
    registry: Registry | None = None,
    kind: str | None = None,
    rule: str = "consistent",
    protocol: str | None = None,
    reference_vote: str = "each",
    texts: str | Path | None = None,
    limit: int = CASE_LIMIT,
) -> dict[str, Explanation]:
    """The cases behind every verdict with evidence, by `nepotism.analyses.cases.verdict_key`
    (``judge|condition|scope``), for a report: ``verdicts`` and ``records`` come from an audit of
    ``source`` with the same options; the texts are read once for all of them."""
    from nepotism.analyses.cases import read_texts, wanted_answers, with_texts

    registry = _registry_for(source, models, registry)
    finder = _case_finder(
        source,
        references=references,
        registry=registry,
        kind=kind,
        protocol=protocol,
        records=records,
        rule=rule,
        reference_vote=reference_vote,
    )
    found = finder.explain_all(verdicts, limit=limit)
    if texts is not None:
        read = read_texts(texts, wanted_answers(found.values()), registry=registry)
        found = {key: with_texts(e, read) for key, e in found.items()}
    return found
