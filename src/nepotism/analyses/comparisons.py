"""Turn pairwise judgment rows (one per presentation order) into comparisons (one per pair).

A *comparison* is one judge's verdict on one unordered pair of candidates for one instance, under
one condition and replicate. Its two presentation orders are combined with
`nepotism.metrics.pairwise.aggregate_orders` (paper 004 Eq. 1 by default, paper 003's strict rule as
a variant). A row whose twin order is absent is used as it is and counted as single-order. A pair
with an unparsed order is excluded and counted — an unparsed verdict never becomes a tie.

Label probabilities, where given, become paper 001's score p(X)/(p(A)+p(B)) averaged over the
orders present. This module reads no files and knows no registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nepotism.metrics.pairwise import aggregate_orders

__all__ = ["Comparisons", "build_comparisons"]

_KEY = ["instance_id", "judge", "condition", "replicate", "model_x", "model_y"]


@dataclass(frozen=True)
class Comparisons:
    """Aggregated comparisons as a frame with columns ``instance_id, judge, condition, replicate,
    model_x, model_y`` (model_x < model_y), ``outcome`` (code for model_x: +1, 0, -1), ``prob_x``
    (NaN when no probabilities), ``n_orders`` (1 or 2), ``excluded_reason`` (None, or why ``outcome`` is NaN) and
    ``category`` when given; plus the count of comparisons excluded per reason, per
    (judge, condition). Excluded comparisons stay in the frame with a NaN outcome so that every
    metric counts them in its ``n_excluded``."""

    frame: pd.DataFrame
    excluded: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    rule: str = "consistent"

    def excluded_for(self, judge: str, condition: str) -> dict[str, int]:
        return dict(self.excluded.get((judge, condition), {}))


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
    keyed["order"] = keyed.groupby(_KEY, sort=False).cumcount()
    first = keyed[keyed["order"] == 0].set_index(_KEY)
    second = keyed[keyed["order"] == 1].set_index(_KEY)[["code", "prob"]]
    joined = first.merge(second, left_index=True, right_index=True, how="left", suffixes=("", "_2"))
    has_twin = joined.index.isin(second.index)
    code1 = joined["code"].to_numpy(dtype=float)
    code2 = joined["code_2"].to_numpy(dtype=float)
    unparsed = np.isnan(code1) | (has_twin & np.isnan(code2))
    outcome = np.where(has_twin, aggregate_orders(code1, code2, rule=rule), code1)
    ambiguous = has_twin & ~unparsed & np.isnan(outcome)
    probs = np.vstack([joined["prob"].to_numpy(dtype=float), joined["prob_2"].to_numpy(dtype=float)])
    counts = np.sum(~np.isnan(probs), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        prob_x = np.where(counts > 0, np.nansum(probs, axis=0) / counts, np.nan)
    result = joined.reset_index()[_KEY + (["category"] if "category" in joined else [])].copy()
    result["outcome"] = outcome
    result["prob_x"] = prob_x
    result["n_orders"] = np.where(has_twin, 2, 1)
    bad = unparsed | ambiguous
    excluded: dict[tuple[str, str], dict[str, int]] = {}
    reasons = np.where(unparsed, "unparsed verdict", "ambiguous orders (strict rule)")
    for (judge, condition, reason), count in (
        pd.DataFrame({"judge": result["judge"][bad], "condition": result["condition"][bad], "reason": reasons[bad]})
        .value_counts()
        .items()
    ):
        excluded.setdefault((judge, condition), {})[reason] = int(count)
    result["excluded_reason"] = np.where(bad, reasons, None)
    return Comparisons(frame=result, excluded=excluded, rule=rule)
