"""The seeded cluster bootstrap every metric uses: resample prompts, not rows.

A metric is written as a *statistic of cluster totals*: the caller sums a few per-row quantities
within each cluster (instance) into a matrix ``sums`` of shape (n_clusters, k), and gives a
function that maps totals of shape (..., k) to the statistic. Because a bootstrap resample of
clusters only reweights those cluster totals, all resamples are one matrix product
``weights @ sums`` (weights: (B, n_clusters) multinomial counts) — no Python loop per resample.
Ratios, differences of ratios, means of per-group ratios and the preference leakage score all fit.

Intervals: percentile (default) or BCa (bias-corrected and accelerated, with a leave-one-cluster-out
jackknife for the acceleration, also vectorised). Resamples whose statistic is undefined (an empty
denominator in that resample) are dropped and counted in ``Estimate.note``.

Settings travel as one frozen `Bootstrap` (SciPy's names: ``n_resamples``, ``confidence_level``,
``method``, plus ``seed``), validated when built; metric functions take it as ``bootstrap=`` or, for
brevity in a notebook, its fields as keywords (`settings` turns either into a `Bootstrap`).

What this module leaves out: deciding which rows belong to which cluster or which rows are excluded
— the metric functions do that and pass the counts in.

Adding a metric: sum per-row quantities per cluster, write the statistic of totals, call
`cluster_bootstrap`:

>>> import numpy as np
>>> clusters = np.array(["p1", "p1", "p2", "p3", "p3", "p4"])
>>> won = np.array([1.0, 0.0, 1.0, 1.0, 1.0, 0.0])
>>> _, sums = cluster_sums(clusters, np.column_stack([won, np.ones_like(won)]))
>>> estimate = cluster_bootstrap(sums, ratio_of_totals, n=6, bootstrap=Bootstrap(n_resamples=200, seed=1))
>>> round(estimate.value, 3), estimate.n_clusters, estimate.n_resamples
(0.667, 4, 200)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from nepotism.metrics._estimate import Estimate

__all__ = [
    "METHODS",
    "Bootstrap",
    "Statistic",
    "bootstrap_weights",
    "cluster_bootstrap",
    "cluster_sums",
    "column_ratio",
    "difference_of_ratios",
    "finish_estimate",
    "pearson_of_totals",
    "ratio_of_totals",
    "settings",
]

#: A statistic of cluster totals: (..., k) totals → (...) values.
Statistic = Callable[[np.ndarray], np.ndarray]


def ratio_of_totals(totals: np.ndarray) -> np.ndarray:
    """total₀ / total₁: a mean or a share (numerator in column 0, count in column 1)."""
    return np.asarray(totals[..., 0] / totals[..., 1])


def difference_of_ratios(totals: np.ndarray) -> np.ndarray:
    """total₀ / total₁ − total₂ / total₃: the gap between two shares (e.g. one group's rate − another's)."""
    return np.asarray(totals[..., 0] / totals[..., 1] - totals[..., 2] / totals[..., 3])


def pearson_of_totals(totals: np.ndarray) -> np.ndarray:
    """Pearson r from the totals of the columns (1, x, y, x·y, x², y²): cov / (sd_x · sd_y)."""
    n, sx, sy, sxy, sxx, syy = (totals[..., i] for i in range(6))
    cov = sxy - sx * sy / n
    return np.asarray(cov / np.sqrt((sxx - sx * sx / n) * (syy - sy * sy / n)))


def column_ratio(numerator: int, denominator: int) -> Statistic:
    """The statistic total[numerator] / total[denominator] (columns of a wider block)."""

    def statistic(totals: np.ndarray) -> np.ndarray:
        return np.asarray(totals[..., numerator] / totals[..., denominator])

    return statistic


#: Interval methods: percentile, or bias-corrected and accelerated (``"bca"``).
METHODS = ("percentile", "bca")


@dataclass(frozen=True)
class Bootstrap:
    """How every interval is resampled: the one settings object of the package.

    Field names follow `scipy.stats.bootstrap`: ``n_resamples`` (0 gives point estimates with NaN
    intervals), ``confidence_level`` in (0, 1), ``method`` (``"percentile"`` or ``"bca"``), and
    ``seed`` (a non-negative integer: the same seed gives the same resamples, and every metric
    computed on the same prompts with the same seed uses the same resamples). Invalid values raise
    `ValueError` (or `TypeError` for a wrong type) when the object is built.

    >>> Bootstrap(n_resamples=2000, confidence_level=0.9, seed=7)
    Bootstrap(n_resamples=2000, confidence_level=0.9, method='percentile', seed=7)
    >>> Bootstrap(confidence_level=95)
    Traceback (most recent call last):
    ...
    ValueError: confidence_level must be in (0, 1), not 95
    """

    n_resamples: int = 1000
    confidence_level: float = 0.95
    method: str = "percentile"
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("n_resamples", "seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{name} must be an integer, not {value!r}")
            if value < 0:
                raise ValueError(f"{name} must be >= 0, not {value}")
            object.__setattr__(self, name, int(value))
        level = self.confidence_level
        if isinstance(level, bool) or not isinstance(level, (int, float, np.floating, np.integer)):
            raise TypeError(f"confidence_level must be a number, not {level!r}")
        if not 0.0 < float(level) < 1.0:
            raise ValueError(f"confidence_level must be in (0, 1), not {level}")
        object.__setattr__(self, "confidence_level", float(level))
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, not {self.method!r}")

    def as_dict(self) -> dict[str, Any]:
        """The settings as JSON outputs have always written them (``confidence`` for the level, as
        in every result record)."""
        return {"n_resamples": self.n_resamples, "seed": self.seed, "confidence": self.confidence_level, "method": self.method}


_FIELDS = frozenset({"n_resamples", "confidence_level", "method", "seed"})


def settings(bootstrap: Bootstrap | None = None, **fields: Any) -> Bootstrap:
    """The `Bootstrap` a metric function was given: ``bootstrap=`` or its fields as keywords.

    ``win_rate(o, c, bootstrap=Bootstrap(n_resamples=200))`` and ``win_rate(o, c, n_resamples=200)``
    are the same call; giving both, or a keyword that is not a field, is a `TypeError`.
    """
    unknown = set(fields) - _FIELDS
    if unknown:
        raise TypeError(f"unexpected options: {', '.join(sorted(unknown))} (bootstrap fields: {', '.join(sorted(_FIELDS))})")
    if bootstrap is None:
        return Bootstrap(**fields)
    if not isinstance(bootstrap, Bootstrap):
        raise TypeError(f"bootstrap must be a Bootstrap, not {type(bootstrap).__name__}")
    if fields:
        raise TypeError("give either bootstrap= or its fields as keywords, not both")
    return bootstrap


def cluster_sums(clusters: np.ndarray, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum the rows of ``columns`` (n_rows, k) within each cluster.

    Returns ``(labels, sums)``: the sorted distinct cluster labels and a (n_clusters, k) matrix.
    Row order and cluster label values do not affect the result beyond the label order.
    """
    columns = np.asarray(columns, dtype=float)
    if columns.ndim == 1:
        columns = columns[:, None]
    clusters = np.asarray(clusters)
    if clusters.dtype.kind in "iub":
        labels, codes = np.unique(clusters, return_inverse=True)
    else:  # hashing, then sorting only the distinct labels: far faster than np.unique on strings
        codes, labels = pd.factorize(clusters.astype(object) if clusters.dtype.kind != "O" else clusters, sort=True)
        labels = np.asarray(labels)
    codes = np.asarray(codes).ravel()
    sums = np.empty((labels.size, columns.shape[1]))
    for j in range(columns.shape[1]):  # bincount: far faster than np.add.at for millions of rows
        sums[:, j] = np.bincount(codes, weights=columns[:, j], minlength=labels.size)
    return labels, sums


@lru_cache(maxsize=16)
def _weights_cached(n_clusters: int, n_resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # n_clusters draws with replacement per resample, counted: multinomial(n, 1/n each) in law, and far
    # faster than rng.multinomial's per-row loop for thousands of clusters
    weights = np.empty((n_resamples, n_clusters), dtype=np.float32 if n_clusters < 2**24 else np.float64)
    chunk = max(1, 2**22 // max(n_clusters, 1))
    for start in range(0, n_resamples, chunk):
        rows = min(chunk, n_resamples - start)
        draws = rng.integers(0, n_clusters, size=(rows, n_clusters))
        flat = (draws + (np.arange(rows) * n_clusters)[:, None]).ravel()
        weights[start : start + rows] = np.bincount(flat, minlength=rows * n_clusters).reshape(rows, n_clusters)
    weights.setflags(write=False)
    return weights


def bootstrap_weights(n_clusters: int, n_resamples: int, seed: int) -> np.ndarray:
    """Multinomial resampling counts (n_resamples, n_clusters) for a seed; cached and read-only.

    The same (n_clusters, n_resamples, seed) always gives the same matrix, so every metric computed
    on the same clusters with the same seed uses the same resamples.
    """
    return _weights_cached(int(n_clusters), int(n_resamples), int(seed))


def _percentile_interval(boot: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(boot, [alpha, 1.0 - alpha])
    return float(low), float(high)


def _bca_interval(
    boot: np.ndarray, value: float, sums: np.ndarray, statistic: Statistic, confidence: float
) -> tuple[float, float]:
    proportion = np.mean(boot < value) + 0.5 * np.mean(boot == value)
    proportion = min(max(proportion, 1.0 / (boot.size + 1)), boot.size / (boot.size + 1))
    z0 = stats.norm.ppf(proportion)
    total = sums.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        jack = np.asarray(statistic(total[None, :] - sums), dtype=float)
    jack = jack[np.isfinite(jack)]
    if jack.size < 3:
        return _percentile_interval(boot, confidence)
    diff = jack.mean() - jack
    denominator = 6.0 * (np.sum(diff**2) ** 1.5)
    acceleration = float(np.sum(diff**3) / denominator) if denominator > 0 else 0.0
    alpha = (1.0 - confidence) / 2.0
    quantiles = []
    for z in (stats.norm.ppf(alpha), stats.norm.ppf(1.0 - alpha)):
        adjusted = stats.norm.cdf(z0 + (z0 + z) / (1.0 - acceleration * (z0 + z)))
        quantiles.append(float(np.clip(adjusted, 0.0, 1.0)))
    low, high = np.quantile(boot, quantiles)
    return float(low), float(high)


def cluster_bootstrap(
    sums: np.ndarray,
    statistic: Statistic,
    *,
    n: int,
    n_excluded: int = 0,
    excluded: Mapping[str, int] | None = None,
    bootstrap: Bootstrap | None = None,
    alternative: str | None = None,
    null_value: float = 0.0,
    note: str | None = None,
) -> Estimate:
    """Estimate ``statistic(sums.sum(0))`` with a cluster-bootstrap interval.

    ``sums`` is (n_clusters, k) from `cluster_sums`. ``statistic`` maps an array (..., k) of totals
    to (...). ``alternative="greater"`` adds a one-sided bootstrap p-value for value > null_value
    (the share of resamples at or below the null, with the +1 correction); ``"less"`` the mirror.
    ``bootstrap`` holds the settings (default `Bootstrap()`); ``n_resamples=0`` gives the point
    estimate with a NaN interval.
    """
    bootstrap = settings(bootstrap)
    n_resamples, seed = bootstrap.n_resamples, bootstrap.seed
    confidence, method = bootstrap.confidence_level, bootstrap.method
    if alternative not in (None, "greater", "less"):
        raise ValueError("alternative must be None, 'greater' or 'less'")
    sums = np.asarray(sums, dtype=float)
    if sums.ndim == 1:
        sums = sums[:, None]
    excluded = dict(excluded or {})
    n_clusters = sums.shape[0]
    nan = float("nan")
    if n_clusters == 0:
        return Estimate(
            nan,
            nan,
            nan,
            n,
            0,
            n_excluded,
            excluded,
            confidence,
            method,
            0,
            None,
            note or (f"no data: all {n_excluded:,} excluded" if n_excluded else "no data"),
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(np.asarray(statistic(sums.sum(axis=0)), dtype=float))
    if not np.isfinite(value):
        return Estimate(
            nan,
            nan,
            nan,
            n,
            n_clusters,
            n_excluded,
            excluded,
            confidence,
            method,
            0,
            None,
            note or "undefined: the denominator is zero or empty",
        )
    if n_resamples <= 0:
        return Estimate(value, nan, nan, n, n_clusters, n_excluded, excluded, confidence, "none", 0, None, note)
    weights = bootstrap_weights(n_clusters, n_resamples, seed)
    totals = weights @ sums.astype(weights.dtype)
    return finish_estimate(
        value,
        totals,
        sums,
        statistic,
        n=n,
        n_excluded=n_excluded,
        excluded=excluded,
        bootstrap=bootstrap,
        alternative=alternative,
        null_value=null_value,
        note=note,
    )


def finish_estimate(
    value: float,
    totals: np.ndarray,
    sums: np.ndarray,
    statistic: Statistic,
    *,
    n: int,
    n_excluded: int,
    excluded: Mapping[str, int],
    bootstrap: Bootstrap,
    alternative: str | None,
    null_value: float,
    note: str | None,
) -> Estimate:
    """Turn resampled totals (B, k) into an `Estimate`: interval, dropped resamples, one-sided p.

    Shared by `cluster_bootstrap` and the batched `BootstrapBatch`, so both give identical numbers.
    """
    nan = float("nan")
    n_resamples, confidence, method = bootstrap.n_resamples, bootstrap.confidence_level, bootstrap.method
    n_clusters = sums.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        boot = np.asarray(statistic(np.asarray(totals, dtype=float)), dtype=float)
    finite = np.isfinite(boot)
    dropped = int((~finite).sum())
    boot = boot[finite]
    if dropped:
        extra = f"{dropped} of {n_resamples} resamples undefined and dropped"
        note = f"{note}; {extra}" if note else extra
    if boot.size < 2:
        return Estimate(value, nan, nan, n, n_clusters, n_excluded, dict(excluded), confidence, method, n_resamples, None, note)
    if method == "bca":
        low, high = _bca_interval(boot, value, sums, statistic, confidence)
    else:
        low, high = _percentile_interval(boot, confidence)
    p_value = None
    if alternative == "greater":
        p_value = float((np.sum(boot <= null_value) + 1) / (boot.size + 1))
    elif alternative == "less":
        p_value = float((np.sum(boot >= null_value) + 1) / (boot.size + 1))
    elif alternative is not None:
        raise ValueError("alternative must be None, 'greater' or 'less'")
    return Estimate(value, low, high, n, n_clusters, n_excluded, dict(excluded), confidence, method, n_resamples, p_value, note)
