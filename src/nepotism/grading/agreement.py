"""How far our grading agrees with a recorded correctness reference (e.g. a paper's execution results).

`correctness_agreement` joins two ``correctness-ref`` frames on (instance_id, model) and reports
the share of responses both call correct or both call incorrect, with a seeded cluster-bootstrap
interval over instances (a prompt's responses are resampled together), the 2x2 confusion table
and the rows only one side decided (counted, left out of the rate). What it leaves out: deciding
which side is right — a disagreement can be our weaker tests or theirs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from nepotism.metrics import Bootstrap, cluster_bootstrap, cluster_sums
from nepotism.metrics.bootstrap import ratio_of_totals, settings

__all__ = ["correctness_agreement"]

_KEY = ["instance_id", "model"]


def _decided(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame[_KEY + ["correct"]].dropna(subset=["correct"]).copy()
    out["instance_id"] = out["instance_id"].astype(str)
    out["model"] = out["model"].astype(str)
    out["correct"] = out["correct"].astype(bool)
    return out.drop_duplicates(subset=_KEY)


def correctness_agreement(
    ours: pd.DataFrame, recorded: pd.DataFrame, *, bootstrap: Bootstrap | None = None, **fields: Any
) -> dict[str, Any]:
    """Agreement of ``ours`` with ``recorded`` (both with instance_id, model, correct).

    rate = #(ours == recorded) / #(rows decided by both); bootstrap over instances (``bootstrap``,
    or its fields as keywords).
    Returns the estimate (value, ci_low, ci_high, n, n_clusters), the confusion counts
    ``both_correct``, ``both_incorrect``, ``ours_correct_recorded_incorrect``,
    ``ours_incorrect_recorded_correct``, and ``only_ours`` / ``only_recorded`` (left out).
    """
    a, b = _decided(ours), _decided(recorded)
    joined = a.merge(b, on=_KEY, how="outer", suffixes=("_ours", "_recorded"), indicator=True)
    both = joined[joined["_merge"] == "both"]
    mine, theirs = both["correct_ours"].astype(bool).to_numpy(), both["correct_recorded"].astype(bool).to_numpy()
    counts = {
        "both_correct": int(np.sum(mine & theirs)),
        "both_incorrect": int(np.sum(~mine & ~theirs)),
        "ours_correct_recorded_incorrect": int(np.sum(mine & ~theirs)),
        "ours_incorrect_recorded_correct": int(np.sum(~mine & theirs)),
        "only_ours": int((joined["_merge"] == "left_only").sum()),
        "only_recorded": int((joined["_merge"] == "right_only").sum()),
    }
    _, sums = cluster_sums(
        both["instance_id"].to_numpy(dtype=object), np.column_stack([(mine == theirs).astype(float), np.ones(len(both))])
    )
    estimate = cluster_bootstrap(
        sums,
        ratio_of_totals,
        n=len(both),
        n_excluded=counts["only_ours"] + counts["only_recorded"],
        excluded={k: counts[k] for k in ("only_ours", "only_recorded") if counts[k]},
        bootstrap=settings(bootstrap, **fields),
    )
    return {
        "metric": "grading-agreement",
        "value": estimate.value,
        "ci_low": estimate.ci_low,
        "ci_high": estimate.ci_high,
        "n": estimate.n,
        "n_clusters": estimate.n_clusters,
        "n_excluded": estimate.n_excluded,
        "counts": counts,
    }
