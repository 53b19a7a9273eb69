"""Judging protocols: plan judge calls, render them into backend requests, read the answers.

The runner relies on this interface::

    task = JudgeTask(protocol, judge, instance, candidates, rubric_item=None,
                     condition="default", replicate=0, options={...})
    task.key                              # stable content id of the task
    request = render(task, model=name)    # backends.base.Request
    judgments = interpret_all(task, completion)   # list[Judgment]; never raises for model output
    judgment = interpret(task, completion)        # the single judgment (not for "rubric-all")
    judgment_ids(task)                    # the ids of what interpret_all gives, from the task alone
    template_ids()                        # {template id: "<id>@<12 hex of its sha256>"}

plus the planners `plan_pairwise`, `plan_pointwise`, `plan_rubric`, `plan_recognition` and
`plan_categorise`.

Protocols (``JudgeTask.protocol``) and what their judgments hold (``Judgment.protocol``):

=====================  =========  ==================  ================================================
task protocol          shown      stored as           verdict / score
=====================  =========  ==================  ================================================
pairwise               2          pairwise            ``A``, ``B`` or ``tie`` (three-way only)
pointwise              1          pointwise           score on the scale, or X/Y as a fraction
rubric                 1 + item   rubric              ``yes`` / ``no`` (criterion met), rubric_id set
rubric-all             1          rubric (one/item)   ``yes`` / ``no`` per item, via `interpret_all`
recognition            1          recognition         ``yes`` (the judge says it wrote it) / ``no``
recognition-pairwise   2          recognition         ``A`` / ``B``: which one the judge says it wrote
categorise             0 or 1     categorise          the category name
=====================  =========  ==================  ================================================

Options (checked and completed with defaults when the task is built; unknown keys are errors):

* every protocol: ``mode`` ``"text"`` (default) or ``"labels"`` — labels mode sets
  ``Request.labels`` and ``max_tokens=1`` and reads the labels' log-probabilities (paper 001
  §4.2); ``reasoning`` ``"none"`` (verdict only), ``"cot"`` (reason, then the verdict) or
  ``"think"`` (a reasoning model: its ``<think>`` block is stripped before parsing and kept in
  ``raw_output``), labels mode needs ``"none"``; ``impartial`` (adds an instruction to ignore who
  wrote what, for mitigation experiments); ``max_tokens`` (overrides the protocol's budget);
  ``temperature`` (0); ``strip_think`` (false; true shows each candidate answer without its
  ``<think>…</think>`` reasoning, as paper 004 App. A judges reasoning models' answers — only the
  prompt changes, the stored response keeps its raw text; template tag ``nothink``).
* pairwise: ``ways`` 3 (default; labels ``A``/``B``/``C``, where ``C`` is the tie label) or 2;
  ``label_style`` ``"letters"`` or ``"numbers"`` (``1``/``2``, two-way only); ``show_rubric``,
  ``show_reference`` (add the instance's rubric / reference answer to the prompt).
* pointwise: ``kind`` ``"scale"`` with ``scale=(1, 10)``, or ``"fraction"`` (how many of the
  rubric items are met, written ``X/Y``, paper 002's direct assessment; score = X/Y).
* recognition, recognition-pairwise: ``subject`` ``"self"`` or ``"student"`` (a model trained on the
  judge's outputs, paper 000 §5.5); recognition-pairwise also ``label_style``.
* categorise: ``categories`` (names, ``(name, description)`` pairs or a mapping; labels mode
  numbers them ``1``–``9``), ``target`` ``"instance"`` (the request) or ``"response"`` (one
  candidate's text, e.g. a judge's rationale to sort into judgment dimensions, paper 000 §5.6).

Every judgment carries ``template_id`` = ``"<template id>[-<option tags>]@<12 hex>"``, e.g.
``pairwise-3way-cot@66aabe2108a0``: the hex is the SHA-256 of the template file and the shared
macros file, the tags name the options that change the prompt or the answer. Failures are values:
a failed call gives a ``failed`` judgment, an answer that cannot be read an ``unparsed`` one;
neither carries a verdict or a score. Pairwise aggregation over both orders and paper 001's
probability score are computed later from the stored judgments, not here.
"""

from nepotism.judging.interpret import interpret, interpret_all, judgment_ids, label_probabilities
from nepotism.judging.planning import (
    plan_categorise,
    plan_pairwise,
    plan_pointwise,
    plan_recognition,
    plan_rubric,
)
from nepotism.judging.render import label_map, render, render_prompt, task_template_id, template_id_of
from nepotism.judging.tasks import JUDGMENT_PROTOCOL, TASK_PROTOCOLS, JudgeTask, normalise_options
from nepotism.judging.templates import template_ids

__all__ = [
    "JUDGMENT_PROTOCOL",
    "TASK_PROTOCOLS",
    "JudgeTask",
    "interpret",
    "interpret_all",
    "judgment_ids",
    "label_map",
    "label_probabilities",
    "normalise_options",
    "plan_categorise",
    "plan_pairwise",
    "plan_pointwise",
    "plan_recognition",
    "plan_rubric",
    "render",
    "render_prompt",
    "task_template_id",
    "template_id_of",
    "template_ids",
]
