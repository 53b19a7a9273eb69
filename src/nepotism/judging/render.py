"""Turn a `JudgeTask` into the backend `Request` that asks the judge, and name the exact template.

The prompt is one user message (some small chat models have no system role). In label mode the
request carries ``labels`` and ``max_tokens=1``: the verdict is read from the log-probabilities of
the label tokens after one prompt evaluation (paper 004's verdict generation). With
``reasoning="cot"`` a label-mode task is paper 001 §4.2's protocol: the prompt asks for an
explanation ending with the label in double brackets (the text prompt), and the request carries
``labels_after="[["`` and the chain-of-thought budget, so the labels are read at the token after
the reply's last "[[". In text mode the budget fits the
protocol's answer; chain-of-thought and reasoning-model (``think``) calls get a larger one. The
request's ``seed`` is the replicate index, so replicates are distinct calls that a sampling
temperature turns into real re-samples.

`task_template_id` is the id stored on every judgment: the template's id, tags for the options that
change the prompt or the answer (``pairwise-3way-cot-impartial``) and the template hash. This
module does not parse anything; `nepotism.judging.interpret` does.

Speed (a cached rerun renders every prompt again to find its cache key): what depends only on a
task's protocol and options (template name, labels, budget, template id) is worked out once per
options object, and prompts are rendered through a `Skeleton` per *shape* — the options, the
message roles, which free texts are empty, the rubric items' points. A shape's skeleton is made by
rendering a copy of the task whose free texts are sentinels and whose other unrendered fields
(ids, judge, condition) are placeholders, twice with sentinels of different lengths; it is used
only if both renders give the same skeleton and filling it reproduces the full Jinja2 render of
that first task exactly; otherwise the shape is always rendered in full. (A template that
branched on a text's content in a way neither check exposes would defeat this; the shipped
templates only print their texts, and a test compares both paths over many random tasks.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any, NamedTuple

from nepotism.backends.base import Request
from nepotism.judging.markers import strip_reasoning
from nepotism.judging.skeleton import Skeleton, sentinel
from nepotism.judging.tasks import JudgeTask

#: Where a label read after the judge's explanation is taken: the token after this marker (001 §4.2).
_LABEL_MARKER = "[["
from nepotism.judging.templates import Template, get_template, render_text, render_user, user_template
from nepotism.records import Instance, Message, Response, RubricItem, content_id

__all__ = ["label_map", "render", "render_prompt", "task_template_id", "template_id_of"]

_TEXT_BUDGET = {
    "pairwise": 16,
    "recognition-pairwise": 16,
    "recognition": 16,
    "pointwise": 24,
    "pointwise-fraction": 48,
    "rubric": 48,
    "rubric-all": 32,
    "categorise": 64,
}
_COT_BUDGET = 1024
_THINK_BUDGET = 4096
_PER_ITEM = 24  # tokens per rubric item in an all-rubrics JSON answer


def _template_name(protocol: str, options: Mapping[str, Any]) -> str:
    if protocol == "pointwise" and options["kind"] == "fraction":
        return "pointwise-fraction"
    return protocol


def _template_of(protocol: str, options: Mapping[str, Any]) -> Template:
    """The template of a task of ``protocol`` with completed ``options``: the user's file of option
    ``template``, else the shipped one of its slot."""
    user = options.get("template")
    name = _template_name(protocol, options)
    return user_template(user, name) if user else get_template(name)


def _template(task: JudgeTask) -> Template:
    """The task's template (`_template_of` its protocol and options)."""
    return _template_of(task.protocol, task.options)


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
    """The template id stored on the task's judgments, e.g. ``pairwise-3way-cot@66aabe2108a0``
    (`template_id_of` the task's protocol and options)."""
    return template_id_of(task.protocol, task.options)


def template_id_of(protocol: str, options: Mapping[str, Any]) -> str:
    """The template id of the judgments of a ``protocol`` task with completed ``options``: the
    template's id, tags for the options that change the prompt or how the answer is read, and the
    template's content hash. Depends on nothing else of a task (so a plan can be checked for
    tasks that would share ids before any is built)."""
    opts = options
    template = _template_of(protocol, options)
    tags: list[str] = []
    if protocol == "pairwise":
        tags.append(f"{opts['ways']}way")
    if protocol == "pointwise" and opts["kind"] == "scale":
        tags.append(f"{opts['scale'][0]}to{opts['scale'][1]}")
    if protocol == "categorise":
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
        # how the answer is read is always named: a judgment stored when the default floor was 0.5
        # (tag "labels" alone) never shares an id with one read by the argmax ("minmass0"), so a
        # cached rerun reads the stored calls again instead of keeping the old verdicts
        tags += ["labels", f"minmass{opts['min_label_mass']:g}"]
    if opts["reasoning"] != "none":
        tags.append(opts["reasoning"])
    if opts["impartial"]:
        tags.append("impartial")
    if opts["strip_think"]:
        tags.append("nothink")
    name = "-".join([template.id, *tags])
    return f"{name}@{template.template_id.split('@', 1)[1]}"


def _variables(task: JudgeTask) -> dict[str, Any]:
    opts = task.options
    inst = task.instance
    base: dict[str, Any] = {
        "messages": list(inst.messages),
        "impartial": opts["impartial"],
        # "labels": the one-token prompt; a label read after an explanation asks for the text reply
        "mode": "text" if opts["reasoning"] == "cot" else opts["mode"],
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
            base |= {
                "low": opts["scale"][0],
                "high": opts["scale"][1],
                "reference": inst.reference_answer if opts["show_reference"] else None,
            }
    elif task.protocol == "rubric":
        base |= {"answer": cands[0].text, "item": task.rubric_item}
    elif task.protocol == "rubric-all":
        base |= {"answer": cands[0].text, "rubric": list(inst.rubric)}
    elif task.protocol == "categorise":
        base |= {"categories": list(opts["categories"]), "target": opts["target"], "text": cands[0].text if cands else None}
    return base


def _render_full(task: JudgeTask) -> str:
    """The prompt rendered by Jinja2 from all of the task's variables (the reference path)."""
    user = task.options.get("template")
    if user:
        return render_user(user, _template_name(task.protocol, task.options), _variables(task))
    return render_text(_template_name(task.protocol, task.options), _variables(task))


class _Info(NamedTuple):
    """What a task's protocol and options decide, worked out once per options object."""

    name: str
    labels: tuple[str, ...] | None
    label_map: dict[str, str] | None
    labels_after: str | None  # "[[": labels read after the judge's explanation (paper 001 §4.2)
    max_tokens: int | None  # None: depends on the instance (rubric-all without a fixed budget)
    temperature: float
    template_id: str


_INFO: dict[int, tuple[Any, str, _Info]] = {}  # id(options) -> (options kept alive, protocol, info)
_INFO_LIMIT = 4096


def _info(task: JudgeTask) -> _Info:
    opts = task.options
    hit = _INFO.get(id(opts))
    if hit is not None and hit[0] is opts and hit[1] == task.protocol:
        if not opts["template"] or hit[2].template_id.endswith(_template(task).template_id.split("@", 1)[1]):
            return hit[2]
        _forget()  # the user's template file changed: every memo of this process starts again
    labels = label_map(task) if opts["mode"] == "labels" else None
    fixed = not (task.protocol == "rubric-all" and opts["max_tokens"] is None and opts["mode"] != "labels")
    info = _Info(
        name=_template_name(task.protocol, task.options),
        labels=None if labels is None else tuple(labels),
        label_map=labels,
        labels_after=_LABEL_MARKER if labels is not None and opts["reasoning"] == "cot" else None,
        max_tokens=_max_tokens(task) if fixed else None,
        temperature=opts["temperature"],
        template_id=task_template_id(task),
    )
    if len(_INFO) >= _INFO_LIMIT:
        _forget()
    _INFO[id(opts)] = (opts, task.protocol, info)
    return info


def _forget() -> None:
    """Drop every memo keyed by an info object's id, together, so no id outlives its object."""
    _INFO.clear()
    _SKELETONS.clear()
    _checked.clear()


def _free_texts(task: JudgeTask) -> tuple[list[Any], tuple[object, ...]]:
    """The task's free texts in a fixed order, and the rest of its shape besides the options."""
    inst = task.instance
    prompt = inst.prompt
    if isinstance(prompt, str):
        texts: list[Any] = [prompt]
        roles: tuple[str, ...] = ("user",)
    else:
        texts = [m.content for m in prompt]
        roles = tuple(m.role for m in prompt)
    texts += [c.text for c in task.candidates]
    texts.append(inst.reference_answer)
    rubric = inst.rubric
    if rubric:
        texts += [item.text for item in rubric]
    item = task.rubric_item
    if item is not None:
        texts.append(item.text)
    shape: tuple[object, ...] = (
        roles,
        tuple(t if not t else True for t in texts),
        tuple(r.points for r in rubric) if rubric else (),
        None if item is None else item.points,
    )
    return texts, shape


def _sentinel_task(task: JudgeTask, texts: list[Any], variant: int) -> JudgeTask:
    """A copy of ``task`` with every non-empty free text replaced by its sentinel and every
    other field the prompt should not depend on replaced by a placeholder."""
    marks = iter([sentinel(i, variant) if t else t for i, t in enumerate(texts)])
    inst = task.instance
    messages = tuple(Message(m.role, next(marks)) for m in inst.messages)
    candidates = tuple(Response("~", "~", next(marks)) for _ in task.candidates)
    reference = next(marks)
    rubric = tuple(RubricItem(f"~{k}", next(marks), item.points) for k, item in enumerate(inst.rubric))
    item = None if task.rubric_item is None else RubricItem("~", next(marks), task.rubric_item.points)
    blank = Instance("~", messages, reference_answer=reference, rubric=rubric)
    return JudgeTask(task.protocol, "~", blank, candidates, rubric_item=item, condition="~", replicate=0, options=task.options)


_SKELETONS: dict[tuple[int, tuple[object, ...]], Skeleton | None] = {}  # None: this shape is always rendered in full
_SKELETON_LIMIT = 4096


def _answers_shown(task: JudgeTask) -> JudgeTask:
    """``task`` with every candidate's reasoning blocks removed (option ``strip_think``, paper 004
    App. A: a reasoning model's answer is judged without its ``<think>…</think>`` trace).

    Uses `strip_reasoning` (the rules that strip a judge's own reasoning): a closing tag without an
    opening one drops everything before it; a block never closed drops everything after its
    opening tag, so an answer that never left its reasoning is shown empty. Only the prompt changes:
    the task keeps the raw responses (their ids, and the stored text, are the generated ones).
    """
    shown = tuple(replace(c, text=strip_reasoning(c.text)) if isinstance(c.text, str) else c for c in task.candidates)
    return replace(task, candidates=shown)


def _prompt(task: JudgeTask, info: _Info) -> str:
    if task.options["strip_think"]:
        task = _answers_shown(task)
    texts, shape = _free_texts(task)
    key = (id(info), shape)
    try:
        skeleton = _SKELETONS[key]
    except KeyError:
        full = _render_full(task)
        try:
            candidate = Skeleton.from_rendered(_render_full(_sentinel_task(task, texts, 0)))
            other = Skeleton.from_rendered(_render_full(_sentinel_task(task, texts, 1)))
            skeleton = candidate if candidate == other and candidate.fill(texts) == full else None
        except (ValueError, TypeError):
            skeleton = None
        if len(_SKELETONS) >= _SKELETON_LIMIT:
            _SKELETONS.clear()
        _SKELETONS[key] = skeleton
        return full
    if skeleton is None:
        return _render_full(task)
    try:
        return skeleton.fill(texts)
    except TypeError:  # a non-string text: let Jinja2 render it as it always has
        return _render_full(task)


def render_prompt(task: JudgeTask) -> str:
    """The text of the judge prompt for ``task``."""
    return _prompt(task, _info(task))


def _max_tokens(task: JudgeTask) -> int:
    opts = task.options
    if opts["mode"] == "labels" and opts["reasoning"] == "none":
        return 1
    limit: int | None = opts["max_tokens"]
    if limit is not None:
        return limit
    extra = _PER_ITEM * len(task.instance.rubric) if task.protocol == "rubric-all" else 0
    if opts["reasoning"] == "cot":
        return _COT_BUDGET + extra
    if opts["reasoning"] == "think":
        return _THINK_BUDGET + extra
    return _TEXT_BUDGET[_template_name(task.protocol, task.options)] + extra


_REQUEST_FIELDS = (
    "model",
    "messages",
    "prompt",
    "max_tokens",
    "temperature",
    "seed",
    "labels",
    "continuation",
    "labels_after",
    "extra",
)
_MESSAGE_FIELDS = ("role", "content")
_TRUSTED = (
    tuple(f.name for f in fields(Request)) == _REQUEST_FIELDS
    and tuple(f.name for f in fields(Message)) == _MESSAGE_FIELDS
    and not hasattr(Request, "__slots__")
    and not hasattr(Message, "__slots__")
)
_NO_EXTRA = Request(model="m", prompt="p").extra  # the frozen empty mapping Request makes
_checked: set[tuple[str, int]] = set()  # (model, id(info)) whose request was once built the checked way
_new = object.__new__
_set = object.__setattr__


def _request(model: str, prompt: str, info: _Info, max_tokens: int, seed: int) -> Request:
    """`Request` for a judge prompt. Once per (model, options) it is built through the validating
    constructor; after that the same checked values are assembled directly (a cached rerun builds
    one request per call and nothing else about it can be invalid: the prompt is a string)."""
    check = (model, id(info))
    if not _TRUSTED or check not in _checked or type(prompt) is not str or type(seed) is not int:
        request = Request(
            model=model,
            messages=(Message("user", prompt),),
            max_tokens=max_tokens,
            temperature=info.temperature,
            seed=seed,
            labels=info.labels,
            labels_after=info.labels_after,
        )
        if len(_checked) >= _INFO_LIMIT:
            _forget()
        _checked.add(check)
        return request
    message = _new(Message)
    _set(message, "__dict__", {"role": "user", "content": prompt})
    request = _new(Request)
    _set(
        request,
        "__dict__",
        {
            "model": model,
            "messages": (message,),
            "prompt": None,
            "max_tokens": max_tokens,
            "temperature": info.temperature,
            "seed": seed,
            "labels": info.labels,
            "continuation": None,
            "labels_after": info.labels_after,
            "extra": _NO_EXTRA,
        },
    )
    return request


def render(task: JudgeTask, *, model: str) -> Request:
    """The backend request for ``task`` sent to ``model`` (the backend's name for the judge)."""
    info = _info(task)
    max_tokens = info.max_tokens if info.max_tokens is not None else _max_tokens(task)
    return _request(model, _prompt(task, info), info, max_tokens, task.replicate)
