"""The effect of a mitigation on each bias metric, with a paired cluster-bootstrap interval.

Rows are comparisons from one side's point of view: ``instance_id``, ``side`` (the candidate whose
treatment is measured: the judge's own answer, or a relative's), ``opponent``, ``outcome`` for the
side (+1 / 0 / -1, NaN when unusable) and ``truth`` (+1 the side's answer is better, -1 the
opponent's, 0 equal, NaN unknown). `paired_effect` matches the baseline rows and the mitigated rows
on (judge, instance_id, side, opponent), keeps the pairs usable in both (the others are counted as
excluded: a pair without a usable verdict under the rows' ``excluded_reason`` where they carry
one, the labels every metric uses, e.g. ``failed-generation:timeout``), and bootstraps
``metric(mitigated) - metric(baseline)`` resampling the same instances for both — same
instances, same judge. `diff_in_diff` does the same for (self-evaluation change)
minus (third-party change), paper 003 Fig. 9's control, and `change_ratio` for their ratio in
magnitude, paper 003 Fig. 15's.

Base metrics (each a ratio of per-instance sums): ``self-preference`` (the side's win rate, ties
half), ``self-preference-probability`` (the mean over both orders of p(side) / (p(side) +
p(opponent)) from label probabilities, paper 001 Eq. 3 — it moves even when every verdict is a
tie), ``self-preference-ratio`` (paper 004 Eq. 2: share of outright wins, ties in the
denominator), ``demographic-parity-bias`` (paper 001 Eq. 4 for side-vs-opponent comparisons:
2 x win rate - 1), ``harmful-self-preference`` (the same on pairs whose truth is -1), ``judge-accuracy``
(share of decisive-truth pairs the verdict gets right), ``harmful-judge-accuracy`` (the same on the
harmful cases, where the side's answer is the wrong one: paper 003 Fig. 5 and Fig. 8, with a
paired t-test, `paired_t`) and ``error-bias`` (paper 000 Eq. 10, target
= the side). Left out: rank metrics, which are not sums over instances.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from nepotism.metrics import Bootstrap, Estimate, cluster_bootstrap, cluster_sums
from nepotism.metrics.stats import paired_t_test

__all__ = ["BASE_METRICS", "change_ratio", "diff_in_diff", "metric_columns", "paired_effect", "paired_t", "statistic"]

BASE_METRICS = (
    "self-preference",
    "self-preference-probability",
    "self-preference-ratio",
    "demographic-parity-bias",
    "harmful-self-preference",
    "judge-accuracy",
    "harmful-judge-accuracy",
    "error-bias",
)
_KEY = ["judge", "instance_id", "side", "opponent"]
_WIDTH = {
    "self-preference": 2,
    "self-preference-probability": 2,
    "self-preference-ratio": 2,
    "demographic-parity-bias": 2,
    "harmful-self-preference": 2,
    "judge-accuracy": 2,
    "harmful-judge-accuracy": 2,
    "error-bias": 4,
}
_NO_TRUTH = ("self-preference", "self-preference-probability", "self-preference-ratio", "demographic-parity-bias")
#: The row column each metric reads (the others read ``outcome``).
_VALUE = {"self-preference-probability": "prob"}


def metric_columns(metric: str, outcome: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Per-row columns whose sums give the metric (see `statistic`)."""
    o, t = np.asarray(outcome, dtype=float), np.asarray(truth, dtype=float)
    if metric == "self-preference-probability":
        return np.column_stack([o, np.ones_like(o)])  # here `outcome` holds p(side) in [0, 1]
    if metric in ("self-preference", "demographic-parity-bias"):
        return np.column_stack([(o + 1.0) / 2.0, np.ones_like(o)])
    if metric == "self-preference-ratio":
        return np.column_stack([(o == 1).astype(float), np.ones_like(o)])
    if metric == "harmful-self-preference":
        harmful = (t == -1).astype(float)
        return np.column_stack([harmful * (o + 1.0) / 2.0, harmful])
    if metric == "judge-accuracy":
        decisive = np.isin(t, (-1.0, 1.0)).astype(float)
        return np.column_stack([decisive * (o == t), decisive])
    if metric == "harmful-judge-accuracy":
        harmful = (t == -1).astype(float)
        return np.column_stack([harmful * (o == t), harmful])
    if metric == "error-bias":
        return np.column_stack([(o == 1) & (t == -1), t == -1, (o == -1) & (t == 1), t == 1]).astype(float)
    raise ValueError(f"unknown base metric {metric!r}; use one of {BASE_METRICS}")


def statistic(metric: str, totals: np.ndarray) -> np.ndarray:
    """The metric from column totals (works on (..., k) arrays)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if metric == "error-bias":
            return np.asarray(totals[..., 0] / totals[..., 1] - totals[..., 2] / totals[..., 3])
        if metric == "demographic-parity-bias":
            return np.asarray(2.0 * totals[..., 0] / totals[..., 1] - 1.0)
        return np.asarray(totals[..., 0] / totals[..., 1])


def _needs_truth(metric: str) -> bool:
    return metric not in _NO_TRUTH


def _keyed(frame: pd.DataFrame, columns: list[str]) -> dict[tuple[Hashable, ...], tuple[object, ...]]:
    out: dict[tuple[Hashable, ...], tuple[object, ...]] = {}
    keys = zip(*(frame[k].tolist() for k in _KEY))
    values = zip(*(frame[c].tolist() if c in frame else [float("nan")] * len(frame) for c in columns)) if len(frame) else iter(())
    for key, value in zip(keys, values):
        out.setdefault(key, value)
    return out


def _matched(base: pd.DataFrame, mitigated: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, dict[str, int]]:
    value = _VALUE.get(metric, "outcome")
    b = _keyed(base, [value, "truth", "excluded_reason"])
    m = _keyed(mitigated, [value, "excluded_reason"])
    excluded: dict[str, int] = {}
    for count, reason in (
        (len(b.keys() - m.keys()), "no mitigated comparison"),
        (len(m.keys() - b.keys()), "no baseline comparison"),
    ):
        if count:
            excluded[reason] = count
    rows: list[tuple[Hashable, object, object, object]] = []
    unknown = 0
    unusable: dict[str, int] = {}
    for key, (outcome, truth, why) in b.items():
        if key not in m:
            continue
        mit, mit_why = m[key]
        if _nan(outcome) or _nan(mit):
            # why: the rows' exclusion label where they carry one (`side_rows`), else generic
            label = why if _nan(outcome) else mit_why
            label = label if isinstance(label, str) else "no usable verdict in one condition"
            unusable[label] = unusable.get(label, 0) + 1
        elif _needs_truth(metric) and _nan(truth):
            unknown += 1
        else:
            rows.append((key[1], outcome, mit, truth))
    excluded.update(sorted(unusable.items()))
    if unknown:
        excluded["no truth"] = unknown
    frame = pd.DataFrame(rows, columns=["instance_id", "outcome_base", "outcome_mit", "truth"])
    return frame, excluded


def _nan(value: object) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def paired_effect(
    base: pd.DataFrame, mitigated: pd.DataFrame, metric: str, *, bootstrap: Bootstrap | None = None
) -> tuple[Estimate, float, float]:
    """(effect estimate, baseline value, mitigated value) on the matched pairs."""
    joined, excluded = _matched(base, mitigated, metric)
    k = _WIDTH[metric]
    truth = joined["truth"].to_numpy(dtype=float)
    cols = np.hstack(
        [
            metric_columns(metric, joined["outcome_base"].to_numpy(dtype=float), truth),
            metric_columns(metric, joined["outcome_mit"].to_numpy(dtype=float), truth),
        ]
    )
    n_excluded = sum(excluded.values())
    if joined.empty:
        empty = cluster_bootstrap(
            np.zeros((0, 2 * k)),
            lambda t: t[..., 0],
            n=0,
            n_excluded=n_excluded,
            excluded=excluded,
            note="no comparison usable in both conditions",
            bootstrap=bootstrap,
        )
        return empty, float("nan"), float("nan")
    _, sums = cluster_sums(joined["instance_id"].to_numpy(dtype=str), cols)
    estimate = cluster_bootstrap(
        sums,
        lambda t: statistic(metric, t[..., k:]) - statistic(metric, t[..., :k]),
        n=len(joined),
        n_excluded=n_excluded,
        excluded=excluded,
        bootstrap=bootstrap,
    )
    total = sums.sum(axis=0)
    return estimate, float(statistic(metric, total[:k])), float(statistic(metric, total[k:]))


def _self_and_control(
    self_base: pd.DataFrame,
    self_mit: pd.DataFrame,
    ctrl_base: pd.DataFrame,
    ctrl_mit: pd.DataFrame,
    metric: str,
    combine: Callable[[np.ndarray, np.ndarray], npt.ArrayLike],
    *,
    bootstrap: Bootstrap | None,
    note: str | None = None,
) -> Estimate:
    """``combine(change under self-evaluation, change under third-party judges)`` on the matched
    pairs of both, one cluster bootstrap resampling the same instances for both changes."""
    a, ex_a = _matched(self_base, self_mit, metric)
    c, ex_c = _matched(ctrl_base, ctrl_mit, metric)
    k = _WIDTH[metric]
    excluded = {f"self: {r}": v for r, v in ex_a.items()} | {f"control: {r}": v for r, v in ex_c.items()}
    n_excluded = sum(excluded.values())
    if a.empty or c.empty:
        return cluster_bootstrap(
            np.zeros((0, 4 * k)),
            lambda t: t[..., 0],
            n=0,
            n_excluded=n_excluded,
            excluded=excluded,
            note="no self-evaluation or no third-party comparison",
            bootstrap=bootstrap,
        )
    zeros_a, zeros_c = np.zeros((len(a), 2 * k)), np.zeros((len(c), 2 * k))
    cols_a = np.hstack(
        [
            metric_columns(metric, a["outcome_base"].to_numpy(float), a["truth"].to_numpy(float)),
            metric_columns(metric, a["outcome_mit"].to_numpy(float), a["truth"].to_numpy(float)),
            zeros_a,
        ]
    )
    cols_c = np.hstack(
        [
            zeros_c,
            metric_columns(metric, c["outcome_base"].to_numpy(float), c["truth"].to_numpy(float)),
            metric_columns(metric, c["outcome_mit"].to_numpy(float), c["truth"].to_numpy(float)),
        ]
    )
    clusters = np.concatenate([a["instance_id"].to_numpy(dtype=str), c["instance_id"].to_numpy(dtype=str)])
    _, sums = cluster_sums(clusters, np.vstack([cols_a, cols_c]))

    def stat(t: np.ndarray) -> np.ndarray:
        def s(i: int) -> np.ndarray:  # the metric on the i-th block of k columns
            return statistic(metric, t[..., i * k : (i + 1) * k])

        return np.asarray(combine(s(1) - s(0), s(3) - s(2)))

    total = sums.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        defined = bool(np.isfinite(stat(total)))
    return cluster_bootstrap(
        sums,
        stat,
        n=len(a) + len(c),
        n_excluded=n_excluded,
        excluded=excluded,
        bootstrap=bootstrap,
        note=None if defined else note,
    )


def diff_in_diff(
    self_base: pd.DataFrame,
    self_mit: pd.DataFrame,
    ctrl_base: pd.DataFrame,
    ctrl_mit: pd.DataFrame,
    metric: str = "self-preference",
    *,
    bootstrap: Bootstrap | None = None,
) -> Estimate:
    """(change under self-evaluation) - (change under third-party judges), same resampled instances."""
    return _self_and_control(
        self_base, self_mit, ctrl_base, ctrl_mit, metric, lambda d_self, d_ctrl: d_self - d_ctrl, bootstrap=bootstrap
    )


def change_ratio(
    self_base: pd.DataFrame,
    self_mit: pd.DataFrame,
    ctrl_base: pd.DataFrame,
    ctrl_mit: pd.DataFrame,
    metric: str = "self-preference",
    *,
    bootstrap: Bootstrap | None = None,
) -> Estimate:
    """|change under self-evaluation| / |change under third-party judges| (paper 003 App. Fig. 15's
    ratio above each obfuscation method's bars: how much more a perturbation moves the judges'
    preference for their own answers than it moves them as third parties on the same pairs), same
    resampled instances for both changes. A control change of 0 leaves it undefined (NaN, with the
    reason), never infinite; a resample in which it is 0 is dropped and counted."""

    def ratio(d_self: np.ndarray, d_ctrl: np.ndarray) -> np.ndarray:
        d_self, d_ctrl = np.abs(np.asarray(d_self, dtype=float)), np.abs(np.asarray(d_ctrl, dtype=float))
        return np.where(d_ctrl > 0, d_self / np.where(d_ctrl > 0, d_ctrl, 1.0), np.nan)

    return _self_and_control(
        self_base, self_mit, ctrl_base, ctrl_mit, metric, ratio, bootstrap=bootstrap, note="the third-party change is 0: no ratio"
    )


def paired_t(base: pd.DataFrame, mitigated: pd.DataFrame, metric: str) -> dict[str, Any] | None:
    """Paired t-test of the per-comparison values, mitigated − baseline (paper 003 Fig. 8: "a paired
    t-test revealed a significant difference ... between the original and perturbed conditions").

    The comparisons are those `paired_effect` matches; a comparison counts when it is in the
    metric's denominator (e.g. a harmful case for ``harmful-judge-accuracy``), its value being the
    numerator (1 right / 0 wrong, a win ½ for a tie, p(side) for the probability). Returns
    ``{statistic, p_value, df, mean_difference, n, note}`` (statistic and p-value None, with the
    note saying why, when every difference is equal or there are fewer than 2 comparisons),
    or None for ``error-bias`` (a difference of two ratios, no per-comparison value). Comparisons
    are treated as independent, as in the paper; the bootstrap interval of `paired_effect` resamples prompts.
    """
    if _WIDTH[metric] != 2:
        return None
    joined, _ = _matched(base, mitigated, metric)
    truth = joined["truth"].to_numpy(dtype=float)
    b = metric_columns(metric, joined["outcome_base"].to_numpy(dtype=float), truth)
    m = metric_columns(metric, joined["outcome_mit"].to_numpy(dtype=float), truth)
    keep = (b[:, 1] == 1) & (m[:, 1] == 1)
    n = int(keep.sum())
    if n < 2:
        return {
            "statistic": None,
            "p_value": None,
            "df": None,
            "mean_difference": None,
            "n": n,
            "note": "fewer than 2 comparisons",
        }
    diff = m[keep, 0] - b[keep, 0]
    if np.allclose(diff, diff[0]):
        return {
            "statistic": None,
            "p_value": None,
            "df": n - 1,
            "mean_difference": float(diff.mean()),
            "n": n,
            "note": "every difference is equal",
        }
    test = paired_t_test(m[keep, 0], b[keep, 0])
    clean = {k: (None if isinstance(v, float) and v != v else v) for k, v in test.items()}
    return {**clean, "n": n, "note": None if clean["statistic"] is not None else "every difference is equal"}
