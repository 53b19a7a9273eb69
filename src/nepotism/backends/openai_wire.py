"""The OpenAI-compatible wire format: request bodies out, `Completion` values in.

Pure functions, no I/O: `build_body` turns a `Request` into an endpoint path and a JSON body,
`encode_body` that body into the bytes sent (orjson where it writes the same JSON value);
`parse_json` decodes a response body (orjson where it gives what the standard library gives);
`read_body` turns a decoded 200 response body into a `Completion` (raising on a malformed body,
which the caller reports as ``malformed_body``); `http_failure` classifies a non-200 answer and, for 429 and
503, reads how long the server asked the client to wait (`retry_after_s`: ``Retry-After`` in
seconds or as an HTTP-date, ``retry-after-ms``, OpenAI's ``x-ratelimit-reset-requests`` /
``-tokens`` durations such as ``6m0s``) into ``raw["retry_after_s"]``. The rules for labels and
continuations are described in `nepotism.backends.openai_http`.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import orjson

from nepotism._files import has_surrogate_escape, without_lone_surrogates
from nepotism.backends.base import Completion, Request, failed, logsumexp, marker_end

__all__ = ["build_body", "encode_body", "http_failure", "parse_json", "read_body", "retry_after_s"]

# every byte that is not an ASCII digit becomes a space, digits become "0": a run of 19 zeros in
# the translated body is a run of 19 digits in the body
_DIGITS_ONLY = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"0" * 19


def parse_json(content: bytes) -> Any:
    """The value ``json.loads(content.decode("utf-8", errors="replace"))`` returns, and the same
    exception when that raises.

    A response body is parsed by orjson (≈ 3.5× faster on a 1.8 KB answer carrying 20 top
    log-probabilities, in a loop that parses one per call) whenever orjson gives the standard
    library's value: it does for every valid UTF-8 JSON text without a run of 19 or more digits
    (same floats: both round to the nearest double; same dicts, key order and the last of
    duplicate keys included). Everything else goes to the standard library, exactly as before:
    what orjson refuses and ``json`` accepts (``NaN``, ``Infinity``, numbers beyond a double's
    range, lone surrogates, bytes that are not UTF-8, which ``json`` reads as U+FFFD) or rejects
    (invalid JSON: the standard library's error and message), and integers that orjson would
    turn into floats (beyond 64 bits; any run of 19 digits, numbers or not, is taken that way).
    """
    if _LONG_RUN not in content.translate(_DIGITS_ONLY):
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError:
            pass
    return json.loads(content.decode("utf-8", errors="replace"))


# what the request body was always sent as: ``json.dumps(body, ensure_ascii=False)`` in UTF-8
_BODY_ENCODER = json.JSONEncoder(ensure_ascii=False)
_EXACT_SCALARS = (str, bool, type(None))
_INT_RANGE = range(-(2**63), 2**64)  # what orjson writes as an integer (beyond: it raises)


def _same_in_orjson(value: Any, depth: int = 0) -> bool:
    """Whether orjson writes ``value`` as the same JSON value as the standard library: plain
    ``str``, ``bool``, ``None``, integers in orjson's range, finite floats, and lists, tuples
    and ``str``-keyed dicts of those. Not: NaN and infinities (orjson writes ``null``, the
    standard library ``NaN``), enums, UUIDs, dates, dataclasses and subclasses (orjson writes
    some of them; the standard library refuses them), nesting deeper than 32."""
    kind = type(value)
    if kind in _EXACT_SCALARS:
        return True
    if kind is int:
        return value in _INT_RANGE
    if kind is float:
        return bool(value - value == 0.0)  # false for NaN and both infinities
    if depth > 32:
        return False
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not _same_in_orjson(item, depth + 1):
                return False
        return True
    if kind is list or kind is tuple:
        for item in value:
            if not _same_in_orjson(item, depth + 1):
                return False
        return True
    return False


def encode_body(body: Mapping[str, Any]) -> bytes:
    """``body`` as the UTF-8 JSON bytes of a request.

    orjson writes it (≈ 1 µs for a 3 KB judge prompt, against ≈ 12 µs) whenever it writes the
    same JSON value as ``json.dumps(body, ensure_ascii=False)`` (`_same_in_orjson`): the bytes
    then differ only in whitespace and in how some floats are spelled (``1e-7`` for ``1e-07``),
    which a JSON parser reads as the same number. Anything else (a NaN, an enum, a text with a
    lone surrogate in ``extra``, ...) is encoded as before, and fails as before.
    """
    if type(body) is dict and _same_in_orjson(body):
        try:
            return orjson.dumps(body)
        except orjson.JSONEncodeError:  # (a lone surrogate: raised again below, as before)
            pass
    return _BODY_ENCODER.encode(body).encode()


_UNSUPPORTED_CHAT_CONTINUATION = (
    "unsupported:continuation_logprobs: over HTTP a raw prompt is needed "
    "(the server's chat template is not visible to the client)"
)


def build_body(
    request: Request, *, model: str | None, extra: Mapping[str, Any], top_logprobs: int
) -> tuple[str, dict[str, Any]] | Completion:
    """The endpoint path and JSON body for ``request``, or a failed Completion if unsupported."""
    mode = request.mode
    name = model or request.model
    if mode == "continuation":
        if request.prompt is None:
            return failed(_UNSUPPORTED_CHAT_CONTINUATION)
        body: dict[str, Any] = {"model": name, "prompt": request.prompt + (request.continuation or "")}
    elif request.messages is not None:
        body = {
            "model": name,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }
    else:
        body = {"model": name, "prompt": request.prompt}
    body["max_tokens"] = request.max_tokens
    body["temperature"] = request.temperature
    if request.seed is not None:
        body["seed"] = request.seed
    body.update(extra)
    body.update(request.extra)
    if mode == "labels":
        if request.labels_after is None:
            body["max_tokens"] = 1  # with labels_after, the reply is written first (read_body finds the marker)
        if request.messages is not None:
            body["logprobs"] = True
            body["top_logprobs"] = top_logprobs
        else:
            body["logprobs"] = top_logprobs
    elif mode == "continuation":
        body.update(max_tokens=1, echo=True, logprobs=1)
    return ("/chat/completions" if "messages" in body else "/completions"), body


def _error_message(body: Any) -> str | None:
    if isinstance(body, dict):
        err = body.get("error", body.get("detail", body.get("message")))
        if isinstance(err, dict):
            err = err.get("message")
        if isinstance(err, str):
            return err
        if isinstance(body.get("text"), str):
            return body["text"][:200] or None
    return None


_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)")
# a wait longer than this is not a wait but a misreading (a Unix time sent as seconds, ...)
_MAX_WAIT_S = 7 * 86_400.0


def _duration(text: str) -> float | None:
    """Seconds in a Go-style duration (``1h2m3.5s``, ``20ms``, ``6m0s``); None if not one."""
    text = text.strip()
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * scale[u] for n, u in parts)


def retry_after_s(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """How many seconds a server asked the client to wait, from its response ``headers``.

    Read, the longest of: ``Retry-After`` (delta-seconds, or an HTTP-date relative to ``now``,
    RFC 9110 §10.2.3), ``retry-after-ms`` (milliseconds; OpenAI and Azure), and
    ``x-ratelimit-reset-requests`` / ``x-ratelimit-reset-tokens`` (durations such as ``1s``,
    ``6m0s``, ``20ms``; OpenAI). Header names are matched case-insensitively; unreadable,
    negative, non-finite or absurd values (over a week) are ignored. None when nothing applies.
    """
    found: list[float] = []
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    value = lowered.get("retry-after")
    if value is not None:
        value = value.strip()
        try:
            found.append(float(value))
        except ValueError:
            try:
                when = parsedate_to_datetime(value)
            except (TypeError, ValueError, IndexError):
                when = None
            if when is not None and when.tzinfo is not None:
                found.append(when.timestamp() - (time.time() if now is None else now))
    if "retry-after-ms" in lowered:
        try:
            found.append(float(lowered["retry-after-ms"]) / 1000.0)
        except ValueError:
            pass
    for name in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"):
        if name in lowered:
            seconds = _duration(lowered[name])
            if seconds is not None:
                found.append(seconds)
    usable = [max(0.0, v) for v in found if math.isfinite(v) and v <= _MAX_WAIT_S]
    return max(usable) if usable else None


def http_failure(
    status: int, text: str, latency: float, request: Request, headers: Mapping[str, str] | None = None
) -> Completion:
    """A failed Completion classifying a non-200 answer (``http_429``, ``http_5xx:503``, ...).

    For 429 and 503 the wait the server asked for (`retry_after_s`) goes into
    ``raw["retry_after_s"]``, for the runner's retry policy to honour.
    """
    try:
        raw: dict[str, Any] = {"status_code": status, "body": json.loads(text)}
        if has_surrogate_escape(text):
            raw["body"] = without_lone_surrogates(raw["body"])
    except ValueError:
        raw = {"status_code": status, "body": {"text": text[:2000]}}
    if status in (429, 503) and headers:
        wait = retry_after_s(headers)
        if wait is not None:
            raw["retry_after_s"] = round(wait, 3)
    if status == 429:
        cls = "http_429"
    elif 500 <= status < 600:
        cls = f"http_5xx:{status}"
    elif 400 <= status < 500:
        cls = f"http_4xx:{status}"
        if request.mode == "continuation" and status in (400, 404, 422, 501):
            cls = f"unsupported:continuation_logprobs: http_4xx:{status}"
    else:
        cls = f"http_{status}"
    message = _error_message(raw["body"])
    return failed(f"{cls}: {message}"[:300] if message else cls, latency_s=latency, raw=raw)


def _usage(data: dict[str, Any]) -> dict[str, int]:
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return {}
    return {k: int(v) for k, v in usage.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def read_body(data: dict[str, Any], request: Request, latency: float) -> Completion:
    """Turn a 200 body into a Completion; raises ValueError/KeyError/TypeError if malformed."""
    choices = data["choices"]
    if not isinstance(choices, list) or not choices:
        raise ValueError("no choices in the body")
    choice = choices[0]
    finish = choice.get("finish_reason")
    chat = "message" in choice
    text = choice["message"].get("content") if chat else choice["text"]
    if text is not None and not isinstance(text, str):
        raise TypeError("the answer text is not a string")
    usage = _usage(data)
    mode = request.mode
    if mode == "generate":
        return Completion(text=text, usage=usage, latency_s=latency, raw=data, finish_reason=finish)
    logprobs = choice.get("logprobs")
    if mode == "labels" and request.labels_after is not None:
        return _labels_after(text, logprobs, chat, request, usage, latency, data, finish)
    if mode == "labels":
        pairs = _top_pairs(logprobs, chat)
        if not pairs:
            return failed(
                "unsupported:label_logprobs: the server returned no top log-probabilities",
                latency_s=latency,
                raw=data,
                usage=usage,
            )
        label_lps, warnings = _labels_from_top(request.labels or (), pairs)
        return Completion(
            text=text,
            label_logprobs=label_lps,
            usage=usage,
            latency_s=latency,
            raw=data,
            finish_reason=finish,
            warnings=warnings,
        )
    if not isinstance(logprobs, dict) or not logprobs.get("tokens") or not logprobs.get("text_offset"):
        return failed(
            "unsupported:continuation_logprobs: the server did not echo prompt log-probabilities",
            latency_s=latency,
            raw=data,
            usage=usage,
        )
    picked = _continuation(logprobs, request)
    if picked is None:
        return failed(
            "unsupported:continuation_logprobs: no echoed token covers the continuation",
            latency_s=latency,
            raw=data,
            usage=usage,
        )
    return Completion(
        text=None,
        continuation_logprobs=picked,
        usage=usage,
        latency_s=latency,
        raw=data,
        finish_reason=finish,
    )


def _top_pairs(logprobs: Any, chat: bool) -> list[tuple[str, float]] | None:
    if not isinstance(logprobs, dict):
        return None
    if chat:
        content = logprobs.get("content")
        top = content[0].get("top_logprobs") if content else None
        return [(str(e["token"]), float(e["logprob"])) for e in top] if top else None
    tops = logprobs.get("top_logprobs")
    first = tops[0] if tops else None
    if not isinstance(first, dict):
        return None
    return [(str(t), float(v)) for t, v in first.items()]


def _token_tops(logprobs: Any, chat: bool) -> list[tuple[str, list[tuple[str, float]]]] | None:
    """Each generated token with its top log-probabilities (chat ``content`` entries, or a completion's
    ``tokens`` and ``top_logprobs``); None when the body has none."""
    if not isinstance(logprobs, dict):
        return None
    if chat:
        content = logprobs.get("content")
        if not isinstance(content, list) or not content:
            return None
        return [(str(e["token"]), [(str(t["token"]), float(t["logprob"])) for t in e.get("top_logprobs") or []]) for e in content]
    tokens, tops = logprobs.get("tokens"), logprobs.get("top_logprobs")
    if not isinstance(tokens, list) or not isinstance(tops, list) or len(tokens) != len(tops) or not tokens:
        return None
    return [(str(t), [(str(k), float(v)) for k, v in (top or {}).items()]) for t, top in zip(tokens, tops)]


def _labels_after(
    text: str | None,
    logprobs: Any,
    chat: bool,
    request: Request,
    usage: dict[str, int],
    latency: float,
    data: dict[str, Any],
    finish: Any,
) -> Completion:
    """Paper 001 §4.2 over HTTP: the labels' log-probabilities are the top log-probabilities of the
    reply's token that starts right after its last ``labels_after`` marker. No marker: no label
    log-probabilities, warning ``no_label_marker``; a marker ending inside a token (the server's
    tokenizer joined it with what follows): none either, warning ``label_marker_inside_token``."""
    assert request.labels_after is not None
    tokens = _token_tops(logprobs, chat)
    if tokens is None:
        return failed(
            "unsupported:label_logprobs: the server returned no log-probabilities for the reply",
            latency_s=latency,
            raw=data,
            usage=usage,
        )
    written = "".join(token for token, _ in tokens)
    end, count = marker_end(written, request.labels_after)
    common = {"text": text, "usage": usage, "latency_s": latency, "raw": data, "finish_reason": finish}
    if end is None:
        return Completion(**common, warnings=("no_label_marker",))
    offset, at = 0, None
    for index, (token, _) in enumerate(tokens):
        if offset == end:
            at = index
            break
        offset += len(token)
    if at is None:  # the marker ends inside a token, or the reply ends with it
        return Completion(**common, warnings=("label_marker_inside_token",))
    label_lps, warnings = _labels_from_top(request.labels or (), tokens[at][1])
    return Completion(**common, label_logprobs=label_lps, warnings=warnings + (("label_marker_repeated",) if count > 1 else ()))


def _continuation(logprobs: dict[str, Any], request: Request) -> tuple[float, ...] | None:
    assert request.continuation is not None and request.prompt is not None
    start = len(request.prompt)
    end = start + len(request.continuation)
    tokens, offsets, lps = logprobs["tokens"], logprobs["text_offset"], logprobs["token_logprobs"]
    if not (len(tokens) == len(offsets) == len(lps)):
        raise ValueError("tokens, text_offset and token_logprobs differ in length")
    picked: list[float] = []
    for tok, off, lp in zip(tokens, offsets, lps):
        if off < end and off + len(tok) > start:  # the token covers a continuation character
            if lp is None:
                raise ValueError("a continuation token has no log-probability")
            picked.append(float(lp))
    return tuple(picked) if picked else None


def _labels_from_top(labels: tuple[str, ...], pairs: list[tuple[str, float]]) -> tuple[dict[str, float], tuple[str, ...]]:
    """Each label's log-probability: the spellings ``label`` and ``" " + label`` summed."""
    spellings = {label for label in labels} | {" " + label for label in labels}
    by_token: dict[str, list[float]] = {}
    for token, lp in pairs:
        if token in spellings:  # only the labels' spellings are read (2-4 of the top 20)
            by_token.setdefault(token, []).append(lp)
    out: dict[str, float] = {}
    warnings: list[str] = []
    for label in labels:
        found = by_token.get(label, []) + by_token.get(" " + label, [])
        out[label] = logsumexp(found) if found else -math.inf
        if not found:
            warnings.append(f"label_not_in_top_k:{label}")
    return out, tuple(warnings)
