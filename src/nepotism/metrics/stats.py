"""Classical tests the papers report next to the bootstrap: Pearson r with a Fisher-z interval,
paired t-test, chi-square test of independence, exact binomial test (all via scipy), and Pearson r
across units (judges) with a bootstrap interval over those units.

The tests return a plain dict (JSON-able floats); `pearson_across` returns an `Estimate` (it
resamples through `bootstrap`, as every metric does).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from nepotism.metrics._common import checked
from nepotism.metrics._estimate import Estimate
from nepotism.metrics.bootstrap import Bootstrap, cluster_bootstrap, pearson_of_totals, settings

__all__ = ["binomial_test", "chi_square", "correlate_records", "paired_t_test", "pearson", "pearson_across"]


def pearson(x: ArrayLike, y: ArrayLike, *, confidence: float = 0.95) -> dict[str, Any]:
    """Pearson r, its two-sided p-value and the Fisher-z interval (n ≥ 4 for an interval)."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    ok = np.isfinite(xs) & np.isfinite(ys)
    xs, ys = xs[ok], ys[ok]
    n = int(xs.size)
    nan = float("nan")
    if n < 3 or np.std(xs) == 0 or np.std(ys) == 0:
        return {
            "r": nan,
            "p_value": nan,
            "ci_low": nan,
            "ci_high": nan,
            "n": n,
            "note": "fewer than 3 points or a constant variable",
        }
    result = stats.pearsonr(xs, ys)
    r = float(result.statistic)
    low = high = nan
    if n > 3 and abs(r) < 1:
        z = math.atanh(r)
        half = stats.norm.ppf(0.5 + confidence / 2) / math.sqrt(n - 3)
        low, high = math.tanh(z - half), math.tanh(z + half)
    return {"r": r, "p_value": float(result.pvalue), "ci_low": low, "ci_high": high, "n": n, "note": None}


def pearson_across(x: ArrayLike, y: ArrayLike, *, bootstrap: Bootstrap | None = None, **fields: Any) -> Estimate:
    """Pearson r between two values of the same units (e.g. judges: task accuracy vs judge accuracy,
    paper 004 Figs. 1–4) with a bootstrap interval that resamples the units.

    Formula: r = cov(x, y) / (sd_x · sd_y) over the n units with both values finite (a unit with a
    missing one is excluded as ``"missing value"``). Each unit is its own cluster, so a resample
    draws n units with replacement; a resample whose x or y is constant has no r and is dropped
    (counted in the note). Fewer than 3 units or a constant variable → NaN with a note. With a
    handful of judges the interval is wide, as it should be; `pearson` gives the Fisher-z interval
    and the t-test p-value of the same r.

    >>> est = pearson_across([0.5, 0.6, 0.7, 0.9], [0.4, 0.7, 0.6, 0.9], n_resamples=0)
    >>> round(est.value, 4), est.n
    (0.8907, 4)
    """
    xs = checked(x, "x", low=-math.inf, high=math.inf)
    ys = checked(y, "y", low=-math.inf, high=math.inf, n=xs.size)
    ok = np.isfinite(xs) & np.isfinite(ys)
    missing = int((~ok).sum())
    excluded = {"missing value": missing} if missing else {}
    xs, ys = xs[ok], ys[ok]
    options = settings(bootstrap, **fields)
    if xs.size < 3 or np.std(xs) == 0 or np.std(ys) == 0:
        note = "fewer than 3 units with both values" if xs.size < 3 else "a constant variable has no correlation"
        return cluster_bootstrap(
            np.zeros((0, 6)),
            pearson_of_totals,
            n=int(xs.size),
            n_excluded=missing,
            excluded=excluded,
            note=note,
            bootstrap=options,
        )
    xs, ys = xs - xs.mean(), ys - ys.mean()  # r is shift-free; centred sums lose no digits in float32 totals
    sums = np.column_stack([np.ones_like(xs), xs, ys, xs * ys, xs * xs, ys * ys])
    return cluster_bootstrap(sums, pearson_of_totals, n=int(xs.size), n_excluded=missing, excluded=excluded, bootstrap=options)


def paired_t_test(a: ArrayLike, b: ArrayLike, *, alternative: str = "two-sided") -> dict[str, Any]:
    """Paired t-test of mean(a − b) = 0 (003 compares preference before and after a perturbation)."""
    first = np.asarray(a, dtype=float)
    second = np.asarray(b, dtype=float)
    ok = np.isfinite(first) & np.isfinite(second)
    result = stats.ttest_rel(first[ok], second[ok], alternative=alternative)
    return {
        "statistic": float(result.statistic),
        "p_value": float(result.pvalue),
        "df": int(ok.sum() - 1),
        "mean_difference": float(np.mean(first[ok] - second[ok])) if ok.any() else float("nan"),
    }


def chi_square(table: ArrayLike) -> dict[str, Any]:
    """Chi-square test of independence on a contingency table (no continuity correction)."""
    counts = np.asarray(table, dtype=float)
    if (counts.sum(axis=0) == 0).any() or (counts.sum(axis=1) == 0).any():
        return {"statistic": float("nan"), "p_value": float("nan"), "dof": None, "note": "a row or column of the table is empty"}
    result = stats.chi2_contingency(counts, correction=False)
    return {"statistic": float(result.statistic), "p_value": float(result.pvalue), "dof": int(result.dof), "note": None}


def binomial_test(successes: int, trials: int, *, p: float = 0.5, alternative: str = "two-sided") -> dict[str, Any]:
    """Exact binomial test (e.g. first-slot preference against ½)."""
    result = stats.binomtest(int(successes), int(trials), p, alternative=alternative)
    ci = result.proportion_ci()
    return {
        "statistic": float(result.statistic),
        "p_value": float(result.pvalue),
        "ci_low": float(ci.low),
        "ci_high": float(ci.high),
        "n": int(trials),
    }


def correlate_records(
    records: Iterable[Mapping[str, Any]],
    x_metric: str,
    y_metric: str,
    *,
    key: tuple[str, ...] = ("judge",),
    confidence: float = 0.95,
    where: Callable[[Mapping[str, Any]], bool] | None = None,
) -> dict[str, Any]:
    """Pearson r across judges between two metrics' values (e.g. judge-accuracy vs a task accuracy, 004 Fig. 1).

    ``records`` are suite records; ``key`` the fields that pair a value of x with a value of y;
    ``where`` an optional predicate on records. Pairs with a missing value are dropped.
    """
    rows = list(records)

    def table(metric: str) -> dict[tuple[Any, ...], Any]:
        out: dict[tuple[Any, ...], Any] = {}
        for r in rows:
            if r["metric"] == metric and (where is None or where(r)) and r.get("value") is not None:
                out.setdefault(tuple(r.get(k) for k in key), r["value"])
        return out

    xs, ys = table(x_metric), table(y_metric)
    keys = sorted(set(xs) & set(ys), key=str)
    x_values, y_values = [xs[k] for k in keys], [ys[k] for k in keys]
    result = pearson(x_values, y_values, confidence=confidence)
    result.update(keys=[list(k) for k in keys], x=x_values, y=y_values)
    return result
