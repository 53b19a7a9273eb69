"""Turn a `JudgeTask` into the backend `Request` that asks the judge, and name the exact template.

The prompt is one user message (some small chat models have no system role). In label mode the
request carries ``labels`` and ``max_tokens=1``: the verdict is read from the log-probabilities of
the label tokens after one prompt evaluation (paper 001 §4.2). In text mode the budget fits the
protocol's answer; chain-of-thought and reasoning-model (``think``) calls get a larger one. The
request's ``seed`` is the replicate index, so replicates are distinct calls that a sampling
temperature turns into real re-samples.

`task_template_id` is the id stored on every judgment: the template's id, tags for the options that
change the prompt or the answer (``pairwise-3way-cot-impartial``) and the template hash. This
module does not parse anything; `nepotism.judging.interpret` does.
"""

from __future__ import annotations

from typing import Any

from nepotism.backends.base import Request
from nepotism.judging.tasks import JudgeTask
from nepotism.judging.templates import get_template, render_text
from nepotism.records import Message, content_id

__all__ = ["label_map", "render", "render_prompt", "task_template_id"]

_TEXT_BUDGET = {"pairwise": 16, "recognition-pairwise": 16, "recognition": 16, "pointwise": 24,
                "pointwise-fraction": 48,
                "rubric": 48, "rubric-all": 32, "categorise": 64}
_COT_BUDGET = 1024
_THINK_BUDGET = 4096
_PER_ITEM = 24  # tokens per rubric item in an all-rubrics JSON answer


def _template_name(task: JudgeTask) -> str:
    if task.protocol == "pointwise" and task.options["kind"] == "fraction":
        return "pointwise-fraction"
    return task.protocol


def _names(task: JudgeTask) -> tuple[str, str]:
    return ("1", "2") if task.options.get("label_style") == "numbers" else ("A", "B")


def label_map(task: JudgeTask) -> dict[str, str]:
    """``{label shown to the model: verdict stored}`` for a label-mode task (``"C"`` -> ``"tie"``).

    Pairwise labels are ``A``/``B`` (three-way adds ``C`` for a tie) or ``1``/``2``; recognition
    and rubric labels ``Yes``/``No`` (stored ``yes``/``no``); a scale's labels are its numbers;
    categories are numbered from 1 and stored by name.
    """
    opts = task.options
    if task.protocol in ("pairwise", "recognition-pairwise"):
        first, second = _names(task)
        out = {first: "A", second: "B"}
        if task.protocol == "pairwise" and opts["ways"] == 3:
            out["C"] = "tie"
        return out
    if task.protocol in ("recognition", "rubric"):
        return {"Yes": "yes", "No": "no"}
    if task.protocol == "pointwise" and opts["kind"] == "scale":
        low, high = opts["scale"]
        return {str(v): str(v) for v in range(low, high + 1)}
    if task.protocol == "categorise":
        return {str(i): name for i, (name, _) in enumerate(opts["categories"], start=1)}
    raise ValueError(f"{task.protocol} has no label verdicts")


def task_template_id(task: JudgeTask) -> str:
    """The template id stored on the task's judgments, e.g. ``pairwise-3way-cot@66aabe2108a0``."""
    opts = task.options
    template = get_template(_template_name(task))
    tags: list[str] = []
    if task.protocol == "pairwise":
        tags.append(f"{opts['ways']}way")
    if task.protocol == "pointwise" and opts["kind"] == "scale":
        tags.append(f"{opts['scale'][0]}to{opts['scale'][1]}")
    if task.protocol == "categorise":
        tags.append(opts["target"])
        tags.append("cats" + content_id("categories", opts["categories"], length=8))
    if opts.get("subject") == "student":
        tags.append("student")
    if opts.get("label_style") == "numbers":
        tags.append("numbers")
    if opts.get("show_rubric"):
        tags.append("rubric")
    if opts.get("show_reference"):
        tags.append("ref")
    if opts["mode"] == "labels":
        tags.append("labels")
    if opts["reasoning"] != "none":
        tags.append(opts["reasoning"])
    if opts["impartial"]:
        tags.append("impartial")
    name = "-".join([template.id, *tags])
    return f"{name}@{template.template_id.split('@', 1)[1]}"


def _variables(task: JudgeTask) -> dict[str, Any]:
    opts = task.options
    inst = task.instance
    base: dict[str, Any] = {
        "messages": list(inst.messages),
        "impartial": opts["impartial"],
        "mode": opts["mode"],
        "reasoning": opts["reasoning"],
    }
    cands = task.candidates
    if task.protocol in ("pairwise", "recognition-pairwise"):
        name_a, name_b = _names(task)
        base |= {"name_a": name_a, "name_b": name_b, "first": cands[0].text, "second": cands[1].text}
    if task.protocol == "pairwise":
        base |= {
            "ways": opts["ways"],
            "tie": "C",
            "rubric": list(inst.rubric) if opts["show_rubric"] else [],
            "reference": inst.reference_answer if opts["show_reference"] else None,
        }
    elif task.protocol in ("recognition", "recognition-pairwise"):
        base["subject"] = opts["subject"]
        if task.protocol == "recognition":
            base["answer"] = cands[0].text
    elif task.protocol == "pointwise":
        base["answer"] = cands[0].text
        if opts["kind"] == "fraction":
            base["rubric"] = list(inst.rubric)
        else:
            base |= {"low": opts["scale"][0], "high": opts["scale"][1],
                     "reference": inst.reference_answer if opts["show_reference"] else None}
    elif task.protocol == "rubric":
        base |= {"answer": cands[0].text, "item": task.rubric_item}
    elif task.protocol == "rubric-all":
        base |= {"answer": cands[0].text, "rubric": list(inst.rubric)}
    elif task.protocol == "categorise":
        base |= {"categories": list(opts["categories"]), "target": opts["target"],
                 "text": cands[0].text if cands else None}
    return base


def render_prompt(task: JudgeTask) -> str:
    """The text of the judge prompt for ``task``."""
    return render_text(_template_name(task), _variables(task))


def _max_tokens(task: JudgeTask) -> int:
    opts = task.options
    if opts["mode"] == "labels":
        return 1
    if opts["max_tokens"] is not None:
        return opts["max_tokens"]
    extra = _PER_ITEM * len(task.instance.rubric) if task.protocol == "rubric-all" else 0
    if opts["reasoning"] == "cot":
        return _COT_BUDGET + extra
    if opts["reasoning"] == "think":
        return _THINK_BUDGET + extra
    return _TEXT_BUDGET[_template_name(task)] + extra


def render(task: JudgeTask, *, model: str) -> Request:
    """The backend request for ``task`` sent to ``model`` (the backend's name for the judge)."""
    labels = tuple(label_map(task)) if task.options["mode"] == "labels" else None
    return Request(
        model=model,
        messages=(Message("user", render_prompt(task)),),
        max_tokens=_max_tokens(task),
        temperature=task.options["temperature"],
        seed=task.replicate,
        labels=labels,
    )
