"""Pairwise-verdict metrics: order aggregation, win rate, self-preference ratio, demographic parity.

Pure functions on numpy arrays; data positional, options keyword-only; each returns an `Estimate`
with a cluster bootstrap over prompts (``clusters`` = one instance label per row). Each checks its
inputs, then runs its metric's one definition (`nepotism.metrics.definitions`: per-prompt sums and
statistic), the same the batched audit runs. Which rows a
metric sees (which judge, which candidates count as "related") is decided by the caller
(`nepotism.analyses`); these functions only count.

Outcome codes used throughout, from the point of view of one candidate X of a comparison:
``+1`` X preferred, ``0`` tie, ``-1`` the other preferred, ``NaN`` no usable verdict.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from nepotism.metrics.bootstrap import Bootstrap, settings
from nepotism.metrics._common import checked, labels, undefined
from nepotism.metrics.definitions import (
    DEMOGRAPHIC_PARITY_BIAS,
    SELF_PREFERENCE_RATIO,
    SELF_PREFERENCE_RATIO_PER_EVALUATEE,
    WIN_RATE,
)
from nepotism.metrics._estimate import Estimate

__all__ = [
    "aggregate_orders",
    "demographic_parity_bias",
    "self_preference_ratio",
    "win_rate",
]

TIE_POLICIES = ("half", "exclude")


def aggregate_orders(first: ArrayLike, second: ArrayLike, *, rule: str = "consistent") -> np.ndarray:
    """Combine the verdicts of the two presentation orders of one comparison.

    ``first`` and ``second`` are outcome codes for the same candidate X (already mapped back from
    the shown position). Rules:

    - ``"consistent"`` (paper 004, Eq. 1; the default): equal verdicts → that verdict; one decisive
      and one tie → the decisive one; two opposite decisive verdicts → tie.
    - ``"strict"`` (paper 003): valid only when both orders agree; otherwise NaN (*ambiguous*,
      to be counted by the caller).

    A NaN in either input gives NaN (the caller decides whether a missing twin means "use the
    single order" — then it should not call this function — or "exclude").
    """
    first = np.asarray(first, dtype=float)
    second = np.asarray(second, dtype=float)
    out = np.full(np.broadcast(first, second).shape, np.nan)
    both = ~(np.isnan(first) | np.isnan(second))
    agree = both & (first == second)
    out[agree] = first[agree]
    if rule == "consistent":
        first_tie = both & (first == 0) & (second != 0)
        second_tie = both & (second == 0) & (first != 0)
        out[first_tie] = second[first_tie]
        out[second_tie] = first[second_tie]
        opposite = both & (first != 0) & (second != 0) & (first != second)
        out[opposite] = 0.0
    elif rule != "strict":
        raise ValueError(f"rule must be 'consistent' or 'strict', not {rule!r}")
    return out


def win_rate(
    outcome: ArrayLike, clusters: ArrayLike, *, ties: str = "half", bootstrap: Bootstrap | None = None, **fields: Any
) -> Estimate:
    """Share of comparisons a generator wins under a judge.

    Formula: WR = (wins + ½·ties) / (wins + ties + losses) with ``ties="half"`` (the AlpacaEval and
    paper 000 convention, the default), or WR = wins / (wins + losses) with ``ties="exclude"``
    (ties counted in ``excluded["tie"]``). ``outcome`` holds codes for the generator (+1 win,
    0 tie, -1 loss, NaN = no usable verdict, excluded as ``"no verdict"``).
    Zero division: no usable comparison → NaN with a note, never 0. Codes outside [-1, 1] (or a
    clusters array of another length) are refused.

    >>> est = win_rate([1, 0, -1, 1, float("nan")], ["p1", "p1", "p2", "p3", "p3"], n_resamples=0)
    >>> est.value, est.n, dict(est.excluded)
    (0.625, 4, {'no verdict': 1})
    >>> win_rate([2, 1, 5], ["p1", "p2", "p3"])
    Traceback (most recent call last):
    ...
    ValueError: outcome must be in [-1, 1] or NaN (no verdict); outcome[0] is 2.0
    """
    if ties not in TIE_POLICIES:
        raise ValueError(f"ties must be one of {TIE_POLICIES}")
    outcome = checked(outcome, "outcome", low=-1.0, high=1.0)
    clusters = labels(clusters, "clusters", n=outcome.size)
    return WIN_RATE.estimate(outcome, clusters=clusters, bootstrap=settings(bootstrap, **fields), ties=ties)


def self_preference_ratio(
    outcome: ArrayLike,
    clusters: ArrayLike,
    *,
    evaluatee: ArrayLike | None = None,
    averaging: str = "pooled",
    bootstrap: Bootstrap | None = None,
    **fields: Any,
) -> Estimate:
    """Share of (related vs other) comparisons whose aggregated verdict is the related candidate.

    Paper 004, Eq. 2: SPR_J = 1/(|S_G||D|) Σ_G Σ_x 1{J*(x, y_J, y_G) = y_J}. ``outcome`` holds the
    aggregated verdict codes from the related candidate's side (the judge's own answer for the
    *self* scope); a tie is not a preference for the own answer, so ties stay in the denominator.
    Rows with no usable verdict (NaN) are excluded and counted. Pooling all (G, x) comparisons is
    Eq. 2 exactly when every G has the same |D|; with unequal coverage it weights G by its count.
    Variants: ``scope`` (self, family, student, family-student: which candidates are "related"),
    ``opponents`` (unrelated | any less related), ``paradigm`` pairwise | pointwise (the judge's two
    direct-assessment scores on one instance stand for the verdict; equal scores are a tie).
    ``averaging="per-evaluatee"`` (with ``evaluatee``, the opponent model of each row): each
    evaluatee's SPR, then their mean — paper 004 Tables 1, 3 and 5 give one column per evaluatee
    and their "Average" column is this mean (Fig. 2's value); it differs from the pooled share when
    evaluatees have different numbers of usable comparisons. An evaluatee without a usable row
    is left out of the mean; a bootstrap resample drawing none of its prompts leaves it out too.

    >>> self_preference_ratio([1, 1, 0, -1], ["q1", "q2", "q3", "q4"], n_resamples=0).value
    0.5

    Against G1 the judge wins 1 of 1, against G2 1 of 3: pooled 2/4, per evaluatee (1 + ⅓)/2:

    >>> round(self_preference_ratio([1, 1, 0, -1], ["q1", "q2", "q3", "q4"], evaluatee=["G1", "G2", "G2", "G2"],
    ...                             averaging="per-evaluatee", n_resamples=0).value, 4)
    0.6667
    """
    if averaging not in ("pooled", "per-evaluatee"):
        raise ValueError(f"averaging must be 'pooled' or 'per-evaluatee', not {averaging!r}")
    outcome = checked(outcome, "outcome", low=-1.0, high=1.0)
    clusters = labels(clusters, "clusters", n=outcome.size)
    options = settings(bootstrap, **fields)
    if averaging == "pooled":
        return SELF_PREFERENCE_RATIO.estimate(outcome, clusters=clusters, bootstrap=options)
    if evaluatee is None:
        raise ValueError("averaging='per-evaluatee' needs evaluatee (the opponent model of each row)")
    names = labels(evaluatee, "evaluatee", n=outcome.size)
    if np.isnan(outcome).all():
        n_missing = outcome.size
        return undefined(
            "no comparison with a verdict",
            n_excluded=n_missing,
            excluded={"no verdict": n_missing} if n_missing else {},
            bootstrap=options,
        )
    return SELF_PREFERENCE_RATIO_PER_EVALUATEE.estimate(outcome, names, clusters=clusters, bootstrap=options)


def demographic_parity_bias(
    preference: ArrayLike, related: ArrayLike, clusters: ArrayLike, *, bootstrap: Bootstrap | None = None, **fields: Any
) -> Estimate:
    """Demographic-parity self-preference bias: P(Y′=1 | S=1) − P(Y′=1 | S=0).

    Paper 001, Eq. 4. One row per *candidate appearance*: ``preference`` is the judge's preference
    for that candidate — 1 preferred, 0 not, ½ for a tie (or a probability score p(cand)/(p(A)+p(B))
    averaged over both orders, paper 001 Eq. 3) — and ``related`` is S (the candidate is the
    judge's own, or in the chosen relation). NaN preferences are excluded and counted.
    In a comparison of one related and one unrelated candidate the two rows are s and 1−s, so the
    bias is 2·mean(s) − 1: 0 means no preference, +1 the judge always picks its relative.
    Zero division: no related or no unrelated candidate → NaN with a note.

    >>> demographic_parity_bias([1, 0, 1, 0], [True, False, True, False], ["q1", "q1", "q2", "q2"],
    ...                         n_resamples=0).value
    1.0
    """
    preference = checked(preference, "preference", low=0.0, high=1.0)
    related = checked(related, "related", low=0.0, high=1.0, n=preference.size)
    if np.isnan(related).any() or not np.isin(related, (0.0, 1.0)).all():
        raise ValueError("related must hold booleans (True: the candidate is the judge's own or related)")
    related = related.astype(bool)
    clusters = labels(clusters, "clusters", n=preference.size)
    return DEMOGRAPHIC_PARITY_BIAS.estimate(preference, related, clusters=clusters, bootstrap=settings(bootstrap, **fields))
