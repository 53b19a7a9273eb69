"""Helpers shared by the metric modules: option checking, exclusions, per-group totals.

Per-group totals are how statistics that need per-generator (or per-evaluatee) quantities stay a
function of cluster totals: column ``2g`` holds group g's numerator, ``2g + 1`` its denominator,
so one weights-matrix product resamples every group at once. Nothing here computes a metric.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from nepotism.metrics.bootstrap import Bootstrap, cluster_bootstrap
from nepotism.metrics._estimate import Estimate

#: One metric record as the suite builds it (``metric``, ``judge``, ``value``, ``ci_low`` …);
#: `nepotism.results.Record` is its typed form.
Row = dict[str, Any]
#: Per generator name: its registry relation's name (key ``name``) and its scope (key
#: ``("scope", name)``, from `nepotism.models.Registry.scope`), as the suite passes them down.
Relations = dict[object, Any]

__all__ = [
    "Relations",
    "Row",
    "checked",
    "group_sums",
    "labels",
    "mean_of_ratios",
    "ratio_of_mean_rates",
    "undefined",
    "valid_rows",
]


def checked(values: ArrayLike, name: str, *, low: float, high: float, n: int | None = None) -> np.ndarray:
    """``values`` as a 1-D float array whose entries are in [low, high] or NaN (no verdict);
    ``n``: the length it must have. Anything else is a `ValueError` naming the argument and the
    first offending position (inf, out of range, wrong shape, not a number)."""
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must hold numbers (NaN for no verdict)") from None
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, not of shape {array.shape}")
    if n is not None and array.size != n:
        raise ValueError(f"{name} has {array.size} entries; expected {n} (one per row)")
    with np.errstate(invalid="ignore"):
        bad = np.isinf(array) | (array < low) | (array > high)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name} must be in [{low:g}, {high:g}] or NaN (no verdict); {name}[{i}] is {float(array[i])!r}")
    return array


def labels(values: ArrayLike, name: str, *, n: int) -> np.ndarray:
    """``values`` (cluster labels, one per row) as a 1-D array of length ``n``."""
    array = np.asarray(values)
    if array.ndim != 1 or array.size != n:
        raise ValueError(f"{name} must hold one label per row: {n} expected, got shape {array.shape}")
    return array


def undefined(
    note: str, *, n: int = 0, n_excluded: int = 0, excluded: Mapping[str, int] | None = None, bootstrap: Bootstrap | None = None
) -> Estimate:
    """A NaN estimate with the reason in ``note`` (never a silent 0)."""
    return cluster_bootstrap(
        np.zeros((0, 1)), lambda t: t[..., 0], n=n, n_excluded=n_excluded, excluded=excluded, note=note, bootstrap=bootstrap
    )


def valid_rows(*arrays: np.ndarray, reason: str = "no verdict") -> tuple[np.ndarray, int, dict[str, int]]:
    """Rows where every float array is finite; returns (mask, n_excluded, excluded)."""
    keep = np.ones(len(arrays[0]), dtype=bool)
    for array in arrays:
        keep &= np.isfinite(np.asarray(array, dtype=float))
    n_missing = int((~keep).sum())
    return keep, n_missing, ({reason: n_missing} if n_missing else {})


def group_sums(groups: np.ndarray, numerator: np.ndarray, denominator: np.ndarray, n_groups: int) -> np.ndarray:
    """Row columns (n_rows, 2·n_groups): group g's numerator in 2g, denominator in 2g+1."""
    groups = np.asarray(groups, dtype=np.int64)
    columns = np.zeros((groups.size, 2 * n_groups))
    rows = np.arange(groups.size)
    columns[rows, 2 * groups] = numerator
    columns[rows, 2 * groups + 1] = denominator
    return columns


def mean_of_ratios(totals: np.ndarray, members: np.ndarray | None = None) -> np.ndarray:
    """Mean over groups (optionally a boolean subset) of numerator/denominator.

    A group whose denominator is 0 in these totals (in a bootstrap resample: none of its rows
    drawn) is left out of the mean, as the point estimate leaves out a group never at risk; with
    every group left out the value is NaN (an undefined resample, dropped and counted).
    """
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ratios = totals[..., 0::2] / totals[..., 1::2]
        if members is not None:
            ratios = ratios[..., np.asarray(members, dtype=bool)]
        return np.asarray(np.nanmean(ratios, axis=-1))


def ratio_of_mean_rates(totals: np.ndarray, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """mean over ``num`` groups of numerator/denominator ÷ the same over ``den`` groups.

    A group whose denominator is 0 (in a bootstrap resample: none of its rows drawn) is left out
    of its mean, as the point estimate leaves out a group never at risk; a side left empty gives
    NaN (the resample is undefined and dropped, counted by the bootstrap).
    """
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rates = totals[..., 0::2] / totals[..., 1::2]
        return np.asarray(np.nanmean(rates[..., num], -1) / np.nanmean(rates[..., den], -1))
