"""Paper 002's metrics: overestimation, HSPP ratio, MIPA, MRA and the centred score delta.

Instance level works on *orderings*: for a generator G, opponent G′ and instance x, the judge's
outcome w_J = sgn(s_J(G,x) − s_J(G′,x)) and the reference's w* (002 Eq. 3). Rubric level works on
verdicts b_J, b* ∈ {met, not met} (002 Eq. 4). `instance_outcomes` turns a dense score cube into
those orderings. Relations (self, family) are decided by the caller; these functions only count.
Each checks its inputs and runs its metric's one definition (`nepotism.metrics.definitions`), which
the batched suite (`nepotism.metrics._suite_scores`) runs too.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from nepotism.metrics.bootstrap import Bootstrap, cluster_bootstrap, settings
from nepotism.metrics._common import checked, labels, undefined, valid_rows
from nepotism.metrics.definitions import (
    HSPP_RATIO,
    MIPA,
    MRA,
    OVERESTIMATION_KINDS,
    OVERESTIMATION_RATE,
    SCORE_DELTA,
    Definition,
    hspp_statistic,
    overestimation_counts,
    score_delta_statistic,
)
from nepotism.metrics._estimate import Estimate

__all__ = [
    "OVERESTIMATION_KINDS",
    "hspp_ratio",
    "instance_outcomes",
    "mipa",
    "mra",
    "overestimation_counts",
    "overestimation_rate",
    "score_delta",
]


def instance_outcomes(judge_scores: np.ndarray, reference_scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """From (n_instances, n_generators) scores, the (n_instances, G, G) outcome cubes w_J and w*.

    Entry [x, g, h] is sgn(s(g,x) − s(h,x)); NaN where either score is missing; the diagonal is NaN.
    """
    judge = np.sign(judge_scores[:, :, None] - judge_scores[:, None, :])
    reference = np.sign(reference_scores[:, :, None] - reference_scores[:, None, :])
    diagonal = np.eye(judge_scores.shape[1], dtype=bool)
    judge[:, diagonal] = np.nan
    reference[:, diagonal] = np.nan
    return judge, reference


def overestimation_rate(
    judge: ArrayLike,
    reference: ArrayLike,
    clusters: ArrayLike,
    *,
    kind: str = "any",
    bootstrap: Bootstrap | None = None,
    **fields: Any,
) -> Estimate:
    """O(J, G): among cases where the reference says G loses (or fails a rubric), the share the judge rates better.

    002 Eq. 3 (instance level; rows = (G′, x) comparisons from G's side) and Eq. 4 (rubric level;
    rows = rubric verdicts as ±1). ``kind`` = ``"any"`` (the paper), ``"loss-to-win"`` or
    ``"loss-to-tie"`` (the split of the numerator). Zero division: G never loses → NaN.
    Codes outside [-1, 1], or a ``clusters`` of another length, are refused.

    >>> overestimation_rate([1, -1, 0, 1], [-1, -1, -1, 1], ["p1", "p1", "p2", "p3"], n_resamples=0).value
    0.6666666666666666
    """
    judged = checked(judge, "judge", low=-1.0, high=1.0)
    truth = checked(reference, "reference", low=-1.0, high=1.0, n=judged.size)
    groups = labels(clusters, "clusters", n=judged.size)
    options = settings(bootstrap, **fields)
    part = OVERESTIMATION_RATE.sums(judged, truth, clusters=groups, kind=kind)
    return OVERESTIMATION_RATE.resample(
        part, options, empty="the reference never rates this generator below an opponent / a rubric as unmet"
    )


def hspp_ratio(
    overestimated: ArrayLike,
    at_risk: ArrayLike,
    generator: ArrayLike,
    clusters: ArrayLike,
    *,
    numerator: Collection[str],
    denominator: Collection[str],
    bootstrap: Bootstrap | None = None,
    **fields: Any,
) -> Estimate:
    """HSPP ratio (002 Eq. 1–2): mean O(J,G) over ``numerator`` ÷ mean O(J,G) over ``denominator``.

    ``overestimated`` / ``at_risk`` are per-row counts (indicators from `overestimation_counts`, or
    already summed per (instance, generator)); ``generator`` names each row's G. Self scope:
    numerator = {J}; family scope: numerator = F_J (002 Eq. 2's text excludes J; the variant with J
    included is the caller's choice of set); denominator = S_J, generators outside J's family.
    1 = no self-preference. Zero division: a listed generator never at risk is left out of its
    mean (counted); an empty side, or a zero denominator mean, → NaN with a note.
    Variants: ``scope`` self | family, ``level`` instance | rubric (which counts are passed),
    ``family_set`` exclude judge (Eq. 2's text) | include judge (the published tables' form),
    ``denominator`` not-family (Eq. 1's S_J: every generator that is neither J nor its family; the
    default) | unrelated (only generators with no registry relation to J, which also leaves out
    J's students and teachers), ``setup`` single-rubric | all-rubrics (rubric verdicts asked one
    item per call or all items in one call; measured apart, never pooled), ``paradigm`` SR | DA |
    PWC at instance level (outcomes from rubric verdicts, direct scores, or pairwise verdicts
    against a preference reference, 002 Eq. 3). Negative or infinite counts are refused.

    Judge "J" overestimates itself in 1 of 2 risky cases, generators "G" and "H" in 1 of 4:

    >>> hspp_ratio([1, 0, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1], ["J", "J", "G", "G", "H", "H"], ["p1", "p2"] * 3,
    ...            numerator={"J"}, denominator={"G", "H"}, n_resamples=0).value
    2.0
    """
    over = checked(overestimated, "overestimated", low=0.0, high=math.inf)
    risk = checked(at_risk, "at_risk", low=0.0, high=math.inf, n=over.size)
    names_of = labels(generator, "generator", n=over.size)
    groups = labels(clusters, "clusters", n=over.size)
    options = settings(bootstrap, **fields)
    wanted = set(numerator) | set(denominator)
    keep = np.isin(names_of, list(wanted)) & np.isfinite(over) & np.isfinite(risk)
    names, codes = np.unique(names_of[keep], return_inverse=True)
    num = np.isin(names, list(numerator))
    den = np.isin(names, list(denominator))
    if not num.any() or not den.any():
        return undefined("no data for the numerator or the denominator generators", bootstrap=options)
    sums = HSPP_RATIO.sums(over[keep], risk[keep], codes, names.size, clusters=groups[keep]).sums
    present = sums[:, 1::2].sum(axis=0) > 0
    excluded = {}
    if not present.all():
        excluded["generator never at risk"] = int((~present).sum())
    num &= present
    den &= present
    if not num.any() or not den.any():
        return undefined("no generator at risk on one side of the ratio", excluded=excluded, bootstrap=options)
    return cluster_bootstrap(
        sums, hspp_statistic(num, den), n=int(risk[keep].sum()), n_excluded=0, excluded=excluded, note=None, bootstrap=options
    )


def _share_equal(
    definition: Definition,
    judge: ArrayLike,
    reference: ArrayLike,
    clusters: ArrayLike,
    options: Bootstrap,
    what: str,
    *,
    low: float,
) -> Estimate:
    judged = checked(judge, "judge", low=low, high=1.0)
    truth = checked(reference, "reference", low=low, high=1.0, n=judged.size)
    groups = labels(clusters, "clusters", n=judged.size)
    part = definition.sums(judged, truth, clusters=groups)
    return definition.resample(part, options, empty=f"no {what}")


def mipa(
    judge_outcome: ArrayLike,
    reference_outcome: ArrayLike,
    clusters: ArrayLike,
    *,
    bootstrap: Bootstrap | None = None,
    **fields: Any,
) -> Estimate:
    """Mean instance pairwise accuracy (002 Eq. 5): share of (G < G′, x) whose orderings agree.

    Codes in {-1, 0, 1}; a tie agrees only with a tie. One row per *unordered* pair and instance;
    rows with a missing score or verdict are excluded and counted. Pooled over pairs, which is
    Eq. 5 when every pair covers every instance. Variants: ``paradigm`` SR (rubric instance
    scores), DA (direct-assessment scores) or PWC (pairwise verdicts against a preference-ref).

    >>> mipa([1, -1, 0, float("nan")], [1, 1, 0, 1], ["p1", "p1", "p2", "p2"], n_resamples=0).value
    0.6666666666666666
    """
    return _share_equal(MIPA, judge_outcome, reference_outcome, clusters, settings(bootstrap, **fields), "comparison", low=-1.0)


def mra(
    judge_met: ArrayLike, reference_met: ArrayLike, clusters: ArrayLike, *, bootstrap: Bootstrap | None = None, **fields: Any
) -> Estimate:
    """Mean rubric accuracy (002 Eq. 6): share of rubric verdicts equal to the reference. Unparsed excluded.

    Verdicts are 1 (met), 0 (not met) or NaN (unparsed); anything else is refused.

    >>> est = mra([1, 0, 1, float("nan")], [1, 1, 1, 0], ["p1", "p1", "p2", "p2"], n_resamples=0)
    >>> round(est.value, 3), dict(est.excluded)
    (0.667, {'no verdict': 1})
    """
    return _share_equal(MRA, judge_met, reference_met, clusters, settings(bootstrap, **fields), "rubric verdict", low=0.0)


def _instance_scores(met: np.ndarray, points: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Per-row contributions so that cluster sums give Σ points·met and the normaliser."""
    if points is None:
        return met, np.ones_like(met)
    return points * met, np.where(points > 0, points, 0.0)


def score_delta(
    judge_met: ArrayLike,
    reference_met: ArrayLike,
    generator: ArrayLike,
    clusters: ArrayLike,
    *,
    points: ArrayLike | None = None,
    centred: bool = True,
    bootstrap: Bootstrap | None = None,
    **fields: Any,
) -> dict[str, Estimate]:
    """Judge's system score minus the reference's for every generator, centred by the judge's mean delta.

    002 Fig. 5. Instance score s(G, x) = fraction of rubrics met (``points=None``), or with rubric
    points (HealthBench weighting) Σ_k points_k·met_k / Σ_{k: points_k > 0} points_k clipped to
    [0, 1]. System score = mean over instances; delta(G) = S_J(G) − S*(G); centred delta(G) =
    delta(G) − mean over generators of delta (``centred=False`` for the raw delta). Rows with an
    unparsed judge verdict are excluded (both sides lose that rubric, so the two scores stay
    comparable). Returns {generator: Estimate}; one bootstrap for all generators.

    >>> deltas = score_delta([1, 1, 0, 0], [1, 0, 0, 0], ["G", "G", "H", "H"], ["p1", "p2", "p1", "p2"], n_resamples=0)
    >>> {name: est.value for name, est in deltas.items()}
    {'G': 0.25, 'H': -0.25}
    """
    judged = checked(judge_met, "judge_met", low=0.0, high=1.0)
    truth = checked(reference_met, "reference_met", low=0.0, high=1.0, n=judged.size)
    keep, n_missing, excluded = valid_rows(judged, truth)
    generator = labels(generator, "generator", n=judged.size)[keep]
    groups = labels(clusters, "clusters", n=judged.size)[keep]
    pts = None if points is None else checked(points, "points", low=-math.inf, high=math.inf, n=judged.size)[keep]
    options = settings(bootstrap, **fields)
    names, g_codes = np.unique(generator, return_inverse=True)
    inst, i_codes = np.unique(groups, return_inverse=True)
    cell = i_codes * names.size + g_codes
    size = inst.size * names.size
    j_num, norm = _instance_scores(judged[keep], pts)
    r_num, _ = _instance_scores(truth[keep], pts)
    norm_sum = np.bincount(cell, weights=norm, minlength=size)
    with np.errstate(divide="ignore", invalid="ignore"):
        s_j = np.bincount(cell, weights=j_num, minlength=size) / norm_sum
        s_r = np.bincount(cell, weights=r_num, minlength=size) / norm_sum
    if pts is not None:
        s_j, s_r = np.clip(s_j, 0, 1), np.clip(s_r, 0, 1)
    present = np.bincount(cell, minlength=size) > 0
    valid = present & np.isfinite(s_j) & np.isfinite(s_r)
    shape = (inst.size, names.size)
    _, sums = SCORE_DELTA.columns(np.where(valid, s_j, np.nan).reshape(shape), np.where(valid, s_r, np.nan).reshape(shape))
    count = sums[:, names.size :]  # already per cluster: one row per instance
    out = {}
    for g, name in enumerate(names):
        out[str(name)] = cluster_bootstrap(
            sums,
            score_delta_statistic(names.size, g, centred=centred),
            n=int(count[:, g].sum()),
            n_excluded=n_missing,
            excluded=excluded,
            bootstrap=options,
        )
    return out
