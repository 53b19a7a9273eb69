"""Classical tests the papers report next to the bootstrap: Pearson r with a Fisher-z interval,
paired t-test, chi-square test of independence, exact binomial test (all via scipy).

Each returns a plain dict (JSON-able floats). Nothing here resamples; `bootstrap` does that.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["binomial_test", "chi_square", "correlate_records", "paired_t_test", "pearson"]


def pearson(x, y, *, confidence: float = 0.95) -> dict:
    """Pearson r, its two-sided p-value and the Fisher-z interval (n ≥ 4 for an interval)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    n = int(x.size)
    nan = float("nan")
    if n < 3 or np.std(x) == 0 or np.std(y) == 0:
        return {"r": nan, "p_value": nan, "ci_low": nan, "ci_high": nan, "n": n,
                "note": "fewer than 3 points or a constant variable"}
    result = stats.pearsonr(x, y)
    r = float(result.statistic)
    low = high = nan
    if n > 3 and abs(r) < 1:
        z = math.atanh(r)
        half = stats.norm.ppf(0.5 + confidence / 2) / math.sqrt(n - 3)
        low, high = math.tanh(z - half), math.tanh(z + half)
    return {"r": r, "p_value": float(result.pvalue), "ci_low": low, "ci_high": high, "n": n, "note": None}


def paired_t_test(a, b, *, alternative: str = "two-sided") -> dict:
    """Paired t-test of mean(a − b) = 0 (003 compares preference before and after a perturbation)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b)
    result = stats.ttest_rel(a[ok], b[ok], alternative=alternative)
    return {"statistic": float(result.statistic), "p_value": float(result.pvalue), "df": int(ok.sum() - 1),
            "mean_difference": float(np.mean(a[ok] - b[ok])) if ok.any() else float("nan")}


def chi_square(table) -> dict:
    """Chi-square test of independence on a contingency table (no continuity correction)."""
    table = np.asarray(table, dtype=float)
    if (table.sum(axis=0) == 0).any() or (table.sum(axis=1) == 0).any():
        return {"statistic": float("nan"), "p_value": float("nan"), "dof": None,
                "note": "a row or column of the table is empty"}
    result = stats.chi2_contingency(table, correction=False)
    return {"statistic": float(result.statistic), "p_value": float(result.pvalue), "dof": int(result.dof), "note": None}


def binomial_test(successes: int, trials: int, *, p: float = 0.5, alternative: str = "two-sided") -> dict:
    """Exact binomial test (e.g. first-slot preference against ½)."""
    result = stats.binomtest(int(successes), int(trials), p, alternative=alternative)
    ci = result.proportion_ci()
    return {"statistic": float(result.statistic), "p_value": float(result.pvalue), "ci_low": float(ci.low),
            "ci_high": float(ci.high), "n": int(trials)}


def correlate_records(records, x_metric: str, y_metric: str, *, key=("judge",), confidence: float = 0.95,
                      where=None) -> dict:
    """Pearson r across judges between two metrics' values (e.g. judge-accuracy vs a task accuracy, 004 Fig. 1).

    ``records`` are suite records; ``key`` the fields that pair a value of x with a value of y;
    ``where`` an optional predicate on records. Pairs with a missing value are dropped.
    """
    def table(metric):
        out = {}
        for r in records:
            if r["metric"] == metric and (where is None or where(r)) and r.get("value") is not None:
                out.setdefault(tuple(r.get(k) for k in key), r["value"])
        return out

    xs, ys = table(x_metric), table(y_metric)
    keys = sorted(set(xs) & set(ys), key=str)
    result = pearson([xs[k] for k in keys], [ys[k] for k in keys], confidence=confidence)
    result["keys"] = [list(k) for k in keys]
    return result
