"""Integer codes for table columns, and key look-ups between tables, without string sorting.

Categorical columns keep their codes; other columns are hashed once (`pandas.factorize`). A second
table's column is mapped onto the first table's categories (unknown values → -1). Composite keys
are looked up in a dense array when small enough, else by binary search on int64 keys.
Nothing here knows about metrics.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["as_float", "codes", "lookup", "recode"]

_DENSE_LIMIT = 20_000_000


def codes(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(int64 codes, labels as str) of a column; -1 for a missing value. Non-categorical labels are sorted."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return series.cat.codes.to_numpy().astype(np.int64), np.asarray(series.cat.categories.astype(str))
    values, labels = pd.factorize(series, sort=True)  # sorted labels: results do not depend on row order
    return values.astype(np.int64), np.asarray(pd.Index(labels).astype(str))


def recode(series: pd.Series, labels: np.ndarray) -> np.ndarray:
    """Codes of ``series`` on the given labels (-1 where the value is not among them)."""
    index = pd.Index(labels)
    if isinstance(series.dtype, pd.CategoricalDtype):
        mapping = index.get_indexer(series.cat.categories.astype(str))
        raw = series.cat.codes.to_numpy().astype(np.int64)
        return np.where(raw >= 0, mapping[np.maximum(raw, 0)], -1)
    values, uniques = pd.factorize(series, sort=False)
    mapping = index.get_indexer(pd.Index(uniques).astype(str))
    return np.where(values >= 0, mapping[np.maximum(values, 0)], -1).astype(np.int64)


def as_float(series: pd.Series) -> np.ndarray:
    """True/False/None (object or bool) or numbers → float with NaN for missing."""
    if series.dtype == bool:
        return np.asarray(series.to_numpy(), dtype=float)
    if isinstance(series.dtype, pd.BooleanDtype):
        return np.asarray(series.astype("Float64").to_numpy(dtype=float, na_value=np.nan))
    if series.dtype.kind in "fiu":
        return np.asarray(series.to_numpy(dtype=float))
    values = series.to_numpy(dtype=object)
    missing = pd.isna(values)
    out = np.full(values.size, np.nan)
    out[~missing] = values[~missing].astype(float)
    return out


def lookup(
    table_codes: list[np.ndarray], table_values: np.ndarray, sizes: list[int], query_codes: list[np.ndarray]
) -> np.ndarray:
    """Value of each query key in a table keyed by integer code tuples; NaN where absent.

    ``sizes`` bounds each code (codes in [0, size)); rows with a -1 code never match.
    """
    total = int(np.prod(np.asarray(sizes, dtype=np.float64)))
    dtype: type[np.signedinteger[Any]] = np.int32 if total < 2**31 else np.int64

    def key(parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        k: np.ndarray = np.zeros(parts[0].size, dtype=dtype)
        valid = np.ones(parts[0].size, dtype=bool)
        for part, size in zip(parts, sizes):
            if part.size and part.min() < 0:
                valid &= part >= 0
                part = np.maximum(part, 0)
            k *= size
            k += part.astype(dtype, copy=False)
        return k, valid

    t_key, t_ok = key(table_codes)
    q_key, q_ok = key(query_codes)
    values = np.asarray(table_values, dtype=float)
    out = np.full(q_key.size, np.nan)
    if total <= _DENSE_LIMIT:
        dense = np.full(total, np.nan)
        dense[t_key[t_ok]] = values[t_ok]
        out[q_ok] = dense[q_key[q_ok]]
        return out
    order = np.argsort(t_key[t_ok], kind="stable")
    sorted_key = t_key[t_ok][order]
    sorted_val = values[t_ok][order]
    pos = np.searchsorted(sorted_key, q_key)
    pos = np.minimum(pos, max(sorted_key.size - 1, 0))
    hit = q_ok & (sorted_key.size > 0) & (sorted_key[pos] == q_key) if sorted_key.size else np.zeros(q_key.size, bool)
    out[hit] = sorted_val[pos[hit]]
    return out
