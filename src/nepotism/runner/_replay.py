"""Replaying stored calls fast: completions from cache rows, and pausing the garbage collector.

`_replayed` turns one `nepotism.store.fastread.call_rows` row of an ok call into the `Completion`
that `nepotism.runner.calls.completion_from_cached` would rebuild from the full record: the
label/continuation log-probabilities and usage decoded, the raw response body left as JSON until
first read (`_LazyJSON`), and the object assembled from those values and checked by its own
``__post_init__`` (the generated frozen ``__init__`` would set ten attributes one by one), only
while `Completion`'s field list is the one this module knows. (Pausing and freezing the
garbage collector around planning, replay and sending: `nepotism._gc`.)
Private to the runner; tests hold every shortcut equal to the plain path.
"""

from __future__ import annotations

import json
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any

from nepotism._frozen import builder
from nepotism.backends.base import Completion

__all__: list[str] = []


class _LazyJSON(Mapping[str, Any]):
    """A read-only mapping decoded from JSON text on first use (cache replays rarely need it)."""

    __slots__ = ("_text", "_path", "_value")

    def __init__(self, text: str | None, path: str | None = None) -> None:
        self._text, self._path = text, path
        self._value: Mapping[str, Any] | None = None

    def _get(self) -> Mapping[str, Any]:
        if self._value is None:
            value = json.loads(self._text) if self._text else {}
            if self._path is not None:
                value = value.get(self._path) or {} if isinstance(value, dict) else {}
            self._value = decoded = value if isinstance(value, Mapping) else {}
            return decoded
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self._get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    # straight to the decoded dict (the Mapping mixins go through __getitem__ key by key)
    def __contains__(self, key: object) -> bool:
        return key in self._get()

    def get(self, key: str, default: Any = None) -> Any:
        return self._get().get(key, default)

    def keys(self) -> KeysView[str]:
        return self._get().keys()

    def items(self) -> ItemsView[str, Any]:
        return self._get().items()

    def values(self) -> ValuesView[Any]:
        return self._get().values()

    def __repr__(self) -> str:
        return repr(dict(self._get()))


_COMPLETION_FIELDS = (
    "text",
    "label_logprobs",
    "continuation_logprobs",
    "usage",
    "latency_s",
    "raw",
    "status",
    "error",
    "finish_reason",
    "warnings",
)
_build_completion = builder(Completion, _COMPLETION_FIELDS)  # see nepotism._frozen


def _replayed(row: tuple[Any, ...]) -> Completion:
    """The `Completion` of a stored ok call from its `call_rows` row; equal to
    `completion_from_cached` of the same call (a test holds them equal)."""
    text, logprobs, usage, response, latency, _status, _error = row
    read = json.loads(logprobs) if logprobs else {}
    continuation = read.get("continuation")
    warnings = read.get("warnings")
    # usage is small and judging reads it for every judgment: decoded now (what _LazyJSON
    # would give: a JSON object, else empty); the raw body stays lazy
    used = json.loads(usage) if usage else {}
    values = {
        "text": text,
        "label_logprobs": read.get("labels"),
        "continuation_logprobs": None if continuation is None else tuple(continuation),
        "usage": used if type(used) is dict else {},
        "latency_s": latency or 0.0,
        "raw": _LazyJSON(response, "body"),
        "status": "ok",
        "error": None,
        "finish_reason": read.get("finish_reason"),
        "warnings": tuple(warnings) if warnings else (),
    }
    return _build_completion(values)
