"""Each judge's rubric verdicts against people's labels of the same items (paper 002 App. C, Table 3).

Paper 002 checks its HealthBench jurors on HealthBench's meta-evaluation set, where physicians
labelled whether a response meets a rubric item, with the balanced F1 of
`nepotism.metrics.meta_eval.balanced_f1`. `label_records` gives ``rubric-balanced-f1`` per judge ×
condition (× rubric setup) × polarity from a ``rubric`` table and a ``rubric-labels`` table
(instance_id, model, rubric_id, met, annotator): a judge's verdict on an item (its majority over
replicates, `nepotism.grading.rubric_reference`'s rule) is paired with every annotator's label of
that item, so an item three people labelled weighs three times, as in HealthBench. An item the
judge has no verdict on counts as excluded per label; an item nobody labelled is not a row.
Polarity (positive / negative points) needs the ``rubric-items`` table, as for the jury's
meta-evaluation.

What this module leaves out: agreement among the annotators themselves (`nepotism annotate
agreement` for pairwise labels) and a reference voted from the labels.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from nepotism.grading.rubric_reference import verdict_slices
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.metrics.meta_eval import balanced_f1

__all__ = ["METRIC", "label_records"]

METRIC = "rubric-balanced-f1"


def label_records(
    judgments: pd.DataFrame, labels: pd.DataFrame, *, items: pd.DataFrame | None = None, bootstrap: Bootstrap | None = None
) -> list[dict[str, Any]]:
    """``rubric-balanced-f1`` records per judge × condition (× setup) × polarity against ``labels``."""
    annotators = int(labels["annotator"].nunique())
    records: list[dict[str, Any]] = []
    for judge, condition, setup, name, g in verdict_slices(judgments, labels, items=items, how="inner"):
        est = balanced_f1(g["met"].to_numpy(float), g["truth"].to_numpy(float), g["instance_id"].to_numpy(), bootstrap=bootstrap)
        record = {
            "metric": METRIC,
            "judge": judge,
            "generator": None,
            "condition": condition,
            "pair": None,
            "scope": None,
            "variant": {"polarity": name, "reference": "human labels"} | setup,
            "annotators": annotators,
        }
        record.update(est.as_dict())
        records.append(record)
    return records
