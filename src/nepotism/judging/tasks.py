"""`JudgeTask`: one planned judge call, with its options checked and completed once.

A task names the protocol, the judge, the instance, the candidate responses in the order the judge
will see them, the rubric item (single-rubric calls only), the condition, the replicate and the
protocol options. Options are validated against the protocol and completed with defaults when the
task is built, so two tasks asking for the same thing have the same `JudgeTask.key` whether the
defaults were spelled out or not. This module renders nothing and reads no model output.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from nepotism.records import Instance, Response, RubricItem, content_id

__all__ = [
    "DEFAULT_MIN_LABEL_MASS",
    "JUDGMENT_PROTOCOL",
    "LABELS_AFTER_EXPLANATION",
    "TASK_PROTOCOLS",
    "JudgeTask",
    "normalise_options",
]

#: The protocols a task can ask for.
TASK_PROTOCOLS = (
    "pairwise",
    "pointwise",
    "rubric",
    "rubric-all",
    "recognition",
    "recognition-pairwise",
    "categorise",
)
#: The `Judgment.protocol` each task protocol's judgments are stored under (`records.PROTOCOLS`).
JUDGMENT_PROTOCOL = MappingProxyType(
    {
        "pairwise": "pairwise",
        "pointwise": "pointwise",
        "rubric": "rubric",
        "rubric-all": "rubric",
        "recognition": "recognition",
        "recognition-pairwise": "recognition",
        "categorise": "categorise",
    }
)

#: Least total next-token probability the labels must hold for a label verdict to count (option
#: ``min_label_mass``); below it the judgment is unparsed with reason ``low_label_mass``. Default 0:
#: papers 001 and 004 take the most probable label whatever the labels' mass; 0.5 is the project's
#: variant (docs/verdicts.md, "Label mass"), and the metrics count the verdicts under ½ either way.
DEFAULT_MIN_LABEL_MASS = 0.0
#: Protocols whose chain-of-thought reply ends with its label in double brackets (``[[A]]``,
#: ``Rating: [[4]]``), so that ``mode="labels"`` with ``reasoning="cot"`` reads the labels at the
#: token after the last "[[" of the reply, as paper 001 §4.2 does (`nepotism.backends.base.Request`
#: ``labels_after``).
LABELS_AFTER_EXPLANATION = ("pairwise", "recognition-pairwise", "pointwise")
_COMMON: dict[str, Any] = {
    "mode": "text",
    "reasoning": "none",
    "impartial": False,
    "max_tokens": None,
    "temperature": 0.0,
    "min_label_mass": DEFAULT_MIN_LABEL_MASS,
    "strip_think": False,
    "template": None,
}
_SPECIFIC: dict[str, dict[str, Any]] = {
    "pairwise": {"ways": 3, "label_style": "letters", "show_rubric": False, "show_reference": False},
    "pointwise": {"kind": "scale", "scale": (1, 10), "show_reference": False},
    "rubric": {},
    "rubric-all": {},
    "recognition": {"subject": "self"},
    "recognition-pairwise": {"subject": "self", "label_style": "letters"},
    "categorise": {"categories": (), "target": "instance"},
}
_CANDIDATES = {"pairwise": 2, "pointwise": 1, "rubric": 1, "rubric-all": 1, "recognition": 1, "recognition-pairwise": 2}
_CHOICES = {
    "mode": ("text", "labels"),
    "reasoning": ("none", "cot", "think"),
    "ways": (2, 3),
    "label_style": ("letters", "numbers"),
    "kind": ("scale", "fraction"),
    "subject": ("self", "student"),
    "target": ("instance", "response"),
}
_MAX_LABEL_CATEGORIES = 9


def _categories(value: Any) -> tuple[tuple[str, str | None], ...]:
    """Categories as ``((name, description or None), ...)`` from names, pairs or a mapping."""
    items = value.items() if isinstance(value, Mapping) else value
    out: list[tuple[str, str | None]] = []
    for item in items:
        if isinstance(item, str):
            name, desc = item, None
        elif isinstance(item, (tuple, list)) and len(item) == 2:
            name, desc = item
        else:
            raise ValueError(f"a category is a name or a (name, description) pair, not {item!r}")
        if not isinstance(name, str) or not name.strip():
            raise ValueError("category names must be non-empty strings")
        if desc is not None and not isinstance(desc, str):
            raise ValueError(f"the description of category {name!r} must be a string")
        out.append((name.strip(), desc))
    folded = [name.casefold() for name, _ in out]
    if len(set(folded)) != len(folded):
        raise ValueError("category names must be distinct (ignoring case)")
    return tuple(out)


def normalise_options(protocol: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check ``options`` for ``protocol`` and return them completed with defaults.

    Raises `ValueError` for an unknown protocol or option, a value out of its choices, or a
    combination that cannot work (label verdicts with reasoning, label verdicts for a call that
    must return several answers, numbered labels with a tie).
    """
    if protocol not in TASK_PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; use one of {TASK_PROTOCOLS}")
    allowed = _COMMON | _SPECIFIC[protocol]
    given = dict(options or {})
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for protocol {protocol!r}; known: {sorted(allowed)}")
    opts = allowed | given
    for name, choices in _CHOICES.items():
        if name in opts and opts[name] not in choices:
            raise ValueError(f"option {name}={opts[name]!r} must be one of {choices}")
    for name in ("impartial", "show_rubric", "show_reference", "strip_think"):
        if name in opts and not isinstance(opts[name], bool):
            raise ValueError(f"option {name} must be true or false")
    if opts["template"] is not None and (not isinstance(opts["template"], str) or not opts["template"].strip()):
        raise ValueError("option template must be the path of a judge template file")
    if opts["max_tokens"] is not None and (not isinstance(opts["max_tokens"], int) or opts["max_tokens"] < 1):
        raise ValueError("option max_tokens must be a positive integer or None")
    if isinstance(opts["temperature"], bool) or not isinstance(opts["temperature"], (int, float)) or opts["temperature"] < 0:
        raise ValueError("option temperature must be a number >= 0")
    opts["temperature"] = float(opts["temperature"])
    mass = opts["min_label_mass"]
    if isinstance(mass, bool) or not isinstance(mass, (int, float)) or not 0.0 <= mass <= 1.0:
        raise ValueError(f"option min_label_mass must be a number from 0 to 1, not {mass!r}")
    opts["min_label_mass"] = float(mass)
    labels = opts["mode"] == "labels"
    if labels and opts["reasoning"] == "cot" and not (protocol in LABELS_AFTER_EXPLANATION and opts.get("kind") != "fraction"):
        raise ValueError(
            f"label verdicts after an explanation (mode='labels', reasoning='cot') are read after the "
            f"'[[' of a reply that brackets its label: {', '.join(LABELS_AFTER_EXPLANATION)} (scale) only"
        )
    if labels and opts["reasoning"] == "think":
        raise ValueError(
            "label verdicts (mode='labels') read one token, or the token after '[[' with reasoning='cot': not reasoning='think'"
        )
    if labels and protocol == "rubric-all":
        raise ValueError("rubric-all returns one answer per item: it needs mode='text'")
    if opts.get("label_style") == "numbers" and opts.get("ways", 2) == 3:
        raise ValueError("numbered labels are for two-way verdicts only (ways=2)")
    if protocol == "pointwise":
        if opts["kind"] == "fraction":
            if labels:
                raise ValueError("an 'X/Y items met' answer cannot be read from one label token")
            opts["scale"] = None
        else:
            scale = opts["scale"]
            if not (
                isinstance(scale, (tuple, list))
                and len(scale) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) for v in scale)
                and scale[0] < scale[1]
            ):
                raise ValueError(f"option scale must be two integers (low, high) with low < high, not {scale!r}")
            opts["scale"] = (int(scale[0]), int(scale[1]))
    if protocol == "categorise":
        opts["categories"] = _categories(opts["categories"])
        if len(opts["categories"]) < 2:
            raise ValueError("categorise needs at least two categories")
        if labels and len(opts["categories"]) > _MAX_LABEL_CATEGORIES:
            raise ValueError(
                f"label verdicts number the categories 1-{_MAX_LABEL_CATEGORIES}; use mode='text' for more categories"
            )
    return opts


_NORMALISED: dict[tuple[object, ...], MappingProxyType[str, Any]] = {}
_SHARED: dict[int, tuple[MappingProxyType[str, Any], str]] = {}  # id -> (a mapping in _NORMALISED, protocol)
_NORMALISED_LIMIT = 1024
_SCALAR_TYPES = (str, int, float, bool, type(None))


def _typed(value: Any) -> tuple[object, ...]:
    """A hashable key telling apart values that compare equal but normalise differently
    (``1``, ``1.0`` and ``True``); `TypeError` for anything but scalars, tuples and lists."""
    kind = type(value)
    if kind in _SCALAR_TYPES:
        return (kind, value)
    if kind is tuple or kind is list:
        return (kind, tuple(_typed(v) for v in value))
    raise TypeError(kind)


def _shared_options(protocol: str, options: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """`normalise_options` as a read-only mapping, shared by every task built with equal options
    (a plan builds thousands of tasks from one options dict). Options that are not plain values
    are normalised every time."""
    hit = _SHARED.get(id(options))
    if hit is not None and hit[0] is options and hit[1] == protocol:
        return options  # already one of the shared, normalised mappings for this protocol
    try:
        key = (protocol, tuple((k, _typed(v)) for k, v in (options or {}).items()))
    except TypeError:
        return MappingProxyType(normalise_options(protocol, options))
    shared = _NORMALISED.get(key)
    if shared is None:
        shared = MappingProxyType(normalise_options(protocol, options))
        if len(_NORMALISED) >= _NORMALISED_LIMIT:
            _NORMALISED.clear()
            _SHARED.clear()
        _NORMALISED[key] = shared
        _SHARED[id(shared)] = (shared, protocol)
    return shared


@dataclass(frozen=True)
class JudgeTask:
    """One planned judge call.

    ``candidates`` are in the order shown to the judge: two for ``pairwise`` and
    ``recognition-pairwise``, one for ``pointwise``, ``rubric``, ``rubric-all`` and ``recognition``,
    none (the instance itself is labelled) or one (its text is labelled) for ``categorise``.
    ``rubric_item`` is required by ``rubric`` and only allowed there. ``options`` are checked and
    completed with defaults by `normalise_options`.
    """

    protocol: str
    judge: str
    instance: Instance
    candidates: tuple[Response, ...]
    rubric_item: RubricItem | None = None
    condition: str = "default"
    replicate: int = 0
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        opts = _shared_options(self.protocol, self.options)
        object.__setattr__(self, "options", opts)
        cands = tuple(self.candidates)
        object.__setattr__(self, "candidates", cands)
        if not isinstance(self.judge, str) or not self.judge:
            raise ValueError("JudgeTask.judge must be a non-empty string")
        if not isinstance(self.replicate, int) or self.replicate < 0:
            raise ValueError("JudgeTask.replicate must be an integer >= 0")
        if not all(isinstance(r, Response) for r in cands):
            raise ValueError("JudgeTask.candidates must be Response objects")
        if any(r.instance_id != self.instance.id for r in cands):
            raise ValueError(f"every candidate must answer instance {self.instance.id!r}")
        if self.protocol == "categorise":
            expected = 0 if opts["target"] == "instance" else 1
        else:
            expected = _CANDIDATES[self.protocol]
        if len(cands) != expected:
            raise ValueError(f"{self.protocol} takes {expected} candidate(s), got {len(cands)}")
        if (self.protocol == "rubric") != (self.rubric_item is not None):
            raise ValueError("a rubric_item is required by protocol 'rubric' and allowed nowhere else")
        needs_rubric = (
            self.protocol == "rubric-all"
            or (self.protocol == "pointwise" and opts["kind"] == "fraction")
            or opts.get("show_rubric", False)
        )
        if needs_rubric and not self.instance.rubric:
            raise ValueError(f"instance {self.instance.id!r} has no rubric items for {self.protocol}")
        if self.protocol == "pointwise" and opts["kind"] == "fraction" and any(item.points < 0 for item in self.instance.rubric):
            raise ValueError(
                "an 'X/Y items met' score needs rubric items with points >= 0 "
                f"(instance {self.instance.id!r} has undesirable items); use rubric-all"
            )

    @property
    def judgment_protocol(self) -> str:
        """The protocol the judgments of this task are stored under."""
        return JUDGMENT_PROTOCOL[self.protocol]

    @property
    def key(self) -> str:
        """Stable content id: protocol, judge, instance id, candidate ids in order, rubric id,
        condition, replicate and the completed options."""
        return content_id(
            "judge-task",
            {
                "protocol": self.protocol,
                "judge": self.judge,
                "instance": self.instance.id,
                "candidates": [r.id for r in self.candidates],
                "rubric": None if self.rubric_item is None else self.rubric_item.id,
                "condition": self.condition,
                "replicate": self.replicate,
                "options": dict(self.options),
            },
        )
