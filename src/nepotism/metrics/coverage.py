"""How many of a judge's judgments carry no verdict, and why: what every other metric leaves out.

`excluded_share` is nepotism's own bookkeeping, not a paper's metric. A judgment without a verdict
(unparsed or failed) is never a tie or a zero; it is excluded from every metric, and this share
says how many were, per reason (``unparsed-conflicting``, ``unparsed-low-label-mass``,
``failed-timeout``, ... — `nepotism.records.exclusion_label`). A judge whose verdicts are often
missing for one kind of candidate biases every number built on the rest.

`low_label_mass` counts, beside it, the label verdicts that *were* read although their labels held
less than `LABEL_MASS_AUDIT` (½) of the judge's next-token probability: papers 001 and 004 take
the argmax of the labels whatever their mass, so by default such a verdict counts like any other
(docs/verdicts.md, "Label mass"); the count says how many of a judge's verdicts rest on a tail it
would rarely have said. The judging option ``min_label_mass = 0.5`` (a variant) leaves them out
instead, as ``unparsed-low-label-mass``.
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

__all__ = ["LABEL_MASS_AUDIT", "excluded_share", "low_label_mass"]

#: Label mass below which a parsed label verdict is counted by `low_label_mass` (more likely than not,
#: the model would have said something other than a label).
LABEL_MASS_AUDIT = 0.5


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


def low_label_mass(mass: ArrayLike, parsed: ArrayLike, *, below: float = LABEL_MASS_AUDIT) -> int:
    """How many parsed verdicts were read from labels holding less than ``below`` of the next-token
    probability (``mass``: one label mass per judgment, NaN where none was recorded, e.g. a text
    verdict; ``parsed``: whether the judgment has a verdict).

    >>> low_label_mass([0.1, 0.9, float("nan"), 0.3], [True, True, True, False])
    1
    """
    values = np.asarray(mass, dtype=float)
    kept = np.asarray(parsed, dtype=bool)
    if values.shape != kept.shape:
        raise ValueError("mass and parsed must have one value per judgment")
    return int((kept & (values < below)).sum())  # NaN < below is False: no mass, not counted
