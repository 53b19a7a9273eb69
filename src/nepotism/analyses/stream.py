"""Metrics on a pairwise dataset larger than memory: one partition at a time, per-prompt sums kept.

`nepotism.audit(..., stream=True)` (``nepotism metrics DATASET --stream``) reads a partitioned
Parquet dataset (`nepotism.datasets`: a folder of ``judge=NAME`` partitions, or a glob) one
partition at a time instead of as one table. Each partition is read and checked exactly as the
in-memory reader checks it (`nepotism.datasets.read_files`: the rules and messages of
`nepotism.tables.validate`, errors naming file, line, field and partition; duplicate rows across
the partition's files), its presentation orders are combined by
`nepotism.analyses.comparisons.build_comparisons` (same rule, same exclusion reasons), and then:

- the first audit of each of its (judge, condition) groups — win-rate, self-preference-ratio and
  demographic-parity-bias per scope and opponent population — is computed by the audit's own
  functions (`nepotism.analyses.audit`) on that partition's comparisons: every number of a group
  comes from that group's rows only, so it is the number the whole table gives;
- excluded-verdicts, exclusion-share-gap (one judge's rows against its others: one partition) and
  position-consistency likewise (`nepotism.analyses.suite`);
- leaderboard-rank (every judge, and the unrelated judges only) from per (prompt, judge, generator)
  sums of the preference scores and counts, through `nepotism.analyses.derived.pairwise_boards` (the
  in-memory leaderboards' own code, rows weighted by the count they stand for);
- for paired-win-rate-gap, which sets one judge against every other, the per-prompt sums of every
  (judge, condition, generator, opponent) block whose generator is related to some judge of the
  dataset are kept (prompt code, 2 × wins, decided and undecided counts: 10 bytes a cell, not
  rows), and the gaps are computed from those at the end with the audit's own `_paired_gaps`.

The records are those the in-memory path gives for these metrics, byte for byte in JSON and in the
same order (``tests/analyses/test_stream.py``). The two orders of a comparison must be in one
partition: a dataset streams when its partition folders are ``judge=`` and/or ``condition=``
(a judge split over several files of its folder is one partition), and each (judge, condition)
must sit in one partition. Memory: the largest partition as the in-memory path holds it (about
0.4 GB per million rows), plus the kept sums.

Not computed when streaming (each reported as a record without a value whose note says why, and
listed in the summary): metrics that set judges against each other per prompt and pair (matched
bias, preference-leakage score) or need a reference table — `NOT_STREAMED`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from nepotism.analyses.audit import AuditOptions, _Blocks, _Pending, _paired_gaps, _Relations, _Rows, _scope_records, _win_rates
from nepotism.analyses.comparisons import build_comparisons, candidates
from nepotism.analyses.suite import SuiteOptions, _position_records, exclusion_records
from nepotism.datasets import dataset_partitions, read_files
from nepotism.errors import InputError
from nepotism.metrics._common import undefined
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.metrics.definitions import ClusterSums, Definition
from nepotism.models import Registry
from nepotism.analyses.derived import _Side, pairwise_boards
from nepotism.tables import Table, text_values

__all__ = ["NOT_STREAMED", "STREAMED", "is_streamed", "stream_pairwise"]

#: The metrics a streamed audit computes (identical records to the in-memory path).
STREAMED = (
    "win-rate",
    "self-preference-ratio",
    "demographic-parity-bias",
    "paired-win-rate-gap",
    "excluded-verdicts",
    "exclusion-share-gap",
    "position-consistency",
    "leaderboard-rank",
)


def is_streamed(record: Mapping[str, Any]) -> bool:
    """Whether a streamed audit computes ``record`` (a record dict) as the in-memory audit does:
    its metric is in `STREAMED` and it is not a per-evaluatee self-preference ratio (variant
    ``averaging``, `PER_EVALUATEE`)."""
    return record.get("metric") in STREAMED and "averaging" not in (record.get("variant") or {})


_RANKED = (
    "it ranks each judge's leaderboard against a reference or another judge's, whose per-prompt scores "
    "are not kept when streaming"
)
_REFERENCE = "it joins the judgments with a reference table row by row"
#: metric → why it is not computed when streaming
NOT_STREAMED = {
    "matched-bias": "it sets each comparison against the unrelated judges' verdicts on the same prompt and pair, "
    "held in other partitions",
    "preference-leakage-score": "it compares two judges' verdicts on their students' comparisons, held in two partitions",
    "ranking-difference": _RANKED,
    "mipa": _REFERENCE,
    "equal-opportunity-bias": _REFERENCE,
    "error-bias": _REFERENCE,
    "judge-accuracy": _REFERENCE,
    "legitimate-self-preference-ratio": _REFERENCE,
    "harmful-self-preference-propensity": _REFERENCE,
    "task-accuracy": _REFERENCE,
    "reasoning-length": _REFERENCE,
    "perplexity-win-rate": _REFERENCE + " or bins perplexity differences over the whole table",
    "log-perplexity-gap": _REFERENCE,
    "mean-log-perplexity": _REFERENCE,
}
_BY_REFERENCE = {
    "preference-ref": ("mipa", "equal-opportunity-bias", "error-bias", "ranking-difference"),
    "correctness-ref": (
        "judge-accuracy",
        "legitimate-self-preference-ratio",
        "harmful-self-preference-propensity",
        "task-accuracy",
        "reasoning-length",
        "mipa",
        "equal-opportunity-bias",
        "error-bias",
        "ranking-difference",
    ),
    "rubric-ref": (
        "mipa",
        "equal-opportunity-bias",
        "error-bias",
        "ranking-difference",
        "judge-accuracy",
        "legitimate-self-preference-ratio",
        "harmful-self-preference-propensity",
        "task-accuracy",
    ),
    "perplexity": ("perplexity-win-rate", "log-perplexity-gap", "mean-log-perplexity"),
}
_PARTITION_COLUMNS = ("judge", "condition")
#: paired gaps estimated together (their per-prompt sums held at once)
CHUNK = 256


@dataclass
class _Kept:
    """The kept blocks of one partition: per block its group, ids, names and a slice of the cells."""

    labels: np.ndarray  # the partition's instance labels in text order (cell instance codes index it)
    reasons: np.ndarray  # the partition's exclusion-reason labels (reason codes index it)
    group: list[tuple[str, str]] = field(default_factory=list)
    gid: list[str] = field(default_factory=list)
    oid: list[str] = field(default_factory=list)
    gen_name: list[str] = field(default_factory=list)
    opp_name: list[str] = field(default_factory=list)
    generators: list[frozenset[str]] = field(default_factory=list)
    opponents: list[frozenset[str]] = field(default_factory=list)
    cells: list[tuple[int, int]] = field(default_factory=list)
    flagged: list[tuple[int, int]] = field(default_factory=list)
    instance: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    score2: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint16))
    count: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint16))
    missing: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint16))
    reason_instance: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    reason: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))


def _small(values: np.ndarray) -> np.ndarray:
    """Whole-number per-prompt sums as uint16 (int32 when a cell holds more)."""
    out: np.ndarray = np.rint(values)
    return out.astype(np.uint16) if (out.size == 0 or out.max() < 2**16) else out.astype(np.int32)


def _keep(rows: _Rows, blocks: _Blocks, labels: np.ndarray, related: Callable[[str], bool]) -> _Kept:
    """The blocks of one partition that a paired gap can use (generator related to some judge)."""
    keep = np.array([any(related(name) for name in names) for names in blocks.generators], dtype=bool)
    kept = _Kept(labels=labels, reasons=np.asarray(rows.reasons, dtype=object))
    cells, flagged = [], []
    offset = reason_offset = 0
    for b in np.flatnonzero(keep).tolist():
        first = blocks.first[b]
        kept.group.append(rows.groups[int(blocks.group[b])])
        kept.gid.append(str(rows.ids[blocks.gid[b]]))
        kept.oid.append(str(rows.ids[blocks.oid[b]]))
        kept.gen_name.append(str(rows.models[rows.gen[first]]))
        kept.opp_name.append(str(rows.models[rows.opp[first]]))
        kept.generators.append(blocks.generators[b])
        kept.opponents.append(blocks.opponents[b])
        span = blocks.cells(b)
        cells.append(span)
        kept.cells.append((offset, offset + span.stop - span.start))
        offset += span.stop - span.start
        lo, hi = int(blocks.reason_starts[b]), int(blocks.reason_starts[b + 1])
        flagged.append(slice(lo, hi))
        kept.flagged.append((reason_offset, reason_offset + hi - lo))
        reason_offset += hi - lo
    if cells:
        take = np.concatenate([np.arange(s.start, s.stop) for s in cells])
        kept.instance = blocks.instance[take].astype(np.int32)
        kept.score2 = _small(blocks.score[take] * 2.0)
        kept.count = _small(blocks.count[take])
        kept.missing = _small(blocks.missing[take])
        marks = np.concatenate([np.arange(s.start, s.stop) for s in flagged])
        kept.reason_instance = blocks.reason_instance[marks].astype(np.int32)
        kept.reason = blocks.reason[marks].astype(np.int32)
    return kept


class _Scaled:
    """Per block, a float column of the kept cells (``blocks.score[b]`` in `_paired`)."""

    def __init__(self, parts: list[tuple[_Kept, int]], column: str, scale: float):
        self.parts, self.column, self.scale = parts, column, scale

    def __getitem__(self, b: int) -> np.ndarray:
        kept, k = self.parts[b]
        lo, hi = kept.cells[k]
        column: np.ndarray = getattr(kept, self.column)
        return column[lo:hi].astype(float) * self.scale


class _Instances:
    def __init__(self, parts: list[tuple[_Kept, int]], lookup: dict[int, np.ndarray]):
        self.parts, self.lookup = parts, lookup

    def __getitem__(self, b: int) -> np.ndarray:
        kept, k = self.parts[b]
        lo, hi = kept.cells[k]
        codes: np.ndarray = self.lookup[id(kept)][kept.instance[lo:hi]]
        return codes


class _MergedBlocks:
    """The kept blocks of every partition, in the order `nepotism.analyses.audit._Blocks` sorts
    them, with the attributes `_paired_gaps` and `_paired` read (``cells(b)`` is the block itself:
    the per-block columns are read block by block, never concatenated)."""

    def __init__(self, kept: list[_Kept], groups: list[tuple[str, str]]):
        position = {g: i for i, g in enumerate(groups)}
        labels = np.unique(np.concatenate([k.labels for k in kept])) if kept else np.zeros(0, dtype=object)
        reasons = np.unique(np.concatenate([k.reasons for k in kept]).astype(str)) if kept else np.zeros(0, object)
        self.reasons = np.asarray(reasons, dtype=object)
        instance_lookup = {id(k): np.searchsorted(labels, k.labels).astype(np.int64) for k in kept}
        reason_lookup = {
            id(k): np.searchsorted(reasons, k.reasons.astype(str)).astype(np.int64) if k.reasons.size else np.zeros(0, np.int64)
            for k in kept
        }
        entries = [(k, b) for k in kept for b in range(len(k.group))]
        ids = sorted({name for k in kept for name in (*k.gid, *k.oid)})
        code = {name: i for i, name in enumerate(ids)}
        n_ids = max(len(ids), 1)
        keys = np.array(
            [(position[k.group[b]] * n_ids + code[k.gid[b]]) * n_ids + code[k.oid[b]] for k, b in entries], dtype=np.int64
        )
        order = np.argsort(keys, kind="stable")
        self.parts = [entries[i] for i in order.tolist()]
        self.codes = keys[order]
        self.group = self.codes // (n_ids * n_ids)
        self.pair = self.codes % (n_ids * n_ids)
        self.first = np.arange(len(self.parts))
        self.generators = [k.generators[b] for k, b in self.parts]
        self.opponents = [k.opponents[b] for k, b in self.parts]
        self.gen_names = [k.gen_name[b] for k, b in self.parts]
        self.opp_names = [k.opp_name[b] for k, b in self.parts]
        self.instance = _Instances(self.parts, instance_lookup)
        self.score = _Scaled(self.parts, "score2", 0.5)
        self.count = _Scaled(self.parts, "count", 1.0)
        self.missing = _Scaled(self.parts, "missing", 1.0)
        reason_instance, reason, starts = [], [], [0]
        for k, b in self.parts:
            lo, hi = k.flagged[b]
            reason_instance.append(instance_lookup[id(k)][k.reason_instance[lo:hi]])
            reason.append(reason_lookup[id(k)][k.reason[lo:hi]])
            starts.append(starts[-1] + hi - lo)
        self.reason_instance = np.concatenate(reason_instance) if reason_instance else np.zeros(0, np.int64)
        self.reason = np.concatenate(reason) if reason else np.zeros(0, np.int64)
        self.reason_starts = np.array(starts, dtype=np.int64)
        self.by_pair: dict[int, list[int]] = {}
        for b, pair in enumerate(self.pair.tolist()):
            self.by_pair.setdefault(pair, []).append(b)

    def cells(self, b: int) -> int:
        return b


class _MergedRows:
    """What `_paired_gaps` reads of `nepotism.analyses.audit._Rows`: every group of the dataset,
    each block's first-row names (``models[gen[first]]``), the reason labels."""

    def __init__(self, groups: list[tuple[str, str]], blocks: _MergedBlocks, relations: _Relations):
        self.groups = groups
        self.judge_id = [relations.canonical(judge) for judge, _ in groups]
        n = len(blocks.parts)
        self.models = np.array(blocks.gen_names + blocks.opp_names, dtype=object)
        self.gen = np.arange(n)
        self.opp = np.arange(n, 2 * n)
        self.reasons = blocks.reasons


class _Boards:
    """The leaderboards' per-prompt sums (`nepotism.analyses.derived.leaderboard_records`), one
    partition at a time: per (prompt, judge, generator) the summed preference score and the count
    of comparisons, with every judge and with the unrelated judges only; rows dropped per
    generator; whom each generator met."""

    def __init__(self, registry: Registry):
        self.registry = registry
        # per partition: (its prompt, judge, generator labels), (their codes and 4 sums per present cell)
        self.parts: list[tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]] = []
        self.dropped: dict[str, int] = {}
        self.met: dict[str, set[str]] = {}

    def add(self, comparisons: pd.DataFrame) -> None:
        outcome = comparisons["outcome"].to_numpy(dtype=float)
        decided = np.flatnonzero(~np.isnan(outcome))
        if not decided.size:
            return
        outcome = outcome[decided]
        instance, labels = pd.factorize(text_values(comparisons["instance_id"])[decided], sort=True)
        judge, judges = pd.factorize(text_values(comparisons["judge"])[decided], sort=True)
        n = decided.size
        models, names = pd.factorize(
            np.concatenate([text_values(comparisons["model_x"])[decided], text_values(comparisons["model_y"])[decided]]),
            sort=True,
        )
        gen, opp = models, np.concatenate([models[n:], models[:n]])
        score2 = np.concatenate([outcome + 1.0, 1.0 - outcome])  # twice the preference: whole numbers
        both_judge, both_instance = np.concatenate([judge, judge]), np.concatenate([instance, instance])
        related = np.array([[self.registry.is_related(str(j), str(m)) for m in names] for j in judges], dtype=bool)
        drop = related[both_judge, gen] | related[both_judge, opp]
        width = len(labels) * len(judges) * len(names)
        cell = (both_instance.astype(np.int64) * len(judges) + both_judge) * len(names) + gen
        sums = [
            np.bincount(cell, weights=w, minlength=width)
            for w in (score2, None, np.where(drop, 0.0, score2), (~drop).astype(float))
        ]
        present = np.flatnonzero(sums[1] > 0)
        rest, g = np.divmod(present, len(names))
        i, j = np.divmod(rest, len(judges))
        self.parts.append(
            (
                (np.asarray(labels, dtype=object), np.asarray(judges, dtype=object), np.asarray(names, dtype=object)),
                (i.astype(np.int32), j.astype(np.int32), g.astype(np.int32), *(_small(s[present]) for s in sums)),
            )
        )
        for code, count in zip(*np.unique(gen[drop], return_counts=True)):
            self.dropped[str(names[code])] = self.dropped.get(str(names[code]), 0) + int(count)
        for pair in np.unique(gen.astype(np.int64) * len(names) + opp).tolist():
            self.met.setdefault(str(names[pair // len(names)]), set()).add(str(names[pair % len(names)]))

    def records(self, bootstrap: Bootstrap) -> list[dict[str, Any]]:
        if not self.parts:
            return []
        # every partition's codes in the sorted labels of all partitions (text order, as in memory)
        every = [np.unique(np.concatenate([part[0][k] for part in self.parts])) for k in range(3)]
        codes = [
            np.concatenate([np.searchsorted(every[k], part[0][k]).astype(np.int64)[part[1][k]] for part in self.parts])
            for k in range(3)
        ]
        score2, count, kept_score2, kept_count = (
            np.concatenate([part[1][k] for part in self.parts]).astype(float) for k in range(3, 7)
        )
        self.parts = []
        instance, judge, generator = codes
        names, judges = np.asarray(every[2], dtype=object), np.asarray(every[1], dtype=object)
        # the opponent codes are not read by the boards, only whether the rows are pairwise
        side = _Side(instance, judge, generator, score2 / 2.0, names, judges, opponent=np.zeros(len(instance)), weight=count)
        kept = side.subset(kept_count > 0)
        kept.score, kept.weight = kept_score2[kept_count > 0] / 2.0, kept_count[kept_count > 0]
        dropped = {name: self.dropped[name] for name in sorted(self.dropped)}
        return pairwise_boards(side, kept, dropped, self.met, self.registry, bootstrap)


class _Chunked(_Pending):
    """A `_Pending` estimated every ``size`` items: `ClusterSetBatch` estimates are those of each
    item alone, so the numbers are the same, and only ``size`` items' per-prompt sums are held (a
    judge of a 48-judge table has thousands of paired gaps, each with two columns per prompt)."""

    def __init__(self, bootstrap: Bootstrap, size: int | None = None):
        super().__init__(bootstrap)
        self.bootstrap, self.size = bootstrap, size or CHUNK
        self.done: list[dict[str, Any]] = []

    def add(self, record: dict[str, Any], definition: Definition, parts: ClusterSums, reasons: dict[str, int] | None) -> None:
        super().add(record, definition, parts, reasons)
        if len(self.records) >= self.size:
            self.done += super().finish()
            self.batch, self.records = _Pending(self.bootstrap).batch, []

    def finish(self) -> list[dict[str, Any]]:
        return self.done + super().finish()


def _dataset_judges(partitions: list[tuple[dict[str, str], list[Path]]]) -> set[str]:
    """Every judge of the dataset, from the partition folders or (else) the files' judge column."""
    judges: set[str] = set()
    for values, files in partitions:
        if "judge" in values:
            judges.add(values["judge"].strip())
            continue
        for path in files:
            try:
                column = pq.read_table(path, columns=["judge"]).column(0)
            except Exception:  # unreadable or no judge column: the partition's reading says so, with its line
                continue
            judges.update(str(v).strip() for v in column.unique().to_pylist() if v is not None)
    return judges


#: Why the per-evaluatee self-preference ratios are not computed when streaming.
PER_EVALUATEE = (
    "the per-evaluatee self-preference ratios and their mean (paper 004 Tables 1/3/5) are not kept "
    "per evaluatee when streaming (the pooled ratio is)"
)


def _not_computed(metric: str, bootstrap: Bootstrap, reason: str | None = None) -> dict[str, Any]:
    why = f"not computed when streaming: {reason or NOT_STREAMED[metric]}; run without --stream"
    estimate = undefined(why, bootstrap=bootstrap)
    return {
        "metric": metric,
        "judge": None,
        "condition": None,
        "generator": None,
        "pair": None,
        "scope": None,
        "variant": {"streaming": "not computed"},
        **estimate.as_dict(),
    }


def stream_pairwise(
    source: str | Path,
    registry: Registry,
    *,
    bootstrap: Bootstrap,
    rule: str = "consistent",
    opponents: tuple[str, ...] = ("unrelated", "any"),
    kind: str | None = None,
    reference_kinds: tuple[str, ...] = (),
    ranked: bool = False,
    check: Callable[[Table], None] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(records, summary) of a pairwise dataset read one partition at a time (module docstring).

    ``check`` is called on each partition's validated table before anything is computed from it
    (`nepotism.api.check_registry`); ``reference_kinds`` and ``ranked`` (a leaderboard or
    rank-against was asked for) add the metrics they would have given to the not-computed list.
    """
    if kind is not None and kind != "pairwise":
        raise InputError(f"--stream computes pairwise metrics; this is a {kind} table: run without --stream", field="--stream")
    partitions = dataset_partitions(source)
    if not partitions:
        raise InputError("the dataset holds no Parquet file (.parquet)", path=str(source))
    for values, files in partitions:
        other = sorted(set(values) - set(_PARTITION_COLUMNS))
        if other:
            raise InputError(
                f"--stream pairs the two presentation orders of a comparison within a partition, so the "
                f"dataset must be partitioned by judge (and/or condition), not by {', '.join(other)}; "
                "run without --stream",
                path=str(files[0]),
                field="--stream",
            )
    judges = _dataset_judges(partitions)
    relations = _Relations(registry)
    related_memo: dict[str, bool] = {}

    def related(name: str) -> bool:
        if name not in related_memo:
            related_memo[name] = any(registry.is_related(j, name) for j in judges)
        return related_memo[name]

    audit_options = AuditOptions(bootstrap=bootstrap, opponents=tuple(opponents))
    suite_options = SuiteOptions(bootstrap=bootstrap, rule=rule)
    audit: dict[tuple[str, str], list[dict[str, Any]]] = {}
    excluded: dict[tuple[str, str], list[dict[str, Any]]] = {}
    position: dict[tuple[str, str], list[dict[str, Any]]] = {}
    kept: list[_Kept] = []
    boards = _Boards(registry)
    where: dict[tuple[str, str], str] = {}
    totals = {"rows": 0, "comparisons": 0, "single_order_comparisons": 0}
    excluded_comparisons: dict[str, dict[str, int]] = {}
    generators: set[str] = set()
    instance_labels: list[np.ndarray] = []
    has_perplexity = False
    for values, files in partitions:
        table = read_files([(path, values) for path in files], kind=kind, source=source)
        if table is None:
            continue
        if table.kind != "pairwise":
            raise InputError(
                f"--stream computes pairwise metrics; this is a {table.kind} table: run without --stream",
                path=str(files[0]),
                field="--stream",
            )
        kind = "pairwise"  # the first partition tells; the others are read as that kind
        if check is not None:
            check(table)
        frame = table.frame
        has_perplexity = has_perplexity or "perplexity_a" in frame
        comparisons = build_comparisons(frame, rule=rule)
        rows = _Rows(comparisons.frame, relations)
        for group in range(len(rows.groups)):
            key = rows.groups[group]
            if key in where:
                raise InputError(
                    f"judge '{key[0]}', condition '{key[1]}' has rows in two partitions ({where[key]} and "
                    f"{files[0].parent}); --stream needs each judge's rows in one partition: run "
                    "without --stream",
                    path=str(files[0]),
                    field="--stream",
                )
            where[key] = str(files[0].parent)
            pending = _Pending(bootstrap)
            _win_rates(rows, group, relations, pending)
            _scope_records(rows, group, relations, audit_options, pending)
            audit[key] = pending.finish()
        labels = np.unique(text_values(comparisons.frame["instance_id"]))
        instance_labels.append(labels)
        kept.append(_keep(rows, _Blocks(rows), labels, related))
        boards.add(comparisons.frame)
        for record in exclusion_records(frame, "pairwise", suite_options, comparisons.rows):  # paired once
            excluded.setdefault((record["judge"], record["condition"]), []).append(record)
        for record in _position_records(frame, suite_options, comparisons.rows):
            position.setdefault((record["judge"], record["condition"]), []).append(record)
        totals["rows"] += len(frame)
        totals["comparisons"] += len(comparisons.frame)
        totals["single_order_comparisons"] += int((comparisons.frame["n_orders"] == 1).sum())
        for (judge, condition), counts in comparisons.excluded.items():
            excluded_comparisons[f"{judge} / {condition}"] = counts
        generators.update(candidates(comparisons.frame))
        del table, frame, comparisons, rows
    if not audit:
        raise InputError("the dataset has no rows", path=str(source))

    groups = sorted(audit)
    blocks = _MergedBlocks(kept, groups)
    merged = _MergedRows(groups, blocks, relations)
    records: list[dict[str, Any]] = []
    for number, key in enumerate(groups):
        pending = _Chunked(bootstrap)
        _paired_gaps(merged, blocks, number, relations, pending)
        records += audit[key] + pending.finish()
    for key in groups:
        records += excluded.get(key, [])
    for key in groups:
        records += position.get(key, [])
    del blocks, merged, kept
    records += boards.records(bootstrap)

    missing = ["matched-bias"]
    students = {
        r["judge"]
        for group in audit.values()
        for r in group
        if r["metric"] == "self-preference-ratio" and r["scope"] == "student" and r.get("generators")
    }
    if len(students) >= 2:
        missing.append("preference-leakage-score")
    if ranked:
        missing.append("ranking-difference")
    for ref in (*reference_kinds, *(("perplexity",) if has_perplexity else ())):
        missing += [m for m in _BY_REFERENCE.get(ref, ()) if m not in missing]
    records += [_not_computed(metric, bootstrap) for metric in missing]
    # the per-evaluatee SPR (004 Tables 1/3/5) is a variant of a streamed metric: said, not dropped
    records.append(
        {
            **_not_computed("self-preference-ratio", bootstrap, PER_EVALUATEE),
            "variant": {"averaging": "per-evaluatee and one evaluatee", "streaming": "not computed"},
        }
    )
    n_instances = int(np.unique(np.concatenate(instance_labels)).size) if instance_labels else 0
    summary = {
        "rows": totals["rows"],
        "kind": "pairwise",
        "comparisons": totals["comparisons"],
        "single_order_comparisons": totals["single_order_comparisons"],
        "excluded_comparisons": dict(sorted(excluded_comparisons.items())),
        "instances": n_instances,
        "judges": sorted({judge for judge, _ in groups}),
        "generators": len(generators),
        "generators_not_in_registry": sorted(m for m in generators if not registry.knows(m)),
        "aggregation_rule": rule,
        "streamed": {"partitions": len(partitions), "metrics": list(STREAMED)},
        "not_computed_when_streaming": [f"{m} ({NOT_STREAMED[m]}; run without --stream)" for m in missing]
        + [f"self-preference-ratio per evaluatee ({PER_EVALUATEE}; run without --stream)"],
    }
    return records, summary
