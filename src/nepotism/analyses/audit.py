"""The recorded-judgment audit: every first metric, for every judge, as a list of result records.

Given aggregated comparisons and the model registry, this computes per (judge, condition):

- ``win-rate`` of every generator the judge saw (ties as ½; paper 000 / AlpacaEval convention);
- ``self-preference-ratio`` (paper 004 Eq. 2) and ``demographic-parity-bias`` (paper 001 Eq. 4)
  for each relation *scope*: ``self`` (the judge's own answers), ``family`` (same family, series
  or lineage, the judge itself excluded — paper 002 Eq. 2's text), ``student`` (models trained on
  the judge's outputs) and ``family-student`` (models trained on outputs of the judge's relatives).
  Two opponent populations, reported as the variant ``opponents``: ``unrelated`` (the default
  reading: the other candidate has no relation to the judge) and ``any`` (any candidate less
  closely related to the judge than the scoped one, by the registry's precedence — e.g. the
  judge's own answer facing a family member; used where no unrelated opponent exists, and flagged);
- ``paired-win-rate-gap``: for a candidate R related to the judge and an opponent O, the judge's
  win rate for R minus another judge's win rate for R on the same instances against the same
  opponent — how the same comparison fares with every other judge available. Matching is on the
  generators' registry ids: when the two judges saw different samples of the same models (different
  names that the registry resolves to one id) the variant says ``texts: same models, other samples``.
  The bootstrap resamples the shared instances.

How it is computed: ids are turned into integer codes once; each record's per-prompt sums are built
from those codes by the metric's one definition (`nepotism.metrics.definitions`, which the public
estimators of `nepotism.metrics.pairwise` run too; a judge's win rates, one per generator, in one
pass with the generator as the group code), and
the bootstrap products of a (judge, condition)'s records that resample the same number of prompts
are one matrix product (`nepotism.metrics._batch.ClusterSetBatch`; one batch per judge and
condition, so only that group's per-prompt sums are held at once), which gives the numbers that calling
`win_rate`, `self_preference_ratio`, `demographic_parity_bias` and `cluster_bootstrap` record by
record gives, bit for bit (``tests/analyses/test_audit_fast.py`` checks this against that
straightforward computation).

Each record is ``{metric, judge, judge_id, condition, generator, pair, scope, variant, value, ci_low,
ci_high, n, n_clusters, n_excluded, excluded, note, p_value}``. What this module leaves out: reading
files (`nepotism.tables`) and presenting results (`nepotism.report`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt
import pandas as pd

from nepotism.analyses.comparisons import Comparisons, name_codes, reason_counts, with_reason_counts
from nepotism.metrics._batch import ClusterSetBatch
from nepotism.metrics._common import checked, undefined
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.metrics._estimate import Estimate
from nepotism.models import AUDITED_SCOPES, SCOPE_LADDER, Registry, Relation
from nepotism.results import new_record
from nepotism.metrics.definitions import (
    DEMOGRAPHIC_PARITY_BIAS,
    PAIRED_WIN_RATE_GAP,
    SELF_PREFERENCE_RATIO,
    WIN_RATE,
    ClusterSums,
    Definition,
    win_score,
)

__all__ = ["OPPONENT_POPULATIONS", "SCOPES", "AuditOptions", "audit_pairwise"]

#: The scopes audited (membership: `nepotism.models.Registry.scope`, the one rule).
SCOPES = AUDITED_SCOPES
OPPONENT_POPULATIONS = ("unrelated", "any")
#: Strongest relation first (the registry's precedence, `nepotism.models.Relation` order): orients paired gaps.
_STRENGTH = [relation.name for relation in Relation]


@dataclass(frozen=True)
class AuditOptions:
    """Bootstrap and variant options shared by every metric of one audit."""

    bootstrap: Bootstrap = Bootstrap()
    opponents: tuple[str, ...] = OPPONENT_POPULATIONS


class _Relations:
    """Registry look-ups memoised per (judge, model) name pair."""

    def __init__(self, registry: Registry):
        self.registry = registry
        self._relation: dict[tuple[str, str], str] = {}
        self._scope: dict[tuple[str, str], str] = {}
        self._id: dict[str, str] = {}

    def __call__(self, judge: str, model: str) -> str:
        key = (judge, model)
        if key not in self._relation:
            self._relation[key] = self.registry.relation(judge, model).name
        return self._relation[key]

    def scope(self, judge: str, model: str) -> str:
        key = (judge, model)
        if key not in self._scope:
            self._scope[key] = self.registry.scope(judge, model)
        return self._scope[key]

    def canonical(self, name: str) -> str:
        if name not in self._id:
            base = name.split("@", 1)[0]
            try:
                self._id[name] = self.registry.resolve(base) + (name[len(base) :] if "@" in name else "")
            except (KeyError, AttributeError):
                self._id[name] = name
        return self._id[name]


def _instance_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Instance codes in the order `cluster_sums` sorts the labels as given (``native``) and as
    strings (``text``; the paired gaps compare instances by their text)."""
    if values.dtype.kind in "iub":
        labels, native = np.unique(values, return_inverse=True)
    else:
        native, labels = pd.factorize(values.astype(object) if values.dtype.kind != "O" else values, sort=True)
    native = np.asarray(native, dtype=np.int64).ravel()
    text = np.asarray(labels).astype(str)
    if text.size > 1 and not np.all(text[:-1] < text[1:]):
        remap, _ = pd.factorize(text.astype(object), sort=True)
        return native, np.asarray(remap, dtype=np.int64)[native]
    return native, native


class _Rows:
    """Both candidates' rows of every comparison, arranged per (judge, condition) in sorted order: the
    X-side rows of that judge and condition in frame order, then the Y-side rows (outcome flipped)."""

    def __init__(self, frame: pd.DataFrame, relations: _Relations):
        n = len(frame)
        judge_codes, self.judges = name_codes(frame["judge"].to_numpy())
        condition_codes, self.conditions = name_codes(frame["condition"].to_numpy())
        present, jc = np.unique(judge_codes * len(self.conditions) + condition_codes, return_inverse=True)
        jc = jc.ravel()
        self.groups = [(str(self.judges[k // len(self.conditions)]), self.conditions[k % len(self.conditions)]) for k in present]
        order = np.argsort(np.concatenate([2 * jc, 2 * jc + 1]), kind="stable")
        y_side = order >= n
        source = np.where(y_side, order - n, order)
        self.jc = jc[source].astype(np.int32)  # per-row codes as int32: the rows are the table's twice over
        self.bounds = np.searchsorted(self.jc, np.arange(len(present) + 1))
        models, self.models = name_codes(
            np.concatenate([frame["model_x"].to_numpy(dtype=object), frame["model_y"].to_numpy(dtype=object)])
        )
        x, y = models[:n][source], models[n:][source]
        self.gen = np.where(y_side, y, x).astype(np.int32)
        self.opp = np.where(y_side, x, y).astype(np.int32)
        del x, y
        outcome = checked(frame["outcome"].to_numpy(dtype=float), "outcome", low=-1.0, high=1.0)[source]
        self.outcome = np.where(y_side, -outcome, outcome)
        prob = frame["prob_x"].to_numpy(dtype=float)[source]
        self.prob = np.where(y_side, 1.0 - prob, prob)
        native, text = _instance_codes(frame["instance_id"].to_numpy())
        self.instance, self.instance_text = native[source].astype(np.int32), text[source].astype(np.int32)
        self.n_instances = int(text.max()) + 1 if n else 0
        self.reason, self.reasons = self._reason_codes(frame, "excluded_reason", source)
        self.prob_reason, self.prob_reasons = self._reason_codes(frame, "prob_excluded_reason", source)
        ids = np.array([relations.canonical(str(m)) for m in self.models], dtype=object)
        id_codes, self.ids = name_codes(ids)
        self.model_id = id_codes  # model code → id code
        self.judge_id = [relations.canonical(judge) for judge, _ in self.groups]

    @staticmethod
    def _reason_codes(
        frame: pd.DataFrame, column: str, source: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.signedinteger[Any]], npt.NDArray[np.object_]]:
        if column not in frame:
            return np.full(source.size, -1, dtype=np.int64), np.array([], dtype=object)
        values = frame[column].to_numpy(dtype=object)
        keep = np.asarray(pd.notna(values), dtype=bool)  # a comparisons frame's labels: str, or None for none
        codes = np.full(values.size, -1, dtype=np.int32)
        labels = np.array([], dtype=object)
        if keep.any():
            found, labels = name_codes(values[keep])
            codes[keep] = found
        return codes[source], labels

    def span(self, group: int) -> slice:
        return slice(int(self.bounds[group]), int(self.bounds[group + 1]))


class _Pending:
    """Records whose estimates come from one `ClusterSetBatch`, in the order they were added."""

    def __init__(self, bootstrap: Bootstrap):
        self.batch = ClusterSetBatch(bootstrap)
        self.records: list[tuple[dict[str, Any], int | Estimate, dict[str, int] | None]] = []

    def add(self, record: dict[str, Any], definition: Definition, parts: ClusterSums, reasons: dict[str, int] | None) -> None:
        index = self.batch.add(parts.sums, definition.statistic, n=parts.n, n_excluded=parts.n_excluded, excluded=parts.excluded)
        self.records.append((record, index, reasons))

    def ready(self, record: dict[str, Any], estimate: Estimate) -> None:
        self.records.append((record, estimate, None))

    def finish(self) -> list[dict[str, Any]]:
        estimates = self.batch.run()
        out = []
        for record, item, reasons in self.records:
            estimate = estimates[item] if isinstance(item, int) else item
            if reasons is not None:
                estimate = with_reason_counts(estimate, reasons)
            record.update(estimate.as_dict())
            out.append(record)
        return out


def _base(metric: str, judge: str, condition: str, relations: _Relations, **extra: Any) -> dict[str, Any]:
    return new_record(metric, judge, condition, judge_id=relations.canonical(judge), **extra)


def _win_rates(rows: _Rows, group: int, relations: _Relations, pending: _Pending) -> None:
    judge, condition = rows.groups[group]
    span = rows.span(group)
    gen = rows.gen[span]
    models, parts = WIN_RATE.sums_by_group(rows.outcome[span], clusters=rows.instance[span], groups=gen)
    order = np.argsort(gen, kind="stable")
    starts = np.searchsorted(gen[order], models)
    for model, start, end, sums in zip(models, starts, [*starts[1:], gen.size], parts):
        take = order[start:end] + span.start
        generator = str(rows.models[model])
        outcome = rows.outcome[take]
        opponents = [str(m) for m in rows.models[np.unique(rows.opp[take])]]
        variant = {"ties": "half", "opponents": opponents if len(opponents) <= 3 else f"{len(opponents)} models"}
        record = _base(
            "win-rate",
            judge,
            condition,
            relations,
            generator=generator,
            variant=variant,
            relation=relations(judge, generator).lower(),
            n_ties=int((outcome == 0).sum()),
        )
        pending.add(record, WIN_RATE, sums, reason_counts(rows.reason[take], rows.reasons))


def _scope_records(rows: _Rows, group: int, relations: _Relations, options: AuditOptions, pending: _Pending) -> None:
    judge, condition = rows.groups[group]
    span = rows.span(group)
    ladder = np.array([SCOPE_LADDER.index(relations.scope(judge, str(m))) for m in rows.models], dtype=np.int64)
    generator_rung = ladder[rows.gen[span]]
    opponent_rung = ladder[rows.opp[span]]
    unrelated = opponent_rung >= SCOPE_LADDER.index("unrelated")
    for scope in SCOPES:
        rung = SCOPE_LADDER.index(scope)
        generator_in = generator_rung == rung
        for opponents in options.opponents:
            if opponents == "unrelated":
                mask = generator_in & unrelated
            else:  # any candidate less related to the judge (`nepotism.models.less_related`)
                mask = generator_in & (opponent_rung > rung)
            take = np.flatnonzero(mask) + span.start
            base: dict[str, Any] = {
                "scope": scope,
                "variant": {"opponents": opponents},
                "generators": [str(m) for m in rows.models[np.unique(rows.gen[take])]],
                "opponent_models": [str(m) for m in rows.models[np.unique(rows.opp[take])]][:20],
            }
            if not take.size:
                what = "an unrelated" if opponents == "unrelated" else "any other"
                empty = undefined(f"no comparison of a {scope} candidate with {what} model", bootstrap=options.bootstrap)
                pending.ready(_base("self-preference-ratio", judge, condition, relations, **base), empty)
                pending.ready(_base("demographic-parity-bias", judge, condition, relations, **base), empty)
                continue
            clusters = rows.instance[take]
            outcomes = rows.outcome[take]
            decided = outcomes[~np.isnan(outcomes)]
            reasons = reason_counts(rows.reason[take], rows.reasons)
            pending.add(
                _base(
                    "self-preference-ratio",
                    judge,
                    condition,
                    relations,
                    tie_share=float(np.mean(decided == 0)) if decided.size else None,
                    **base,
                ),
                SELF_PREFERENCE_RATIO,
                SELF_PREFERENCE_RATIO.sums(outcomes, clusters=clusters),
                reasons,
            )
            related = np.repeat([True, False], take.size)
            both = np.concatenate([clusters, clusters])
            score = win_score(outcomes)  # the verdict as a preference: 1, ½ (tie) or 0
            pending.add(
                _base(
                    "demographic-parity-bias",
                    judge,
                    condition,
                    relations,
                    **{**base, "variant": {**base["variant"], "preference": "verdict"}},
                ),
                DEMOGRAPHIC_PARITY_BIAS,
                DEMOGRAPHIC_PARITY_BIAS.sums(np.concatenate([score, 1.0 - score]), related, clusters=both),
                {k: 2 * v for k, v in reasons.items()},
            )
            prob = rows.prob[take]
            if (~np.isnan(prob)).any():
                prob = checked(prob, "preference", low=0.0, high=1.0)
                chosen = np.where(np.isnan(prob), np.nan, np.sign(prob - 0.5) / 2 + 0.5)  # 001 Eq. 3's argmax
                for reading, values in (("probability", prob), ("probability-argmax", chosen)):
                    pending.add(
                        _base(
                            "demographic-parity-bias",
                            judge,
                            condition,
                            relations,
                            **{**base, "variant": {**base["variant"], "preference": reading}},
                        ),
                        DEMOGRAPHIC_PARITY_BIAS,
                        DEMOGRAPHIC_PARITY_BIAS.sums(np.concatenate([values, 1.0 - values]), related, clusters=both),
                        reason_counts(rows.prob_reason[take], rows.prob_reasons, times=2),
                    )


class _Blocks:
    """Per (judge, condition, generator id, opponent id) block: its rows summed per instance (text
    order), the names it holds, its first row, and the rows carrying an exclusion reason."""

    def __init__(self, rows: _Rows):
        n_ids = max(len(rows.ids), 1)
        gid, oid = rows.model_id[rows.gen], rows.model_id[rows.opp]
        code = (rows.jc.astype(np.int64) * n_ids + gid) * n_ids + oid
        self.codes, first, block = np.unique(code, return_index=True, return_inverse=True)
        block = block.ravel()
        self.first = first
        self.group = self.codes // (n_ids * n_ids)
        self.pair = self.codes % (n_ids * n_ids)
        self.gid, self.oid = self.pair // n_ids, self.pair % n_ids
        width = max(rows.n_instances, 1)
        cell, where = np.unique(block * width + rows.instance_text, return_inverse=True)
        where = where.ravel()
        decided = ~np.isnan(rows.outcome)
        self.score = np.bincount(where, weights=np.where(decided, win_score(rows.outcome), 0.0), minlength=cell.size)
        self.count = np.bincount(where, weights=decided, minlength=cell.size)
        self.missing = np.bincount(where, weights=~decided, minlength=cell.size)
        self.instance = cell % width
        self.starts = np.searchsorted(cell // width, np.arange(self.codes.size + 1))
        flagged = np.flatnonzero(rows.reason >= 0)
        order = flagged[np.argsort(block[flagged], kind="stable")]
        self.reason_instance, self.reason = rows.instance_text[order], rows.reason[order]
        self.reason_starts = np.searchsorted(block[order], np.arange(self.codes.size + 1))
        self.generators = self._names(block, rows.gen, rows.models)
        self.opponents = self._names(block, rows.opp, rows.models)
        self.by_pair: dict[int, list[int]] = {}
        for b, pair in enumerate(self.pair.tolist()):
            self.by_pair.setdefault(pair, []).append(b)  # blocks are sorted by group: so is each list

    def _names(
        self, block: npt.NDArray[np.intp], models: npt.NDArray[np.int32], labels: npt.NDArray[np.object_]
    ) -> list[frozenset[str]]:
        pairs = np.unique(block * len(labels) + models)
        out: list[set[str]] = [set() for _ in range(self.codes.size)]
        for b, m in zip((pairs // len(labels)).tolist(), (pairs % len(labels)).tolist()):
            out[b].add(str(labels[m]))
        return [frozenset(names) for names in out]

    def cells(self, b: int) -> slice:
        return slice(int(self.starts[b]), int(self.starts[b + 1]))


_Cells = TypeVar("_Cells", slice, int)
_CellsIn = TypeVar("_CellsIn", contravariant=True)


class _CellColumn(Protocol[_CellsIn]):
    """A per-cell column of the blocks, read at ``cells(b)``: an array sliced (`_Blocks`) or, when
    streaming, a block's own column picked by its number (`nepotism.analyses.stream._MergedBlocks`)."""

    def __getitem__(self, cells: _CellsIn, /) -> np.ndarray: ...


class _GapBlocks(Protocol[_Cells]):
    """What `_paired_gaps` and `_paired` read of the blocks (`_Blocks`, or the streamed partitions'
    `nepotism.analyses.stream._MergedBlocks`)."""

    @property
    def group(self) -> np.ndarray: ...
    @property
    def first(self) -> np.ndarray: ...
    @property
    def pair(self) -> np.ndarray: ...
    @property
    def by_pair(self) -> dict[int, list[int]]: ...
    @property
    def generators(self) -> list[frozenset[str]]: ...
    @property
    def opponents(self) -> list[frozenset[str]]: ...
    @property
    def instance(self) -> _CellColumn[_Cells]: ...
    @property
    def score(self) -> _CellColumn[_Cells]: ...
    @property
    def count(self) -> _CellColumn[_Cells]: ...
    @property
    def missing(self) -> _CellColumn[_Cells]: ...
    @property
    def reason_instance(self) -> np.ndarray: ...
    @property
    def reason(self) -> np.ndarray: ...
    @property
    def reason_starts(self) -> np.ndarray: ...

    def cells(self, b: int) -> _Cells: ...


class _GapRows(Protocol):
    """What `_paired_gaps` and `_paired` read of the rows (`_Rows`, or `nepotism.analyses.stream._MergedRows`)."""

    @property
    def groups(self) -> list[tuple[str, str]]: ...
    @property
    def judge_id(self) -> list[str]: ...
    @property
    def models(self) -> np.ndarray: ...
    @property
    def gen(self) -> np.ndarray: ...
    @property
    def opp(self) -> np.ndarray: ...
    @property
    def reasons(self) -> np.ndarray: ...


def _paired(
    blocks: _GapBlocks[_Cells], mine: int, theirs: int, rows: _GapRows
) -> tuple[ClusterSums, dict[str, int], float, float]:
    """(`PAIRED_WIN_RATE_GAP`'s per-prompt sums, reasons, this judge's rate, the other judge's rate) on
    the shared instances: the definition's columns summed per prompt from the blocks' per-cell
    win-rate sums (`tests/analyses/test_audit_fast.py` holds them to the definition on the rows)."""
    a, b = blocks.cells(mine), blocks.cells(theirs)
    ia_all, ib_all = blocks.instance[a], blocks.instance[b]
    if ia_all.size == ib_all.size and np.array_equal(ia_all, ib_all):
        common, ia, ib = ia_all, np.arange(ia_all.size), np.arange(ib_all.size)
    else:
        common, ia, ib = np.intersect1d(ia_all, ib_all, assume_unique=True, return_indices=True)
    score_a, count_a = blocks.score[a][ia], blocks.count[a][ia]
    score_b, count_b = blocks.score[b][ib], blocks.count[b][ib]
    n_a, n_b = int(count_a.sum()), int(count_b.sum())
    n_missing = int(blocks.missing[a][ia].sum() + blocks.missing[b][ib].sum())
    keep = (count_a + count_b) > 0
    sums = np.column_stack([score_a[keep], count_a[keep], score_b[keep], count_b[keep]])
    reasons: dict[str, int] = {}
    for block in (mine, theirs):
        lo, hi = blocks.reason_starts[block], blocks.reason_starts[block + 1]
        if hi > lo:
            shared = np.isin(blocks.reason_instance[lo:hi], common)
            for label, count in reason_counts(blocks.reason[lo:hi][shared], rows.reasons).items():
                reasons[label] = reasons.get(label, 0) + count
    parts = ClusterSums(common[keep], sums, n_a + n_b, n_missing, {"no verdict": n_missing} if n_missing else {})
    rate_a = float(score_a.sum() / n_a) if n_a else float("nan")
    rate_b = float(score_b.sum() / n_b) if n_b else float("nan")
    return parts, reasons, rate_a, rate_b


def _paired_gaps(rows: _GapRows, blocks: _GapBlocks[_Cells], group: int, relations: _Relations, pending: _Pending) -> None:
    """Win-rate gap of related candidates under this judge vs each other judge, same items and pair."""
    judge, condition = rows.groups[group]
    judge_id = rows.judge_id[group]
    if all(other == judge_id for other in rows.judge_id):
        return
    for mine in np.flatnonzero(blocks.group == group).tolist():
        first = blocks.first[mine]
        generator, opponent = str(rows.models[rows.gen[first]]), str(rows.models[rows.opp[first]])
        strength = _STRENGTH.index(relations(judge, generator))
        if relations.scope(judge, generator) in ("unrelated", "unknown") or strength > _STRENGTH.index(
            relations(judge, opponent)
        ):
            continue  # report each pair once, from its more strongly related side
        for theirs in blocks.by_pair[int(blocks.pair[mine])]:
            other = int(blocks.group[theirs])
            if rows.judge_id[other] == judge_id:
                continue
            parts, reasons, this_rate, other_rate = _paired(blocks, mine, theirs, rows)
            if parts.n == 0 and parts.n_excluded == 0:
                continue
            other_judge, other_condition = rows.groups[other]
            same_texts = (
                blocks.generators[mine] == blocks.generators[theirs] and blocks.opponents[mine] == blocks.opponents[theirs]
            )
            record = _base(
                "paired-win-rate-gap",
                judge,
                condition,
                relations,
                generator=generator,
                pair=[generator, opponent],
                scope=relations(judge, generator).lower(),
                variant={
                    "other_judge": other_judge,
                    "other_condition": other_condition,
                    "other_judge_relation": relations(other_judge, generator).lower(),
                    "other_judge_relation_to_opponent": relations(other_judge, opponent).lower(),
                    "texts": "identical" if same_texts else "same models, other samples",
                    "ties": "half",
                },
                other_generator_names=sorted(blocks.generators[theirs]),
                win_rate_this_judge=this_rate,
                win_rate_other_judge=other_rate,
            )
            pending.add(record, PAIRED_WIN_RATE_GAP, parts, reasons)


def audit_pairwise(comparisons: Comparisons, registry: Registry, *, options: AuditOptions | None = None) -> list[dict[str, Any]]:
    """Every first pairwise metric for every (judge, condition) in ``comparisons``."""
    options = options or AuditOptions()
    unknown = set(options.opponents) - set(OPPONENT_POPULATIONS)
    if unknown:
        raise ValueError(f"unknown opponent population(s): {', '.join(sorted(unknown))}")
    frame = comparisons.frame
    if frame.empty:
        return []
    relations = _Relations(registry)
    rows = _Rows(frame, relations)
    blocks = _Blocks(rows)
    records: list[dict[str, Any]] = []
    for group in range(len(rows.groups)):  # one batch per (judge, condition): its per-prompt sums only
        pending = _Pending(options.bootstrap)
        _win_rates(rows, group, relations, pending)
        _scope_records(rows, group, relations, options, pending)
        _paired_gaps(rows, blocks, group, relations, pending)
        records += pending.finish()
    return records
