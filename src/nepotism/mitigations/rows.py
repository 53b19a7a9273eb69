"""From pairwise judgments to side rows, and from graded responses to pairwise truth.

`side_rows` combines the two presentation orders of each (judge, condition, instance, pair) with
`nepotism.metrics.pairwise.aggregate_orders` (paper 004's rule, or paper 003's strict rule; an order
without its twin is used as it is) and returns two rows per comparison, one from each candidate's side: ``outcome`` for
that side (+1 / 0 / -1, NaN for an unparsed or failed verdict; ``excluded_reason`` then says why,
as every metric counts it: `nepotism.records.exclusion_label` of the first order without a verdict,
``unparsed-conflicting``, ``failed-timeout``, ``failed-generation:timeout`` for a comparison a
failed generation prevented), ``score`` = the mean over the
orders of log p(side) - log p(opponent) from the label probabilities, and ``prob`` = the mean over
the orders of p(side) / (p(side) + p(opponent)) (paper 001 Eq. 3); both NaN without probabilities.
`pair_truth` says which of two candidates is better from their correctness (+1 / -1 / 0, NaN
when either is ungraded); `preference_truth` says it from human preference labels (the annotators'
plurality winner, paper 000 §5.8's Error Bias against humans). `left_out` counts, by reason, the
rows a statistic that needs a value and a decisive truth cannot use (the own-win rates, the
calibration fit). `one_side` keeps one of the two mirrored rows of each comparison (the one whose
side sorts first), for whatever counts comparisons rather than rows. Left out: replicates beyond the first (each replicate is its own row).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping

import numpy as np
import numpy.typing as npt
import pandas as pd

from nepotism.metrics.pairwise import aggregate_orders
from nepotism.records import Judgment, exclusion_label
from nepotism.votes import decide_one

__all__ = ["ROW_COLUMNS", "left_out", "one_side", "pair_truth", "preference_truth", "side_rows", "usable"]

ROW_COLUMNS = [
    "judge",
    "condition",
    "replicate",
    "instance_id",
    "side",
    "opponent",
    "outcome",
    "score",
    "prob",
    "n_orders",
    "ambiguous",
    "excluded_reason",
]
_CODE = {"A": 1.0, "B": -1.0, "tie": 0.0}
_EPS = 1e-6


def _log_ratio(probs: Mapping[str, float] | None, first: bool) -> float:
    if not probs:
        return math.nan
    a, b = float(probs.get("A", 0.0)), float(probs.get("B", 0.0))
    value = math.log(max(a, _EPS)) - math.log(max(b, _EPS))
    return value if first else -value


def _share(probs: Mapping[str, float] | None, first: bool) -> float:
    """p(x) / (p(A) + p(B)) for the candidate x shown first (``first``) or second (paper 001 Eq. 3)."""
    if not probs:
        return math.nan
    a, b = float(probs.get("A", 0.0)), float(probs.get("B", 0.0))
    if a + b <= 0:
        return math.nan
    return (a if first else b) / (a + b)


def side_rows(judgments: Iterable[Judgment], *, rule: str = "consistent") -> pd.DataFrame:
    """Two rows per aggregated pairwise comparison (see the module docstring).

    ``rule`` combines the two orders as `nepotism.metrics.pairwise.aggregate_orders` does for every
    pairwise metric: ``"consistent"`` (paper 004 Eq. 1) or ``"strict"`` (paper 003: the two orders
    must agree; a disagreement is *ambiguous*, NaN, and flagged in the ``ambiguous`` column)."""
    if rule not in ("consistent", "strict"):
        raise ValueError("rule must be 'consistent' or 'strict'")
    groups: dict[tuple[str, str, int, str, str, str], list[tuple[float, float, float, str | None]]] = {}
    for j in judgments:
        if j.protocol != "pairwise" or len(j.candidates) != 2:
            continue
        x, y = sorted(j.candidates)
        first = j.candidates[0] == x
        code = _CODE.get(j.verdict or "", math.nan) if j.status == "parsed" else math.nan
        code_x = code if first else -code
        why = None if j.status == "parsed" else exclusion_label(j.status, j.reason)
        groups.setdefault((j.judge, j.condition, j.replicate, j.instance_id, x, y), []).append(
            (code_x, _log_ratio(j.label_probs, first), _share(j.label_probs, first), why)
        )
    rows = []
    for (judge, condition, replicate, instance, x, y), orders in groups.items():
        codes = [c for c, _, _, _ in orders[:2]]
        outcome = float(aggregate_orders(np.array(codes[0]), np.array(codes[1]), rule=rule)) if len(codes) == 2 else codes[0]
        ambiguous = len(codes) == 2 and not any(math.isnan(c) for c in codes) and math.isnan(outcome)
        scores = [s for _, s, _, _ in orders[:2] if not math.isnan(s)]
        score = float(np.mean(scores)) if scores else math.nan
        shares = [p for _, _, p, _ in orders[:2] if not math.isnan(p)]
        prob = float(np.mean(shares)) if shares else math.nan
        why = next((w for _, _, _, w in orders[:2] if w is not None), None) if math.isnan(outcome) else None
        rows.append((judge, condition, replicate, instance, x, y, outcome, score, prob, len(codes), ambiguous, why))
        rows.append(
            (
                judge,
                condition,
                replicate,
                instance,
                y,
                x,
                -outcome if outcome == outcome else math.nan,
                -score if score == score else math.nan,
                1.0 - prob if prob == prob else math.nan,
                len(codes),
                ambiguous,
                why,
            )
        )
    return pd.DataFrame(rows, columns=ROW_COLUMNS)


def one_side(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows whose ``side`` sorts before their ``opponent``: of the two mirrored rows `side_rows`
    makes of a comparison (or a jury's outcome per side, `nepotism.mitigations.juries.jury_outcomes`),
    the one that stands for it, so that a count over them counts each comparison once."""
    return rows[rows["side"].astype(str) < rows["opponent"].astype(str)]


def pair_truth(rows: pd.DataFrame, correct: Mapping[tuple[str, str], bool | None]) -> np.ndarray:
    """Truth per row from ``correct[(instance_id, generator)]`` (True / False / None)."""
    out = np.full(len(rows), np.nan)
    for i, (inst, side, opp) in enumerate(zip(rows["instance_id"], rows["side"], rows["opponent"])):
        a, b = correct.get((inst, side)), correct.get((inst, opp))
        if a is None or b is None:
            continue
        out[i] = 0.0 if a == b else (1.0 if a else -1.0)
    return out


def preference_truth(rows: pd.DataFrame, labels: pd.DataFrame) -> np.ndarray:
    """Truth per row from human preference labels (a validated ``preference-ref`` frame: one row per
    annotator and pair): the plurality winner of the (instance, pair) — +1 the side, -1 the opponent,
    0 a tie. NaN where the pair is unlabelled or the annotators split evenly (`nepotism.votes`: a
    split vote decides nothing; it is not made a tie)."""
    votes: dict[tuple[str, frozenset[str]], Counter[Hashable]] = {}
    for inst, a, b, winner in zip(
        labels["instance_id"].astype(str),
        labels["model_a"].astype(str),
        labels["model_b"].astype(str),
        labels["winner"].astype(str),
    ):
        votes.setdefault((inst, frozenset((a, b))), Counter())[winner] += 1
    decided = {key: decide_one(counts) for key, counts in votes.items()}
    out = np.full(len(rows), np.nan)
    for i, (inst, side, opp) in enumerate(zip(rows["instance_id"].astype(str), rows["side"], rows["opponent"])):
        winner = decided.get((inst, frozenset((side, opp))))
        if winner is not None:
            out[i] = 1.0 if winner == side else -1.0 if winner == opp else 0.0
    return out


def usable(values: npt.ArrayLike, truth: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """The rows a statistic that needs a value and a decisive truth can use: a value (not NaN) and
    a truth of +1 or -1 (the rows `left_out` does not count)."""
    v = np.asarray(values, dtype=float)
    return np.asarray(~np.isnan(v) & np.isin(np.asarray(truth, dtype=float), (-1.0, 1.0)), dtype=bool)


def left_out(
    values: npt.ArrayLike, truth: npt.ArrayLike, reasons: npt.ArrayLike | None = None, *, unusable: str = "no usable verdict"
) -> dict[str, int]:
    """{reason: rows} of the rows without a value (NaN) or without a decisive truth (+1 / -1).

    A row without a value whose ``reasons`` entry is a label (`side_rows`' ``excluded_reason``,
    the labels every metric uses, e.g. ``failed-generation:timeout``) is counted under it, whatever
    its truth; each other row under ``no truth`` (NaN truth), ``comparable answers`` (truth 0) or
    ``unusable`` (no value, decisive truth). Every row left out is counted exactly once."""
    v = np.asarray(values, dtype=float)
    t = np.asarray(truth, dtype=float)
    why = np.full(v.size, None, dtype=object) if reasons is None else np.asarray(reasons, dtype=object)
    labelled = np.isnan(v) & np.array([isinstance(w, str) for w in why], dtype=bool)
    out: dict[str, int] = {}
    for label in sorted({w for w in why[labelled]}):
        out[label] = int(np.sum(labelled & (why == label)))
    for reason, mask in (
        ("no truth", np.isnan(t)),
        ("comparable answers", t == 0),
        (unusable, np.isnan(v) & np.isin(t, (-1.0, 1.0))),
    ):
        if (mask & ~labelled).any():
            out[reason] = int((mask & ~labelled).sum())
    return out
