"""The report's self-recognition section: recognition accuracy and its association with preference,
per judge and condition, before and after each perturbation (paper 003 Tables 2/5, Figs. 7/11/14).

`recognition_table` lays out the ``recognition-accuracy`` and ``recognition-preference-association``
records of ``nepotism metrics`` one row per (judge, condition). A condition ``<name>:<judge>`` is
what ``nepotism mitigate`` stores a perturbation's judgments under: its row is "perturbed: <name>" and
follows the judge's unperturbed ("before") rows, so each perturbation reads against the baseline.
`evaluatee_rows` (also under ``recognition_table(...)["evaluatees"]``) is the per-evaluatee layout
of paper 003 Tables 4 and 5: recognition accuracy on all and on the harmful pairs, and the judge's
accuracy on the harmful pairs, one row per (judge, condition, evaluatee).
What this module leaves out: computing anything (the metrics do) and paired changes (``nepotism
mitigate`` gives those for preference).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from nepotism.report._format import format_value

__all__ = [
    "CAPTION",
    "EVALUATEE_CAPTION",
    "EVALUATEE_COLUMNS",
    "HARMFUL",
    "RECOGNITION_METRICS",
    "evaluatee_rows",
    "recognition_markdown",
    "recognition_table",
    "stage",
]

RECOGNITION_METRICS = ("recognition-accuracy", "recognition-preference-association")
HARMFUL = "harmful (own wrong, other right)"
_SUBSETS = {"all own-vs-other comparisons": "all", HARMFUL: "harmful"}
_ORDER = (
    "accuracy pairwise",
    "accuracy pairwise harmful",
    "accuracy pointwise",
    "accuracy pointwise own",
    "accuracy pointwise other",
    "r all",
    "r harmful",
)
#: Columns of the per-evaluatee table (paper 003 Tables 4 and 5).
EVALUATEE_COLUMNS = ("recognition accuracy", "recognition accuracy (harmful)", "judge accuracy (harmful)")


def stage(judge: str, condition: str) -> tuple[str, str | None]:
    """``("before", None)`` for an unperturbed condition, ``("after", name)`` for ``<name>:<judge>``."""
    suffix = f":{judge}"
    if condition.endswith(suffix) and len(condition) > len(suffix):
        return "after", condition[: -len(suffix)]
    return "before", None


def _column(record: dict[str, Any]) -> str | None:
    variant: dict[str, Any] = record.get("variant") or {}
    if "slice" in variant:
        return None
    if record.get("metric") == "recognition-accuracy":
        if "evaluatee" in variant:  # the per-evaluatee table's
            return None
        mode, answers = variant.get("mode", "pairwise"), variant.get("answers", "all")
        return (
            f"accuracy {mode}"
            + ("" if answers == "all" else f" {answers}")
            + (" harmful" if variant.get("subset") == HARMFUL else "")
        )
    subset = _SUBSETS.get(variant.get("subset", ""))
    if subset is None:
        return None
    kind = variant.get("recognition")
    return f"r {subset}" + (" (pointwise)" if kind == "recognition" else "")


def _cell(record: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"text": format_value(record), "n": record.get("n"), "defined": record.get("value") is not None}
    if record.get("metric") == "recognition-preference-association" and record.get("chi2_p_value") is not None:
        out["text"] += f"; χ² p = {record['chi2_p_value']:.3g}"
    return out


def recognition_table(records: list[dict[str, Any]]) -> dict[str, Any]:
    """``{columns: [...], rows: [{judge, condition, stage, cells}]}``; no rows without recognition records.

    ``stage`` is "texts as generated" (before) or "perturbed: <name>" (after); ``condition`` is the
    judging condition or the perturbation's name.
    Cells are keyed by column: ``accuracy pairwise`` / ``accuracy pointwise`` (and its ``own`` /
    ``other`` answers) and ``r all`` / ``r harmful`` (the association on all own-vs-other
    comparisons and on the harmful ones; ``(pointwise)`` when the answers were "did you write this?").
    A column a row has no record for is "not measured".
    """
    groups: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for r in records:
        if r.get("metric") not in RECOGNITION_METRICS or r.get("judge") is None:
            continue
        column = _column(r)
        if column is None:
            continue
        groups.setdefault((str(r["judge"]), str(r.get("condition") or "default")), {})[column] = r
    if not groups:
        return {"columns": [], "rows": [], "evaluatees": []}
    present = {c for cells in groups.values() for c in cells}
    columns = sorted(present, key=lambda c: (_ORDER.index(c.split(" (")[0]) if c.split(" (")[0] in _ORDER else len(_ORDER), c))

    def key(item: tuple[tuple[str, str], dict[str, dict[str, Any]]]) -> tuple[str, bool, str]:
        (judge, condition), _ = item
        when, name = stage(judge, condition)
        return judge, when != "before", name or condition

    rows = []
    for (judge, condition), cells in sorted(groups.items(), key=key):
        when, name = stage(judge, condition)
        rows.append(
            {
                "judge": judge,
                "condition": name or condition,
                "stage": "texts as generated" if when == "before" else f"perturbed: {name}",
                "cells": {
                    c: _cell(cells[c]) if c in cells else {"text": "not measured", "n": None, "defined": False} for c in columns
                },
            }
        )
    return {"columns": columns, "rows": rows, "evaluatees": evaluatee_rows(records)}


def _evaluatee_column(record: dict[str, Any]) -> str | None:
    variant = record.get("variant") or {}
    if "evaluatee" not in variant:
        return None
    harmful = variant.get("subset") == HARMFUL or variant.get("examples") == HARMFUL
    if record.get("metric") == "recognition-accuracy" and variant.get("mode") == "pairwise":
        return EVALUATEE_COLUMNS[1] if harmful else EVALUATEE_COLUMNS[0]
    if record.get("metric") == "judge-accuracy" and harmful and variant.get("opponents") == "any":
        return EVALUATEE_COLUMNS[2]  # 003 counts every other model as an evaluatee
    return None


def evaluatee_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Paper 003 Tables 4 and 5: one row per (judge, condition, evaluatee) — which-did-you-write
    accuracy on all pairs and on the harmful ones, and the judge's accuracy on the harmful ones —
    before and after each perturbation (stage as in `recognition_table`); empty without per-evaluatee
    recognition records."""
    groups: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
    for r in records:
        column = _evaluatee_column(r) if r.get("judge") is not None else None
        if column is not None:
            group = (str(r["judge"]), str(r.get("condition") or "default"), str(r["variant"]["evaluatee"]))
            groups.setdefault(group, {})[column] = r
    if not any(EVALUATEE_COLUMNS[0] in cells or EVALUATEE_COLUMNS[1] in cells for cells in groups.values()):
        return []

    def key(item: tuple[tuple[str, str, str], dict[str, dict[str, Any]]]) -> tuple[str, str, bool, str]:
        (judge, condition, evaluatee), _ = item
        when, name = stage(judge, condition)
        return judge, evaluatee, when != "before", name or condition

    rows = []
    for (judge, condition, evaluatee), cells in sorted(groups.items(), key=key):
        when, name = stage(judge, condition)
        rows.append(
            {
                "judge": judge,
                "evaluatee": evaluatee,
                "condition": name or condition,
                "stage": "texts as generated" if when == "before" else f"perturbed: {name}",
                "cells": {
                    c: _cell(cells[c]) if c in cells else {"text": "not measured", "n": None, "defined": False}
                    for c in EVALUATEE_COLUMNS
                },
            }
        )
    return rows


CAPTION = (
    'Recognition accuracy (share of "which did you write?" / "did you write this?" answers that are '
    "right) and r, the correlation between recognising the own answer and preferring it, on all "
    "own-vs-other comparisons and on the harmful ones (own answer wrong, the other right). Rows "
    '"perturbed: <name>" ask the same questions on the perturbed texts: obfuscation that works through '
    "recognition lowers both (paper 003)."
)


EVALUATEE_CAPTION = (
    'Per evaluatee (paper 003 Tables 4 and 5): the judge\'s "which did you write?" accuracy on its '
    "pairs with that evaluatee, on all of them and on the harmful ones (its own answer wrong, the "
    "evaluatee's right), and how often its verdict picks the right answer on those harmful pairs."
)


def _md_cells(row: dict[str, Any], columns: Sequence[str]) -> list[str]:
    return [
        c["text"] + (f" (n={c['n']})" if c["n"] is not None and c["defined"] else "") for c in (row["cells"][k] for k in columns)
    ]


def recognition_markdown(table: dict[str, Any], md_table: Callable[[list[str], list[list[Any]]], list[str]]) -> list[str]:
    """The section as Markdown lines (``md_table(columns, rows)`` is the report's table writer)."""
    if not table["rows"]:
        return []
    columns = table["columns"]
    cells = [[r["judge"], r["condition"], r["stage"]] + _md_cells(r, columns) for r in table["rows"]]
    out = ["## Self-recognition (paper 003)", "", CAPTION, ""] + md_table(["judge", "condition", "stage"] + columns, cells) + [""]
    if table.get("evaluatees"):
        out += ["### Per evaluatee (paper 003 Tables 4–5)", "", EVALUATEE_CAPTION, ""]
        out += md_table(
            ["judge", "evaluatee", "condition", "stage", *EVALUATEE_COLUMNS],
            [
                [r["judge"], r["evaluatee"], r["condition"], r["stage"]] + _md_cells(r, EVALUATEE_COLUMNS)
                for r in table["evaluatees"]
            ],
        ) + [""]
    return out
