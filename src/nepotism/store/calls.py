"""The model-call cache's rows that need no database (`CachedCall`).

The store treats a call's key as an opaque 64-hex-digit string. The one function that computes
it is `nepotism.runner.request_key` (what is hashed, and what is left out: credentials and the
base URL); the store scrubs every row it writes (`nepotism.credentials`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

__all__ = ["CALL_STATUSES", "CachedCall"]

CALL_STATUSES = ("ok", "failed")


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
        request: Mapping[str, Any] = json.loads(self.request_json)
        return request

    @cached_property
    def response(self) -> Mapping[str, Any] | None:
        response: Mapping[str, Any] | None = _loads(self.response_json)
        return response

    @cached_property
    def logprobs(self) -> Any:
        return _loads(self.logprobs_json)

    @cached_property
    def usage(self) -> Mapping[str, Any] | None:
        usage: Mapping[str, Any] | None = _loads(self.usage_json)
        return usage


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _call_from_row(row: tuple[Any, ...]) -> CachedCall:
    """Build a `CachedCall` from a ``calls`` row in `_CALL_COLUMNS` order (internal)."""
    key, backend, model, request, response, text, logprobs, usage, latency, status, error, at, run = row
    return CachedCall(key, backend, model, text, latency, status, error, at, run, request, response, logprobs, usage)


_CALL_COLUMNS = "key, backend, model, request, response, text, logprobs, usage, latency_s, status, error, created_at, run_id"
