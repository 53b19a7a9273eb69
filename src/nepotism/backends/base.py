"""The one protocol every model backend implements: ``complete(Request) -> Completion``.

A `Request` says what to ask (chat messages or a raw prompt) and which of three things to return:
generated text (the default), the log-probabilities of a few *labels* as the next output ("label
verdicts"; with ``labels_after``, at the position after a marker in the text the model first
writes, as paper 001 §4.2 reads them after "[[" following the judge's explanation), or the
per-token log-probabilities of a given *continuation*
(perplexity, paper 001 §5). A `Completion` carries the answer or, when the model or server failed,
``status="failed"`` and a short machine-readable ``error`` class. Backends never raise for model or
server failures; they raise only for programming errors (a malformed `Request`).

This module knows nothing about judging, stores, retries or rate limits: the runner owns those.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Protocol, runtime_checkable

from nepotism.credentials import Secret, is_secret_name
from nepotism.errors import InputError
from nepotism.records import Message

__all__ = [
    "COMPLETION_STATUSES",
    "Backend",
    "Completion",
    "Request",
    "failed",
    "is_retryable",
    "logsumexp",
    "marker_end",
    "read_api_key",
]

COMPLETION_STATUSES = ("ok", "failed")


def is_retryable(error: str | None) -> bool:
    """True for failure classes that may succeed on a later try (timeouts, 429, 5xx, resets)."""
    if error is None:
        return False
    cls = error.split(": ", 1)[0]
    return cls in ("timeout", "connection", "http_429") or cls.startswith("http_5xx:")


def read_api_key(env: str | None) -> Secret | None:
    """The API key held in environment variable ``env`` (None when no variable is named).

    A named but unset or empty variable is an `InputError` naming it; the key itself is only ever
    held in a `Secret`, so it cannot reach a repr, a log or the store. Whitespace around the key
    (a trailing newline from ``$(cat key.txt)`` or an editor, a space, a tab) is removed, with a
    warning naming the variable, once per process: sent as it was, a line break made every call
    fail, and a server that trims the header it echoes sent the key back in a spelling no longer
    the one held. The text as it was is redacted as well (`Secret`'s ``also``). A key with any
    other character than visible ASCII (a line break or space inside it, a non-ASCII letter) is
    an `InputError`: no HTTP header can carry it. Neither message shows the key.
    """
    if env is None:
        return None
    raw = os.environ.get(env)
    if not raw or not raw.strip():
        raise InputError(
            f"environment variable {env} is not set (it should hold the API key)" + (", or holds only whitespace" if raw else ""),
            path="<environment>",
            field=env,
        )
    key = raw.strip()
    bad = next((i for i, c in enumerate(key) if not 0x21 <= ord(c) <= 0x7E), None)
    if bad is not None:
        raise InputError(
            f"environment variable {env} holds a character an HTTP header cannot carry at "
            f"position {bad + 1} of the key (a space or line break inside it, a control or "
            "non-ASCII character); set it to the key alone",
            path="<environment>",
            field=env,
        )
    if key != raw and env not in _TRIMMED:
        _TRIMMED.add(env)
        around = sorted(
            {_WHITESPACE_NAMES.get(c, f"U+{ord(c):04X}") for c in raw[: len(raw) - len(raw.lstrip())] + raw[len(raw.rstrip()) :]}
        )
        _log.warning(
            "warning: environment variable %s holds the API key with whitespace around it (%s); the key is used without it",
            env,
            ", ".join(around),
        )
    return Secret(key, also=(raw,) if key != raw else ())


#: variables whose key had whitespace around it, warned about once (`read_api_key`)
_TRIMMED: set[str] = set()
_WHITESPACE_NAMES = {"\n": "a line break", "\r": "a carriage return", "\t": "a tab", " ": "a space"}
_log = logging.getLogger("nepotism.backends")


def logsumexp(values: list[float]) -> float:
    """log(sum(exp(v))) computed stably; ``-inf`` for an empty list or all ``-inf``."""
    finite = [v for v in values if v != -math.inf]
    if not finite:
        return -math.inf
    top = max(finite)
    return top + math.log(sum(math.exp(v - top) for v in finite))


def marker_end(text: str | None, marker: str) -> tuple[int | None, int]:
    """Where the labels of a ``labels_after`` request are read: the offset just after the *last*
    occurrence of ``marker`` in ``text`` (the judge's final verdict, as the text parser reads its final
    statement), or None when the marker is absent; and how many times it occurs."""
    if not text:
        return None, 0
    count = text.count(marker)
    return (text.rindex(marker) + len(marker) if count else None), count


def _freeze(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Request:
    """One model call, independent of the backend that will serve it.

    Exactly one of ``messages`` (a chat) and ``prompt`` (raw text for a completion endpoint or a
    local model without a chat template) is given. ``labels`` asks for the log-probability of each
    label as the next output instead of generated text; with ``labels_after`` (a marker such as
    ``"[["``) the model first generates up to ``max_tokens`` and the labels are read at the position
    right after the last occurrence of the marker in that text (the completion's text is the whole
    reply). ``continuation`` asks for the log-probability of each token of that text after the
    prompt. Labels and a continuation are exclusive.
    ``extra`` holds backend parameters (``top_p``, ``stop``, ...); keys that look like credentials
    are sent but never hashed or stored.
    """

    model: str
    messages: tuple[Message, ...] | None = None
    prompt: str | None = None
    max_tokens: int = 512
    temperature: float = 0.0
    seed: int | None = None
    labels: tuple[str, ...] | None = None
    continuation: str | None = None
    labels_after: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise ValueError("Request.model must be a non-empty string")
        if self.messages is not None:
            messages = tuple(self.messages)
            if not messages or not all(isinstance(m, Message) for m in messages):
                raise ValueError("Request.messages must be a non-empty sequence of Message")
            object.__setattr__(self, "messages", messages)
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("give exactly one of Request.messages and Request.prompt")
        if self.labels is not None:
            labels = tuple(self.labels)
            if not labels or not all(isinstance(x, str) and x for x in labels):
                raise ValueError("Request.labels must be a non-empty sequence of non-empty strings")
            if len(set(labels)) != len(labels):
                raise ValueError("Request.labels must not repeat a label")
            object.__setattr__(self, "labels", labels)
        if self.labels is not None and self.continuation is not None:
            raise ValueError("Request.labels and Request.continuation are exclusive")
        if self.labels_after is not None and (
            self.labels is None or not isinstance(self.labels_after, str) or not self.labels_after
        ):
            raise ValueError("Request.labels_after is a non-empty marker and needs Request.labels")
        if self.continuation is not None and not self.continuation:
            raise ValueError("Request.continuation must not be empty")
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ValueError("Request.max_tokens must be a positive integer")
        if not (isinstance(self.temperature, (int, float)) and self.temperature >= 0):
            raise ValueError("Request.temperature must be >= 0")
        object.__setattr__(self, "extra", _freeze(self.extra))

    @property
    def mode(self) -> Literal["generate", "labels", "continuation"]:
        """What the caller wants back: generated text, label log-probs or continuation log-probs."""
        if self.labels is not None:
            return "labels"
        if self.continuation is not None:
            return "continuation"
        return "generate"

    def key_material(self) -> dict[str, Any]:
        """The JSON-able fields that define this call, for hashing into a cache key.

        Backend-independent: the backend's name, URL and credentials are not part of it, and
        ``extra`` keys that look like credentials are left out.
        """
        material = {
            "model": self.model,
            "messages": (None if self.messages is None else [{"role": m.role, "content": m.content} for m in self.messages]),
            "prompt": self.prompt,
            "max_tokens": self.max_tokens,
            "temperature": float(self.temperature),
            "seed": self.seed,
            "labels": None if self.labels is None else list(self.labels),
            "continuation": self.continuation,
            "extra": {k: self.extra[k] for k in sorted(self.extra) if not is_secret_name(k)},
        }
        if self.labels_after is not None:  # only then: the keys of every other call stay as they were
            material["labels_after"] = self.labels_after
        return material


@dataclass(frozen=True)
class Completion:
    """What a backend returned for one `Request`.

    ``text`` is the generated text (for label verdicts, the single token the server produced, if
    any). ``label_logprobs`` maps each requested label to its natural-log probability (``-inf`` when
    the backend could not see the label, listed in ``warnings``). ``continuation_logprobs`` has one
    entry per continuation token. ``raw`` is the JSON-able response body (never credentials).
    A failed call has ``status="failed"`` and ``error`` set to a short class such as ``timeout``,
    ``connection``, ``http_429``, ``http_5xx:503``, ``http_4xx:400``, ``malformed_body``,
    ``unsupported:<what>`` (HTTP), ``model_unavailable``, ``context_overflow``, ``model_error``
    (in-process), optionally followed by ``": detail"``. Worth retrying: ``timeout``,
    ``connection``, ``http_429`` and ``http_5xx:*``; the others fail the same way again.
    """

    text: str | None
    label_logprobs: Mapping[str, float] | None = None
    continuation_logprobs: tuple[float, ...] | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    raw: Mapping[str, Any] = field(default_factory=dict)
    status: Literal["ok", "failed"] = "ok"
    error: str | None = None
    finish_reason: str | None = None
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in COMPLETION_STATUSES:
            raise ValueError(f"Completion.status must be one of {COMPLETION_STATUSES}")
        if (self.status == "failed") != (self.error is not None):
            raise ValueError("a failed Completion needs an error, and only a failed one has one")

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def error_class(self) -> str | None:
        """The error without its detail (``"http_5xx:503"`` from ``"http_5xx:503: overloaded"``)."""
        if self.error is None:
            return None
        return self.error.split(": ", 1)[0]


def failed(
    error: str,
    *,
    latency_s: float = 0.0,
    raw: Mapping[str, Any] | None = None,
    usage: Mapping[str, int] | None = None,
) -> Completion:
    """A failed `Completion` with the given error class (and optional ``": detail"``)."""
    return Completion(
        text=None,
        usage=dict(usage or {}),
        latency_s=latency_s,
        raw=dict(raw or {}),
        status="failed",
        error=error,
    )


@runtime_checkable
class Backend(Protocol):
    """A model server or in-process model that answers `Request` objects."""

    name: str

    async def complete(self, request: Request) -> Completion:
        """Answer one request; model or server failures come back as ``status="failed"``."""
        ...

    async def aclose(self) -> None:
        """Release connections, threads and loaded models."""
        ...
