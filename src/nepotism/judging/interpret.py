"""Turn a judge's `Completion` into `Judgment` records, never raising for bad model output.

* A failed call (``completion.status == "failed"``) gives a ``failed`` judgment whose
  ``raw_output`` is ``"error: <error class and detail>"``; it never carries a verdict.
* Label mode reads ``completion.label_logprobs``: a label that is missing, NaN or ``-inf`` has
  probability 0; the rest are normalised over the task's labels into ``label_probs`` (keyed by the
  stored verdicts: ``A``/``B``/``tie``, ``yes``/``no``, scale values, category names) and the
  verdict is the most probable label. No usable label, or two labels tied for the top, gives
  ``unparsed`` (with whatever probabilities there were kept).
* Text mode strips reasoning blocks (``raw_output`` keeps the full text) and reads the last
  marker the judge wrote (`nepotism.judging.markers`); the candidates' and prompt's texts are
  passed along so markers copied from them are ignored.

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
from nepotism.judging.markers import Grammar, clean_value, find_value, strip_reasoning
from nepotism.judging.render import _info
from nepotism.judging.tasks import JudgeTask
from nepotism._frozen import builder
from nepotism.records import Judgment

__all__ = ["interpret", "interpret_all", "label_probabilities"]


def label_probabilities(logprobs: Mapping[str, float] | None, labels: Mapping[str, str]) -> dict[str, float] | None:
    """Normalised probabilities keyed by stored verdict, or None when no label has a finite log-prob.

    ``labels`` maps each label shown to the model to the verdict it stands for. A label absent
    from ``logprobs`` (or NaN, or ``-inf``) gets probability 0.
    """
    if not logprobs:
        return None
    values: dict[str, float] = {}
    get = logprobs.get
    for label, verdict in labels.items():
        value = get(label, _NEG_INF)
        if type(value) is not float:
            try:
                value = float(value)
            except (TypeError, ValueError):
                value = _NEG_INF
        # not finite (NaN, +inf or -inf) counts as -inf: same test as math.isfinite
        values[verdict] = value if _NEG_INF < value < _INF else _NEG_INF
    # backends.base.logsumexp, with the same operations in the same order (so the same bits);
    # a test holds the two equal
    finite = [v for v in values.values() if v != _NEG_INF]
    if not finite:
        return None
    top = max(finite)
    total = top + _log(sum([_exp(v - top) for v in finite]))
    if total == _NEG_INF:
        return None
    return {verdict: _exp(v - total) if v != _NEG_INF else 0.0 for verdict, v in values.items()}


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
        return parse.category_grammar([name for name, _ in opts["categories"]])
    raise ValueError(f"no single-answer grammar for {task.protocol}")


def _sources(task: JudgeTask) -> list[str]:
    texts = [r.text for r in task.candidates] + [m.content for m in task.instance.messages]
    if task.instance.reference_answer:
        texts.append(task.instance.reference_answer)
    return [t for t in texts if t]


_JUDGMENT_FIELDS = ("instance_id", "judge", "protocol", "candidates", "status", "verdict", "score",
                    "raw_output", "label_probs", "rubric_id", "template_id", "condition", "replicate",
                    "usage", "latency_s")
_build_judgment = builder(Judgment, _JUDGMENT_FIELDS)  # see nepotism._frozen


def _judgment(task: JudgeTask, completion: Completion, *, status: str, verdict: str | None = None,
              score: float | None = None, probs: Mapping[str, float] | None = None,
              rubric_id: str | None = None) -> Judgment:
    if completion.ok:
        raw = completion.text
    else:
        raw = f"error: {completion.error}"
    usage = completion.usage
    parsed = status == "parsed"
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
    }
    return _build_judgment(values)


def _value_fields(task: JudgeTask, value: Any) -> dict[str, Any]:
    if task.protocol == "pointwise":
        if task.options["kind"] == "fraction":
            met, total = value
            return {"score": met / total}
        return {"score": float(value)}
    return {"verdict": value}


def _from_labels(task: JudgeTask, completion: Completion) -> Judgment:
    probs = label_probabilities(completion.label_logprobs, _info(task).label_map)
    if probs is not None and task.protocol != "pointwise":  # the usual case, without detours
        top = max(probs.values())
        best = [v for v, p in probs.items() if p == top]
        if len(best) == 1:
            return _judgment(task, completion, status="parsed", probs=probs, verdict=best[0])
    if probs is None:
        return _judgment(task, completion, status="unparsed")
    top = max(probs.values())
    best = [v for v, p in probs.items() if p == top]
    if len(best) != 1:
        return _judgment(task, completion, status="unparsed", probs=probs)
    return _judgment(task, completion, status="parsed", probs=probs, **_value_fields(task, best[0]))


# A whole answer that is one double-bracket marker ("[[B]]", " [[tie]]\n"): the usual reply to a
# verdict-only prompt. With nothing but a short plain value inside, short surroundings of blank
# space, and no line the grammar's own ``Key: value`` pattern matches, `find_value` can find no
# other marker (no quotes, JSON objects, fences, block quotes, dollars or boxes) and cannot call
# it copied (that takes 30 characters around it), so its answer is this marker's value (or
# "invalid value"). A property test holds `_sole_bracket` equal to the full search.
_SOLE_BRACKET = re.compile(r"\s*\[\[([A-Za-z0-9 ._*-]{1,20})\]\]\s*")
_NOT_SOLE = object()


def _sole_bracket(text: str, grammar: Grammar) -> Any:
    """The value `find_value` would read from ``text`` if it is a sole bracket marker, else
    ``_NOT_SOLE``."""
    if len(text) > 48:
        return _NOT_SOLE
    match = _SOLE_BRACKET.fullmatch(text)
    if match is None or len(text) - (match.end(1) - match.start(1) + 4) >= 20:
        return _NOT_SOLE
    if grammar.line is not None and grammar.line.search(text) is not None:
        return _NOT_SOLE
    return grammar.normalise(clean_value(match.group(1)))


def _from_text(task: JudgeTask, completion: Completion) -> Judgment:
    if not completion.text:
        return _judgment(task, completion, status="unparsed")
    grammar = _grammar(task)
    value = _sole_bracket(completion.text, grammar)  # no "<": nothing for strip_reasoning to do
    if value is not _NOT_SOLE:
        if value is None:
            return _judgment(task, completion, status="unparsed")
        return _judgment(task, completion, status="parsed", **_value_fields(task, value))
    value, _reason = find_value(strip_reasoning(completion.text), grammar, _sources(task))
    if value is None:
        return _judgment(task, completion, status="unparsed")
    return _judgment(task, completion, status="parsed", **_value_fields(task, value))


def _rubric_all(task: JudgeTask, completion: Completion) -> list[Judgment]:
    items = task.instance.rubric
    if not completion.ok:
        return [_judgment(task, completion, status="failed", rubric_id=item.id) for item in items]
    verdicts, _note = parse.parse_rubric_list(completion.text or "", len(items))
    return [
        _judgment(task, completion, status="unparsed" if v is None else "parsed", verdict=v, rubric_id=item.id)
        for item, v in zip(items, verdicts, strict=True)
    ]


def interpret_all(task: JudgeTask, completion: Completion) -> list[Judgment]:
    """Every judgment one call yields: one per rubric item for ``rubric-all``, else one."""
    if task.protocol == "rubric-all":
        return _rubric_all(task, completion)
    return [interpret(task, completion)]


def interpret(task: JudgeTask, completion: Completion) -> Judgment:
    """The judgment ``completion`` gives for ``task`` (``rubric-all`` needs `interpret_all`)."""
    if task.protocol == "rubric-all":
        raise ValueError("a rubric-all call yields one judgment per item: use interpret_all")
    if not completion.ok:
        return _judgment(task, completion, status="failed")
    if task.options["mode"] == "labels":
        return _from_labels(task, completion)
    return _from_text(task, completion)
