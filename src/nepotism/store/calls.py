"""The model-call cache's pieces that need no database: cache keys and cached rows.

A call's key is the SHA-256 of the canonical JSON (sorted keys, no whitespace, integral floats
written as integers) of ``{backend, model, parameters, messages, replicate}``, so dict order and
``0`` versus ``0.0`` do not matter while every other change does. Credentials are removed from
the parameters before hashing (rotating an API key keeps the cache); the store scrubs every row
it writes (`nepotism.credentials`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from nepotism.credentials import is_secret_name

__all__ = ["CALL_STATUSES", "CachedCall", "call_key"]

CALL_STATUSES = ("ok", "failed")


def _plain(value: Any, *, scrub: bool, numbers: bool) -> Any:
    """Plain JSON-able copy: mappings become dicts with str keys (credentials dropped when
    ``scrub``), sequences lists, dataclasses dicts, integral floats ints when ``numbers``."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        return int(value) if numbers and value.is_integer() else value
    if kind is dict or isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            key = str(key)
            if scrub and (
                is_secret_name(key)
                or (type(item) is str and item[:7].lower() == "bearer ")
            ):
                continue
            out[key] = _plain(item, scrub=scrub, numbers=numbers)
        return out
    if kind is list or kind is tuple:
        return [_plain(item, scrub=scrub, numbers=numbers) for item in value]
    if hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
        fields = {k: getattr(value, k) for k in value.__dataclass_fields__}
        return _plain(fields, scrub=scrub, numbers=numbers)
    return value


def call_key(
    *, backend: str, model: str, parameters: Mapping[str, Any], messages: Any, replicate: int = 0
) -> str:
    """The 64-hex-digit cache key of one model call.

    ``messages`` is a chat message list (dicts or `nepotism.records.Message`) or a plain prompt
    string; ``replicate`` tells apart deliberate repeats of the same request.
    """
    if type(replicate) is not int or replicate < 0:
        raise ValueError(f"replicate must be a non-negative integer, not {replicate!r}")
    payload = {
        "backend": str(backend),
        "model": str(model),
        "parameters": _plain(parameters, scrub=True, numbers=True),
        "messages": _plain(messages, scrub=False, numbers=True),
        "replicate": replicate,
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(b"nepotism-call\x00" + text.encode()).hexdigest()


@dataclass(frozen=True)
class CachedCall:
    """One stored model call. ``status`` is ``"ok"`` or ``"failed"`` (then ``error`` says why).

    ``request``, ``response``, ``logprobs`` and ``usage`` are decoded from JSON on first access,
    so a cache hit that only needs ``text`` costs no decoding.
    """

    key: str
    backend: str | None
    model: str | None
    text: str | None
    latency_s: float | None
    status: str
    error: str | None
    created_at: str
    run_id: str | None
    request_json: str = field(repr=False)
    response_json: str | None = field(default=None, repr=False)
    logprobs_json: str | None = field(default=None, repr=False)
    usage_json: str | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @cached_property
    def request(self) -> Mapping[str, Any]:
        """The request as stored (credentials already removed)."""
        return json.loads(self.request_json)

    @cached_property
    def response(self) -> Mapping[str, Any] | None:
        return _loads(self.response_json)

    @cached_property
    def logprobs(self) -> Any:
        return _loads(self.logprobs_json)

    @cached_property
    def usage(self) -> Mapping[str, Any] | None:
        return _loads(self.usage_json)


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _call_from_row(row: tuple) -> CachedCall:
    """Build a `CachedCall` from a ``calls`` row in `_CALL_COLUMNS` order (internal)."""
    key, backend, model, request, response, text, logprobs, usage, latency, status, error, at, run = row
    return CachedCall(key, backend, model, text, latency, status, error, at, run, request,
                      response, logprobs, usage)


_CALL_COLUMNS = (
    "key, backend, model, request, response, text, logprobs, usage, latency_s, status, error, "
    "created_at, run_id"
)
