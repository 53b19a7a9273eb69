"""How many of a judge's judgments carry no verdict, and why: what every other metric leaves out.

`excluded_share` is nepotism's own bookkeeping, not a paper's metric. A judgment without a verdict
(unparsed or failed) is never a tie or a zero; it is excluded from every metric, and this share
says how many were, per reason (``unparsed-conflicting``, ``unparsed-low-label-mass``,
``failed-timeout``, ... — `nepotism.records.exclusion_label`). A judge whose verdicts are often
missing for one kind of candidate biases every number built on the rest.

`exclusion_share_gap` measures exactly that for one candidate: how much more often the judgments
showing it have no verdict than the judge's other judgments, with a one-sided cluster-bootstrap
test; `gaming_flag` is the rule that flags a candidate (a generator whose text may turn its losses
into exclusions, e.g. by holding the verdict markers a judge writes). docs/verdicts.md states both.

`low_label_mass` counts, beside it, the label verdicts that *were* read although their labels held
less than `LABEL_MASS_AUDIT` (½) of the judge's next-token probability: papers 001 and 004 take
the argmax of the labels whatever their mass, so by default such a verdict counts like any other
(docs/verdicts.md, "Label mass"); the count says how many of a judge's verdicts rest on a tail it
would rarely have said. The judging option ``min_label_mass = 0.5`` (a variant) leaves them out
instead, as ``unparsed-low-label-mass``.

Both shares are definitions (`nepotism.metrics.definitions.EXCLUDED_VERDICTS`, `EXCLUSION_SHARE_GAP`:
their per-prompt sums and statistic); the estimators here check the inputs, count the judgments
without a verdict by reason (`candidate_part` for a candidate's) and bootstrap.

What this module leaves out: deciding which rows belong to a judge, a candidate or a prompt (the
suite does, `nepotism.analyses.suite.exclusion_records`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from nepotism.metrics.bootstrap import Bootstrap, settings
from nepotism.metrics._common import undefined
from nepotism.metrics.definitions import EXCLUDED_VERDICTS, EXCLUSION_SHARE_GAP, ClusterSums
from nepotism.metrics._estimate import Estimate

__all__ = [
    "GAMING_MIN",
    "GAMING_RATIO",
    "LABEL_MASS_AUDIT",
    "candidate_part",
    "count_reasons",
    "excluded_share",
    "exclusion_share_gap",
    "gaming_flag",
    "gap_p_value",
    "gap_undefined",
    "low_label_mass",
]

#: Label mass below which a parsed label verdict is counted by `low_label_mass` (more likely than not,
#: the model would have said something other than a label).
LABEL_MASS_AUDIT = 0.5
#: A candidate is flagged only when its judgments are excluded at least this many times as often
#: as the judge's other judgments ("far more often"), besides a significant gap (`gaming_flag`).
GAMING_RATIO = 2.0
#: ... and only when at least this many of its judgments have no verdict.
GAMING_MIN = 5


def excluded_share(
    excluded: ArrayLike,
    clusters: ArrayLike,
    *,
    reasons: Iterable[object] | None = None,
    bootstrap: Bootstrap | None = None,
    **fields: Any,
) -> Estimate:
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
    flags = _flags(excluded, "excluded")
    clusters = np.asarray(clusters)
    if clusters.shape != flags.shape:
        raise ValueError("excluded and clusters must be one-dimensional and of the same length")
    counts = count_reasons(reasons, flags)
    if flags.size == 0:
        return undefined("no judgments", bootstrap=options)
    part = EXCLUDED_VERDICTS.sums(flags, clusters=clusters)
    return EXCLUDED_VERDICTS.resample(replace(part, n_excluded=int(flags.sum()), excluded=counts), options)


def _flags(values: ArrayLike, name: str) -> np.ndarray:
    """``values`` as a one-dimensional boolean array (0/1 accepted), or a ValueError naming it."""
    flags = np.asarray(values)
    if flags.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional")
    if flags.dtype != bool:
        if not np.isin(flags, (0, 1, True, False)).all():
            raise ValueError(f"{name} must hold booleans (True: {_MEANING[name]})")
        flags = flags.astype(bool)
    return flags


_MEANING = {"excluded": "the judgment has no verdict", "shown": "the judgment shows the candidate"}


def count_reasons(reasons: Iterable[object] | None, where: np.ndarray) -> dict[str, int]:
    """The count per reason label of the judgments ``where`` is True ("no reason recorded" for
    none), in label order."""
    why = (
        np.full(where.size, None, dtype=object)
        if reasons is None
        else np.asarray(reasons if isinstance(reasons, (np.ndarray, list, tuple)) else list(reasons), dtype=object)
    )
    if why.shape != where.shape:
        raise ValueError("reasons must have one label per judgment")
    return dict(sorted(Counter(str(r) if isinstance(r, str) and r else "no reason recorded" for r in why[where]).items()))


def exclusion_share_gap(
    excluded: ArrayLike,
    shown: ArrayLike,
    clusters: ArrayLike,
    *,
    reasons: Iterable[object] | None = None,
    bootstrap: Bootstrap | None = None,
    **fields: Any,
) -> Estimate:
    """How much more often one candidate's judgments have no verdict than the judge's others'.

    ``excluded`` is one boolean per judgment of one judge (True: no verdict), ``shown`` whether
    the judgment shows the candidate (a pairwise judgment shows two), ``clusters`` its prompt.
    The value is Σ excluded·shown / Σ shown − Σ excluded·(1 − shown) / Σ (1 − shown): the
    candidate's excluded share minus the share among the judgments that do not show it, with a
    cluster bootstrap interval over prompts and the one-sided p-value for a gap > 0 of
    `gap_p_value` (a cluster-robust z-test: a bootstrap p-value cannot fall below 1 / (resamples
    + 1), too coarse for a level divided among many generators). ``n``, ``n_excluded`` and ``excluded`` (per reason, from
    ``reasons``) describe the candidate's judgments. Undefined (NaN, with a note) when every
    judgment shows the candidate, or none does. Not a paper's metric: nepotism bookkeeping
    (docs/verdicts.md), computed by the suite per judge, condition and table kind (variant
    ``kind``) over the judgments the judge was asked (a failed generation's are left out).

    >>> est = exclusion_share_gap([True, True, False, False, False, False],
    ...                           [True, True, True, False, False, False],
    ...                           ["q1", "q2", "q3", "q1", "q2", "q3"], n_resamples=0)
    >>> round(est.value, 3), est.n, est.n_excluded
    (0.667, 3, 2)
    """
    options = settings(bootstrap, **fields)
    gone, showing = _flags(excluded, "excluded"), _flags(shown, "shown")
    clusters = np.asarray(clusters)
    if showing.shape != gone.shape or clusters.shape != gone.shape:
        raise ValueError("excluded, shown and clusters must have the same length")
    part = candidate_part(EXCLUSION_SHARE_GAP.sums(gone, showing, clusters=clusters), gone, showing, reasons)
    why_not = gap_undefined(part.n, gone.size)
    if why_not:
        return undefined(why_not, n=part.n, n_excluded=part.n_excluded, excluded=part.excluded, bootstrap=options)
    estimate = EXCLUSION_SHARE_GAP.resample(part, options)
    return replace(estimate, p_value=gap_p_value(part.sums))


def candidate_part(part: ClusterSums, excluded: np.ndarray, shown: np.ndarray, reasons: Iterable[object] | None) -> ClusterSums:
    """`EXCLUSION_SHARE_GAP`'s per-prompt sums with the counts its estimate reports: ``n`` the
    judgments showing the candidate, ``n_excluded`` those without a verdict, by reason (``reasons``,
    one label per judgment) — the estimator's and the suite's (which lays out every prompt of a judge,
    `Definition.dense_sums`) one bookkeeping."""
    mine = excluded & shown
    return replace(part, n=int(shown.sum()), n_excluded=int(mine.sum()), excluded=count_reasons(reasons, mine))


def gap_p_value(sums: np.ndarray) -> float | None:
    """One-sided p-value for an `exclusion_share_gap` above 0, from its per-prompt sums ``(n_prompts, 4)``
    (`EXCLUSION_SHARE_GAP`'s columns): a cluster-robust z-test. The gap's linearisation per prompt c is
    u_c = (y_c − s·n_c) / N − (y′_c − s′·n′_c) / N′ (y, n: the candidate's excluded and shown
    judgments on c, s = Σy / N, N = Σn; primes: the others'), its variance C / (C − 1) · Σ u_c²
    over the C prompts, and p = 1 − Φ(gap / √variance). None when it cannot be computed (fewer
    than two prompts, an empty side, no variance)."""
    sums = np.asarray(sums, dtype=float)
    if sums.shape[0] < 2:
        return None
    y, n, y_other, n_other = sums.T
    total, total_other = n.sum(), n_other.sum()
    if total <= 0 or total_other <= 0:
        return None
    share, share_other = y.sum() / total, y_other.sum() / total_other
    u = (y - share * n) / total - (y_other - share_other * n_other) / total_other
    variance = sums.shape[0] / (sums.shape[0] - 1) * float(np.square(u).sum())
    if not variance > 0:
        return None
    return float(stats.norm.sf((share - share_other) / np.sqrt(variance)))


def gap_undefined(n: int, total: int) -> str:
    """Why `exclusion_share_gap` has no value for a candidate shown in ``n`` of ``total`` judgments
    ("" when it has one)."""
    if n == 0:
        return "no judgment shows the candidate"
    return "every judgment shows the candidate: no others to compare" if n == total else ""


def gaming_flag(gap: Estimate, share: float, others_share: float, *, tested: int, alpha: float) -> bool:
    """Whether a candidate's excluded share is far above the judge's other judgments': the gap's
    one-sided p-value at most ``alpha / tested`` (Bonferroni over the ``tested`` candidates of the
    judge), ``share >= GAMING_RATIO × others_share`` and at least `GAMING_MIN` of the candidate's
    judgments without a verdict (the z-test's normal approximation needs a few). A gap without a
    p-value is never flagged.

    >>> from nepotism.metrics._estimate import Estimate
    >>> gaming_flag(Estimate(0.3, 0.2, 0.4, 100, 50, n_excluded=35, p_value=0.001), 0.35, 0.05, tested=5, alpha=0.05)
    True
    >>> gaming_flag(Estimate(0.3, 0.2, 0.4, 100, 50, n_excluded=35, p_value=0.02), 0.35, 0.05, tested=5, alpha=0.05)
    False
    """
    if gap.p_value is None or tested < 1 or not gap.defined or gap.value <= 0 or gap.n_excluded < GAMING_MIN:
        return False
    return bool(gap.p_value <= alpha / tested and share >= GAMING_RATIO * others_share)


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
