"""Meta-evaluation of a judge's rubric verdicts against a reference (paper 002 §2.4, Appendix C).

Paper 002 has no ground truth on HealthBench and takes the majority of a jury of judges as the
reference; a judge is then evaluated by how its verdicts ("the response meets this rubric item")
agree with the reference's. `rubric_verdict_scores` gives, for one judge, the three usual scores
with "met" as the positive class:

- precision = TP / (TP + FP): of the items the judge says are met, the share the reference says are met;
- recall = TP / (TP + FN): of the items the reference says are met, the share the judge says are met;
- F1 = 2 TP / (2 TP + FP + FN).

Each is a ratio of per-prompt sums, so one cluster bootstrap over prompts (instances) gives the
three intervals. Rows without a judge verdict or without a reference verdict are excluded and
counted. Variants: ``polarity`` = positive | negative | all (rubric items with positive points,
negative points — criteria a response is penalised for meeting — or both, scored separately as
paper 002 §4 slices HealthBench); ``reference`` = the jury (with or without the judge's relatives).
Zero division (no positive prediction, no positive reference) → NaN with a note, never 0.

`balanced_f1` is HealthBench's meta-evaluation score that paper 002 App. C (Table 3) reports for
its jurors against physicians: every (judge verdict, one person's label) pair of an item is a row,
F1 is computed with "met" as the positive class and again with "not met" as the positive class,
and the balanced F1 is their mean, ½[2TP/(2TP+FP+FN) + 2TN/(2TN+FN+FP)].
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from nepotism.metrics import _common
from nepotism.metrics._common import checked, labels
from nepotism.metrics._estimate import Estimate
from nepotism.metrics.bootstrap import Bootstrap, cluster_bootstrap, cluster_sums, column_ratio, settings

__all__ = ["STATISTICS", "balanced_f1", "rubric_verdict_scores"]

STATISTICS = ("precision", "recall", "f1")


def rubric_verdict_scores(
    judged: ArrayLike, reference: ArrayLike, clusters: ArrayLike, *, bootstrap: Bootstrap | None = None, **fields: Any
) -> dict[str, Estimate]:
    """``{"precision", "recall", "f1"}`` of a judge's rubric verdicts against a reference (paper 002 App. C).

    ``judged`` and ``reference`` are 1 (met), 0 (not met) or NaN (no verdict: excluded and
    counted); ``clusters`` are the prompts. Variants ``polarity`` (positive | negative | all
    rubric items) and ``reference`` (which jury) are chosen by the caller's rows: see the module
    docstring.

    Two of three met items found, one false alarm: precision = recall = F1 = ⅔.

    >>> scores = rubric_verdict_scores([1, 1, 0, 1], [1, 1, 1, 0], ["p1", "p1", "p2", "p2"], n_resamples=0)
    >>> {name: round(est.value, 3) for name, est in scores.items()}
    {'precision': 0.667, 'recall': 0.667, 'f1': 0.667}
    """
    j = checked(judged, "judged", low=0.0, high=1.0)
    r = checked(reference, "reference", low=0.0, high=1.0, n=j.size)
    groups = labels(clusters, "clusters", n=j.size)
    keep = np.isfinite(j) & np.isfinite(r)
    excluded = {
        k: int(v)
        for k, v in (
            ("no judge verdict", (~np.isfinite(j)).sum()),
            ("no reference verdict", (np.isfinite(j) & ~np.isfinite(r)).sum()),
        )
        if v
    }
    n_missing = int((~keep).sum())
    j, r = j[keep], r[keep]
    if not (np.isin(j, (0.0, 1.0)).all() and np.isin(r, (0.0, 1.0)).all()):
        raise ValueError("verdicts must be 1, 0 or NaN")
    tp, fp, fn = j * r, j * (1 - r), (1 - j) * r
    cols = np.column_stack([tp, tp + fp, tp + fn, 2 * tp, 2 * tp + fp + fn]) if j.size else np.zeros((0, 5))
    sums = cluster_sums(groups[keep], cols)[1] if j.size else np.zeros((0, 5))
    options = settings(bootstrap, **fields)
    out: dict[str, Estimate] = {}
    notes = {
        "precision": "the judge says no item is met",
        "recall": "the reference says no item is met",
        "f1": "no item is met by either",
    }
    for name, (num, den) in zip(STATISTICS, ((0, 1), (0, 2), (3, 4))):
        total = sums[:, den].sum() if sums.size else 0.0
        note = notes[name] if total == 0 else None
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = cluster_bootstrap(
                sums, column_ratio(num, den), n=int(j.size), n_excluded=n_missing, excluded=excluded, note=note, bootstrap=options
            )
    return out


def _balanced(t: np.ndarray) -> np.ndarray:
    tp, fp, fn, tn = t[..., 0], t[..., 1], t[..., 2], t[..., 3]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((2 * tp / (2 * tp + fp + fn) + 2 * tn / (2 * tn + fn + fp)) / 2)


def balanced_f1(
    judged: ArrayLike, labels: ArrayLike, clusters: ArrayLike, *, bootstrap: Bootstrap | None = None, **fields: Any
) -> Estimate:
    """Balanced F1 of a judge's rubric verdicts against people's labels (paper 002 App. C, Table 3).

    One row per (judge verdict, one annotator's label) of an item — an item labelled by three
    physicians is three rows with the same verdict — so every label counts once, as HealthBench's
    meta-evaluation pairs a grader with each physician. ``judged`` and ``labels`` are 1 (met), 0
    (not met) or NaN (no verdict / no label: excluded and counted); ``clusters`` are the prompts.
    Formula: F1 with "met" positive, 2TP/(2TP+FP+FN), and with "not met" positive,
    2TN/(2TN+FN+FP); balanced F1 = their mean. A class absent from both verdicts and labels
    leaves it undefined (NaN with a note), never 0. Variants ``polarity`` and the label source
    (``reference``) are the caller's rows, as for `rubric_verdict_scores`.

    TP 6, FP 2, FN 2, TN 10: ½(12/16 + 20/24) = 0.7917.

    >>> est = balanced_f1([1] * 8 + [0] * 12, [1] * 6 + [0] * 2 + [1] * 2 + [0] * 10, [f"p{k % 5}" for k in range(20)],
    ...                   n_resamples=0)
    >>> round(est.value, 4), est.n
    (0.7917, 20)
    """
    j = checked(judged, "judged", low=0.0, high=1.0)
    r = checked(labels, "labels", low=0.0, high=1.0, n=j.size)
    groups = _common.labels(clusters, "clusters", n=j.size)  # the parameter shadows `labels`
    keep = np.isfinite(j) & np.isfinite(r)
    excluded = {
        k: int(v)
        for k, v in (("no judge verdict", (~np.isfinite(j)).sum()), ("no label", (np.isfinite(j) & ~np.isfinite(r)).sum()))
        if v
    }
    j, r = j[keep], r[keep]
    if not (np.isin(j, (0.0, 1.0)).all() and np.isin(r, (0.0, 1.0)).all()):
        raise ValueError("verdicts and labels must be 1, 0 or NaN")
    cols = np.column_stack([j * r, j * (1 - r), (1 - j) * r, (1 - j) * (1 - r)]) if j.size else np.zeros((0, 4))
    sums = cluster_sums(groups[keep], cols)[1] if j.size else np.zeros((0, 4))
    total = sums.sum(axis=0) if sums.size else np.zeros(4)
    note = None
    if j.size and (2 * total[0] + total[1] + total[2] == 0 or 2 * total[3] + total[1] + total[2] == 0):
        note = "one class is absent from both the verdicts and the labels"
    return cluster_bootstrap(
        sums,
        _balanced,
        n=int(j.size),
        n_excluded=int((~keep).sum()),
        excluded=excluded,
        note=note,
        bootstrap=settings(bootstrap, **fields),
    )
