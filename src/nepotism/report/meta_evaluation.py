"""The report's judge meta-evaluation table (paper 002 App. C): each judge's rubric verdicts against the reference.

`meta_evaluation_table` lays out the ``rubric-precision``, ``rubric-recall`` and ``rubric-f1``
records of ``nepotism metrics`` (`nepotism.grading.rubric_reference.meta_evaluation`), and the
``rubric-balanced-f1`` records against people's labels (`nepotism.analyses.rubric_labels`, 002
App. C's physician check; reference ``human labels``): one row per
judge, condition (a rubric setup follows it), reference (``jury`` when the reference says who voted,
else ``rubric-ref``) and polarity (all rubric items, the positive and the negative ones), with
whether the judge sat on the jury — a juror is scored against a reference it voted in. Every value
is written by `_format.format_value` (undefined → "n/a (why…)"). Left out: computing anything.
"""

from __future__ import annotations

from typing import Any

from nepotism.report._format import format_value

__all__ = ["META_EVALUATION", "meta_evaluation_table"]

#: The metric ids of the table, in column order.
META_EVALUATION = ("rubric-precision", "rubric-recall", "rubric-f1", "rubric-balanced-f1")
_POLARITY = {"all": 0, "positive": 1, "negative": 2}


def meta_evaluation_table(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows ``{judge, condition, reference, polarity, juror, cells: {precision, recall, F1, balanced F1}}``; empty
    without such records. Balanced F1 is measured against people's labels (reference ``human labels``)."""
    rows: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for r in records:
        variant = r.get("variant") or {}
        if r.get("metric") not in META_EVALUATION or "slice" in variant:
            continue
        key = (
            str(r.get("judge")),
            str(r.get("condition")),
            str(variant.get("reference", "")),
            str(variant.get("polarity", "all")),
        )
        row = rows.setdefault(
            key,
            {
                "judge": key[0],
                "condition": key[1],
                "reference": key[2],
                "polarity": key[3],
                "juror": "yes" if r.get("in_jury") else "no",
                "cells": {},
            },
        )
        row["cells"][r["metric"].removeprefix("rubric-")] = {
            "text": format_value(r),
            "n": r.get("n"),
            "defined": r.get("value") is not None,
        }
    missing = {"text": "not measured", "n": None, "defined": False}
    out = []
    for key in sorted(rows, key=lambda k: (k[0], k[1], k[2], _POLARITY.get(k[3], 3), k[3])):
        row = rows[key]
        row["cells"] = {name: row["cells"].get(name, missing) for name in ("precision", "recall", "f1", "balanced-f1")}
        out.append(row)
    return out
