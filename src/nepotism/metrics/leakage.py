"""Preference-leakage metrics of paper 000: preference leakage score, error bias, ranking difference.

Pure functions on arrays, each returning an `Estimate` with a cluster bootstrap over instances.
Which students belong to which teacher (judge) comes from the registry and is decided by the
caller (`nepotism.analyses.suite`). Outcome codes as in `pairwise`: +1 win, 0 tie, -1 loss, NaN
no usable verdict.
"""

from __future__ import annotations

import numpy as np
from typing import Any
from scipy import stats

from nepotism.metrics.bootstrap import Bootstrap, cluster_bootstrap, cluster_sums, difference_of_ratios, settings
from nepotism.metrics._common import undefined, valid_rows
from nepotism.metrics._estimate import Estimate

__all__ = ["PLS_TIE_RULES", "error_bias", "pls_from_win_rates", "preference_leakage_score", "ranking_difference"]

#: How a tie enters WR(i, j) in the preference leakage score; the first is the default.
PLS_TIE_RULES = ("loss", "half", "exclude")


def pls_from_win_rates(wr_ii, wr_ij, wr_jj, wr_ji):
    """PLS(i, j) = ½[(WR(i,i) − AVG(i,j))/AVG(i,j) + (WR(j,j) − AVG(j,i))/AVG(j,i)].

    Paper 000 Eq. 5–6 with AVG(i,j) = (WR(i,i) + WR(i,j))/2; WR(i,j) is the win rate of the student
    of generator i under judge j. Works elementwise on arrays (the bootstrap passes (B,) arrays).
    """
    avg_ij = (np.asarray(wr_ii) + wr_ij) / 2.0
    avg_ji = (np.asarray(wr_jj) + wr_ji) / 2.0
    return ((wr_ii - avg_ij) / avg_ij + (wr_jj - avg_ji) / avg_ji) / 2.0


def _pls_statistic(totals: np.ndarray) -> np.ndarray:
    rate = totals[..., 0::2] / totals[..., 1::2]  # cells (student, judge): ii, ij, ji, jj
    return pls_from_win_rates(rate[..., 0], rate[..., 1], rate[..., 3], rate[..., 2])


def preference_leakage_score(
    outcome: np.ndarray, student: np.ndarray, judge: np.ndarray, clusters: np.ndarray, *,
    ties: str = "loss", alternative: str | None = "greater", bootstrap: Bootstrap | None = None, **fields,
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
    """
    outcome = np.asarray(outcome, dtype=float)
    keep, n_missing, excluded = valid_rows(outcome)
    if ties not in PLS_TIE_RULES:
        raise ValueError(f"ties must be one of {', '.join(PLS_TIE_RULES)}, not {ties!r}")
    if ties == "exclude":
        tie = keep & (outcome == 0)
        if tie.any():
            excluded["tie"] = int(tie.sum())
        keep &= ~tie
    if ties == "loss" and not np.isin(outcome[keep], (-1.0, 0.0, 1.0)).all():
        raise ValueError("ties='loss' needs outcome codes -1, 0, +1; use ties='half' for soft outcomes")
    cell = 2 * np.asarray(student, dtype=int)[keep] + np.asarray(judge, dtype=int)[keep]
    score = (outcome[keep] == 1.0).astype(float) if ties == "loss" else (outcome[keep] + 1.0) / 2.0
    columns = np.zeros((cell.size, 8))
    columns[np.arange(cell.size), 2 * cell] = score
    columns[np.arange(cell.size), 2 * cell + 1] = 1.0
    options = settings(bootstrap, **fields)
    n_excl = int((~keep).sum())
    if cell.size == 0:
        return undefined("no comparison", n_excluded=n_excl, excluded=excluded, bootstrap=options)
    _, sums = cluster_sums(np.asarray(clusters)[keep], columns)
    empty = [name for name, c in zip(("WR(i,i)", "WR(i,j)", "WR(j,i)", "WR(j,j)"), range(4)) if sums[:, 2 * c + 1].sum() == 0]
    note = f"no comparison for {', '.join(empty)}" if empty else None
    return cluster_bootstrap(sums, _pls_statistic, n=int(keep.sum()), n_excluded=n_excl, excluded=excluded,
                             alternative=alternative, note=note, bootstrap=options)


def error_bias(judge_outcome: np.ndarray, human_outcome: np.ndarray, clusters: np.ndarray, *, bootstrap: Bootstrap | None = None, **fields: Any) -> Estimate:
    """Error Bias (paper 000 Eq. 10), lower is better.

    EB = N(judge prefers target | human: other wins)/N(other wins)
         − N(judge prefers other | human: target wins)/N(target wins).
    Both codes are from the *target*'s side (the student or the judge's relative): +1 target
    preferred, -1 other preferred, 0 tie. Rows with a human tie are excluded (counted
    ``"human tie"``): Eq. 10 conditions on a human winner. A judge tie is neither preference and
    stays in the denominators. Zero division: no human win for one side → NaN with a note.
    """
    judge_outcome = np.asarray(judge_outcome, dtype=float)
    human_outcome = np.asarray(human_outcome, dtype=float)
    keep, _, excluded = valid_rows(judge_outcome, human_outcome)
    human_tie = keep & (human_outcome == 0)
    if human_tie.any():
        excluded["human tie"] = int(human_tie.sum())
    keep &= ~human_tie
    j, h = judge_outcome[keep], human_outcome[keep]
    columns = np.column_stack([(j == 1) & (h == -1), h == -1, (j == -1) & (h == 1), h == 1]).astype(float)
    options = settings(bootstrap, **fields)
    if not keep.any():
        return undefined("no comparison with a human winner", n_excluded=int((~keep).sum()), excluded=excluded, bootstrap=options)
    _, sums = cluster_sums(np.asarray(clusters)[keep], columns)
    return cluster_bootstrap(sums, difference_of_ratios, n=int(keep.sum()), n_excluded=int((~keep).sum()),
                             excluded=excluded, bootstrap=options)


def ranking_difference(
    judged_score: np.ndarray, reference_score: np.ndarray, generator: np.ndarray, clusters: np.ndarray, *,
    target, bootstrap: Bootstrap | None = None, **fields,
) -> Estimate:
    """Rank of ``target`` on the reference leaderboard minus its rank on the judge's (paper 000 §5.4).

    Ranks are 1 = best, average rank for ties (scipy ``rankdata``), computed from each generator's
    mean score (win-rate score 1/½/0, or a pointwise score) under the judge and under the
    reference. Positive = the judge ranks the target higher than the reference does (000 Table 4
    subtracts the judge-based leaderboard's rank from the human one). Rows with a NaN in either
    score are excluded. A generator without rows is dropped from both leaderboards.
    Variants (``against`` in suite records): the reference leaderboard comes from a preference-ref
    (humans), a rubric-ref / correctness-ref, a fixed leaderboard file, or another judge.
    """
    judged_score = np.asarray(judged_score, dtype=float)
    reference_score = np.asarray(reference_score, dtype=float)
    keep, n_missing, excluded = valid_rows(judged_score, reference_score)
    names, codes = np.unique(np.asarray(generator)[keep], return_inverse=True)
    options = settings(bootstrap, **fields)
    if target not in set(names.tolist()):
        return undefined(f"no scored row for {target!r}", n_excluded=n_missing, excluded=excluded, bootstrap=options)
    t = int(np.flatnonzero(names == target)[0])
    g = names.size
    columns = np.zeros((codes.size, 3 * g))
    rows = np.arange(codes.size)
    columns[rows, codes] = judged_score[keep]
    columns[rows, g + codes] = reference_score[keep]
    columns[rows, 2 * g + codes] = 1.0

    def statistic(totals: np.ndarray) -> np.ndarray:
        count = totals[..., 2 * g:]
        judged = totals[..., :g] / count
        reference = totals[..., g:2 * g] / count
        rank_j = stats.rankdata(-judged, axis=-1)
        rank_r = stats.rankdata(-reference, axis=-1)
        return rank_r[..., t] - rank_j[..., t]

    _, sums = cluster_sums(np.asarray(clusters)[keep], columns)
    return cluster_bootstrap(sums, statistic, n=int(keep.sum()), n_excluded=n_missing, excluded=excluded, bootstrap=options)
