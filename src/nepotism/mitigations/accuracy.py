"""Accuracy figures of ``nepotism mitigate``'s baseline (paper 003 §3, Figs. 2, 4 and 5).

From the side rows of the baseline (`nepotism.mitigations.rows`, the truth from the graded
answers) and the graded answers themselves:

- ``judge-accuracy`` per judge on the pairs whose answers differ in correctness (paper 003's
  "comparable answers" are left out), pooled over pairs, for three sets of examples: the judge's
  self-evaluation (its own answer against each other one), the same pairs of *other* generators
  judged as a third party (condition ``third-party``), and all of them ("all examples", Fig. 2);
- ``task-accuracy`` per generator: the share of its answers graded correct (Fig. 2's x axis);
- ``own-win-rate`` per judge on its self-evaluation pairs with a decisive truth and a usable
  verdict: by the ground truth (its answer is the better one) and by its own judgment (it prefers
  its answer; a tie counts ½), and ``win-rate-overestimation`` = own judgment − ground truth on the
  same pairs (Fig. 4: strong models overestimate, weak ones underestimate), paired cluster bootstrap.

Every estimate resamples prompts; pairs left out are counted with their reason. Left out: the
judge's decisiveness (Fig. 3; position consistency is a metric of `nepotism metrics`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from nepotism.analyses.comparisons import with_reasons
from nepotism.metrics import Bootstrap, Estimate, cluster_bootstrap, cluster_sums
from nepotism.metrics.bootstrap import Statistic
from nepotism.metrics.reference import judge_accuracy
from nepotism.metrics.task import task_accuracy
from nepotism.mitigations.rows import left_out, one_side, usable

__all__ = ["accuracy_records", "own_win_rates"]


def _record(
    metric: str, judge: str | None, generator: str | None, condition: str | None, estimate: Estimate, **variant: str
) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "metric": metric,
        "judge": judge,
        "generator": generator,
        "condition": condition,
        "pair": None,
        "scope": "self" if judge is not None and judge == generator else None,
        "variant": variant,
    }
    rec.update(estimate.as_dict())
    return rec


def own_win_rates(
    outcome: npt.ArrayLike,
    truth: npt.ArrayLike,
    clusters: npt.ArrayLike,
    *,
    bootstrap: Bootstrap | None = None,
    reasons: npt.ArrayLike | None = None,
) -> dict[str, Estimate]:
    """Paper 003 Fig. 4 on one judge's self-evaluation pairs: ``{"ground truth", "own judgment",
    "overestimation"}`` estimates.

    ``outcome``: the judge's aggregated verdict from its own side (+1 own, 0 tie, -1 other, NaN
    unusable); ``truth``: +1 its answer is the better one, -1 the other's, 0 comparable, NaN ungraded.
    Kept pairs: decisive truth and a usable verdict (the others are counted as ``comparable answers``,
    ``no truth``, ``no usable verdict``; a pair without a verdict whose ``reasons`` entry says why —
    `side_rows`' ``excluded_reason``, the labels every metric uses, e.g. ``failed-generation:timeout``
    — under that label, whatever its truth). Ground truth = mean 1{truth = +1}; own judgment = mean
    (outcome + 1) / 2; overestimation = own judgment − ground truth, on the same pairs.
    """
    o = np.asarray(outcome, dtype=float)
    t = np.asarray(truth, dtype=float)
    groups = np.asarray(clusters)
    excluded = left_out(o, t, reasons)
    keep = usable(o, t)
    n_excluded = int((~keep).sum())
    cols = np.column_stack([(t[keep] == 1).astype(float), (o[keep] + 1.0) / 2.0, np.ones(int(keep.sum()))])
    if not keep.any():
        cols = np.zeros((0, 3))
        note = "no self-evaluation pair with a decisive truth and a usable verdict"
    else:
        note = None
    sums = cluster_sums(groups[keep], cols)[1] if keep.any() else np.zeros((0, 3))

    def rate(statistic: Statistic) -> Estimate:
        return cluster_bootstrap(
            sums, statistic, n=int(keep.sum()), n_excluded=n_excluded, excluded=excluded, bootstrap=bootstrap, note=note
        )

    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "ground truth": rate(lambda s: s[..., 0] / s[..., 2]),
            "own judgment": rate(lambda s: s[..., 1] / s[..., 2]),
            "overestimation": rate(lambda s: (s[..., 1] - s[..., 0]) / s[..., 2]),
        }


def _accuracy(rows: pd.DataFrame, boot: Bootstrap) -> Estimate:
    """Pooled judge accuracy (`nepotism.metrics.reference.judge_accuracy`) from the side's point of view.

    ``truth`` +1 = the side's answer is correct and the opponent's wrong, -1 the reverse, 0 equal
    correctness (outside D_diff: dropped and counted), NaN ungraded."""
    truth = rows["truth"].to_numpy(dtype=float)
    side_ok = np.where(np.isnan(truth), np.nan, (truth >= 0).astype(float))
    other_ok = np.where(np.isnan(truth), np.nan, (truth <= 0).astype(float))
    estimate = judge_accuracy(
        rows["outcome"].to_numpy(dtype=float),
        side_ok,
        other_ok,
        rows["opponent"].astype(str).to_numpy(),
        rows["instance_id"].astype(str).to_numpy(),
        averaging="pooled",
        bootstrap=boot,
    )
    # "no verdict" split by the rows' labels (`side_rows`' ``excluded_reason``), as every metric does
    return with_reasons(estimate, rows["excluded_reason"]) if "excluded_reason" in rows else estimate


def accuracy_records(
    rows: pd.DataFrame,
    judges: Sequence[str],
    baseline: str,
    third_party: str,
    correct: Mapping[tuple[str, str], bool | None],
    boot: Bootstrap,
) -> list[dict[str, Any]]:
    """``judge-accuracy`` (self-evaluation / third-party / all examples), ``task-accuracy`` per
    generator, ``own-win-rate`` and ``win-rate-overestimation`` per judge (see the module docstring)."""
    out: list[dict[str, Any]] = []
    for judge in judges:
        mine = rows[rows["judge"] == judge]
        self_rows = mine[(mine["condition"] == baseline) & (mine["side"] == judge)]
        others = mine[(mine["side"] != judge) & (mine["opponent"] != judge) & mine["condition"].isin([baseline, third_party])]
        others = one_side(others).drop_duplicates(["instance_id", "side", "opponent"])
        sets = {
            "self-evaluation": self_rows,
            "third-party": others,
            "all examples": pd.concat([self_rows, others], ignore_index=True),
        }
        for examples, frame in sets.items():
            out.append(
                _record(
                    "judge-accuracy",
                    judge,
                    None,
                    baseline,
                    _accuracy(frame, boot),
                    examples=examples,
                    averaging="pooled",
                    source="nepotism mitigate",
                )
            )
        rates = own_win_rates(
            self_rows["outcome"].to_numpy(dtype=float),
            self_rows["truth"].to_numpy(dtype=float),
            self_rows["instance_id"].astype(str).to_numpy(),
            bootstrap=boot,
            reasons=self_rows["excluded_reason"] if "excluded_reason" in self_rows else None,
        )
        for by in ("ground truth", "own judgment"):
            out.append(_record("own-win-rate", judge, judge, baseline, rates[by], by=by))
        out.append(_record("win-rate-overestimation", judge, judge, baseline, rates["overestimation"]))
    graded: dict[str, list[tuple[str, float]]] = {}
    for (instance, model), value in sorted(correct.items()):
        graded.setdefault(model, []).append((instance, np.nan if value is None else float(bool(value))))
    for model, items in sorted(graded.items()):
        est = task_accuracy(np.array([v for _, v in items]), np.array([i for i, _ in items]), bootstrap=boot)
        out.append(_record("task-accuracy", None, model, None, est, of="generator"))
    return out
