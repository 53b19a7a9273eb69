"""Inter-annotator agreement on nominal labels, with cluster-bootstrap intervals.

Every statistic here is written as a function of per-item column totals, so the project's
cluster bootstrap (`nepotism.metrics.cluster_bootstrap`) resamples prompts (instances) and recomputes
it in one matrix product. Labels are category codes 0..C-1 with -1 for "not labelled" (a skip
or a missing annotator). Definitions:

* **percent agreement**: for each item with m >= 2 labels, the share of agreeing ordered pairs
  of annotators, sum_c n_c (n_c - 1) / (m (m - 1)); averaged over those items. For two
  annotators it is the share of items both labelled alike.
* **Cohen's kappa** (two annotators, items both labelled): (p_o - p_e) / (1 - p_e) with p_e from
  each annotator's own marginal shares.
* **Fleiss' kappa**: (P̄ - P_e) / (1 - P_e) where P̄ is the percent agreement above and
  P_e = sum_c p_c² with p_c the share of all labels (on items with m >= 2) in category c. With
  the same number of annotators on every item this is Fleiss (1971); with varying numbers it is
  the usual generalisation that weights items equally.
* **Krippendorff's alpha** (nominal): 1 - (n - 1) (n - sum_c o_cc) / (n² - sum_c n_c²), from
  the coincidence matrix of pairable values (items with m >= 2; missing values allowed).

A statistic whose denominator is zero (for example everybody always used one category) is NaN
with the reason in the note, never 0. What this module leaves out: weighted (ordinal) kappas and
alpha for non-nominal data; reading labels from the store (`nepotism.annotate.report` does that).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike

from nepotism.metrics import Bootstrap, Estimate, cluster_bootstrap, cluster_sums
from nepotism.metrics.bootstrap import Statistic, column_ratio, settings

_MEAN_AGREEMENT = column_ratio(1, 0)  # agreeing pairs / pairs (count in column 0)

__all__ = [
    "category_counts",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "pair_agreement",
    "percent_agreement",
]


def category_counts(labels: np.ndarray, n_categories: int) -> np.ndarray:
    """Turn an (items, annotators) code matrix (-1 = missing) into (items, categories) counts."""
    labels = np.asarray(labels, dtype=int)
    if labels.ndim != 2:
        raise ValueError("labels must be a 2-D (items, annotators) matrix")
    if labels.size and (labels.max(initial=-1) >= n_categories or labels.min(initial=0) < -1):
        raise ValueError(f"label codes must be -1 or 0..{n_categories - 1}")
    counts = np.zeros((labels.shape[0], n_categories))
    for c in range(n_categories):
        counts[:, c] = (labels == c).sum(axis=1)
    return counts


def _estimate(
    columns: np.ndarray, clusters: np.ndarray, statistic: Statistic, n: int, empty: str, bootstrap: Bootstrap
) -> Estimate:
    if columns.shape[0] == 0:
        nan = float("nan")
        return Estimate(nan, nan, nan, 0, 0, note=empty)
    _, sums = cluster_sums(np.asarray(clusters), columns)
    estimate = cluster_bootstrap(sums, statistic, n=n, bootstrap=bootstrap)
    if not estimate.defined and estimate.note is None:
        estimate = replace(estimate, note="undefined")
    return estimate


_NO_PAIRS = "no item has two labels to compare"
_NO_SHARED = "no item labelled by both"


# ------------------------------------------------------------------- several annotators per item


def _pairable(counts: ArrayLike, clusters: ArrayLike | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    counts = np.asarray(counts, dtype=float)
    m = counts.sum(axis=1)
    keep = m >= 2
    clusters = np.asarray(clusters if clusters is not None else np.arange(len(counts)))
    return counts[keep], m[keep], clusters[keep]


def _item_agreement(counts: np.ndarray, m: np.ndarray) -> np.ndarray:
    return np.asarray((counts * (counts - 1)).sum(axis=1) / (m * (m - 1)))


def percent_agreement(
    counts: ArrayLike, clusters: ArrayLike | None = None, *, bootstrap: Bootstrap | None = None, **fields: object
) -> Estimate:
    """Mean share of agreeing annotator pairs per item (items with at least two labels)."""
    counts, m, clusters = _pairable(counts, clusters)
    columns = np.column_stack([np.ones(len(m)), _item_agreement(counts, m)]) if len(m) else np.empty((0, 2))
    return _estimate(columns, clusters, _MEAN_AGREEMENT, len(m), _NO_PAIRS, settings(bootstrap, **fields))


def _fleiss_statistic(k: int) -> Statistic:
    def statistic(t: np.ndarray) -> np.ndarray:
        p_bar = t[..., 1] / t[..., 0]
        shares = t[..., 2 : 2 + k] / t[..., 2 + k : 3 + k]
        p_e = (shares**2).sum(axis=-1)
        return np.asarray((p_bar - p_e) / (1.0 - p_e))

    return statistic


def fleiss_kappa(
    counts: ArrayLike, clusters: ArrayLike | None = None, *, bootstrap: Bootstrap | None = None, **fields: object
) -> Estimate:
    """Fleiss' kappa from an (items, categories) count matrix; items with < 2 labels are left out."""
    counts, m, clusters = _pairable(counts, clusters)
    k = counts.shape[1]
    if not len(m):
        columns = np.empty((0, k + 3))
    else:
        columns = np.column_stack([np.ones(len(m)), _item_agreement(counts, m), counts, m])
    return _estimate(columns, clusters, _fleiss_statistic(k), len(m), _NO_PAIRS, settings(bootstrap, **fields))


def _alpha_statistic(k: int) -> Statistic:
    def statistic(t: np.ndarray) -> np.ndarray:
        n_c = t[..., :k]
        o_cc = t[..., k : 2 * k]
        n = n_c.sum(axis=-1)
        return np.asarray(1.0 - (n - 1.0) * (n - o_cc.sum(axis=-1)) / (n**2 - (n_c**2).sum(axis=-1)))

    return statistic


def krippendorff_alpha(
    counts: ArrayLike, clusters: ArrayLike | None = None, *, bootstrap: Bootstrap | None = None, **fields: object
) -> Estimate:
    """Krippendorff's alpha for nominal data from an (items, categories) count matrix.

    Items with fewer than two values are not pairable and are left out, as the definition says.
    ``n`` of the result counts the pairable values.
    """
    counts, m, clusters = _pairable(counts, clusters)
    k = counts.shape[1]
    if not len(m):
        columns = np.empty((0, 2 * k))
    else:
        diagonal = counts * (counts - 1) / (m - 1)[:, None]
        columns = np.column_stack([counts, diagonal])
    return _estimate(columns, clusters, _alpha_statistic(k), int(m.sum()), _NO_PAIRS, settings(bootstrap, **fields))


# --------------------------------------------------------------------------- two annotators


def _cohen_statistic(k: int) -> Statistic:
    def statistic(t: np.ndarray) -> np.ndarray:
        n = t[..., 0]
        p_o = t[..., 1] / n
        first = t[..., 2 : 2 + k] / n[..., None]
        second = t[..., 2 + k : 2 + 2 * k] / n[..., None]
        p_e = (first * second).sum(axis=-1)
        return np.asarray((p_o - p_e) / (1.0 - p_e))

    return statistic


def _pair_columns(x: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    agree = (x == y).astype(float)
    first = np.stack([(x == c) for c in range(k)], axis=1).astype(float)
    second = np.stack([(y == c) for c in range(k)], axis=1).astype(float)
    return np.column_stack([np.ones(len(x)), agree, first, second])


def _both(x: ArrayLike, y: ArrayLike, clusters: ArrayLike | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    x, y = np.asarray(x, dtype=int), np.asarray(y, dtype=int)
    if x.shape != y.shape:
        raise ValueError("the two label vectors differ in length")
    clusters = np.asarray(clusters if clusters is not None else np.arange(len(x)))
    keep = (x >= 0) & (y >= 0)
    return x[keep], y[keep], clusters[keep], int((~keep).sum())


def cohen_kappa(
    x: ArrayLike,
    y: ArrayLike,
    n_categories: int,
    clusters: ArrayLike | None = None,
    *,
    bootstrap: Bootstrap | None = None,
    **fields: object,
) -> Estimate:
    """Cohen's kappa between two label vectors (codes; -1 = missing, such items are left out)."""
    x, y, clusters, missing = _both(x, y, clusters)
    k = n_categories
    columns = _pair_columns(x, y, k) if len(x) else np.empty((0, 2 + 2 * k))
    estimate = _estimate(columns, clusters, _cohen_statistic(k), len(x), _NO_SHARED, settings(bootstrap, **fields))
    if missing:
        estimate = replace(estimate, n_excluded=missing, excluded={"not labelled by both": missing})
    return estimate


def pair_agreement(
    x: ArrayLike, y: ArrayLike, clusters: ArrayLike | None = None, *, bootstrap: Bootstrap | None = None, **fields: object
) -> Estimate:
    """Share of items two annotators (or a judge and the humans) labelled alike."""
    x, y, clusters, missing = _both(x, y, clusters)
    columns = np.column_stack([np.ones(len(x)), (x == y).astype(float)]) if len(x) else np.empty((0, 2))
    estimate = _estimate(columns, clusters, _MEAN_AGREEMENT, len(x), _NO_SHARED, settings(bootstrap, **fields))
    if missing:
        estimate = replace(estimate, n_excluded=missing, excluded={"not labelled by both": missing})
    return estimate
