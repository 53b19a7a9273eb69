"""Matched-baseline relatedness bias: a judge against unrelated judges on the very same items.

Estimand, in one sentence: how much more a judge favours candidates related to it (itself, its
family, its students or teachers) than judges unrelated to both candidates favour the same
candidates on the same items and the same pairs.

Why: the papers' self-preference metrics (001 Def. 4.1, 002 Eq. 1–4, 004 Eq. 4–5) compare a judge
with itself across items, so they mix bias with quality margins — a clean judge whose own answers
are strong wins its own comparisons by wide margins and loses them by narrow ones, and its recall on
own-favoured items exceeds its recall on other-favoured items with no bias at all. Matching on the
item and the pair removes the margin: whatever the quality difference, an unbiased judge and an
unrelated judge of the same sensitivity have the same expected preference.

Assumptions: (1) the reference judges are unrelated to both candidates (the caller picks them from
the registry); (2) they are comparable in *sensitivity* (how sharply they tell quality apart) and,
for scores, in scale. A more sensitive judge whose relatives are stronger looks biased (positive on
``legitimate`` items, negative on ``harmful`` ones); `sensitivity_gap` on comparisons not involving
the judge's relatives checks this. (3) Items are independent clusters: the bootstrap resamples items.

Pure functions on arrays; the caller (`nepotism.analyses.matched`) builds the arrays from recorded
tables and the registry. Each returns an `Estimate` with a seeded cluster bootstrap by item and a
one-sided bootstrap p-value for value > 0 (``alternative="greater"``, the default).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from nepotism.metrics.bootstrap import Bootstrap, settings
from nepotism.metrics._common import checked, labels
from nepotism.metrics._estimate import Estimate
from nepotism.metrics.definitions import MATCHED_BIAS, ClusterSums

__all__ = ["matched_bias", "sensitivity_gap"]


def _finite(values: ArrayLike, name: str, *, n: int | None = None) -> np.ndarray:
    """A preference (or preference difference) column: any finite number, NaN for none."""
    return checked(values, name, low=-np.inf, high=np.inf, n=n)


def _lost_items(clusters: np.ndarray, part: ClusterSums) -> str | None:
    """A note counting the items left with no row (every row of theirs left out), or None."""
    lost = np.setdiff1d(np.unique(clusters), part.clusters)
    return f"{lost.size} item(s) left out: no usable verdict with an unrelated reference judge" if lost.size else None


def matched_bias(
    judge_preference: ArrayLike,
    reference_preference: ArrayLike,
    clusters: ArrayLike,
    *,
    alternative: str | None = "greater",
    bootstrap: Bootstrap | None = None,
    **fields: Any,
) -> Estimate:
    """Mean over comparisons of (judge's preference − reference judges' mean preference) for the related candidate.

    One row per comparison of a related candidate R with an unrelated candidate O on one item:
    ``judge_preference`` = 1 if the judge prefers R, ½ tie, 0 O (after aggregating both orders,
    paper 004 Eq. 1; a mean over replicates is fine), ``reference_preference`` = the mean of the same
    quantity over the reference judges (unrelated to R and O) on the same item and pair. The same
    function serves the pointwise and rubric designs with a *difference* as the preference:
    s_J(R) − s_J(O) (scores, or met-rates on the rubric items), so that each judge's leniency cancels.

    Formula: MB = (1/n) Σ_c [p_J(c) − p̄_ref(c)], n = comparisons with both parts defined. Range
    [−1, 1] for preferences, the scale's for score differences; 0 = no more favour than unrelated judges show on the same comparisons;
    the one-sided p-value tests MB > 0.
    Rows with a NaN judge preference are excluded as ``"no verdict"``; rows with no reference
    judge (NaN reference) as ``"no reference judge"``; items left with no row are counted in the
    note. No row at all → NaN with a note, never 0. Infinite values or arrays of unequal length are refused.

    The judge prefers its relative on both items, the unrelated references on half of the cases:

    >>> matched_bias([1, 1, 0.5], [0.5, 0.5, 0.5], ["x1", "x2", "x2"], n_resamples=0).value
    0.3333333333333333
    """
    judge = _finite(judge_preference, "judge_preference")
    reference = _finite(reference_preference, "reference_preference", n=judge.size)
    clusters = labels(clusters, "clusters", n=judge.size)
    boot = settings(bootstrap, **fields)
    part = MATCHED_BIAS.sums(judge, reference, clusters=clusters)
    return MATCHED_BIAS.resample(
        part,
        boot,
        alternative=alternative,
        note=_lost_items(clusters, part),
        empty="no comparison with an unrelated reference judge",
    )


def sensitivity_gap(
    judge_preference: ArrayLike,
    reference_preference: ArrayLike,
    orientation: ArrayLike,
    clusters: ArrayLike,
    *,
    alternative: str | None = None,
    bootstrap: Bootstrap | None = None,
    **fields: Any,
) -> Estimate:
    """Check of the equal-sensitivity assumption: how much more the judge agrees with the truth than the references.

    Use it on comparisons where *neither* candidate is related to the judge (so no relatedness bias
    can enter). ``judge_preference`` / ``reference_preference`` are preferences for one candidate X
    (as in `matched_bias`), ``orientation`` is +1 when X is truly better, −1 when worse, 0 unknown
    (rows with 0 are excluded as ``"no truth order"``).

    Formula: G = mean_c orientation(c)·(p_J(c) − p̄_ref(c)). 0 = as sensitive as the references;
    > 0 = the judge separates better from worse more sharply. With G > 0 and related candidates
    that are stronger than their opponents, `matched_bias` on ``all``/``legitimate`` comparisons is
    pushed up and on ``harmful`` comparisons pushed down. No one-sided test unless ``alternative``
    is given.

    >>> sensitivity_gap([1, 0], [0.5, 0.5], [1, -1], ["x1", "x2"], n_resamples=0).value
    0.5
    """
    judge = _finite(judge_preference, "judge_preference")
    reference = _finite(reference_preference, "reference_preference", n=judge.size)
    orientation = checked(orientation, "orientation", low=-1.0, high=1.0, n=judge.size)
    clusters = labels(clusters, "clusters", n=judge.size)
    boot = settings(bootstrap, **fields)
    part = MATCHED_BIAS.sums(judge, reference, clusters=clusters, orientation=orientation)
    return MATCHED_BIAS.resample(
        part,
        boot,
        alternative=alternative,
        note=_lost_items(clusters, MATCHED_BIAS.sums(judge, reference, clusters=clusters)),  # before the truth order
        empty="no ordered comparison with an unrelated reference judge",
    )
