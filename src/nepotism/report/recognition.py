"""The report's self-recognition section: recognition accuracy and its association with preference,
per judge and condition, before and after each perturbation (paper 003 Tables 2/5, Figs. 7/11/14).

`recognition_table` lays out the ``recognition-accuracy`` and ``recognition-preference-association``
records of ``nepotism metrics`` one row per (judge, condition). A condition ``<name>:<judge>`` is
what ``nepotism mitigate`` stores a perturbation's judgments under: its row is "perturbed: <name>" and
follows the judge's unperturbed ("before") rows, so each perturbation reads against the baseline.
What this module leaves out: computing anything (the metrics do) and paired changes (``nepotism
mitigate`` gives those for preference).
"""

from __future__ import annotations

from nepotism.report._format import format_value

__all__ = ["RECOGNITION_METRICS", "recognition_markdown", "recognition_table", "stage"]

RECOGNITION_METRICS = ("recognition-accuracy", "recognition-preference-association")
_SUBSETS = {"all own-vs-other comparisons": "all", "harmful (own wrong, other right)": "harmful"}
_ORDER = ("accuracy pairwise", "accuracy pointwise", "accuracy pointwise own", "accuracy pointwise other",
          "r all", "r harmful")


def stage(judge: str, condition: str) -> tuple[str, str | None]:
    """``("before", None)`` for an unperturbed condition, ``("after", name)`` for ``<name>:<judge>``."""
    suffix = f":{judge}"
    if condition.endswith(suffix) and len(condition) > len(suffix):
        return "after", condition[: -len(suffix)]
    return "before", None


def _column(record: dict) -> str | None:
    variant = record.get("variant") or {}
    if "slice" in variant:
        return None
    if record.get("metric") == "recognition-accuracy":
        mode, answers = variant.get("mode", "pairwise"), variant.get("answers", "all")
        return f"accuracy {mode}" + ("" if answers == "all" else f" {answers}")
    subset = _SUBSETS.get(variant.get("subset"))
    if subset is None:
        return None
    kind = variant.get("recognition")
    return f"r {subset}" + (" (pointwise)" if kind == "recognition" else "")


def _cell(record: dict) -> dict:
    out = {"text": format_value(record), "n": record.get("n"), "defined": record.get("value") is not None}
    if record.get("metric") == "recognition-preference-association" and record.get("chi2_p_value") is not None:
        out["text"] += f"; χ² p = {record['chi2_p_value']:.3g}"
    return out


def recognition_table(records: list[dict]) -> dict:
    """``{columns: [...], rows: [{judge, condition, stage, cells}]}``; no rows without recognition records.

    ``stage`` is "texts as generated" (before) or "perturbed: <name>" (after); ``condition`` is the
    judging condition or the perturbation's name.
    Cells are keyed by column: ``accuracy pairwise`` / ``accuracy pointwise`` (and its ``own`` /
    ``other`` answers) and ``r all`` / ``r harmful`` (the association on all own-vs-other
    comparisons and on the harmful ones; ``(pointwise)`` when the answers were "did you write this?").
    A column a row has no record for is "not measured".
    """
    groups: dict[tuple[str, str], dict[str, dict]] = {}
    for r in records:
        if r.get("metric") not in RECOGNITION_METRICS or r.get("judge") is None:
            continue
        column = _column(r)
        if column is None:
            continue
        groups.setdefault((str(r["judge"]), str(r.get("condition") or "default")), {})[column] = r
    if not groups:
        return {"columns": [], "rows": []}
    present = {c for cells in groups.values() for c in cells}
    columns = sorted(present, key=lambda c: (_ORDER.index(c.split(" (")[0]) if c.split(" (")[0] in _ORDER
                                             else len(_ORDER), c))

    def key(item):
        (judge, condition), _ = item
        when, name = stage(judge, condition)
        return judge, when != "before", name or condition

    rows = []
    for (judge, condition), cells in sorted(groups.items(), key=key):
        when, name = stage(judge, condition)
        rows.append({"judge": judge, "condition": name or condition,
                     "stage": "texts as generated" if when == "before" else f"perturbed: {name}",
                     "cells": {c: _cell(cells[c]) if c in cells else {"text": "not measured", "n": None,
                                                                      "defined": False} for c in columns}})
    return {"columns": columns, "rows": rows}


CAPTION = ("Recognition accuracy (share of \"which did you write?\" / \"did you write this?\" answers that are "
           "right) and r, the correlation between recognising the own answer and preferring it, on all "
           "own-vs-other comparisons and on the harmful ones (own answer wrong, the other right). Rows "
           "\"perturbed: <name>\" ask the same questions on the perturbed texts: obfuscation that works through "
           "recognition lowers both (paper 003).")


def recognition_markdown(table: dict, md_table) -> list[str]:
    """The section as Markdown lines (``md_table(columns, rows)`` is the report's table writer)."""
    if not table["rows"]:
        return []
    columns = table["columns"]
    cells = [[r["judge"], r["condition"], r["stage"]]
             + [c["text"] + (f" (n={c['n']})" if c["n"] is not None and c["defined"] else "")
                for c in (r["cells"][k] for k in columns)] for r in table["rows"]]
    return ["## Self-recognition (paper 003)", "", CAPTION, ""] + md_table(["judge", "condition", "stage"] + columns,
                                                                          cells) + [""]
