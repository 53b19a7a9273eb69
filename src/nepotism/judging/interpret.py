"""Turn a judge's `Completion` into `Judgment` records, never raising for bad model output.

* A failed call (``completion.status == "failed"``) gives a ``failed`` judgment whose
  ``raw_output`` is ``"error: <error class and detail>"`` and whose ``reason`` is the error class;
  it never carries a verdict.
* Label mode reads ``completion.label_logprobs``. Every label-mode judgment keeps the raw
  log-probabilities (``label_logprobs``, by label as shown), the *label mass* (the total
  next-token probability the labels held: Σ exp(log p), before any renormalising), whether the
  backend saw each label among its top-k candidates (``label_top_k``, from its
  ``label_not_in_top_k:<label>`` warnings) and the backend's warnings. A label that is missing,
  NaN or ``-inf`` has probability 0; the rest are normalised over the task's labels into
  ``label_probs`` (keyed by the stored verdicts: ``A``/``B``/``tie``, ``yes``/``no``, scale values,
  category names) and the verdict is the most probable label. Unparsed, with the reason: no usable
  label (``no_label_logprobs``; ``no_label_marker`` when a label read after the judge's explanation,
  paper 001 §4.2, found no "[[" in the reply); mass below the task's ``min_label_mass`` (``low_label_mass``: the
  model wanted to say something else, so the renormalised probabilities would claim a certainty it
  did not have — they are not kept); two labels tied for the top (``tied_labels``, probabilities
  kept).
* Text mode reads the judge's final verdict statement with `nepotism.judging.markers.read_verdict`
  (reasoning blocks removed, markers quoted from the candidates, question or reference masked,
  conflicting statements unparsed); ``raw_output`` keeps the full text, ``reason`` says why nothing
  was read.

`interpret_all` is the general entry point: one judgment per rubric item for ``rubric-all``, a
list of one otherwise. `interpret` returns that single judgment and refuses ``rubric-all``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from nepotism.backends.base import Completion
from nepotism.judging import parse
from nepotism.judging.markers import Grammar, Sources, clean_value, read_verdict
from nepotism.judging.render import _info
from nepotism.judging.tasks import JudgeTask
from nepotism._frozen import builder
from nepotism.records import Judgment, content_id

__all__ = ["interpret", "interpret_all", "judgment_ids", "label_mass", "label_probabilities"]


def _raw_values(logprobs: Mapping[str, float], labels: Mapping[str, str] | Any) -> dict[str, float]:
    """Each shown label's log-probability as a float; missing, NaN, infinite or non-numeric: -inf."""
    values: dict[str, float] = {}
    get = logprobs.get
    for label in labels:
        value = get(label, _NEG_INF)
        if type(value) is not float:
            try:
                value = float(value)
            except (TypeError, ValueError):
                value = _NEG_INF
        # not finite (NaN, +inf or -inf) counts as -inf: same test as math.isfinite
        values[label] = value if _NEG_INF < value < _INF else _NEG_INF
    return values


def _normalised(raw: Mapping[str, float], labels: Mapping[str, str]) -> dict[str, float] | None:
    # backends.base.logsumexp, with the same operations in the same order (so the same bits);
    # a test holds the two equal
    finite = [v for v in raw.values() if v != _NEG_INF]
    if not finite:
        return None
    top = max(finite)
    total = top + _log(sum([_exp(v - top) for v in finite]))
    if total == _NEG_INF:
        return None
    return {labels[label]: _exp(v - total) if v != _NEG_INF else 0.0 for label, v in raw.items()}


def label_probabilities(logprobs: Mapping[str, float] | None, labels: Mapping[str, str]) -> dict[str, float] | None:
    """Normalised probabilities keyed by stored verdict, or None when no label has a finite log-prob.

    ``labels`` maps each label shown to the model to the verdict it stands for. A label absent
    from ``logprobs`` (or NaN, or ``-inf``) gets probability 0.
    """
    if not logprobs:
        return None
    return _normalised(_raw_values(logprobs, labels), labels)


def label_mass(logprobs: Mapping[str, float] | None, labels: Mapping[str, str] | Any) -> float | None:
    """Σ exp(log p) over the shown ``labels``: the next-token probability they held together.

    Missing, NaN, infinite or non-numeric log-probabilities count as 0; None when ``logprobs`` is
    None or empty. Over HTTP, labels outside the server's top-k are ``-inf``, so the mass is a lower
    bound there (the warnings say which labels were not seen).
    """
    if not logprobs:
        return None
    return _mass(_raw_values(logprobs, labels))


def _mass(raw: Mapping[str, float]) -> float:
    total = 0.0
    for value in raw.values():
        if value != _NEG_INF:
            total += _exp(value)
    return total if total < 1.0 else 1.0


_NEG_INF, _INF = -math.inf, math.inf
_exp, _log = math.exp, math.log


def _grammar(task: JudgeTask) -> Grammar:
    opts = task.options
    numbers = opts.get("label_style") == "numbers"
    if task.protocol == "pairwise":
        return parse.pairwise_grammar(ways=opts["ways"], numbers=numbers)
    if task.protocol == "recognition-pairwise":
        return parse.pairwise_grammar(ways=2, numbers=numbers, recognition=True)
    if task.protocol == "recognition":
        return parse.yes_no_grammar(recognition=True)
    if task.protocol == "rubric":
        return parse.yes_no_grammar()
    if task.protocol == "pointwise":
        if opts["kind"] == "fraction":
            return parse.fraction_grammar(len(task.instance.rubric))
        return parse.scale_grammar(*opts["scale"])
    if task.protocol == "categorise":
        return parse.category_grammar(tuple(name for name, _ in opts["categories"]))
    raise ValueError(f"no single-answer grammar for {task.protocol}")


_JUDGMENT_FIELDS = (
    "instance_id",
    "judge",
    "protocol",
    "candidates",
    "status",
    "verdict",
    "score",
    "raw_output",
    "label_probs",
    "rubric_id",
    "template_id",
    "condition",
    "replicate",
    "usage",
    "latency_s",
    "reason",
    "label_mass",
    "label_logprobs",
    "label_top_k",
    "warnings",
)
_build_judgment = builder(Judgment, _JUDGMENT_FIELDS)  # see nepotism._frozen


def _judgment(
    task: JudgeTask,
    completion: Completion,
    *,
    status: str,
    verdict: str | None = None,
    score: float | None = None,
    probs: Mapping[str, float] | None = None,
    rubric_id: str | None = None,
    reason: str | None = None,
    labels: Mapping[str, Any] | None = None,
) -> Judgment:
    if completion.ok:
        raw = completion.text
    else:
        raw = f"error: {completion.error}"
        reason = completion.error_class
    usage = completion.usage
    parsed = status == "parsed"
    labels = labels or _NO_LABELS
    values = {
        "instance_id": task.instance.id,
        "judge": task.judge,
        "protocol": task.judgment_protocol,
        "candidates": tuple([r.generator for r in task.candidates]),
        "status": status,
        "verdict": verdict if parsed else None,
        "score": score if parsed else None,
        "raw_output": raw,
        "label_probs": None if probs is None else dict(probs),
        "rubric_id": rubric_id if rubric_id is not None else (task.rubric_item.id if task.rubric_item else None),
        "template_id": _info(task).template_id,
        "condition": task.condition,
        "replicate": task.replicate,
        "usage": dict(usage) if usage else None,
        "latency_s": completion.latency_s,
        "reason": None if parsed else reason,
        "label_mass": labels.get("mass"),
        "label_logprobs": labels.get("logprobs"),
        "label_top_k": labels.get("top_k"),
        "warnings": warnings if type(warnings := completion.warnings) is tuple else tuple(warnings),
    }
    return _build_judgment(values)


_NO_LABELS: Mapping[str, Any] = {}
_NOT_IN_TOP_K = "label_not_in_top_k:"


def _value_fields(task: JudgeTask, value: Any) -> dict[str, Any]:
    if task.protocol == "pointwise":
        if task.options["kind"] == "fraction":
            met, total = value
            return {"score": met / total}
        return {"score": float(value)}
    return {"verdict": value}


def _from_labels(task: JudgeTask, completion: Completion) -> Judgment:
    shown = _info(task).label_map
    assert shown is not None  # a label-mode task always has its labels (render._info)
    lps = completion.label_logprobs
    labels: dict[str, Any]
    if not lps:
        labels = {"logprobs": dict.fromkeys(shown, _NEG_INF), "mass": None, "top_k": _top_k(completion, shown)}
        # a label read after the explanation whose reply has no "[[": excluded as paper 001 §4.2 does
        reason = "no_label_marker" if "no_label_marker" in completion.warnings else "no_label_logprobs"
        return _judgment(task, completion, status="unparsed", reason=reason, labels=labels)
    raw = _raw_values(lps, shown)
    labels = {"logprobs": raw, "mass": _mass(raw), "top_k": _top_k(completion, shown)}
    probs = _normalised(raw, shown)
    if probs is None:
        return _judgment(task, completion, status="unparsed", reason="no_label_logprobs", labels=labels)
    if labels["mass"] < task.options["min_label_mass"]:
        return _judgment(task, completion, status="unparsed", reason="low_label_mass", labels=labels)
    top = max(probs.values())
    best = [v for v, p in probs.items() if p == top]
    if len(best) != 1:
        return _judgment(task, completion, status="unparsed", probs=probs, reason="tied_labels", labels=labels)
    return _judgment(task, completion, status="parsed", probs=probs, labels=labels, **_value_fields(task, best[0]))


def _top_k(completion: Completion, shown: Mapping[str, str]) -> dict[str, bool]:
    """Per shown label, whether the backend saw it among its top-k (no ``label_not_in_top_k``)."""
    if not completion.warnings:
        return dict.fromkeys(shown, True)
    missing = {w[len(_NOT_IN_TOP_K) :] for w in completion.warnings if w.startswith(_NOT_IN_TOP_K)}
    return {label: label not in missing for label in shown}


# A whole answer that is one double-bracket marker ("[[B]]", " [[tie]]\n"): the usual reply to a
# verdict-only prompt. With nothing but a short plain value inside, short surroundings of blank
# space, and no line the grammar's statement or hint patterns match, `read_verdict` can find no
# other marker (no quotes, JSON objects, fences, block quotes, dollars or boxes); a reply that is
# nothing but one value is read even when a candidate holds the same text, so its answer is this
# marker's value (or "invalid_verdict"). A property test holds `_sole_bracket` equal to the full search.
_SOLE_BRACKET = re.compile(r"\s*\[\[([A-Za-z0-9 ._*-]{1,20})\]\]\s*")
_NOT_SOLE = object()


def _sole_bracket(text: str, grammar: Grammar) -> Any:
    """The value `read_verdict` would read from ``text`` if it is a sole bracket marker, else
    ``_NOT_SOLE``."""
    if len(text) > 48:
        return _NOT_SOLE
    match = _SOLE_BRACKET.fullmatch(text)
    if match is None or len(text) - (match.end(1) - match.start(1) + 4) >= 20:
        return _NOT_SOLE
    for line in (grammar.line, grammar.weak_line):
        if line is not None and line.search(text) is not None:
            return _NOT_SOLE
    return grammar.normalise(clean_value(match.group(1)))


def _sources(task: JudgeTask) -> Sources:
    texts = [r.text for r in task.candidates] + [m.content for m in task.instance.messages]
    if task.instance.reference_answer:
        texts.append(task.instance.reference_answer)
    return Sources(texts)


def _from_text(task: JudgeTask, completion: Completion) -> Judgment:
    grammar = _grammar(task)
    text = completion.text
    if text:
        value = _sole_bracket(text, grammar)  # no "<": nothing for the reasoning step to do
        if value is not _NOT_SOLE:
            if value is None:
                return _judgment(task, completion, status="unparsed", reason="invalid_verdict")
            return _judgment(task, completion, status="parsed", **_value_fields(task, value))
    reading = read_verdict(text, grammar, _sources(task))
    if reading.value is None:
        return _judgment(task, completion, status="unparsed", reason=reading.reason)
    return _judgment(task, completion, status="parsed", **_value_fields(task, reading.value))


def _rubric_all(task: JudgeTask, completion: Completion) -> list[Judgment]:
    items = task.instance.rubric
    if not completion.ok:
        return [_judgment(task, completion, status="failed", rubric_id=item.id) for item in items]
    text = completion.text or ""
    verdicts: list[str | None]
    if not text.strip():
        verdicts, note = [None] * len(items), "empty_reply"
    else:
        verdicts, note = parse.parse_rubric_list(text, len(items), _sources(task))
    reason = note.replace(" ", "_") or "invalid_verdict"  # no note: that item's entry was not yes/no
    return [
        _judgment(task, completion, status="unparsed" if v is None else "parsed", verdict=v, rubric_id=item.id, reason=reason)
        for item, v in zip(items, verdicts, strict=True)
    ]


def interpret_all(task: JudgeTask, completion: Completion) -> list[Judgment]:
    """Every judgment one call yields: one per rubric item for ``rubric-all``, else one."""
    if task.protocol == "rubric-all":
        return _rubric_all(task, completion)
    return [interpret(task, completion)]


def judgment_ids(task: JudgeTask) -> list[str]:
    """The ids of the judgments `interpret_all` gives for ``task``, whatever the completion: an
    id names the question (instance, judge, protocol, candidates, rubric item, template, condition,
    replicate), not the answer (`Judgment.id`). A cached rerun uses them to find a call whose
    judgments are all stored without reading or interpreting the call (a test holds them equal
    to the ids of what `interpret_all` returns, for every protocol)."""
    head = [task.instance.id, task.judge, task.judgment_protocol, [r.generator for r in task.candidates]]
    tail = [_info(task).template_id, task.condition, task.replicate]
    if task.protocol == "rubric-all":
        items: list[str | None] = [item.id for item in task.instance.rubric]
    else:
        items = [task.rubric_item.id if task.rubric_item else None]
    return [content_id("judgment", [*head, item, *tail]) for item in items]


def interpret(task: JudgeTask, completion: Completion) -> Judgment:
    """The judgment ``completion`` gives for ``task`` (``rubric-all`` needs `interpret_all`)."""
    if task.protocol == "rubric-all":
        raise ValueError("a rubric-all call yields one judgment per item: use interpret_all")
    if not completion.ok:
        return _judgment(task, completion, status="failed")
    if task.options["mode"] == "labels":
        return _from_labels(task, completion)
    return _from_text(task, completion)
