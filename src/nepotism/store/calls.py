"""The model-call cache's pieces that need no database: cache keys, secret scrubbing, cached rows.

A call's key is the SHA-256 of the canonical JSON (sorted keys, no whitespace, integral floats
written as integers) of ``{backend, model, parameters, messages, replicate}``, so dict order and
``0`` versus ``0.0`` do not matter while every other change does. Credentials are removed from
the parameters before hashing (rotating an API key keeps the cache) and from every request before
it is stored. Recognising a credential is a heuristic on key names (see `is_secret_key`); secrets
hidden inside values such as URLs are not detected.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

__all__ = ["CALL_STATUSES", "CachedCall", "call_key", "is_secret_key", "scrub_secrets"]

CALL_STATUSES = ("ok", "failed")

_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_ALWAYS_SECRET = ("secret", "password", "passwd", "authorization", "credential", "cookie", "bearer")
_KEY_QUALIFIERS = {"api", "subscription", "access", "secret", "private", "auth", "session"}
# "<x>_token" names a credential unless <x> is a tokenizer's special token ("eos_token").
_SPECIAL_TOKENS = {"eos", "bos", "pad", "unk", "sep", "cls", "mask", "stop", "start", "end"}


@lru_cache(maxsize=4096)
def is_secret_key(name: str) -> bool:
    """Whether a mapping key looks like it names a credential.

    Secret: anything containing ``secret``, ``password``, ``authorization``, ``credential``,
    ``cookie`` or ``bearer``; ``api_key``/``apiKey``/``x-api-key`` and other ``<qualifier>_key``
    names; ``token`` alone or as the last word (``access_token``, ``hf_token``, ``X-Auth-Token``).
    Not secret: counts and ids such as ``max_tokens``, ``total_tokens`` or ``stop_token_ids``, and
    tokenizer special tokens such as ``eos_token`` (so generation parameters are kept).
    """
    lowered = name.lower()
    if any(word in lowered for word in _ALWAYS_SECRET) or "apikey" in lowered:
        return True
    words = [w.lower() for w in _WORDS.findall(name)]
    if not words:
        return False
    last, before = words[-1], (words[-2] if len(words) > 1 else None)
    if last == "key":
        return before is None or before in _KEY_QUALIFIERS
    if last == "token":
        return before not in _SPECIAL_TOKENS
    return False


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
                is_secret_key(key)
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


def scrub_secrets(value: Any) -> Any:
    """A copy of ``value`` with every mapping entry whose key looks like a credential removed.

    Works through nested mappings, lists and tuples; dataclasses become dicts. String values that
    start with ``Bearer `` are dropped too (an authorization header under an unusual name).
    """
    return _plain(value, scrub=True, numbers=False)


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
