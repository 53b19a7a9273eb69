"""Many cluster-bootstrap estimates from ONE weights-matrix product.

Every metric of one batch resamples the same clusters (the instances a judge evaluated), so the
resampling weights W (B × n_clusters) are shared: the per-cluster sums of all metrics are stacked
as columns of one matrix S and ``W @ S`` gives every metric's resampled totals at once. A
statistic then reads its own columns. Blocks of columns can be shared by several statistics
(e.g. the per-generator counts behind every generator's overestimation rate and the HSPP ratio).

An instance that contributes nothing to one metric is still a resampled cluster of the batch: the
bootstrap draws prompts of the study, and the number of units a metric sees varies across
resamples (the usual cluster bootstrap for ratio estimators). Estimates of single metrics on
their own rows (`cluster_bootstrap`) drop such empty clusters instead; both are consistent.

`ClusterSetBatch` is the other kind: estimates identical, bit for bit, to calling `cluster_bootstrap`
item by item (each on its own clusters, empty ones dropped), computed with one product per number
of clusters instead of one per item: the weights depend only on that number (and the seed), so
items with as many clusters share them; their columns
are stacked (equal columns once) and multiplied together. This is exact, not approximate: the
product is float32, and a column of half-integer sums whose resampled totals stay below 2**23 is
summed without rounding in any order; a column that is not (e.g. label probabilities) is resampled
on its own, as `cluster_bootstrap` would.

What this module leaves out: building the sums (the suite does that) and any statistic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nepotism.metrics.bootstrap import Bootstrap, Statistic, bootstrap_weights, cluster_bootstrap, finish_estimate
from nepotism.metrics._common import Row
from nepotism.metrics._estimate import Estimate
from nepotism.results import new_record

__all__ = ["BootstrapBatch", "ClusterSetBatch", "RecordBatch"]


@dataclass
class _Item:
    block: int
    statistic: Statistic
    n: int
    n_excluded: int
    excluded: Mapping[str, int]
    note: str | None
    alternative: str | None
    null_value: float
    undefined_note: str | None = None


@dataclass
class BootstrapBatch:
    """Collect (sums block, statistic) items over one cluster set; `run` returns their Estimates in order."""

    n_clusters: int
    bootstrap: Bootstrap = field(default_factory=Bootstrap)
    _blocks: list[np.ndarray] = field(default_factory=list)
    _items: list[_Item] = field(default_factory=list)

    def block(self, sums: np.ndarray) -> int:
        """Register a (n_clusters, k) block of per-cluster sums; returns its handle."""
        sums = np.asarray(sums, dtype=float)
        if sums.ndim == 1:
            sums = sums[:, None]
        if sums.shape[0] != self.n_clusters:
            raise ValueError(f"block has {sums.shape[0]} clusters, the batch {self.n_clusters}")
        self._blocks.append(sums)
        return len(self._blocks) - 1

    def add(
        self,
        block: int | np.ndarray,
        statistic: Statistic,
        *,
        n: int,
        n_excluded: int = 0,
        excluded: Mapping[str, int] | None = None,
        note: str | None = None,
        alternative: str | None = None,
        null_value: float = 0.0,
        undefined_note: str | None = None,
    ) -> int:
        """Add a statistic of a block (a handle, or sums to register); returns the item's index.

        ``undefined_note`` marks an item known to be undefined up front (it gets NaN with that note).
        """
        if not isinstance(block, (int, np.integer)):
            block = self.block(block)
        self._items.append(
            _Item(
                int(block),
                statistic,
                int(n),
                int(n_excluded),
                dict(excluded or {}),
                note,
                alternative,
                null_value,
                undefined_note,
            )
        )
        return len(self._items) - 1

    def run(self) -> list[Estimate]:
        """Point estimates, then one ``W @ S`` for all blocks, then each item's interval."""
        nan = float("nan")
        if not self._items:
            return []
        widths = [b.shape[1] for b in self._blocks]
        offsets = np.concatenate([[0], np.cumsum(widths)])
        stacked = np.concatenate(self._blocks, axis=1) if self._blocks else np.zeros((self.n_clusters, 0))
        totals_full = stacked.sum(axis=0)
        values = []
        for item in self._items:
            lo, hi = offsets[item.block], offsets[item.block + 1]
            if item.undefined_note is not None or self.n_clusters == 0:
                values.append(nan)
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                values.append(float(np.asarray(item.statistic(totals_full[lo:hi]), dtype=float)))
        resampled = None
        boot = self.bootstrap
        if boot.n_resamples > 0 and self.n_clusters > 0 and any(np.isfinite(values)):
            weights = bootstrap_weights(self.n_clusters, boot.n_resamples, boot.seed)
            resampled = weights @ stacked.astype(weights.dtype)
        out = []
        for item, value in zip(self._items, values):
            lo, hi = offsets[item.block], offsets[item.block + 1]
            common = (item.n, self.n_clusters, item.n_excluded, item.excluded, boot.confidence_level)
            if not np.isfinite(value):
                note = item.undefined_note or item.note or "undefined: the denominator is zero or empty"
                out.append(Estimate(nan, nan, nan, *common, boot.method, 0, None, note))
            elif resampled is None:
                out.append(Estimate(value, nan, nan, *common, "none", 0, None, item.note))
            else:
                out.append(
                    finish_estimate(
                        value,
                        resampled[:, lo:hi],
                        self._blocks[item.block],
                        item.statistic,
                        n=item.n,
                        n_excluded=item.n_excluded,
                        excluded=item.excluded,
                        bootstrap=boot,
                        alternative=item.alternative,
                        null_value=item.null_value,
                        note=item.note,
                    )
                )
        return out


class RecordBatch:
    """A `BootstrapBatch` whose items become suite records ``{metric, judge, ..., value, ci_low, ...}``.

    ``base`` holds the judge and condition shared by every record (`nepotism.results.new_record`
    builds each); each item adds its own
    (generator, pair, scope, variant, ...). Ready-made Estimates can be added too (`add_estimate`).
    """

    def __init__(self, base: Mapping[str, Any], n_clusters: int, bootstrap: Bootstrap):
        self.base = dict(base)
        self.batch = BootstrapBatch(n_clusters, bootstrap)
        self._pending: list[tuple[str, dict[str, Any], int | Estimate]] = []

    def block(self, sums: np.ndarray) -> int:
        return self.batch.block(sums)

    def add(
        self,
        metric: str,
        block: int | np.ndarray,
        statistic: Statistic,
        *,
        n: int,
        n_excluded: int = 0,
        excluded: Mapping[str, int] | None = None,
        note: str | None = None,
        alternative: str | None = None,
        undefined_note: str | None = None,
        **extra: Any,
    ) -> None:
        index = self.batch.add(
            block,
            statistic,
            n=n,
            n_excluded=n_excluded,
            excluded=excluded,
            note=note,
            alternative=alternative,
            undefined_note=undefined_note,
        )
        self._pending.append((metric, extra, index))

    def add_estimate(self, metric: str, estimate: Estimate, **extra: Any) -> None:
        self._pending.append((metric, extra, estimate))

    def records(self) -> list[Row]:
        estimates = self.batch.run()
        out = []
        for metric, extra, item in self._pending:
            estimate = estimates[item] if isinstance(item, int) else item
            out.append(new_record(metric, self.base["judge"], self.base["condition"], estimate, **extra))
        return out


@dataclass
class _SetItem:
    columns: list[int]
    value: float
    statistic: Statistic
    options: dict[str, Any]


class _ClusterSet:
    """The distinct sum columns of the items resampling the same number of clusters."""

    def __init__(self, n_clusters: int):
        self.n_clusters = n_clusters
        self.index: dict[bytes, int] = {}
        self.keys: list[bytes] = []
        self.items: list[int] = []

    def column(self, values: np.ndarray) -> int:
        key = np.ascontiguousarray(values, dtype=float).tobytes()
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.keys)
            self.keys.append(key)
        return found

    def sums(self, columns: list[int]) -> np.ndarray:
        return np.column_stack([np.frombuffer(self.keys[c], dtype=float) for c in columns])


_EXACT = 2.0**23  # float32 sums of multiples of ½ below this are exact in any order


class ClusterSetBatch:
    """Estimates equal to ``cluster_bootstrap(sums, statistic, ...)`` per item, one product per cluster count.

    ``add(sums, statistic, ...)`` takes the item's (n_clusters, k) sums (from `cluster_sums`) with
    `cluster_bootstrap`'s keywords; `run` returns the Estimates in the order they were added.
    """

    def __init__(self, bootstrap: Bootstrap):
        self.bootstrap = bootstrap
        self._sets: dict[int, _ClusterSet] = {}
        self._items: list[tuple[_ClusterSet | None, _SetItem | Estimate]] = []

    def add(
        self,
        sums: np.ndarray,
        statistic: Statistic,
        *,
        n: int,
        n_excluded: int = 0,
        excluded: Mapping[str, int] | None = None,
        alternative: str | None = None,
        null_value: float = 0.0,
        note: str | None = None,
    ) -> int:
        sums = np.asarray(sums, dtype=float)
        if sums.ndim == 1:
            sums = sums[:, None]
        options: dict[str, Any] = dict(
            n=n,
            n_excluded=n_excluded,
            excluded=excluded,
            bootstrap=self.bootstrap,
            alternative=alternative,
            null_value=null_value,
            note=note,
        )
        value = float("nan")
        if sums.shape[0]:
            with np.errstate(divide="ignore", invalid="ignore"):
                value = float(np.asarray(statistic(sums.sum(axis=0)), dtype=float))
        if not sums.shape[0] or not np.isfinite(value) or self.bootstrap.n_resamples <= 0:
            self._items.append((None, cluster_bootstrap(sums, statistic, **options)))  # no product needed
            return len(self._items) - 1
        group = self._sets.get(sums.shape[0])
        if group is None:
            group = self._sets[sums.shape[0]] = _ClusterSet(sums.shape[0])
        columns = [group.column(sums[:, j]) for j in range(sums.shape[1])]
        group.items.append(len(self._items))
        self._items.append((group, _SetItem(columns, value, statistic, options)))
        return len(self._items) - 1

    def run(self) -> list[Estimate]:
        out: list[Estimate | None] = [item if isinstance(item, Estimate) else None for _, item in self._items]
        boot = self.bootstrap
        for group in self._sets.values():
            weights = bootstrap_weights(group.n_clusters, boot.n_resamples, boot.seed)
            stacked = np.column_stack([np.frombuffer(k, dtype=float) for k in group.keys])
            top = float(weights.max()) if weights.size else 0.0
            halves = stacked * 2.0
            exact = np.all(halves == np.round(halves), axis=0) & (top * np.abs(stacked).sum(axis=0) < _EXACT)
            if weights.dtype != np.float32:
                exact[:] = False
            shared = np.flatnonzero(exact)
            position = np.full(stacked.shape[1], -1)
            position[shared] = np.arange(shared.size)
            totals = weights @ stacked[:, shared].astype(weights.dtype) if shared.size else np.empty((weights.shape[0], 0))
            del stacked, halves
            for index in group.items:
                item = self._items[index][1]
                assert isinstance(item, _SetItem)
                cols = position[item.columns]
                if (cols < 0).any():  # not exact in a shared product: resampled alone, as cluster_bootstrap does
                    out[index] = cluster_bootstrap(group.sums(item.columns), item.statistic, **item.options)
                    continue
                sums = group.sums(item.columns) if boot.method == "bca" else np.empty((group.n_clusters, 0))
                options = dict(item.options)
                options.pop("bootstrap")
                out[index] = finish_estimate(
                    item.value,
                    totals[:, cols],
                    sums,
                    item.statistic,
                    bootstrap=boot,
                    **{**options, "excluded": dict(options["excluded"] or {})},
                )
        done = [estimate for estimate in out if estimate is not None]
        assert len(done) == len(out), "every item is estimated"
        return done
