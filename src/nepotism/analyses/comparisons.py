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
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from nepotism.metrics._estimate import Estimate
from nepotism.metrics.pairwise import aggregate_orders
from nepotism.records import exclusion_label

__all__ = ["Comparisons", "build_comparisons", "row_exclusions", "with_reason_counts", "with_reasons"]

_KEY = ["instance_id", "judge", "condition", "replicate", "model_x", "model_y"]


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

    def excluded_for(self, judge: str, condition: str) -> dict[str, int]:
        return dict(self.excluded.get((judge, condition), {}))


def row_exclusions(frame: pd.DataFrame) -> np.ndarray:
    """Per row of a judgment table, the `exclusion_label` it would be counted under without a
    verdict (its status and reason; ``unparsed`` where the table says nothing)."""
    n = len(frame)
    status = frame["status"].to_numpy(dtype=object) if "status" in frame else np.full(n, "unparsed", dtype=object)
    reason = frame["reason"].to_numpy(dtype=object) if "reason" in frame else np.full(n, None, dtype=object)
    return np.array([exclusion_label(s if isinstance(s, str) and s != "parsed" else "unparsed",
                                     r if isinstance(r, str) else None)
                     for s, r in zip(status, reason)], dtype=object)


def _row_reasons(frame: pd.DataFrame, code: np.ndarray, prob: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: why it has no verdict and why no probability (None where it has one)."""
    labels = row_exclusions(frame)
    status = frame["status"].to_numpy(dtype=object) if "status" in frame else np.full(len(frame), "unparsed")
    why = np.where(np.isnan(code), labels, None)
    prob_why = np.where(np.isnan(prob), np.where(status == "parsed", "no label probabilities", labels), None)
    return why, prob_why


def _row_codes(frame: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    a = frame["model_a"].to_numpy(dtype=object)
    b = frame["model_b"].to_numpy(dtype=object)
    a_first = a < b
    verdict = frame["verdict"].to_numpy(dtype=object)
    code_a = np.full(len(frame), np.nan)
    code_a[verdict == "A"] = 1.0
    code_a[verdict == "B"] = -1.0
    code_a[verdict == "tie"] = 0.0
    code_x = np.where(a_first, code_a, -code_a)
    prob_x = np.full(len(frame), np.nan)
    if "prob_a" in frame and "prob_b" in frame:
        pa = frame["prob_a"].to_numpy(dtype=float)
        pb = frame["prob_b"].to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            share_a = pa / (pa + pb)
        prob_x = np.where(a_first, share_a, 1.0 - share_a)
    keyed = pd.DataFrame(
        {
            "instance_id": frame["instance_id"].to_numpy(dtype=object),
            "judge": frame["judge"].to_numpy(dtype=object),
            "condition": frame["condition"].to_numpy(dtype=object),
            "replicate": frame["replicate"].to_numpy(),
            "model_x": np.where(a_first, a, b),
            "model_y": np.where(a_first, b, a),
        }
    )
    if "category" in frame:
        keyed["category"] = frame["category"].to_numpy(dtype=object)
    return keyed, code_x, prob_x


def build_comparisons(frame: pd.DataFrame, *, rule: str = "consistent") -> Comparisons:
    """Aggregate a validated pairwise table (`nepotism.tables.read_table(...).frame`)."""
    if rule not in ("consistent", "strict"):
        raise ValueError("rule must be 'consistent' or 'strict'")
    keyed, code, prob = _row_codes(frame)
    keyed["code"] = code
    keyed["prob"] = prob
    keyed["why"], keyed["prob_why"] = _row_reasons(frame, code, prob)
    keyed["order"] = keyed.groupby(_KEY, sort=False).cumcount()
    first = keyed[keyed["order"] == 0].set_index(_KEY)
    second = keyed[keyed["order"] == 1].set_index(_KEY)[["code", "prob", "why", "prob_why"]]
    joined = first.merge(second, left_index=True, right_index=True, how="left", suffixes=("", "_2"))
    has_twin = joined.index.isin(second.index)
    code1 = joined["code"].to_numpy(dtype=float)
    code2 = joined["code_2"].to_numpy(dtype=float)
    unparsed = np.isnan(code1) | (has_twin & np.isnan(code2))
    outcome = np.where(has_twin, aggregate_orders(code1, code2, rule=rule), code1)
    ambiguous = has_twin & ~unparsed & np.isnan(outcome)
    prob1 = joined["prob"].to_numpy(dtype=float)
    prob2 = joined["prob_2"].to_numpy(dtype=float)
    prob_x = np.where(has_twin, (prob1 + prob2) / 2.0, prob1)  # NaN when an order has none
    first_why = joined["why"].to_numpy(dtype=object)
    second_why = joined["why_2"].to_numpy(dtype=object)
    prob_why = np.where(pd.isna(joined["prob_why"]).to_numpy(), joined["prob_why_2"].to_numpy(dtype=object),
                        joined["prob_why"].to_numpy(dtype=object))
    result = joined.reset_index()[_KEY + (["category"] if "category" in joined else [])].copy()
    result["outcome"] = outcome
    result["prob_x"] = prob_x
    result["n_orders"] = np.where(has_twin, 2, 1)
    result["prob_excluded_reason"] = _labels(np.where(np.isnan(prob_x), prob_why, None), result.index)
    bad = unparsed | ambiguous
    excluded: dict[tuple[str, str], dict[str, int]] = {}
    reasons = np.where(unparsed, np.where(pd.isna(first_why), second_why, first_why),
                       "ambiguous orders (strict rule)")
    for (judge, condition, reason), count in (
        pd.DataFrame({"judge": result["judge"][bad], "condition": result["condition"][bad], "reason": reasons[bad]})
        .value_counts()
        .items()
    ):
        excluded.setdefault((judge, condition), {})[reason] = int(count)
    result["excluded_reason"] = _labels(np.where(bad, reasons, None), result.index)
    return Comparisons(frame=result, excluded=excluded, rule=rule)


def _labels(values: np.ndarray, index: pd.Index) -> pd.Series:
    """Labels as an object column with None (not NaN) where there is none."""
    return pd.Series([v if isinstance(v, str) else None for v in values], dtype=object, index=index)


_GENERIC = ("no verdict", "no label probabilities")


def with_reasons(estimate: Estimate, reasons) -> Estimate:
    """``estimate`` with its generic exclusion count (``no verdict``, ``no label probabilities``)
    split by the rows' reasons (``reasons``: one label or None per row the metric saw, e.g. a
    comparison frame's ``excluded_reason``). Left as it is when the counts do not match."""
    counts = Counter(r for r in reasons if r is not None and not (isinstance(r, float) and np.isnan(r)))
    return with_reason_counts(estimate, dict(counts))


def with_reason_counts(estimate: Estimate, counts: dict[str, int]) -> Estimate:
    """`with_reasons` from counts already made ({reason: rows})."""
    generic = sum(estimate.excluded.get(k, 0) for k in _GENERIC)
    if not counts or sum(counts.values()) != generic:
        return estimate
    rest = {k: v for k, v in estimate.excluded.items() if k not in _GENERIC}
    return replace(estimate, excluded={**dict(sorted(counts.items())), **rest})
