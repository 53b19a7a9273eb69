"""How many of a judge's judgments carry no verdict, and why: what every other metric leaves out.

`excluded_share` is nepotism's own bookkeeping, not a paper's metric. A judgment without a verdict
(unparsed or failed) is never a tie or a zero; it is excluded from every metric, and this share
says how many were, per reason (``unparsed-conflicting``, ``unparsed-low-label-mass``,
``failed-timeout``, ... — `nepotism.records.exclusion_label`). A judge whose verdicts are often
missing for one kind of candidate biases every number built on the rest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from nepotism.metrics.bootstrap import Bootstrap, cluster_bootstrap, cluster_sums, ratio_of_totals, settings
from nepotism.metrics._common import undefined
from nepotism.metrics._estimate import Estimate

__all__ = ["excluded_share"]


def excluded_share(excluded: ArrayLike, clusters: ArrayLike, *, reasons: Iterable[object] | None = None,
                   bootstrap: Bootstrap | None = None, **fields: Any) -> Estimate:
    """Share of judgments without a verdict: Σ excluded / n, with a cluster bootstrap over prompts.

    ``excluded`` is one boolean per judgment (True: no verdict), ``clusters`` its instance;
    ``reasons`` optionally one label per judgment (read only where ``excluded``). The estimate's
    ``n`` counts every judgment, ``n_excluded`` those without a verdict and ``excluded`` gives
    them per reason ("no reason recorded" where none is given).

    >>> est = excluded_share([False, True, False, True], ["q1", "q1", "q2", "q3"],
    ...                      reasons=[None, "unparsed-conflicting", None, "failed-timeout"], n_resamples=0)
    >>> est.value, est.n, est.n_excluded, dict(est.excluded)
    (0.5, 4, 2, {'failed-timeout': 1, 'unparsed-conflicting': 1})
    """
    options = settings(bootstrap, **fields)
    flags = np.asarray(excluded)
    clusters = np.asarray(clusters)
    if flags.ndim != 1 or clusters.shape != flags.shape:
        raise ValueError("excluded and clusters must be one-dimensional and of the same length")
    if flags.dtype != bool:
        if not np.isin(flags, (0, 1, True, False)).all():
            raise ValueError("excluded must hold booleans (True: the judgment has no verdict)")
        flags = flags.astype(bool)
    why = np.full(flags.size, None, dtype=object) if reasons is None else np.asarray(reasons if isinstance(reasons, (np.ndarray, list, tuple)) else list(reasons), dtype=object)
    if why.shape != flags.shape:
        raise ValueError("reasons must have one label per judgment")
    counts = Counter(str(r) if isinstance(r, str) and r else "no reason recorded" for r in why[flags])
    if flags.size == 0:
        return undefined("no judgments", bootstrap=options)
    _, sums = cluster_sums(clusters, np.column_stack([flags.astype(float), np.ones(flags.size)]))
    return cluster_bootstrap(sums, ratio_of_totals, n=int(flags.size), n_excluded=int(flags.sum()),
                             excluded=dict(sorted(counts.items())), bootstrap=options)
