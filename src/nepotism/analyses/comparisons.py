"""Turn pairwise judgment rows (one per presentation order) into comparisons (one per pair).

A *comparison* is one judge's verdict on one unordered pair of candidates for one instance, under
one condition and replicate. Its two presentation orders are combined with
`nepotism.metrics.pairwise.aggregate_orders` (paper 004 Eq. 1 by default, paper 003's strict rule as
a variant). A row whose twin order is absent is used as it is and counted as single-order. A pair
with an order without a verdict is excluded and counted under that order's
`nepotism.records.exclusion_label` (``unparsed-conflicting``, ``failed-timeout``, ...) — an
unparsed verdict never becomes a tie.

Label probabilities, where given, become paper 001's score p(X)/(p(A)+p(B)) averaged over both
orders; a pair with an order whose probabilities are missing (a verdict unparsed for low label
mass keeps none) has no score, counted in ``prob_excluded_reason`` — never a one-order average.
`with_reasons` puts these reasons into a metric's exclusion counts. This module reads no files
and knows no registry.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt
import pandas as pd

from nepotism.metrics._estimate import Estimate
from nepotism.metrics.pairwise import aggregate_orders
from nepotism.records import exclusion_label
from nepotism.tables import row_keys

__all__ = [
    "Comparisons",
    "RowPairs",
    "build_comparisons",
    "candidates",
    "exclusions_where",
    "name_codes",
    "reason_counts",
    "row_exclusions",
    "with_reason_counts",
    "with_reasons",
]

_KEY = ["instance_id", "judge", "condition", "replicate", "model_x", "model_y"]
_NAMES = ("instance_id", "judge", "condition", "model_x", "model_y")  # never empty in a validated table


@dataclass(frozen=True, eq=False)
class RowPairs:
    """How `build_comparisons` read its table's rows, kept so that the row-level metrics
    (position consistency, excluded verdicts) use the same pairing of the two orders and the same
    integer codes instead of hashing the text columns again. One entry per table row, except
    ``first``/``second`` (one per comparison, as the comparisons frame's rows).

    ``code_a``: the verdict for the candidate shown first (+1 A, -1 B, 0 tie, NaN none);
    ``a_first``: the row shows ``model_x`` (the name sorting first) as A; ``instance``: codes in
    the instances' text order; ``group``: judge code × len(conditions) + condition code, both in
    name order; ``why``: the code of the row's `exclusion_label` in ``reasons`` (-1: it has a
    verdict); ``first``/``second``: each comparison's row and its other order's row (-1: none)."""

    code_a: np.ndarray
    a_first: np.ndarray
    instance: np.ndarray
    group: np.ndarray
    judges: np.ndarray
    conditions: np.ndarray
    why: np.ndarray
    reasons: np.ndarray
    first: np.ndarray
    second: np.ndarray

    def why_labels(self, rows: np.ndarray) -> np.ndarray:
        """The exclusion labels of ``rows`` (None where the row has a verdict)."""
        return _none_last(self.reasons)[np.where(self.why[rows] >= 0, self.why[rows], len(self.reasons))]


@dataclass(frozen=True)
class Comparisons:
    """Aggregated comparisons as a frame with columns ``instance_id, judge, condition, replicate,
    model_x, model_y`` (model_x < model_y), ``outcome`` (code for model_x: +1, 0, -1), ``prob_x``
    (NaN when no probabilities), ``n_orders`` (1 or 2), ``excluded_reason`` (None, or why ``outcome`` is NaN),
    ``prob_excluded_reason`` (None, or why ``prob_x`` is NaN) and
    ``category`` when given; plus the count of comparisons excluded per reason, per
    (judge, condition). Excluded comparisons stay in the frame with a NaN outcome so that every
    metric counts them in its ``n_excluded``."""

    frame: pd.DataFrame
    excluded: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    rule: str = "consistent"
    rows: RowPairs | None = field(default=None, repr=False, compare=False)

    def excluded_for(self, judge: str, condition: str) -> dict[str, int]:
        return dict(self.excluded.get((judge, condition), {}))


def candidates(frame: pd.DataFrame) -> list[str]:
    """The distinct candidate names of a comparisons frame (``model_x`` and ``model_y``), sorted."""
    names = pd.unique(np.concatenate([frame["model_x"].to_numpy(dtype=object), frame["model_y"].to_numpy(dtype=object)]))
    return sorted(str(m) for m in names)


def row_exclusions(frame: pd.DataFrame) -> np.ndarray:
    """Per row of a judgment table, the `exclusion_label` it would be counted under without a
    verdict (its status and reason; ``unparsed`` where the table says nothing). Computed once per
    distinct (status, reason), not per row."""
    codes, labels = _exclusion_codes(frame)
    return labels.astype(object)[codes] if len(frame) else np.array([], dtype=object)


def _exclusion_codes(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """`row_exclusions` as (a code per row, the distinct labels)."""
    n = len(frame)
    status = frame["status"].to_numpy(dtype=object) if "status" in frame else np.full(n, "unparsed", dtype=object)
    reason = frame["reason"].to_numpy(dtype=object) if "reason" in frame else np.full(n, None, dtype=object)
    status_codes, statuses = pd.factorize(status, use_na_sentinel=True)
    reason_codes, reasons = pd.factorize(reason, use_na_sentinel=True)
    pairs, where = np.unique(status_codes.astype(np.int64) * (len(reasons) + 1) + reason_codes + 1, return_inverse=True)
    labels = []
    for pair in pairs.tolist():
        s_code, r_code = divmod(pair, len(reasons) + 1)
        s = statuses[s_code] if s_code >= 0 else None
        r = reasons[r_code - 1] if r_code >= 1 else None
        labels.append(
            exclusion_label(s if isinstance(s, str) and s != "parsed" else "unparsed", r if isinstance(r, str) else None)
        )
    distinct, merged = (
        np.unique(np.array(labels, dtype=object), return_inverse=True)
        if labels
        else (np.array([], dtype=object), np.zeros(0, dtype=np.int64))
    )
    return np.asarray(merged, dtype=np.int64).ravel()[where.ravel()] if n else np.zeros(0, dtype=np.int64), distinct


def _row_reasons(frame: pd.DataFrame, code: np.ndarray, prob: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: why it has no verdict (codes into the returned labels, -1: it has one) and why no
    probability (a label, None where it has one)."""
    parsed = (frame["status"].to_numpy(dtype=object) == "parsed") if "status" in frame else np.zeros(len(frame), bool)
    why, reasons = _exclusion_codes_where(frame, np.isnan(code))
    no_prob = np.isnan(prob)
    prob_why = exclusions_where(frame, no_prob & ~parsed)
    prob_why[no_prob & parsed] = "no label probabilities"
    return why, reasons, prob_why


def exclusions_where(frame: pd.DataFrame, mask: np.ndarray) -> np.ndarray:
    """`row_exclusions` of the rows where ``mask`` holds, None elsewhere (labels only where needed)."""
    codes, labels = _exclusion_codes_where(frame, mask)
    return _none_last(labels)[np.where(codes >= 0, codes, len(labels))]


def _exclusion_codes_where(frame: pd.DataFrame, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`exclusions_where` as (a code per row, -1 where ``mask`` does not hold; the distinct labels)."""
    out = np.full(len(frame), -1, dtype=np.int32)
    rows = np.flatnonzero(mask)
    if not rows.size:
        return out, np.array([], dtype=object)
    codes, labels = _exclusion_codes(frame[[c for c in ("status", "reason") if c in frame]].iloc[rows])
    out[rows] = codes
    return out, labels


#: "No label" as `np.where`'s other branch: a 0-d object array holding None (numpy's stubs do not
#: take None itself there; the result is the same object column).
_NO_LABEL = np.array(None, dtype=object)


def _none_last(labels: np.ndarray) -> npt.NDArray[np.object_]:
    """``labels`` as objects with None appended: indexed by a code, where code ``len(labels)`` (or
    -1) reads "no label"."""
    return np.concatenate([np.asarray(labels, dtype=object), np.array([None], dtype=object)])


def name_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(integer codes, labels) of a column of names, the labels sorted (codes follow name order)."""
    codes, labels = pd.factorize(np.asarray(values, dtype=object), sort=True)
    return codes.astype(np.int32 if len(labels) < 2**31 else np.int64), np.asarray(labels, dtype=object)


def _row_codes(
    frame: pd.DataFrame,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """(the key columns by name; the names coded in name order, and their labels, by column; each
    row's verdict for model_a (+1, 0 tie, -1, NaN none); whether model_a sorts first; the share of
    the label probability on the first-sorting model)."""
    a = frame["model_a"].to_numpy(dtype=object)
    b = frame["model_b"].to_numpy(dtype=object)
    codes, _ = name_codes(np.concatenate([a, b]))  # sorted: code order is name order
    a_first = codes[: len(a)] < codes[len(a) :]
    verdicts, labels = pd.factorize(frame["verdict"].to_numpy(dtype=object), use_na_sentinel=True)
    as_a = np.append(np.array([{"A": 1.0, "B": -1.0, "tie": 0.0}.get(v, np.nan) for v in labels]), np.nan)
    code_a = as_a[verdicts]  # the sentinel -1 (no verdict) reads the appended NaN
    del verdicts
    prob_x = np.full(len(frame), np.nan)
    if "prob_a" in frame and "prob_b" in frame:
        pa = frame["prob_a"].to_numpy(dtype=float)
        pb = frame["prob_b"].to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            share_a = pa / (pa + pb)
        prob_x = np.where(a_first, share_a, 1.0 - share_a)
    keyed = {
        "instance_id": frame["instance_id"].to_numpy(dtype=object),
        "judge": frame["judge"].to_numpy(dtype=object),
        "condition": frame["condition"].to_numpy(dtype=object),
        "replicate": frame["replicate"].to_numpy(),
        "model_x": a,  # as model_a/model_b here: `build_comparisons` orients them at the comparisons' rows only
        "model_y": b,
    }
    if "category" in frame:
        keyed["category"] = frame["category"].to_numpy(dtype=object)
    known: dict[str, np.ndarray] = {
        "model_x": np.where(a_first, codes[: len(a)], codes[len(a) :]),  # the names, coded once
        "model_y": np.where(a_first, codes[len(a) :], codes[: len(a)]),
    }
    labels_of: dict[str, np.ndarray] = {}
    for column in ("instance_id", "judge", "condition"):  # in name order, for the row-level metrics
        known[column], labels_of[column] = name_codes(keyed[column])
    return keyed, known, labels_of, code_a, a_first, prob_x


def _twins(keyed: dict[str, np.ndarray], known: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(rows that are the first of their comparison key, in frame order; each one's second row or -1)."""
    key = row_keys([known[column] if column in known else keyed[column] for column in _KEY])
    order = np.argsort(key, kind="stable")
    ranked = key[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]]) if key.size else np.zeros(0, dtype=np.int64)
    twin = np.full(key.size, -1, dtype=np.int64)
    paired = starts[(starts + 1 < key.size)]
    paired = paired[ranked[np.minimum(paired + 1, key.size - 1)] == ranked[paired]]
    twin[order[paired]] = order[paired + 1]
    first = np.sort(order[starts])
    return first, twin[first]


def build_comparisons(frame: pd.DataFrame, *, rule: str = "consistent") -> Comparisons:
    """Aggregate a validated pairwise table (`nepotism.tables.read_table(...).frame`)."""
    if rule not in ("consistent", "strict"):
        raise ValueError("rule must be 'consistent' or 'strict'")
    keyed, known, labels, code_a, a_first, prob = _row_codes(frame)
    code = np.where(a_first, code_a, -code_a)
    why_code, why_labels, row_prob_why = _row_reasons(frame, code, prob)
    why = _none_last(why_labels)  # a code's label; the last (code -1): none
    first, second = _twins(keyed, known)
    has_twin = second >= 0
    other = np.where(has_twin, second, 0)
    nan = np.full(first.size, np.nan)
    code1 = code[first]
    code2 = np.where(has_twin, code[other], nan) if first.size else nan
    unparsed = np.isnan(code1) | (has_twin & np.isnan(code2))
    outcome = np.where(has_twin, aggregate_orders(code1, code2, rule=rule), code1)
    ambiguous = has_twin & ~unparsed & np.isnan(outcome)
    prob1 = prob[first]
    prob2 = np.where(has_twin, prob[other], nan) if first.size else nan
    prob_x = np.where(has_twin, (prob1 + prob2) / 2.0, prob1)  # NaN when an order has none
    first_why = why[why_code[first]]
    second_why = np.where(has_twin, why[why_code[other]], _NO_LABEL) if first.size else np.full(0, None, dtype=object)
    prob_why_1 = row_prob_why[first]
    prob_why_2 = np.where(has_twin, row_prob_why[other], _NO_LABEL) if first.size else np.full(0, None, dtype=object)
    prob_why = np.where(pd.isna(prob_why_1), prob_why_2, prob_why_1)
    # names stay Python objects (one per distinct name): pandas would copy them into Arrow strings,
    # and every metric reads them back as objects
    at_first = {column: values[first] for column, values in keyed.items()}
    x_first, a_names, b_names = a_first[first], at_first["model_x"], at_first["model_y"]
    at_first["model_x"], at_first["model_y"] = np.where(x_first, a_names, b_names), np.where(x_first, b_names, a_names)
    result = pd.DataFrame({column: _names(values) if column in _NAMES else values for column, values in at_first.items()})
    del at_first, a_names, b_names
    result["outcome"] = outcome
    result["prob_x"] = prob_x
    result["n_orders"] = np.where(has_twin, 2, 1)
    result["prob_excluded_reason"] = _labels(np.where(np.isnan(prob_x), prob_why, _NO_LABEL), result.index)
    bad = unparsed | ambiguous
    excluded: dict[tuple[str, str], dict[str, int]] = {}
    reasons = np.where(unparsed, np.where(pd.isna(first_why), second_why, first_why), "ambiguous orders (strict rule)")
    for (judge, condition, reason), count in (
        pd.DataFrame({"judge": result["judge"][bad], "condition": result["condition"][bad], "reason": reasons[bad]})
        .value_counts()
        .items()
    ):
        excluded.setdefault((judge, condition), {})[reason] = int(count)
    result["excluded_reason"] = _labels(np.where(bad, reasons, _NO_LABEL), result.index)
    n_conditions = max(len(labels["condition"]), 1)
    small = np.int32 if len(frame) < 2**31 else np.int64
    rows = RowPairs(
        code_a=code_a.astype(np.float32),
        a_first=a_first,
        instance=known["instance_id"].astype(small),
        group=(known["judge"] * n_conditions + known["condition"]).astype(small),
        judges=labels["judge"],
        conditions=labels["condition"],
        why=why_code,
        reasons=why_labels,
        first=first.astype(small),
        second=second.astype(small),
    )
    return Comparisons(frame=result, excluded=excluded, rule=rule, rows=rows)


def _names(values: np.ndarray) -> pd.Series | np.ndarray:
    """A text column as a Series of the same Python objects; any other column as pandas infers it."""
    return pd.Series(values, dtype=object) if pd.api.types.infer_dtype(values, skipna=False) == "string" else values


def _labels(values: np.ndarray, index: pd.Index) -> pd.Series:
    """Labels as an object column with None (not NaN) where there is none."""
    values = np.asarray(values, dtype=object)
    codes, labels = pd.factorize(values, use_na_sentinel=True)
    keep = np.array([isinstance(v, str) for v in labels] + [False], dtype=bool)  # the last: no label
    table = _none_last(labels)
    table[~keep] = None
    return pd.Series(table[np.where(codes >= 0, codes, len(labels))], dtype=object, index=index)


_GENERIC = ("no verdict", "no label probabilities")


def with_reasons(estimate: Estimate, reasons: Iterable[str | float | None]) -> Estimate:
    """``estimate`` with its generic exclusion count (``no verdict``, ``no label probabilities``)
    split by the rows' reasons (``reasons``: one label or None per row the metric saw, e.g. a
    comparison frame's ``excluded_reason``). Left as it is when the counts do not match."""
    counts = Counter(r for r in reasons if isinstance(r, str))  # None and NaN: no reason
    return with_reason_counts(estimate, dict(counts))


def reason_counts(codes: np.ndarray, labels: np.ndarray, *, times: int = 1) -> dict[str, int]:
    """{label: count × ``times``} of coded exclusion reasons (-1: none), in label order."""
    codes = codes[codes >= 0]
    if not codes.size:
        return {}
    counts = np.bincount(codes, minlength=len(labels))
    return {str(labels[i]): int(counts[i]) * times for i in np.flatnonzero(counts)}


def with_reason_counts(estimate: Estimate, counts: dict[str, int]) -> Estimate:
    """`with_reasons` from counts already made ({reason: rows})."""
    generic = sum(estimate.excluded.get(k, 0) for k in _GENERIC)
    if not counts or sum(counts.values()) != generic:
        return estimate
    rest = {k: v for k, v in estimate.excluded.items() if k not in _GENERIC}
    return replace(estimate, excluded={**dict(sorted(counts.items())), **rest})
