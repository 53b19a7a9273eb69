"""Import HealthBench-style rubric files: prompts, rubric items with points, per-judge verdicts.

HealthBench (openai/simple-evals ``healthbench_eval.py``) grades a model's completion of a
conversation against the conversation's rubric items — each a ``criterion`` text with ``points``
(negative points: a criterion the completion is penalised for meeting) — by asking a grader model
whether each criterion is met (``criteria_met``). Paper 002 §4 runs several judges as graders and
takes their majority as the reference. One JSON object a line, one graded completion::

    {"prompt_id": "p1", "prompt": [{"role": "user", "content": "..."}],   # or a string
     "model": "gpt-4o",                                                   # who wrote the completion
     "rubrics": [{"criterion": "Advises calling emergency services", "points": 8, "tags": ["axis:..."]}, ...],
     "grades": {"judge-a": [true, false, ...], "judge-b": [true, null, ...]}}

``grades`` maps each judge to one verdict per rubric item, in the order of ``rubrics`` (``null``:
no verdict, counted as unparsed); HealthBench's own result rows, whose ``rubric_items`` carry
``criteria_met`` and whose grader is named by ``judge``, are read too. A prompt's rubric must be
the same on every line that repeats it. Optional: ``example_tags`` (HealthBench's tags of the
conversation, e.g. ``"theme:emergency_referrals"``) and ``labels``, people's labels of the same
items in the same shape as ``grades`` (annotator → one true/false/null per rubric item: the
physician labels HealthBench's meta-evaluation compares graders with, paper 002 App. C; ``null``:
that annotator did not label the item).

Tables: ``rubric`` (``instance_id`` = prompt_id, ``judge``, ``model``, ``rubric_id`` = ``r<k>`` by
position, ``met``, ``category`` = the item's first ``axis:`` tag, ``theme`` = the conversation's
first ``theme:`` tag: the slices of paper 002 Fig. 6, ``nepotism metrics --slice category`` /
``--slice theme``), ``rubric-items`` (``text`` = criterion, ``points``, ``category``) and, when a
line has ``labels``, ``rubric-labels`` (``annotator``, ``met``). Left out: the completions' texts
and the other example-level tags.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from nepotism.importers._common import Format, Imported, fail, read_jsonl, require

__all__ = ["FORMATS", "import_healthbench"]


def _items(record: dict[str, Any], path: Path, line: int) -> list[tuple[str, float, str | None]]:
    rubrics = record.get("rubrics", record.get("rubric_items"))
    if not isinstance(rubrics, list) or not rubrics:
        raise fail("expected a non-empty list of rubric items", path, line, "rubrics")
    out = []
    for k, item in enumerate(rubrics):
        if not isinstance(item, dict) or not isinstance(item.get("criterion"), str) or not item["criterion"].strip():
            raise fail("each rubric item needs a criterion text", path, line, f"rubrics[{k}].criterion")
        points = item.get("points")
        if isinstance(points, bool) or not isinstance(points, int | float):
            raise fail("points must be a number", path, line, f"rubrics[{k}].points")
        tags = item.get("tags") or []
        axis = next((t.split(":", 1)[1] for t in tags if isinstance(t, str) and t.startswith("axis:")), None)
        out.append((item["criterion"].strip(), float(points), axis))
    return out


def _grades(record: dict[str, Any], n: int, path: Path, line: int) -> dict[str, list[Any]]:
    if "grades" in record:
        grades = record["grades"]
        if not isinstance(grades, dict) or not grades:
            raise fail("expected an object judge -> list of verdicts", path, line, "grades")
    else:  # HealthBench's result rows: criteria_met inside each rubric item, the grader named by "judge"
        judge = require(record, "judge", path, line)
        grades = {judge: [item.get("criteria_met") for item in record.get("rubric_items", [])]}
    _check_per_item(grades, n, path, line, "grades", "verdict")
    return grades


def _check_per_item(lists: dict[str, Any], n: int, path: Path, line: int, field: str, what: str) -> None:
    """Each entry of ``lists`` (judge or annotator -> list) holds ``n`` values, one per rubric item,
    each true, false or null; else an `InputError` naming ``field.NAME[k]``."""
    for name, values in lists.items():
        if not isinstance(values, list) or len(values) != n:
            raise fail(f"expected {n} {what}s, one per rubric item", path, line, f"{field}.{name}")
        for k, v in enumerate(values):
            if v is not None and not isinstance(v, bool):
                raise fail(f"a {what} is true, false or null", path, line, f"{field}.{name}[{k}]")


def _theme(record: dict[str, Any], path: Path, line: int) -> str | None:
    tags = record.get("example_tags", [])
    if not isinstance(tags, list):
        raise fail("expected a list of tags", path, line, "example_tags")
    return next((t.split(":", 1)[1] for t in tags if isinstance(t, str) and t.startswith("theme:")), None)


def _labels(record: dict[str, Any], n: int, path: Path, line: int) -> dict[str, list[Any]]:
    labels = record.get("labels", {})
    if not isinstance(labels, dict):
        raise fail("expected an object annotator -> list of labels", path, line, "labels")
    _check_per_item(labels, n, path, line, "labels", "label")
    return labels


def import_healthbench(path: str | Path, **_: Any) -> Imported:
    """Import one HealthBench-style JSONL file (see the module docstring)."""
    path = Path(path)
    rows: list[dict[str, Any]] = []
    labelled: list[dict[str, Any]] = []
    items: dict[tuple[str, str], dict[str, Any]] = {}
    seen_rubrics: dict[str, tuple[list[tuple[str, float, str | None]], int]] = {}  # prompt -> (rubric, first line)
    seen_keys: dict[tuple[str, str, str], int] = {}  # (prompt, model, judge) -> line
    counts = {"completions": 0, "verdicts": 0, "unparsed": 0}
    for line, record in read_jsonl(path):
        pid = str(require(record, "prompt_id", path, line))
        model = str(require(record, "model", path, line))
        rubric = _items(record, path, line)
        if pid in seen_rubrics and seen_rubrics[pid][0] != rubric:
            raise fail(f"the rubric of prompt {pid!r} differs from line {seen_rubrics[pid][1]}", path, line, "rubrics")
        seen_rubrics.setdefault(pid, (rubric, line))
        grades = _grades(record, len(rubric), path, line)
        theme = _theme(record, path, line)
        for annotator, marks in _labels(record, len(rubric), path, line).items():
            labelled += [
                {
                    "instance_id": pid,
                    "model": model,
                    "rubric_id": f"r{k + 1}",
                    "met": met,
                    "annotator": str(annotator),
                    "category": rubric[k][2],
                }
                for k, met in enumerate(marks)
                if met is not None
            ]
        counts["completions"] += 1
        for judge, verdicts in grades.items():
            key = (pid, model, str(judge))
            if key in seen_keys:
                raise fail(
                    f"judge {judge!r} already graded this completion on line {seen_keys[key]}", path, line, f"grades.{judge}"
                )
            seen_keys[key] = line
            for k, met in enumerate(verdicts):
                counts["verdicts"] += 1
                counts["unparsed"] += met is None
                rows.append(
                    {
                        "instance_id": pid,
                        "judge": str(judge),
                        "model": model,
                        "rubric_id": f"r{k + 1}",
                        "met": met,
                        "status": "parsed" if met is not None else "unparsed",
                        "reason": None if met is not None else "no_verdict",
                        "category": rubric[k][2],
                        "theme": theme,
                    }
                )
        for k, (text, points, axis) in enumerate(rubric):
            items[(pid, f"r{k + 1}")] = {
                "instance_id": pid,
                "rubric_id": f"r{k + 1}",
                "text": text,
                "points": points,
                "category": axis,
            }
    if not rows:
        raise fail("no graded completion", path, None, None)
    tables = {"rubric": pd.DataFrame(rows), "rubric-items": pd.DataFrame(list(items.values()))}
    notes = [
        "rubric ids are r1, r2, ... by position in each prompt's rubric; negative points mark criteria a "
        "completion is penalised for meeting"
    ]
    if labelled:
        tables["rubric-labels"] = pd.DataFrame(labelled)
        counts["labels"] = len(labelled)
        counts["annotators"] = len({r["annotator"] for r in labelled})
    return Imported(tables=tables, main="rubric", counts=counts, notes=notes, source=str(path))


FORMATS = (
    Format(
        name="healthbench",
        summary="HealthBench-style rubric grades: rubric items with points, one verdict per judge and item",
        read=import_healthbench,
        tables=("rubric", "rubric-items", "rubric-labels"),
        upstream="openai/simple-evals healthbench_eval.py (rubrics, rubric_items[].criteria_met)",
    ),
)
