"""Grade a whole file of responses into a reference table (the engine of ``nepotism grade``).

The responses file (CSV, JSONL or Parquet; ``.gz`` for CSV/JSONL) has ``instance_id``, ``model``,
``text`` and the task's truth columns:

========  ====================================================================================
task      truth columns
========  ====================================================================================
math      ``answer``
mc        ``answer`` (the gold option letter)
code      ``tests`` (assert lines, a JSON list of them, or a HumanEval ``check``), optional
          ``entry_point`` and ``prompt`` (for bare HumanEval completions)
ifeval    ``instruction_id_list`` and ``kwargs`` (JSON lists in CSV), or an instances file with
          ``instance_id`` (or ``key``), ``instruction_id_list``, ``kwargs``
========  ====================================================================================

math / mc / code give a ``correctness-ref`` frame (``instance_id, model, correct`` plus the extracted
answer and the method). A ``correctness-ref`` row cannot be empty, so ungradable responses are left
out of it and returned apart (``BatchResult.ungradable``), counted. ifeval gives a ``rubric-ref``
frame (one row per decided instruction; undecidable ones are returned apart, counted). Bad input raises `InputError`
with the file, line and field. Left out: parallel execution.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from nepotism.errors import InputError
from nepotism.tables import read_rows

__all__ = ["TASKS", "BatchResult", "GradeRow", "grade_file", "grade_rows"]

TASKS = ("math", "mc", "code", "ifeval")
_TRUTH = {"math": ("answer",), "mc": ("answer",), "code": ("tests",), "ifeval": ()}


class GradeRow(NamedTuple):
    """One response to grade: where it came from, who wrote what, and the task's truth.

    ``truth`` holds ``answer`` (math, mc); ``tests``, ``entry_point``, ``prompt`` (code); or
    ``ids`` and ``kwargs`` (ifeval: the instruction ids and their arguments).
    """

    line: int | None
    instance_id: str
    model: str
    text: str
    truth: dict[str, Any]


@dataclass(frozen=True)
class BatchResult:
    """The reference frame, its table kind, counts, and the rows that could not be graded."""

    kind: str
    frame: pd.DataFrame
    counts: dict[str, int]
    ungradable: list[dict[str, Any]] = field(default_factory=list)


def _value(row: Mapping[str, Any], name: str, path: str, line: int, *, required: bool = True) -> Any:
    value = row.get(name)
    if value is None or (isinstance(value, float) and value != value) or (isinstance(value, str) and not value.strip()):
        if required:
            raise InputError("missing or empty value", path=path, line=line, field=name)
        return None
    return value


def _json_list(value: Any, path: str, line: int, name: str) -> list[Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise InputError("not a JSON list", path=path, line=line, field=name) from None
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise InputError("not a list", path=path, line=line, field=name)
    return list(value)


def _tests(value: Any, path: str, line: int) -> str | list[str]:
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return value
        return [str(t) for t in parsed] if isinstance(parsed, list) else value
    if hasattr(value, "tolist"):
        value = value.tolist()
    return [str(t) for t in value] if isinstance(value, (list, tuple)) else str(value)


def _instances(path: str) -> dict[str, tuple[list[Any], list[Any]]]:
    table: dict[str, tuple[list[Any], list[Any]]] = {}
    for line, row in read_rows(path):
        key = row.get("instance_id", row.get("key"))
        if key is None or str(key).strip() == "":
            raise InputError("missing instance id", path=path, line=line, field="instance_id")
        ids = _json_list(_value(row, "instruction_id_list", path, line), path, line, "instruction_id_list")
        kwargs = _json_list(_value(row, "kwargs", path, line), path, line, "kwargs")
        table[str(key).strip()] = (ids, kwargs)
    return table


def grade_file(
    path: str | Path,
    task: str,
    *,
    instances: str | Path | None = None,
    runner: Callable[..., Any] | None = None,
    timeout: float = 10.0,
) -> BatchResult:
    """Grade every response of ``path`` for ``task`` (one of `TASKS`)."""
    if task not in TASKS:
        raise InputError(f"unknown task '{task}'; tasks are {', '.join(TASKS)}", field="--task")
    path = str(path)
    rows = read_rows(path)
    if not rows:
        raise InputError("the file holds no responses", path=path)
    known = _instances(str(instances)) if instances is not None else None
    parsed = []
    for line, row in rows:
        base = {name: str(_value(row, name, path, line)).strip() for name in ("instance_id", "model")}
        if "text" not in row:
            raise InputError("missing column", path=path, line=line, field="text")
        text = _value(row, "text", path, line, required=False) or ""
        truth = {name: _value(row, name, path, line) for name in _TRUTH[task]}
        if task == "ifeval":
            if known is not None:
                if base["instance_id"] not in known:
                    raise InputError("instance_id not in the --instances file", path=path, line=line, field="instance_id")
                truth["ids"], truth["kwargs"] = known[base["instance_id"]]
            else:
                truth["ids"] = _json_list(_value(row, "instruction_id_list", path, line), path, line, "instruction_id_list")
                truth["kwargs"] = _json_list(_value(row, "kwargs", path, line), path, line, "kwargs")
        if task == "code":
            truth["tests"] = _tests(truth["tests"], path, line)
            truth["entry_point"] = _value(row, "entry_point", path, line, required=False)
            truth["prompt"] = _value(row, "prompt", path, line, required=False)
        parsed.append(GradeRow(line, base["instance_id"], base["model"], str(text), truth))
    return grade_rows(parsed, task, path=path, runner=runner, timeout=timeout)


def grade_rows(
    rows: list[GradeRow], task: str, *, path: str | None = None, runner: Callable[..., Any] | None = None, timeout: float = 10.0
) -> BatchResult:
    """Grade already-read ``rows`` for ``task``; a bad truth value raises `InputError` at ``path``."""
    if task not in TASKS:
        raise InputError(f"unknown task '{task}'; tasks are {', '.join(TASKS)}", field="--task")
    if task == "ifeval":
        return _grade_ifeval(rows, path)
    return _grade_answers(rows, task, path, runner, timeout)


def _grade_answers(
    parsed: list[GradeRow], task: str, path: str | None, runner: Callable[..., Any] | None, timeout: float
) -> BatchResult:
    from nepotism.grading.code import grade_code
    from nepotism.grading.math import grade_math
    from nepotism.grading.multiple_choice import grade_multiple_choice

    out, ungradable = [], []
    counts = {"correct": 0, "incorrect": 0, "ungradable": 0}
    for line, instance_id, model, text, truth in parsed:
        base = {"instance_id": instance_id, "model": model}
        try:
            if task == "math":
                result = grade_math(text, str(truth["answer"]))
            elif task == "mc":
                result = grade_multiple_choice(text, str(truth["answer"]))
            else:
                result = grade_code(
                    text, truth["tests"], entry_point=truth["entry_point"], prompt=truth["prompt"], runner=runner, timeout=timeout
                )
        except ValueError as err:
            field_name = "tests" if task == "code" else "answer"
            raise InputError(str(err), path=path, line=line, field=field_name) from None
        if result.correct is None:
            counts["ungradable"] += 1
            ungradable.append({**base, "line": line, "method": result.method, "detail": result.detail})
            continue
        counts["correct" if result.correct else "incorrect"] += 1
        row = {**base, "correct": result.correct, "method": result.method, "decided_by": result.decided_by}
        if task != "code":
            row["extracted"] = result.extracted
        else:
            row["detail"] = result.detail
        out.append(row)
    columns = ["instance_id", "model", "correct", "extracted", "method", "decided_by", "detail"]
    frame = pd.DataFrame(out, columns=[c for c in columns if any(c in r for r in out)] or columns[:3])
    return BatchResult("correctness-ref", frame, counts, ungradable)


def _grade_ifeval(parsed: list[GradeRow], path: str | None) -> BatchResult:
    from nepotism.grading.ifeval import grade_ifeval

    out, ungradable = [], []
    counts = {"met": 0, "not_met": 0, "ungradable": 0, "prompts_all_met": 0, "prompts": 0}
    for line, instance_id, model, text, truth in parsed:
        base = {"instance_id": instance_id, "model": model}
        try:
            verdicts = grade_ifeval(text, truth["ids"], truth["kwargs"])
        except ValueError as err:
            raise InputError(str(err), path=path, line=line, field="kwargs") from None
        counts["prompts"] += 1
        counts["prompts_all_met"] += all(v is True for v in verdicts.values())
        for rubric_id, met in verdicts.items():
            key = "met" if met is True else "not_met" if met is False else "ungradable"
            counts[key] += 1
            if met is None:  # a rubric-ref row must hold true or false: listed apart, counted
                ungradable.append({**base, "line": line, "rubric_id": rubric_id, "detail": "undecidable"})
                continue
            out.append({**base, "rubric_id": rubric_id, "met": met})
    frame = pd.DataFrame(out, columns=["instance_id", "model", "rubric_id", "met"])
    return BatchResult("rubric-ref", frame, counts, ungradable)
