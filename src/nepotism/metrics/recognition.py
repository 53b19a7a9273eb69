"""Recognition and position metrics: recognition accuracy, its association with preference, position consistency.

- ``recognition-accuracy`` (000 §5.5, 003): share of recognition answers that are right —
  pointwise ("did you write this?" vs the truth) or pairwise ("which of the two is yours?").
- ``recognition-preference-association`` (003): Pearson r (the phi coefficient for two binary
  variables) between recognising the own answer and preferring it, with a bootstrap interval, the
  Fisher-z interval and a chi-square test of independence.
- ``position-consistency``: share of comparisons whose two presentation orders agree, and the
  first-slot preference.
Prompting a judge for recognition answers is left to the live engine.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from nepotism.metrics.bootstrap import Bootstrap, settings
from nepotism.metrics._common import checked, labels, undefined
from nepotism.metrics._estimate import Estimate
from nepotism.metrics.definitions import (
    FIRST_SLOT_PREFERENCE,
    POSITION_CONSISTENCY,
    RECOGNITION_ACCURACY,
    RECOGNITION_PREFERENCE_ASSOCIATION,
    Definition,
)
from nepotism.metrics.stats import chi_square, pearson

__all__ = ["first_slot_preference", "position_consistency", "recognition_accuracy", "recognition_preference_association"]


def _share(
    definition: Definition, *arrays: np.ndarray, clusters: np.ndarray, options: Bootstrap, what: str, **choices: Any
) -> Estimate:
    """``definition``'s estimate of the rows; NaN with a note when no row is left."""
    part = definition.sums(*arrays, clusters=clusters, **choices)
    return definition.resample(part, options, empty=f"no {what}")


def recognition_accuracy(
    claimed: ArrayLike, truth: ArrayLike, clusters: ArrayLike, *, bootstrap: Bootstrap | None = None, **fields: Any
) -> Estimate:
    """Share of recognition answers equal to the truth (000 §5.5 student recognition; 003 self-recognition).

    Pointwise: ``claimed``/``truth`` are 1 (mine / my student's) or 0. Pairwise: the slot claimed
    (0 = first, 1 = second) and the slot that is truly the judge's. Chance is ½ for pairwise and
    for balanced pointwise sets. Unparsed answers (NaN) are excluded and counted.
    Variants: ``mode`` pointwise | pairwise; ``answers`` all | own | other (pointwise: accuracy on
    the judge's own answers = recall, on others' = specificity); ``target`` self | student | family;
    ``subset`` all | harmful (pairwise questions about pairs whose own answer is wrong and the other
    right: 003 Figs. 7/11/14, Table 5) and ``evaluatee`` (the pairs with one other model: 003 Table
    5) — the caller passes those rows (`nepotism.metrics._suite_recognition`).
    Answers other than 0, 1 or NaN are refused.

    >>> est = recognition_accuracy([1, 0, 1, float("nan")], [1, 1, 1, 0], ["p1", "p2", "p3", "p4"], n_resamples=0)
    >>> round(est.value, 3), est.n, dict(est.excluded)
    (0.667, 3, {'no verdict': 1})
    """
    said = _binary(claimed, "claimed")
    true = _binary(truth, "truth", n=said.size)
    groups = labels(clusters, "clusters", n=said.size)
    return _share(
        RECOGNITION_ACCURACY, said, true, clusters=groups, options=settings(bootstrap, **fields), what="recognition answer"
    )


def _binary(values: ArrayLike, name: str, *, n: int | None = None) -> np.ndarray:
    """``values`` checked to hold only 0, 1 and NaN (no answer)."""
    array = checked(values, name, low=0.0, high=1.0, n=n)
    odd = np.isfinite(array) & (array != 0) & (array != 1)
    if odd.any():
        i = int(np.argmax(odd))
        raise ValueError(f"{name} must hold 0, 1 or NaN (no answer); {name}[{i}] is {float(array[i])!r}")
    return array


def recognition_preference_association(
    recognised: ArrayLike, preferred: ArrayLike, clusters: ArrayLike, *, bootstrap: Bootstrap | None = None, **fields: Any
) -> tuple[Estimate, dict[str, Any]]:
    """Pearson r between recognising one's answer and preferring it (003: r, 95% CI, chi-square).

    ``recognised`` and ``preferred`` are 0/1 per item (003 uses the harmful cases, where the own
    answer is wrong; the caller chooses the subset). Returns the Estimate of r with a cluster
    bootstrap interval, and a dict with the Fisher-z interval, the t-test p-value of r and the
    chi-square test of independence on the 2×2 table (``chi2``, ``dof``, ``chi2_p_value``, no
    continuity correction). Zero variance in either variable → NaN r.
    Variants: ``subset`` = all own-vs-other comparisons | harmful (own wrong, other right; 003).

    >>> est, extra = recognition_preference_association([1, 1, 0, 0], [1, 1, 0, 1], ["p1", "p2", "p3", "p4"],
    ...                                                  n_resamples=0)
    >>> round(est.value, 4), extra["table"]
    (0.5774, [[1, 1], [0, 2]])
    """
    x = _binary(recognised, "recognised")
    y = _binary(preferred, "preferred", n=x.size)
    groups = labels(clusters, "clusters", n=x.size)
    keep, _, _ = RECOGNITION_PREFERENCE_ASSOCIATION.kept_rows(x, y)
    part = RECOGNITION_PREFERENCE_ASSOCIATION.sums(x, y, clusters=groups)
    x, y = x[keep], y[keep]
    options = settings(bootstrap, **fields)
    if part.n < 3:
        return undefined("fewer than 3 items", n_excluded=part.n_excluded, excluded=part.excluded, bootstrap=options), {}
    estimate = RECOGNITION_PREFERENCE_ASSOCIATION.resample(part, options)
    extra = pearson(x, y, confidence=estimate.confidence)
    table = np.array([[np.sum((x == a) & (y == b)) for b in (0, 1)] for a in (0, 1)])
    test = chi_square(table)
    extra.update({"chi2": test["statistic"], "dof": test["dof"], "chi2_p_value": test["p_value"], "table": table.tolist()})
    return estimate, extra


def position_consistency(
    first: ArrayLike, second: ArrayLike, clusters: ArrayLike, *, bootstrap: Bootstrap | None = None, **fields: Any
) -> Estimate:
    """Share of comparisons whose two presentation orders give the same verdict.

    ``first`` and ``second`` are the codes of the same candidate X in the two orders (+1, 0, -1;
    mapped back from the slot). Equal codes (including two ties) are consistent. A comparison
    with an unparsed order (NaN) is excluded and counted; single-order comparisons are not rows.
    Variants: ``share`` = two orders agree (this function) | first slot chosen
    (`first_slot_preference`). Setting: 004 Eq. 1 and 002 §2.2 judge both orders.

    >>> position_consistency([1, 0, -1, 1], [1, 0, 1, float("nan")], ["p1", "p2", "p3", "p4"], n_resamples=0).value
    0.6666666666666666
    """
    one = checked(first, "first", low=-1.0, high=1.0)
    two = checked(second, "second", low=-1.0, high=1.0, n=one.size)
    groups = labels(clusters, "clusters", n=one.size)
    return _share(
        POSITION_CONSISTENCY, one, two, clusters=groups, options=settings(bootstrap, **fields), what="comparison with both orders"
    )


def first_slot_preference(
    slot_verdict: ArrayLike, clusters: ArrayLike, *, ties: str = "exclude", bootstrap: Bootstrap | None = None, **fields: Any
) -> Estimate:
    """Share of verdicts choosing the first slot: ½ = no position bias.

    ``slot_verdict`` per row: 1 the first slot (A) chosen, 0 the second, ½ a tie, NaN unparsed.
    ``ties="exclude"`` (default) drops ties (counted); ``"half"`` keeps them as ½.

    >>> est = first_slot_preference([1, 1, 0, 0.5], ["p1", "p2", "p3", "p4"], n_resamples=0)
    >>> round(est.value, 3), dict(est.excluded)
    (0.667, {'tie': 1})
    """
    v = checked(slot_verdict, "slot_verdict", low=0.0, high=1.0)
    groups = labels(clusters, "clusters", n=v.size)
    if ties not in ("exclude", "half"):
        raise ValueError("ties must be 'exclude' or 'half'")
    return _share(FIRST_SLOT_PREFERENCE, v, clusters=groups, options=settings(bootstrap, **fields), what="verdict", ties=ties)
