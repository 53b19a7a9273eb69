"""The records every layer passes around: instances, responses, judgments and references.

Records are frozen dataclasses. Each has an ``id``: either given by the user (instances keep the id
of their dataset) or a content hash of the fields that define it, so that the same content always
gets the same id on every machine. This module knows nothing about files, databases or metrics;
the table formats users write live in `nepotism.tables`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "JUDGMENT_STATUSES",
    "PROTOCOLS",
    "UNPARSED_REASONS",
    "VERDICTS",
    "Instance",
    "Judgment",
    "Message",
    "Reference",
    "Response",
    "RubricItem",
    "content_id",
    "exclusion_label",
]

#: Pairwise verdict labels as stored: the first shown candidate, the second, or a tie.
VERDICTS = ("A", "B", "tie")
#: A judgment is parsed (verdict or score present), unparsed (the model answered but no verdict
#: could be read) or failed (no answer at all: timeout, refusal by the server, ...).
JUDGMENT_STATUSES = ("parsed", "unparsed", "failed")
#: Why a judgment is unparsed (`Judgment.reason`): a text reply gave no verdict (``empty_reply``,
#: ``no_verdict``, ``quoted_only`` — every marker was quoted from a candidate —, ``conflicting``,
#: ``invalid_verdict``, ``negated``, ``unfinished_reasoning``; docs/verdicts.md); an all-rubrics list
#: could not place the item (``no_list``, ``misnumbered``, ``too_many_entries``, ``too_few_entries``);
#: label log-probabilities gave none (``no_label_logprobs``, ``tied_labels``, ``low_label_mass``;
#: ``no_label_marker``: a label read after the judge's explanation found no "[[" in its reply).
#: A failed judgment's reason is the call's error class (``timeout``, ``http_5xx:503``, ...), or
#: ``generation:<error class>`` when a response it would show could not be generated.
UNPARSED_REASONS = (
    "empty_reply",
    "no_verdict",
    "quoted_only",
    "conflicting",
    "invalid_verdict",
    "negated",
    "unfinished_reasoning",
    "no_list",
    "misnumbered",
    "too_many_entries",
    "too_few_entries",
    "no_label_logprobs",
    "tied_labels",
    "low_label_mass",
    "no_label_marker",
)
PROTOCOLS = ("pairwise", "pointwise", "rubric", "rubric-all", "recognition", "recognition-pairwise", "categorise")


def exclusion_label(status: str, reason: str | None) -> str:
    """How a judgment without a verdict is counted in exclusions: ``<status>-<reason>`` in words
    joined by hyphens (``unparsed-conflicting``, ``unparsed-low-label-mass``, ``failed-timeout``),
    or the status alone when no reason was recorded."""
    if not reason:
        return status
    return f"{status}-{reason.replace('_', '-')}"


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {k: _canonical(getattr(value, k)) for k in sorted(value.__dataclass_fields__)}
    if isinstance(value, float) and value != value:  # NaN has no canonical JSON form
        return "NaN"
    return value


# ``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` without building
# an encoder for every id
_ID_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
_SCALARS = (str, int, bool, type(None))


def _plain(payload: Any) -> bool:
    """A list of strings, ints, bools, Nones and lists of strings: `_canonical` would give back
    the same JSON (ids of judgments, responses, references), so its walk is skipped."""
    if type(payload) is not list:
        return False
    for value in payload:
        kind = type(value)
        if kind is list:
            for item in value:
                if type(item) is not str:
                    return False
        elif kind not in _SCALARS:
            return False
    return True


def content_id(kind: str, payload: Any, *, length: int = 20) -> str:
    """Return a stable hex id for ``payload`` (any JSON-able value, dataclasses included).

    The id is the first ``length`` hex digits of SHA-256 over ``kind`` and the canonical JSON of
    the payload (sorted keys, no whitespace), so it does not depend on dict order or platform.
    """
    text = _ID_JSON(payload if _plain(payload) else _canonical(payload))
    return hashlib.sha256(f"{kind}\x00{text}".encode()).hexdigest()[:length]


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class RubricItem:
    """One binary criterion of an instance; negative ``points`` penalise meeting it (paper 002)."""

    id: str
    text: str
    points: float = 1.0
    category: str | None = None


@dataclass(frozen=True)
class Instance:
    """A prompt (or a message list) with what is known about a good answer to it."""

    id: str
    prompt: str | tuple[Message, ...]
    reference_answer: str | None = None
    rubric: tuple[RubricItem, ...] = ()
    category: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def messages(self) -> tuple[Message, ...]:
        """The prompt as a message list (a plain prompt becomes one user message)."""
        if isinstance(self.prompt, str):
            return (Message("user", self.prompt),)
        return self.prompt


@dataclass(frozen=True)
class Response:
    """A generator's answer to an instance."""

    instance_id: str
    generator: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def id(self) -> str:
        return content_id("response", [self.instance_id, self.generator, self.text])


@dataclass(frozen=True)
class Judgment:
    """One judge call and what was read from it.

    ``candidates`` are the generators in the order the judge saw them (one for pointwise, rubric
    and pointwise recognition; two for pairwise). ``verdict`` is ``"A"``, ``"B"`` or ``"tie"`` for
    pairwise, a category label for categorisation, ``"yes"``/``"no"`` for rubric and recognition
    calls; ``score`` holds a pointwise score. When nothing could be read, ``status`` is
    ``"unparsed"`` (or ``"failed"`` when the call itself failed) and ``verdict`` and ``score`` are
    ``None``: a failure is never turned into a tie or a zero. ``reason`` says why (one of
    `UNPARSED_REASONS`, or the failed call's error class); None for a parsed judgment, and for
    unparsed rows imported without one.

    Label verdicts also keep what the probabilities rest on: ``label_logprobs`` (the raw natural-log
    probability of each label as shown to the model, ``-inf`` when the backend could not see it),
    ``label_mass`` (the total next-token probability the labels held, before renormalising),
    ``label_top_k`` (per shown label, whether the backend saw it among its top-k next tokens; None
    when the backend does not say) and ``warnings`` (the backend's, e.g.
    ``label_not_in_top_k:B``). None of these enter `id`, so stored runs keep their ids.
    """

    instance_id: str
    judge: str
    protocol: str
    candidates: tuple[str, ...]
    status: str
    verdict: str | None = None
    score: float | None = None
    raw_output: str | None = None
    label_probs: Mapping[str, float] | None = field(default=None, compare=False, hash=False)
    rubric_id: str | None = None
    template_id: str | None = None
    condition: str = "default"
    replicate: int = 0
    usage: Mapping[str, int] | None = field(default=None, compare=False, hash=False)
    latency_s: float | None = field(default=None, compare=False)
    reason: str | None = None
    label_mass: float | None = field(default=None, compare=False)
    label_logprobs: Mapping[str, float] | None = field(default=None, compare=False, hash=False)
    label_top_k: Mapping[str, bool] | None = field(default=None, compare=False, hash=False)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.status not in JUDGMENT_STATUSES:
            raise ValueError(f"status must be one of {JUDGMENT_STATUSES}, not {self.status!r}")
        if self.status != "parsed" and (self.verdict is not None or self.score is not None):
            raise ValueError("an unparsed or failed judgment cannot carry a verdict or a score")
        if self.status == "parsed" and self.reason is not None:
            raise ValueError("a parsed judgment has no reason (reasons say why there is no verdict)")
        if self.protocol == "pairwise" and self.verdict is not None and self.verdict not in VERDICTS:
            raise ValueError(f"pairwise verdict must be one of {VERDICTS}, not {self.verdict!r}")

    @property
    def id(self) -> str:
        return content_id(
            "judgment",
            [
                self.instance_id,
                self.judge,
                self.protocol,
                list(self.candidates),
                self.rubric_id,
                self.template_id,
                self.condition,
                self.replicate,
            ],
        )


@dataclass(frozen=True)
class Reference:
    """Ground truth for an instance: a human preference, a response's correctness or rubric truth.

    ``kind`` is ``"preference"`` (``models`` = the two compared generators, ``winner`` one of them
    or ``"tie"``), ``"correctness"`` (``models`` = one generator; ``correct`` and/or ``score``) or
    ``"rubric"`` (``models`` = one generator, ``rubric_id``, ``met``).
    """

    instance_id: str
    kind: Literal["preference", "correctness", "rubric"]
    models: tuple[str, ...]
    winner: str | None = None
    correct: bool | None = None
    score: float | None = None
    rubric_id: str | None = None
    met: bool | None = None
    source: str | None = None

    @property
    def id(self) -> str:
        return content_id("reference", [self.instance_id, self.kind, list(self.models), self.rubric_id])
