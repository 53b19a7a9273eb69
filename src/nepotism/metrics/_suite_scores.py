"""Paper 002's metrics for one judge, batched: from (instance × generator) scores and rubric verdicts.

Used by `nepotism.analyses.suite` for rubric tables (instance score = share of parsed rubrics
met, the SR paradigm) and pointwise tables (instance score = the judge's direct-assessment score,
DA). Everything is computed on integer codes, and every record of one judge comes out of one
`RecordBatch`, i.e. one weights-matrix product. Each metric is its one definition
(`nepotism.metrics.definitions`: per-prompt columns and statistic, which the public estimators of
`nepotism.metrics.rubric` and `leakage` run too); this module lays the per-instance sums of many
generators out as the columns of shared blocks and names each record's statistic on its columns.

Left out: reading tables and relations (the suite passes ``relation`` per generator name).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from nepotism.metrics._batch import RecordBatch
from nepotism.metrics._common import Relations
from nepotism.models.registry import AUDITED_SCOPES
from nepotism.metrics.bootstrap import column_ratio
from nepotism.metrics.definitions import (
    MIPA,
    MRA,
    OVERESTIMATION_KINDS,
    OVERESTIMATION_RATE,
    SCORE_DELTA,
    hspp_statistic,
    on_columns,
    overestimation_counts,
    ranking_statistic,
    score_delta_statistic,
)

__all__ = ["SCOPES", "instance_level", "outcome_level", "rubric_level", "pointwise_preference"]

#: The scopes a pointwise self-preference ratio is computed for: the audited scopes, as for pairwise
#: tables; membership is the one rule (`nepotism.models.Registry.scope`), passed in as
#: ``relation[("scope", name)]``.
SCOPES = AUDITED_SCOPES
_UNRELATED = ("unrelated", "unknown")


def _interleave(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """(n_i, g) numerators and denominators → (n_i, 2g) with group g in columns 2g, 2g+1."""
    out = np.empty((num.shape[0], 2 * num.shape[1]))
    out[:, 0::2] = num
    out[:, 1::2] = den
    return out


def _hspp(
    batch: RecordBatch, block: int, sums: np.ndarray, names: np.ndarray, relation: Relations, variant: dict[str, Any]
) -> None:
    """HSPP ratio records (002 Eq. 1-2) from a per-generator (numerator, at-risk) block.

    HSPP-R = mean over the numerator set of O(J, G) / mean over the denominator set S_J of O(J, G).
    Numerator: the judge itself (scope self), or its family (scope family: lineage, series or
    family; ``family_set`` "exclude judge" as in Eq. 2, "include judge" as a variant). Denominator
    ``denominator``: "not-family" = every generator that is neither the judge nor its family
    (002's S_J, the default); "unrelated" = only generators the registry marks unrelated (or does
    not know), which also leaves out the judge's students and teachers (preference leakage).
    A generator never at risk (the reference never rates it below another) is left out, counted.
    """
    present = sums[:, 1::2].sum(axis=0) > 0
    scopes = [relation[("scope", n)] for n in names]
    selves = np.array([r == "self" for r in scopes])
    family = np.array([r == "family" for r in scopes])
    denominators = {"not-family": ~(selves | family), "unrelated": np.array([r in _UNRELATED for r in scopes])}
    numerators = (("self", selves, None), ("family", family, "exclude judge"), ("family", family | selves, "include judge"))
    for denominator, others in denominators.items():
        never = int(((selves | family | others) & ~present).sum())
        excluded = {"generator never at risk": never} if never else {}
        n = int(sums[:, 1::2][:, selves | family | others].sum())
        for scope, numerator, family_set in numerators:
            num, den = numerator & present, others & present
            v = {**variant, **({"family_set": family_set} if family_set else {}), "denominator": denominator}
            undefined = _hspp_undefined(scope, family_set, numerator, num, others, den, family, len(names))
            if undefined is None:
                totals = sums.sum(axis=0)
                with np.errstate(invalid="ignore", divide="ignore"):
                    if (totals[0::2] / totals[1::2])[den].mean() == 0:
                        undefined = (
                            "undefined: the judge never overestimates a generator of the comparison "
                            "set, so the ratio's denominator is 0"
                        )

            batch.add(
                "hspp-ratio",
                block,
                hspp_statistic(num, den),
                n=n,
                excluded=excluded,
                undefined_note=undefined,
                scope=scope,
                variant=v,
            )


def _hspp_undefined(
    scope: str,
    family_set: str | None,
    numerator: np.ndarray,
    num: np.ndarray,
    others: np.ndarray,
    den: np.ndarray,
    family: np.ndarray,
    n_generators: int,
) -> str | None:
    """Why an HSPP ratio cannot be computed (None when it can): not measurable vs never at risk."""
    if scope == "family" and not family.any():
        what = "this variant would repeat the self ratio" if family_set == "include judge" else "nothing to measure"
        return f"not measurable: no family generator among the {n_generators} judged ({what})"
    if not numerator.any():
        return f"not measurable: the judge's own answers are not among the {n_generators} generators judged"
    if not others.any():
        return f"not measurable: no generator of the comparison set among the {n_generators} judged"
    if not num.any():
        return f"no {scope} generator was ever at risk (the reference never rates it below another answer)"
    if not den.any():
        return "no generator of the comparison set was ever at risk (the reference never rates one below another)"
    return None


def instance_level(
    batch: RecordBatch,
    s_j: np.ndarray,
    s_r: np.ndarray,
    names: np.ndarray,
    relation: Relations,
    *,
    paradigm: str,
    delta_label: str = "count",
) -> None:
    """Instance-level overestimation per generator (3 kinds), HSPP ratio, MIPA and score-delta.

    ``s_j``/``s_r``: (n_instances, n_generators) judge and reference instance scores, NaN = none.
    """
    n_i, n_g = s_j.shape
    w_j = np.sign(s_j[:, :, None] - s_j[:, None, :])
    w_r = np.sign(s_r[:, :, None] - s_r[:, None, :])
    eye = np.eye(n_g, dtype=bool)
    w_j[:, eye] = np.nan
    w_r[:, eye] = np.nan
    outcome_level(batch, w_j, w_r, names, relation, paradigm=paradigm)
    score_delta(batch, s_j, s_r, names, relation, weighting=delta_label)


def outcome_level(
    batch: RecordBatch,
    w_j: np.ndarray,
    w_r: np.ndarray,
    names: np.ndarray,
    relation: Relations,
    *,
    paradigm: str,
    mipa: bool = True,
) -> None:
    """Instance-level overestimation per generator (3 kinds), HSPP ratio and MIPA from outcome cubes.

    ``w_j``/``w_r``: (n_instances, n_generators, n_generators) outcome codes of G (row) against G′
    (column): +1 win, 0 tie, −1 loss, NaN = not compared (002 Eq. 3). For single ratings (SR, DA)
    they come from score differences; for pairwise verdicts (PWC) from the verdicts themselves
    (``mipa=False`` there: the pairwise suite computes PWC MIPA on the comparisons directly).
    """
    n_i, n_g = w_j.shape[:2]
    for kind in OVERESTIMATION_KINDS:
        over, risk = overestimation_counts(w_j, w_r, kind=kind)
        sums = _interleave(over.sum(axis=2), risk.sum(axis=2))
        block = batch.block(sums)
        for g, name in enumerate(names):
            n = int(sums[:, 2 * g + 1].sum())
            batch.add(
                "overestimation-rate",
                block,
                on_columns(OVERESTIMATION_RATE.statistic, [2 * g, 2 * g + 1]),
                n=n,
                generator=str(name),
                scope=relation[name].lower(),
                variant={"level": "instance", "kind": kind},
                undefined_note=None if n else "the reference never rates this generator below an opponent",
            )
        if kind == "any":
            _hspp(batch, block, sums, names, relation, {"level": "instance", "paradigm": paradigm})
    if not mipa:
        return
    upper = np.triu(np.ones((n_g, n_g), bool), 1)
    a, b = w_j[:, upper], w_r[:, upper]
    part = MIPA.dense_sums(a.ravel(), b.ravel(), codes=np.repeat(np.arange(n_i), a.shape[1]), size=n_i)
    # the pairs not compared are counted, without a reason (as before the definition was shared)
    batch.add(
        "mipa",
        part.sums,
        MIPA.statistic,
        n=part.n,
        n_excluded=part.n_excluded,
        variant={"paradigm": paradigm},
        undefined_note=None if part.n else "no comparison",
    )


def score_delta(
    batch: RecordBatch, s_j: np.ndarray, s_r: np.ndarray, names: np.ndarray, relation: Relations, *, weighting: str
) -> None:
    """Centred score delta (002 Fig. 5) per generator from instance scores; one shared block."""
    n_g = s_j.shape[1]
    valid = np.isfinite(s_j) & np.isfinite(s_r)
    block = batch.block(SCORE_DELTA.columns(s_j, s_r)[1])
    for g, name in enumerate(names):
        n = int(valid[:, g].sum())
        batch.add(
            "score-delta",
            block,
            score_delta_statistic(n_g, g),
            n=n,
            n_excluded=int((~valid[:, g]).sum()),
            generator=str(name),
            scope=relation[name].lower(),
            variant={"weighting": weighting, "centred": True},
            undefined_note=None if n else "no instance scored by both",
        )


def rubric_level(
    batch: RecordBatch,
    li: np.ndarray,
    gi: np.ndarray,
    met: np.ndarray,
    met_ref: np.ndarray,
    n_i: int,
    names: np.ndarray,
    relation: Relations,
) -> None:
    """MRA, rubric-level overestimation per generator and the rubric-level HSPP ratio."""
    n_g = len(names)
    valid = np.isfinite(met) & np.isfinite(met_ref)
    part = MRA.dense_sums(met, met_ref, codes=li, size=n_i)
    batch.add(
        "mra",
        part.sums,
        MRA.statistic,
        n=part.n,
        n_excluded=part.n_excluded,
        excluded=part.excluded,
        undefined_note=None if part.n else "no rubric verdict",
    )
    over, risk = overestimation_counts(2 * met - 1, 2 * met_ref - 1)
    cell = li * n_g + gi
    sums = _interleave(np.bincount(cell, over, n_i * n_g).reshape(n_i, n_g), np.bincount(cell, risk, n_i * n_g).reshape(n_i, n_g))
    missing = np.bincount(gi, ~valid, n_g)
    block = batch.block(sums)
    for g, name in enumerate(names):
        n = int(sums[:, 2 * g + 1].sum())
        batch.add(
            "overestimation-rate",
            block,
            on_columns(OVERESTIMATION_RATE.statistic, [2 * g, 2 * g + 1]),
            n=n,
            n_excluded=int(missing[g]),
            excluded={"no verdict": int(missing[g])} if missing[g] else {},
            generator=str(name),
            scope=relation[name].lower(),
            variant={"level": "rubric", "kind": "any"},
            undefined_note=None if n else "the reference never marks a rubric of this generator unmet",
        )
    _hspp(batch, block, sums, names, relation, {"level": "rubric"})


def pointwise_preference(batch: RecordBatch, s_j: np.ndarray, names: np.ndarray, relation: Relations) -> None:
    """Pointwise self-preference ratio: share of (related, unrelated, instance) triples scored related > other.

    The analogue of 004 Eq. 2 for direct assessment: the judge's two scores on the same instance
    stand for a verdict; a tie (equal scores) is not a preference and stays in the denominator
    (variant ``ties = not preferred``). Coarse scales tie often (1–10 grades), so the variant
    ``ties = half`` counts a tie ½ (like a pairwise tie in the win rate): 0.5 there means the judge
    scores related and unrelated answers alike, and the two variants differ by half the tie share.
    A scope with no generator among those judged (e.g. self, when the judge graded only other
    models) gets a record without a value whose note says why, never no record at all.
    """
    scope_of = [relation[("scope", n)] for n in names]
    other = np.array([r in _UNRELATED for r in scope_of])
    diff = s_j[:, :, None] - s_j[:, None, :]  # [x, related, other]
    variant = {"paradigm": "pointwise", "opponents": "unrelated", "ties": "not preferred"}
    for scope in SCOPES:
        mine = np.array([r == scope for r in scope_of])
        if not mine.any():
            whose = "the judge's own answers are not" if scope == "self" else f"no {scope} generator of the judge is"
            batch.add(
                "self-preference-ratio",
                np.zeros((s_j.shape[0], 2)),
                column_ratio(0, 1),
                n=0,
                scope=scope,
                variant=variant,
                generators=[],
                undefined_note=f"not measurable: {whose} among the {len(names)} generators it scored",
            )
            continue
        d = diff[:, mine][:, :, other]
        valid = np.isfinite(d)
        wins = (valid & (d > 0)).sum(axis=(1, 2))
        ties = (valid & (d == 0)).sum(axis=(1, 2))
        n = int(valid.sum())
        block = batch.block(np.column_stack([wins, wins + 0.5 * ties, valid.sum(axis=(1, 2))]).astype(float))
        for numerator, counted in ((0, "not preferred"), (1, "half")):
            batch.add(
                "self-preference-ratio",
                block,
                column_ratio(numerator, 2),
                n=n,
                n_excluded=int((~valid).sum()),
                scope=scope,
                variant={**variant, "ties": counted},
                generators=[str(x) for x in np.asarray(names)[mine]],
                undefined_note=None if n else f"no instance with a {scope} and an unrelated answer both scored",
            )


def ranking(
    batch: RecordBatch,
    judged: np.ndarray,
    reference: np.ndarray | None,
    names: np.ndarray,
    relation: Relations,
    *,
    against: str,
    leaderboard: Mapping[str, float] | None = None,
) -> None:
    """Ranking difference (000 §5.4) of every generator: rank on the reference leaderboard − rank under the judge.

    ``judged``/``reference``: (n_instances, n_generators) per-instance mean scores (NaN = none). The
    judge's leaderboard is each generator's mean over its scored instances; the reference is the
    same from ``reference`` (resampled with the same instances), or a fixed ``leaderboard``
    {model: score} (not resampled). Ranks: 1 = best, ties share the average rank; only generators
    present on both leaderboards are ranked. The per-instance means are the sums of
    `nepotism.metrics.definitions.RANKING_DIFFERENCE` (one cluster per instance) and the statistic is
    its `ranking_statistic`.
    """
    from scipy.stats import rankdata

    labels = [str(n) for n in names]
    if leaderboard is not None:
        keep = np.array([n in leaderboard for n in labels])
        fixed = np.array([leaderboard[n] for n in labels if n in leaderboard], dtype=float)
        ref_ranks = rankdata(-fixed)
        reference = np.zeros_like(judged)
    elif reference is None:
        raise ValueError("ranking needs a reference score matrix or a fixed leaderboard")
    else:
        keep = np.isfinite(judged).any(0) & np.isfinite(reference).any(0)
        ref_ranks = None
    idx = np.flatnonzero(keep)
    if idx.size < 2:
        return
    j = judged[:, idx]
    r = reference[:, idx]
    valid = np.isfinite(j) & (np.isfinite(r) if leaderboard is None else True)
    g = idx.size
    block = batch.block(np.concatenate([np.where(valid, j, 0.0), np.where(valid, r, 0.0), valid], axis=1))

    for t, col in enumerate(idx):
        statistic = ranking_statistic(g, t, ref_ranks)
        name = labels[col]
        batch.add(
            "ranking-difference",
            block,
            statistic,
            n=int(valid[:, t].sum()),
            generator=name,
            scope=relation[name].lower(),
            variant={"against": against},
        )
