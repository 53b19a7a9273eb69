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
errors) — another folder (every table in it), or a list of these (one table per judged kind).

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
from nepotism.analyses.comparisons import build_comparisons, candidates
from nepotism.analyses.suite import SuiteOptions, agreement_filter, committee, run_suite
from nepotism.analyses.suite import correlate as correlate_metrics
from nepotism.datasets import is_dataset, is_pattern, read_dataset
from nepotism.errors import InputError, ValidationError
from nepotism.metrics.bootstrap import Bootstrap, settings
from nepotism.metrics.catalogue import METRICS
from nepotism.metrics.stats import pearson_across
from nepotism.results import Results
from nepotism.run_folder import is_run_folder, read_manifest
from nepotism.tables import Table, read_table, validate

if TYPE_CHECKING:
    from nepotism.analyses.comparisons import Comparisons
    from nepotism.models import Registry

__all__ = ["JUDGED_KINDS", "audit", "check_registry", "read_source"]

#: Table kinds that hold judgments (the others are references).
JUDGED_KINDS = ("pairwise", "pointwise", "rubric", "recognition", "recognition-pairwise")
_TABLE_SUFFIXES = (".csv", ".jsonl", ".ndjson", ".parquet", ".csv.gz", ".jsonl.gz")
_FIRST = ("win-rate", "self-preference-ratio", "demographic-parity-bias", "paired-win-rate-gap")

#: What `audit` reads: a frame, a validated table, or a path (file, store, run folder, dataset).
Source: TypeAlias = "pd.DataFrame | Table | str | Path"


def _is_store(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _store_table(path: Path, protocol: str | None, kind: str | None) -> Table:
    from nepotism.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "judgments.parquet"
        with Store(path) as store:
            if store.export("judgments", out, fmt="parquet", protocol=protocol) == 0:
                raise InputError("the store holds no judgments", path=str(path))
        table = read_table(out, kind=kind)
    return Table(kind=table.kind, frame=table.frame, path=str(path))


def read_source(source: Source | Sequence[Source], *, kind: str | None = None,
                protocol: str | None = None) -> list[Table]:
    """Every validated table of ``source`` (see the module docstring for what a source is)."""
    if isinstance(source, (list, tuple)):
        if kind is not None and len(source) > 1:
            raise InputError("kind applies to a single source", field="kind")
        return [t for item in source for t in read_source(item, kind=kind, protocol=protocol)]
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
        return ([read_table(p, kind=k) for k, p in folder.tables.items()]
                + [read_table(p, kind=k) for k, p in folder.references.items()])
    if is_dataset(path):
        return [read_dataset(path, kind=kind)]
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.name.lower().endswith(_TABLE_SUFFIXES))
        if not files:
            raise InputError("the folder holds no recorded table (.csv, .jsonl, .parquet)", path=str(path))
        return [read_table(p) for p in files]
    if not path.exists():
        raise InputError("file not found", path=str(path))
    if _is_store(path):
        return [_store_table(path, protocol, kind)]
    return [read_table(path, kind=kind)]


def run_folder_models(source: Source | Sequence[Source]) -> list[str]:
    """The registry files of every run output folder among ``source`` (`nepotism.run_folder`)."""
    items = source if isinstance(source, (list, tuple)) else [source]
    return [str(p) for item in items if isinstance(item, (str, Path)) and is_run_folder(item)
            for p in read_manifest(item).models]


def check_registry(table: Table, registry: Registry, *, also: Iterable[str] = ()) -> None:
    """Every judge of ``table`` must be a model the registry knows (or one of ``also``, e.g. a
    committee's name); raises a `ValidationError` at the judge's first row."""
    known = set(also)
    judges = table.frame["judge"].astype(str).to_numpy()
    for judge in pd.unique(judges):
        if judge in known or registry.knows(judge):
            continue
        position = int((judges == judge).argmax())
        where = table.where(position, "judge")
        if "_file" in table.frame:  # a dataset: the row's own file
            where["path"] = table.frame["_file"].iloc[position]
        raise ValidationError(f"judge '{judge}' is not in the model registry; add it to a models file "
                              "(--models; see `nepotism models`)", **where)


def _references(references: Sequence[Source] | Mapping[str, Source], judged_refs: Mapping[str, pd.DataFrame]
                ) -> tuple[dict[str, pd.DataFrame], list[str]]:
    refs = dict(judged_refs)
    names: list[str] = []
    items = references.items() if isinstance(references, Mapping) else [(None, r) for r in references]
    for kind, ref in items:
        table = ref if isinstance(ref, Table) else (validate(ref, kind) if isinstance(ref, pd.DataFrame)
                                                     else read_table(ref, kind=kind))
        if table.kind in JUDGED_KINDS:
            raise InputError(f"a {table.kind} table is a judgment table: pass it as the source", path=table.path)
        refs[table.kind] = table.frame
        names.append(table.path or f"<{table.kind} frame>")
    return refs, names


def _with_committees(table: Table, committees: Sequence[Sequence[str]]) -> Table:
    if not committees:
        return table
    if table.kind not in ("rubric", "pairwise"):
        raise InputError(f"a committee needs a rubric or pairwise table, not {table.kind}", path=table.path,
                         field="committee")
    frames = [table.frame]
    for members in committees:
        missing = sorted(set(members) - set(table.frame["judge"]))
        if missing:
            raise InputError(f"committee member(s) not among the judges: {', '.join(missing)}", path=table.path,
                             field="committee")
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
    return {"metric": "correlation", "judge": None, "condition": None, "generator": None, "pair": None,
            "scope": None, "variant": {"x": x, "y": y, "across": "judges", "interval": "bootstrap over judges"},
            **estimate, "p_value": _clean(result["p_value"]),
            "fisher_z_ci": [_clean(result["ci_low"]), _clean(result["ci_high"])], "keys": result["keys"]}


def _streamed(source: Source | Sequence[Source], *, references: Sequence[Source] | Mapping[str, Source],
              registry: Registry, bootstrap: Bootstrap, kind: str | None, rule: str, opponents: Sequence[str],
              ranked: bool, slices: Sequence[str], committees: Sequence[Sequence[str]], agreement: float | None,
              correlate: Sequence[tuple[str, str]]) -> Results:
    """`audit` of a pairwise dataset read one partition at a time (`nepotism.analyses.stream`)."""
    from nepotism.analyses.stream import stream_pairwise

    items = list(source) if isinstance(source, (list, tuple)) else [source]
    if len(items) != 1 or not isinstance(items[0], (str, Path)) \
            or not (is_pattern(items[0]) or is_dataset(Path(items[0]))):
        raise InputError("--stream reads one partitioned Parquet dataset (a folder of judge=NAME folders, as "
                         "`nepotism store export judgments --partition-by judge` writes, or a glob of Parquet "
                         "files); run without --stream for other sources", field="--stream")
    for given, option in ((slices, "--slice"), (committees, "--committee"), (agreement is not None, "--agreement")):
        if given:
            raise InputError(f"{option} is not available with --stream (it needs the whole table in memory): run "
                             "without --stream", field=option)
    refs, ref_names = _references(references, {})
    records, summary = stream_pairwise(items[0], registry, bootstrap=bootstrap, rule=rule, opponents=tuple(opponents),
                                       kind=kind, reference_kinds=tuple(refs), ranked=ranked,
                                       check=lambda table: check_registry(table, registry))
    summary = {"source": str(items[0]), **summary, "options": bootstrap.as_dict(),
               "references": [str(p) for p in ref_names]}
    for x, y in correlate:
        records.append(_correlation_record(records, x, y, bootstrap))
    from nepotism.report.summary import describe

    findings = describe([r for r in records if r.get("metric") in _FIRST and r.get("judge")])
    return Results(records, summary=summary, findings=findings)


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
) -> Results:
    """Audit recorded judgments with every metric whose inputs are present (module docstring).

    ``references``: reference tables (paths, frames — a mapping gives each frame's kind — or
    Tables). ``models``: registry TOML files extending the bundled registry (or pass ``registry``).
    ``bootstrap``: the resampling settings (`nepotism.metrics.Bootstrap`; default 1,000 resamples of
    prompts, seed 0). ``rule``: how the two presentation orders combine (``consistent``, paper 004
    Eq. 1, or ``strict``, paper 003). ``opponents``: which opponent populations the self-preference
    ratio and demographic-parity bias of related candidates use. Returns `nepotism.results.Results`
    with ``summary`` (what was read and what was left out) and ``findings`` (plain sentences).
    ``stream``: read a pairwise dataset (folder or glob) one partition at a time, keeping per-prompt
    sums instead of rows (`nepotism.analyses.stream`): the first audit, excluded-verdicts,
    position-consistency and the leaderboards, identical to the in-memory records; every other metric is listed as not
    computed (a record without a value saying why, and ``summary["not_computed_when_streaming"]``).
    """
    bootstrap = settings(bootstrap)
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
            raise InputError("correlate takes pairs of metric ids, e.g. (judge-accuracy, self-preference-ratio); "
                             f"unknown: {', '.join(unknown) or pair}", field="correlate")
    if stream:
        return _streamed(source, references=references, registry=registry, bootstrap=bootstrap, kind=kind,
                         rule=rule, opponents=opponents, ranked=bool(leaderboard or rank_against), slices=slices,
                         committees=committees, agreement=agreement, correlate=correlate)
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

    suite_options = SuiteOptions(bootstrap=bootstrap, rule=rule, include_audit=False, slices=tuple(slices),
                                 leaderboard=dict(leaderboard) if leaderboard else None, rank_against=rank_against,
                                 recognition_target=recognition_target, perplexity_bins=perplexity_bins,
                                 perplexity_difference=perplexity_difference, opponents=tuple(opponents))
    by_kind = {t.kind: t for t in judged}
    records: list[dict[str, Any]] = []
    boards: list[dict[str, Any]] = []
    first = judged[0]
    summary: dict[str, Any] = {"source": str(first.path) if first.path else "<DataFrame>",
                               "rows": len(first), "kind": first.kind, "options": bootstrap.as_dict(),
                               "references": [str(p) for p in ref_names]}
    if len(judged) > 1:
        summary["tables"] = [{"source": t.path or "<DataFrame>", "kind": t.kind, "rows": len(t)} for t in judged]
    summarised = False
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
        records += run_suite(table.frame, table.kind, registry, references=table_refs, options=suite_options,
                             comparisons=comparisons).records
        if agreement is not None and table.kind == "rubric":
            filtered, _ = agreement_filter(table.frame, agreement)
            for r in run_suite(filtered, "rubric", registry, references=table_refs, options=suite_options).records:
                r["variant"] = {**r["variant"], "agreement_at_least": agreement}
                records.append(r)
    if not summarised:
        summary.update({"instances": int(first.frame["instance_id"].nunique()),
                        "judges": sorted(map(str, first.frame["judge"].unique()))})
    if names:
        summary["committees"] = names
    records += boards
    for x, y in correlate:
        records.append(_correlation_record(records, x, y, bootstrap))
    from nepotism.report.summary import describe

    findings = describe([r for r in records if r.get("metric") in _FIRST])
    return Results(records, summary=summary, findings=findings)
