"""The grading step of a run: programmatic truth for every response of an experiment.

An experiment with a ``[grading]`` table names a task per instance (`GradingConfig.task_for`).
`grading_truth` reads each graded instance's truth (``reference_answer``; ``metadata.tests``,
``entry_point``, ``code_prompt``; ``metadata.instruction_id_list`` and ``kwargs``) and checks it
*before* any model is called, so a bad truth value stops the run with the dataset file, line and
field and nothing spent. `grade_run` grades every response (generated and recorded) after judging,
adds the references to the store and writes ``reference.<fmt>`` (correctness-ref) and
``rubric-reference.<fmt>`` (rubric-ref) to the output folder, atomically.

Grading is deterministic and not cached: a rerun grades again (code runs again in the sandbox)
but calls no model. Responses that cannot be graded (no final answer, a sandbox error, an
undecidable instruction) are counted and left out of the references, never marked wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nepotism.errors import InputError
from nepotism.experiment import Experiment
from nepotism.records import Instance, Reference, Response

__all__ = ["Truth", "grade_run", "grading_truth"]

#: instance id -> (task, truth mapping, line of the instance in the dataset file or None)
Truth = dict[str, tuple[str, dict[str, Any], int | None]]

_OUTPUTS = {"correctness-ref": "reference", "rubric-ref": "rubric-reference"}


def _source(experiment: Experiment) -> str:
    """Where the instances come from, for error messages: the dataset file, or the store."""
    path = experiment.dataset_file()
    return str(path) if path is not None else (experiment.store or "store")


def _lines(experiment: Experiment) -> tuple[str, dict[str, int]]:
    """The dataset file and the first line of each instance id in it (empty for store datasets)."""
    path = experiment.dataset_file()
    if path is None:
        return _source(experiment), {}
    from nepotism.tables import read_rows

    first: dict[str, int] = {}
    if path.is_file():
        for line, row in read_rows(path):
            if isinstance(row, dict):
                key = row.get("id", row.get("instance_id"))
                if key is not None:
                    first.setdefault(str(key), line)
    return str(path), first


def _truth(task: str, inst: Instance, bad: Callable[[str, str], InputError]) -> dict[str, Any]:
    meta = dict(inst.metadata or {})
    if task in ("math", "mc"):
        if not isinstance(inst.reference_answer, str) or not inst.reference_answer.strip():
            raise bad("reference_answer", f"a {task} instance needs a reference_answer to grade against")
        return {"answer": inst.reference_answer}
    if task == "code":
        tests = meta.get("tests")
        ok = (isinstance(tests, str) and tests.strip()) or (
            isinstance(tests, list) and tests and all(isinstance(t, str) and t.strip() for t in tests)
        )
        if not ok:
            raise bad(
                "metadata.tests",
                "a code instance needs tests: assert lines (a list of strings) or a string holding a check(candidate) function",
            )
        truth = {"tests": tests, "entry_point": meta.get("entry_point"), "prompt": meta.get("code_prompt")}
        for name, key in (("entry_point", "metadata.entry_point"), ("prompt", "metadata.code_prompt")):
            if truth[name] is not None and not isinstance(truth[name], str):
                raise bad(key, "must be a string")
        return truth
    ids, kwargs = meta.get("instruction_id_list"), meta.get("kwargs")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise bad("metadata.instruction_id_list", "an ifeval instance needs a list of instruction ids")
    if not isinstance(kwargs, list) or len(kwargs) != len(ids) or not all(isinstance(k, dict) for k in kwargs):
        raise bad("metadata.kwargs", "must be a list of tables, one per instruction id")
    return {"ids": ids, "kwargs": kwargs}


def _check(task: str, truth: dict[str, Any]) -> None:
    """Let the grader reject a malformed truth now (an empty response is graded and dropped)."""
    from nepotism.grading.ifeval import grade_ifeval
    from nepotism.grading.math import grade_math
    from nepotism.grading.multiple_choice import grade_multiple_choice

    if task == "math":
        grade_math("", truth["answer"])
    elif task == "mc":
        grade_multiple_choice("", truth["answer"])
    elif task == "ifeval":
        grade_ifeval("", truth["ids"], truth["kwargs"])


def grading_truth(experiment: Experiment, instances: Sequence[Instance]) -> Truth:
    """Each graded instance's task and truth; raises `InputError` naming file, line and field."""
    config = experiment.grading
    if config is None:
        return {}
    path, lines = _lines(experiment)
    out: Truth = {}
    for inst in instances:
        task = config.task_for(inst.category)
        if task is None:
            continue
        line = lines.get(inst.id)

        def bad(field_: str, message: str, line: int | None = line) -> InputError:
            return InputError(message, path=path, line=line, field=field_)

        truth = _truth(task, inst, bad)
        try:
            _check(task, truth)
        except ValueError as err:
            raise bad("metadata.kwargs" if task == "ifeval" else "reference_answer", str(err)) from None
        out[inst.id] = (task, truth, line)
    return out


def grade_run(
    experiment: Experiment, truth: Truth, responses: Sequence[Response], store: Any, *, runner: Any = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """Grade ``responses`` against ``truth``; return (counts per task, written files by kind)."""
    from nepotism.grading.batch import GradeRow, grade_rows
    from nepotism.tables import write_table

    config = experiment.grading
    if config is None:  # no [grading] table: grading_truth gave no instance a truth
        return {}, {}
    path = _source(experiment)  # each row's line is in the truth already: no second read of the file
    by_task: dict[str, list[GradeRow]] = {}
    for r in responses:
        if r.instance_id in truth:
            task, values, line = truth[r.instance_id]
            by_task.setdefault(task, []).append(GradeRow(line, r.instance_id, r.generator, r.text or "", values))
    counts: dict[str, Any] = {}
    frames: dict[str, list[Any]] = {}
    refs: list[Reference] = []
    for task, rows in sorted(by_task.items()):
        result = grade_rows(rows, task, path=path, runner=runner, timeout=config.timeout)
        counts[task] = dict(result.counts)
        frames.setdefault(result.kind, []).append(result.frame)
        refs.extend(_references(result.kind, result.frame, task))
    if refs:
        store.add_references(refs)
    written: dict[str, str] = {}
    if experiment.output_dir is not None:
        import pandas as pd

        out_dir = Path(experiment.output_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        for kind, parts in frames.items():
            target = out_dir / f"{_OUTPUTS[kind]}.{experiment.output_format}"
            write_table(pd.concat(parts, ignore_index=True), target)
            written[kind] = str(target)
    return counts, written


def _references(kind: str, frame: Any, task: str) -> list[Reference]:
    source = f"grading:{task}"
    if kind == "rubric-ref":
        return [
            Reference(r.instance_id, "rubric", (r.model,), rubric_id=str(r.rubric_id), met=bool(r.met), source=source)
            for r in frame.itertuples(index=False)
        ]
    return [
        Reference(r.instance_id, "correctness", (r.model,), correct=bool(r.correct), source=source)
        for r in frame.itertuples(index=False)
    ]
