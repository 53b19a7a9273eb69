"""Preference-leakage metrics of paper 000: preference leakage score, error bias, ranking difference.

Pure functions on arrays, each returning an `Estimate` with a cluster bootstrap over instances.
Which students belong to which teacher (judge) comes from the registry and is decided by the
caller (`nepotism.analyses.suite`). Outcome codes as in `pairwise`: +1 win, 0 tie, -1 loss, NaN
no usable verdict.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from nepotism.metrics.bootstrap import Bootstrap, cluster_bootstrap, cluster_sums, settings
from nepotism.metrics._common import checked, labels, undefined, valid_rows
from nepotism.metrics.definitions import (
    ERROR_BIAS,
    PLS_TIE_RULES,
    PREFERENCE_LEAKAGE_SCORE,
    PREFERENCE_LEAKAGE_VARIANCE,
    RANKING_DIFFERENCE,
    pls_from_win_rates,
    pls_runs_statistic,
    pls_statistic,
    ranking_statistic,
)
from nepotism.metrics._estimate import Estimate

__all__ = [
    "PLS_TIE_RULES",
    "error_bias",
    "pls_from_win_rates",
    "preference_leakage_change",
    "preference_leakage_runs",
    "preference_leakage_score",
    "ranking_difference",
]


def preference_leakage_score(
    outcome: ArrayLike,
    student: ArrayLike,
    judge: ArrayLike,
    clusters: ArrayLike,
    *,
    ties: str = "loss",
    alternative: str | None = "greater",
    bootstrap: Bootstrap | None = None,
    **fields: Any,
) -> Estimate:
    """Preference leakage score of a pair of (teacher, student) sides i and j (paper 000 Eq. 5–6).

    One row per (comparison, student side): ``student`` is 0 for the student of side i and 1 for
    side j, ``judge`` 0 when judged by teacher i and 1 by teacher j, ``outcome`` the code for that
    student. A head-to-head comparison of the two students gives two rows (one per side), which
    is how App. C.2 / Table 8 count (WR(j,i) = 1 − WR(i,i) there). How a tie counts (``ties``):

    - ``"loss"`` (default): WR = wins / (wins + ties + losses) — a tie is a non-win. This is paper
      000's convention: from the released per-judge win/tie/loss triples (App. D.1, Figs. 5–6) it
      gives all six Arena-Hard cells of Table 1 to the printed 0.1 % (28.7, −1.5, 13.1, 37.1, 1.0,
      25.4); ``"half"`` gives 17.7 where the paper prints 28.7 (tests/metrics/test_paper000_table1.py).
      AlpacaEval 2.0 has no ties; its six cells are matched within the 0.1 % rounding of the shares.
    - ``"half"``: WR = (wins + ½ ties) / n (the AlpacaEval convention; soft outcomes in [−1, 1],
      e.g. paper 001's order-averaged probability score, need this rule).
    - ``"exclude"``: WR = wins / (wins + losses), ties counted in ``excluded["tie"]``.

    Without ties (AlpacaEval 2.0 has none) the three rules agree. ``"loss"`` takes outcome codes
    −1/0/+1 only and raises ``ValueError`` on a soft outcome.
    ``alternative="greater"`` (default) adds the one-sided bootstrap p-value of PLS > 0
    (000 App. D.4, which uses 10,000 resamples). Swapping the sides leaves PLS unchanged.
    Zero division: a (student, judge) cell with no comparison, or AVG = 0 → NaN with a note.
    ``student`` and ``judge`` other than 0/1, codes outside [-1, 1] or arrays of unequal length are refused.

    Student i wins 2 of 3 under its teacher i and 1 of 3 under judge j; student j the mirror:

    >>> won = [1, 1, -1, 1, -1, -1] * 2
    >>> side = [0] * 6 + [1] * 6
    >>> teacher = [0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0]
    >>> round(preference_leakage_score(won, side, teacher, [f"p{k}" for k in range(12)], n_resamples=0).value, 4)
    0.3333
    """
    outcome = checked(outcome, "outcome", low=-1.0, high=1.0)
    groups, sides, judges = _pls_inputs(outcome, student, judge, clusters, ties)
    part = PREFERENCE_LEAKAGE_SCORE.sums(outcome, sides, judges, clusters=groups, ties=ties)
    options = settings(bootstrap, **fields)
    return PREFERENCE_LEAKAGE_SCORE.resample(
        part, options, alternative=alternative, note=_empty_cells(part.sums, ("",)), empty="no comparison"
    )


def _empty_cells(sums: np.ndarray, conditions: tuple[str, ...]) -> str | None:
    """The note naming the (student, judge) cells without a comparison, per block of 8 columns."""
    empty = [
        f"{name}{' ' + condition if condition else ''}"
        for b, condition in enumerate(conditions)
        for c, name in enumerate(("WR(i,i)", "WR(i,j)", "WR(j,i)", "WR(j,j)"))
        if sums[:, 8 * b + 2 * c + 1].sum() == 0
    ]
    return f"no comparison for {', '.join(empty)}" if empty else None


def _pls_inputs(
    outcome: np.ndarray, student: ArrayLike, judge: ArrayLike, clusters: ArrayLike, ties: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The checked clusters, student sides and judge sides of the PLS rows (``ties`` checked too)."""
    groups = labels(clusters, "clusters", n=outcome.size)
    if ties not in PLS_TIE_RULES:
        raise ValueError(f"ties must be one of {', '.join(PLS_TIE_RULES)}, not {ties!r}")
    sides = _sides(student, "student", outcome.size)
    judges = _sides(judge, "judge", outcome.size)
    if ties == "loss" and not np.isin(outcome[np.isfinite(outcome)], (-1.0, 0.0, 1.0)).all():
        raise ValueError("ties='loss' needs outcome codes -1, 0, +1; use ties='half' for soft outcomes")
    return groups, sides, judges


def _pls_rows(
    outcome: np.ndarray, student: ArrayLike, judge: ArrayLike, clusters: ArrayLike, ties: str
) -> tuple[np.ndarray, dict[str, int], np.ndarray, np.ndarray]:
    """Rows kept, exclusions, the kept rows' 8 columns (`PREFERENCE_LEAKAGE_SCORE`'s) and the kept
    rows' clusters: for the PLS of several conditions or runs side by side."""
    groups, sides, judges = _pls_inputs(outcome, student, judge, clusters, ties)
    keep, excluded, columns = PREFERENCE_LEAKAGE_SCORE.kept_rows(outcome, sides, judges, ties=ties)
    return keep, excluded, columns[keep], groups[keep]


def preference_leakage_change(
    outcome: ArrayLike,
    student: ArrayLike,
    judge: ArrayLike,
    ablated: ArrayLike,
    clusters: ArrayLike,
    *,
    ties: str = "loss",
    bootstrap: Bootstrap | None = None,
    **fields: Any,
) -> Estimate:
    """PLS under an ablation minus PLS at baseline, on the same prompts (paper 000 §5.7, Table 6).

    Rows as in `preference_leakage_score`, from both conditions at once: ``ablated`` is 0 for a row
    judged on the students' own answers and 1 for a row judged on the rewritten ones (style, format
    or wording removed). Formula: ΔPLS = PLS(ablated rows) − PLS(baseline rows). Both PLS come from
    the same resample of prompts (a paired cluster bootstrap), so the interval is that of the
    change, not of two independent scores. Negative = the ablation removed leakage. ``ties`` as
    in `preference_leakage_score`; the ``ablation`` (which feature was removed) is the caller's condition.
    Zero division: a cell with no comparison in either condition → NaN with a note.

    The baseline rows leak (PLS = ⅓, as in `preference_leakage_score`'s example); after the
    rewrite every student wins half of its games under either judge (PLS = 0):

    >>> won = [1, 1, -1, 1, -1, -1] * 2 + [1, -1] * 6
    >>> side = ([0] * 6 + [1] * 6) * 2
    >>> teacher = [0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0] + [0, 0, 1, 1] * 3
    >>> ablated = [0] * 12 + [1] * 12
    >>> prompts = [f"p{k}" for k in range(12)] * 2
    >>> round(preference_leakage_change(won, side, teacher, ablated, prompts, n_resamples=0).value, 4)
    -0.3333
    """
    outcome = checked(outcome, "outcome", low=-1.0, high=1.0)
    after = _sides(ablated, "ablated", outcome.size)
    keep, excluded, columns, groups = _pls_rows(outcome, student, judge, clusters, ties)
    options = settings(bootstrap, **fields)
    n_excl = int((~keep).sum())
    if columns.shape[0] == 0:
        return undefined("no comparison", n_excluded=n_excl, excluded=excluded, bootstrap=options)
    wide = np.zeros((columns.shape[0], 16))
    rows_after = after[keep] == 1
    wide[~rows_after, :8] = columns[~rows_after]
    wide[rows_after, 8:] = columns[rows_after]
    _, sums = cluster_sums(groups, wide)
    note = _empty_cells(sums, ("baseline", "ablated"))

    def statistic(totals: np.ndarray) -> np.ndarray:
        return np.asarray(pls_statistic(totals[..., 8:]) - pls_statistic(totals[..., :8]))

    return cluster_bootstrap(
        sums, statistic, n=int(keep.sum()), n_excluded=n_excl, excluded=excluded, note=note, bootstrap=options
    )


def preference_leakage_runs(
    outcome: ArrayLike,
    student: ArrayLike,
    judge: ArrayLike,
    run: ArrayLike,
    clusters: ArrayLike,
    *,
    ties: str = "loss",
    bootstrap: Bootstrap | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """Run-to-run spread of the PLS: its mean and variance over repeated runs (paper 000 App. D.2, Table 9).

    Rows as in `preference_leakage_score`, with ``run`` naming the run (replicate) each row's
    verdict came from. Each run's PLS is computed from its own rows (Eq. 5–6, ``ties`` as there);
    the mean is (1/R) Σ_r PLS_r and the variance the sample variance Σ_r (PLS_r − mean)² / (R − 1)
    (the paper prints a variance without its denominator; the sample variance is the unbiased one).
    One cluster bootstrap resamples the prompts of every run together, so both intervals reflect
    the prompts, not only the runs. Returns ``{"mean": Estimate, "variance": Estimate, "runs":
    {run: PLS}}``; fewer than two runs → variance NaN with a note; a run with an empty cell makes
    both undefined (named in the note).

    Three runs of `preference_leakage_score`'s example, the third with student j winning one more
    game under its own teacher (PLS ⅓, ⅓, 5/12): mean 13/36, sample variance (6/1296)/2 = 1/432:

    >>> won = [1, 1, -1, 1, -1, -1] * 2
    >>> side = [0] * 6 + [1] * 6
    >>> teacher = [0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0]
    >>> third = won[:6] + [1, 1, 1, 1, -1, -1]
    >>> out = preference_leakage_runs(won * 2 + third, side * 3, teacher * 3, [0] * 12 + [1] * 12 + [2] * 12,
    ...                               [f"p{k}" for k in range(12)] * 3, n_resamples=0)
    >>> [round(v, 4) for v in out["runs"].values()], round(out["mean"].value, 4), round(out["variance"].value, 4)
    ([0.3333, 0.3333, 0.4167], 0.3611, 0.0023)
    """
    outcome = checked(outcome, "outcome", low=-1.0, high=1.0)
    runs = labels(run, "run", n=outcome.size)
    groups, sides, judges = _pls_inputs(outcome, student, judge, clusters, ties)
    keep, _, _ = PREFERENCE_LEAKAGE_SCORE.kept_rows(outcome, sides, judges, ties=ties)
    names, codes = np.unique(runs[keep].astype(str), return_inverse=True)
    run_codes = np.zeros(outcome.size, dtype=np.int64)
    run_codes[keep] = codes
    part = PREFERENCE_LEAKAGE_VARIANCE.sums(outcome, sides, judges, run_codes, names.size, clusters=groups, ties=ties)
    options = settings(bootstrap, **fields)
    if part.n == 0:
        empty = PREFERENCE_LEAKAGE_VARIANCE.resample(part, options, empty="no comparison")
        return {"mean": empty, "variance": empty, "runs": {}}
    note = _empty_cells(part.sums, tuple(f"run {name}" for name in names))
    with np.errstate(invalid="ignore", divide="ignore"):
        values = pls_runs_statistic(names.size, "runs")(part.sums.sum(axis=0))
    out = {
        "mean": PREFERENCE_LEAKAGE_VARIANCE.resample(part, options, statistic=pls_runs_statistic(names.size, "mean"), note=note),
        "runs": {str(name): float(v) for name, v in zip(names, values)},
    }
    if names.size < 2:
        out["variance"] = undefined(
            "fewer than two runs", n=part.n, n_excluded=part.n_excluded, excluded=part.excluded, bootstrap=options
        )
    else:
        out["variance"] = PREFERENCE_LEAKAGE_VARIANCE.resample(part, options, statistic=pls_runs_statistic(names.size), note=note)
    return out


def _sides(values: ArrayLike, name: str, n: int) -> np.ndarray:
    """``values`` as 0/1 integers, one per row (which side of the pair)."""
    array = checked(values, name, low=0.0, high=1.0, n=n)
    odd = ~np.isin(array, (0.0, 1.0))
    if odd.any():
        i = int(np.argmax(odd))
        raise ValueError(f"{name} must hold 0 (side i) or 1 (side j); {name}[{i}] is {float(array[i])!r}")
    return array.astype(np.int64)


def error_bias(
    judge_outcome: ArrayLike, human_outcome: ArrayLike, clusters: ArrayLike, *, bootstrap: Bootstrap | None = None, **fields: Any
) -> Estimate:
    """Error Bias (paper 000 Eq. 10), lower is better.

    EB = N(judge prefers target | human: other wins)/N(other wins)
         − N(judge prefers other | human: target wins)/N(target wins).
    Both codes are from the *target*'s side (the student or the judge's relative): +1 target
    preferred, -1 other preferred, 0 tie. Rows with a human tie are excluded (counted
    ``"human tie"``): Eq. 10 conditions on a human winner. A judge tie is neither preference and
    stays in the denominators. Zero division: no human win for one side → NaN with a note.

    Humans pick the other answer twice (the judge agrees once) and the target twice (the judge
    disagrees once): EB = ½ − ½ = 0; a judge that always prefers the target gets 1:

    >>> humans = [-1, -1, 1, 1]
    >>> error_bias([1, -1, -1, 1], humans, ["p1", "p2", "p3", "p4"], n_resamples=0).value
    0.0
    >>> error_bias([1, 1, 1, 1], humans, ["p1", "p2", "p3", "p4"], n_resamples=0).value
    1.0
    """
    judge_outcome = checked(judge_outcome, "judge_outcome", low=-1.0, high=1.0)
    human_outcome = checked(human_outcome, "human_outcome", low=-1.0, high=1.0, n=judge_outcome.size)
    groups = labels(clusters, "clusters", n=judge_outcome.size)
    part = ERROR_BIAS.sums(judge_outcome, human_outcome, clusters=groups)
    options = settings(bootstrap, **fields)
    return ERROR_BIAS.resample(part, options, empty="no comparison with a human winner")


def ranking_difference(
    judged_score: ArrayLike,
    reference_score: ArrayLike,
    generator: ArrayLike,
    clusters: ArrayLike,
    *,
    target: str,
    bootstrap: Bootstrap | None = None,
    **fields: Any,
) -> Estimate:
    """Rank of ``target`` on the reference leaderboard minus its rank on the judge's (paper 000 §5.4).

    Ranks are 1 = best, average rank for ties (scipy ``rankdata``; means rounded to 9 decimals, so
    exact ties stay ties), computed by the metric's one definition (`RANKING_DIFFERENCE`, the
    suite's too) from each generator's mean score (win-rate score 1/½/0, or a pointwise score) under the judge and under the
    reference. Positive = the judge ranks the target higher than the reference does (000 Table 4
    subtracts the judge-based leaderboard's rank from the human one). Rows with a NaN in either
    score are excluded. A generator without rows is dropped from both leaderboards.
    Variants (``against`` in suite records): the reference leaderboard comes from a preference-ref
    (humans), a rubric-ref / correctness-ref, a fixed leaderboard file, or another judge.
    Infinite scores or arrays of unequal length are refused.

    The judge ranks "S" first, the reference last of three:

    >>> ranking_difference([3, 2, 1], [1, 2, 3], ["S", "G", "H"], ["p1", "p1", "p1"], target="S", n_resamples=0).value
    2.0
    """
    judged_score = checked(judged_score, "judged_score", low=-np.inf, high=np.inf)
    reference_score = checked(reference_score, "reference_score", low=-np.inf, high=np.inf, n=judged_score.size)
    names_of = labels(generator, "generator", n=judged_score.size)
    groups = labels(clusters, "clusters", n=judged_score.size)
    keep, n_missing, excluded = valid_rows(judged_score, reference_score)
    names, codes = np.unique(names_of[keep], return_inverse=True)
    options = settings(bootstrap, **fields)
    if target not in set(names.tolist()):
        return undefined(f"no scored row for {target!r}", n_excluded=n_missing, excluded=excluded, bootstrap=options)
    t = int(np.flatnonzero(names == target)[0])
    all_codes = np.zeros(judged_score.size, dtype=np.int64)
    all_codes[keep] = codes
    return RANKING_DIFFERENCE.estimate(
        judged_score,
        reference_score,
        all_codes,
        names.size,
        clusters=groups,
        bootstrap=options,
        statistic=ranking_statistic(names.size, t),
    )
