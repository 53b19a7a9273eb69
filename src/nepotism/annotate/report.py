"""The agreement report of a collection: humans with each other, and judges with the humans.

Builds the (items x annotators) label matrix from each annotator's latest label (a skip is a
missing value), then reports, each with a cluster-bootstrap interval over prompts:

* overall: mean pairwise percent agreement, Fleiss' kappa and Krippendorff's alpha (nominal);
* per pair of annotators: percent agreement and Cohen's kappa on the items both labelled;
* per annotator: labels, skips and labelling time (median seconds on screen per label);
* given recorded pairwise judgments: per judge, the share of its verdicts that match the human
  majority and Cohen's kappa with it. Every judgment row on an item counts (both orders,
  replicates, conditions); rows with no verdict, rows on items without a human majority and rows
  that match no item are excluded and counted.

Categories are model_a / model_b / tie in the item's canonical order, so a label means the same
whichever order the annotator saw. The statistics themselves live in
`nepotism.annotate.agreement`; this module only arranges the data.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from nepotism.annotate.agreement import (
    category_counts,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    pair_agreement,
    percent_agreement,
)
from nepotism.annotate.export import majority_frame
from nepotism.annotate.sampling import pair_outcomes
from nepotism.metrics import Bootstrap
from nepotism.store.annotations import WINNERS, AnnotationItem, Label

__all__ = ["agreement_report", "judge_agreement", "label_matrix"]

_CODE = {w: i for i, w in enumerate(WINNERS)}


def label_matrix(items: Sequence[AnnotationItem], labels: Sequence[Label]) -> tuple[np.ndarray, list[str]]:
    """Codes (items x annotators), -1 where an annotator skipped or never labelled the item.

    ``labels`` may be the full history in order: the latest label of each annotator counts.
    """
    annotators = sorted({label.annotator for label in labels})
    column = {a: j for j, a in enumerate(annotators)}
    row = {item.item_id: i for i, item in enumerate(items)}
    matrix = np.full((len(items), len(annotators)), -1, dtype=int)
    for label in labels:
        i = row.get(label.item_id)
        if i is not None:
            matrix[i, column[label.annotator]] = -1 if label.winner is None else _CODE[label.winner]
    return matrix, annotators


def _timing(labels: Sequence[Label], annotator: str) -> dict[str, float | None]:
    times = [lab.elapsed_ms / 1000.0 for lab in labels if lab.annotator == annotator and lab.elapsed_ms is not None]
    if not times:
        return {"median_seconds_per_label": None, "labels_per_minute": None}
    median = statistics.median(times)
    return {"median_seconds_per_label": round(median, 3), "labels_per_minute": round(60.0 / median, 2) if median > 0 else None}


def judge_agreement(
    items: Sequence[AnnotationItem],
    majorities: pd.DataFrame,
    judgments: pd.DataFrame,
    *,
    bootstrap: Bootstrap | None = None,
) -> tuple[dict[str, dict[str, dict[str, Any]]], int]:
    """Per judge: agreement and Cohen's kappa with the human majority; and the unmatched rows."""
    outcomes, unmatched, _ = pair_outcomes(items, judgments)
    human = dict(zip(majorities["item_id"], majorities["outcome"], strict=True))
    instance = {item.item_id: item.instance_id for item in items}
    unparsed = _unparsed_by_judge(items, judgments)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    judges = sorted(set(map(str, judgments["judge"])))
    for judge in judges:
        codes: list[int] = []
        truth: list[int] = []
        clusters: list[str] = []
        no_majority = 0
        for item_id, per_judge in outcomes.items():
            for outcome in per_judge.get(judge, []):
                if human[item_id] not in _CODE:
                    no_majority += 1
                    continue
                codes.append(_CODE[outcome])
                truth.append(_CODE[human[item_id]])
                clusters.append(instance[item_id])
        excluded = {"no verdict": unparsed.get(judge, 0), "no human majority": no_majority}
        excluded = {k: v for k, v in excluded.items() if v}
        units = np.asarray(clusters, dtype=object)
        estimates = {
            "agreement": pair_agreement(codes, truth, units, bootstrap=bootstrap),
            "cohen_kappa": cohen_kappa(codes, truth, len(WINNERS), units, bootstrap=bootstrap),
        }
        entry = {
            name: replace(estimate, n_excluded=sum(excluded.values()), excluded=excluded).as_dict()
            for name, estimate in estimates.items()
        }
        results[judge] = entry
    return results, unmatched


def _unparsed_by_judge(items: Sequence[AnnotationItem], judgments: pd.DataFrame) -> dict[str, int]:
    keys = {(i.instance_id, i.model_a, i.model_b) for i in items}
    keys |= {(i.instance_id, i.model_b, i.model_a) for i in items}
    counts: dict[str, int] = {}
    for inst, judge, a, b, verdict in zip(
        judgments["instance_id"],
        judgments["judge"],
        judgments["model_a"],
        judgments["model_b"],
        judgments["verdict"],
        strict=True,
    ):
        if (inst, a, b) in keys and (verdict is None or verdict != verdict):
            counts[judge] = counts.get(judge, 0) + 1
    return counts


def agreement_report(
    collection: str,
    items: Sequence[AnnotationItem],
    labels: Sequence[Label],
    *,
    judgments: pd.DataFrame | None = None,
    min_votes: int = 1,
    bootstrap: Bootstrap | None = None,
) -> dict[str, Any]:
    """Everything `nepotism annotate agreement` prints, as plain data (NaN as None)."""
    matrix, annotators = label_matrix(items, labels)
    clusters = np.asarray([item.instance_id for item in items], dtype=object)
    counts = category_counts(matrix, len(WINNERS))
    report: dict[str, Any] = {
        "collection": collection,
        "n_items": len(items),
        "categories": list(WINNERS),
        "annotators": {},
        "overall": {
            "percent_agreement": percent_agreement(counts, clusters, bootstrap=bootstrap).as_dict(),
            "fleiss_kappa": fleiss_kappa(counts, clusters, bootstrap=bootstrap).as_dict(),
            "krippendorff_alpha": krippendorff_alpha(counts, clusters, bootstrap=bootstrap).as_dict(),
        },
        "pairs": [],
    }
    for j, annotator in enumerate(annotators):
        column = matrix[:, j]
        report["annotators"][annotator] = {
            "labelled": int((column >= 0).sum()),
            "skipped": sum(1 for lab in _latest(labels, annotator) if lab.winner is None),
        } | _timing(labels, annotator)
    for (j, first), (k, second) in itertools.combinations(enumerate(annotators), 2):
        x, y = matrix[:, j], matrix[:, k]
        report["pairs"].append(
            {
                "annotators": [first, second],
                "agreement": pair_agreement(x, y, clusters, bootstrap=bootstrap).as_dict(),
                "cohen_kappa": cohen_kappa(x, y, len(WINNERS), clusters, bootstrap=bootstrap).as_dict(),
            }
        )
    majorities = majority_frame(items, labels, min_votes=min_votes)
    report["majority"] = {
        o: int((majorities["outcome"] == o).sum()) for o in ("model_a", "model_b", "tie", "unresolved", "unlabelled")
    }
    if judgments is not None:
        judges, unmatched = judge_agreement(items, majorities, judgments, bootstrap=bootstrap)
        report["judges"] = judges
        report["judgment_rows_unmatched"] = unmatched
    return report


def _latest(labels: Sequence[Label], annotator: str) -> list[Label]:
    latest: dict[str, Label] = {}
    for label in labels:
        if label.annotator == annotator:
            latest[label.item_id] = label
    return list(latest.values())
