"""Find the verdict a judge wrote in its own words, binding to the last marker it wrote.

A *grammar* says how one protocol's answer may be written: which JSON keys carry it, what a
``Key: value`` line looks like, and how a raw value (``"A"``, ``"Answer B"``, ``"7/10"``,
``"true"``) becomes a canonical value or is rejected. `find_value` then looks for every marker in
the judge's visible output (reasoning-model ``<think>`` blocks removed by `strip_reasoning`):

* ``[[X]]`` and JSON fields bind even when their value is invalid (an invalid or ambiguous last
  marker makes the output unparsed rather than falling back on an earlier one);
* ``$$X$$``, ``\\boxed{X}`` and ``Key: value`` lines bind only with a valid value, since the same
  shapes occur in ordinary prose and mathematics;
* a whole output that is just a value (``"B"``, ``"**Yes.**"``) is a marker too, and, when nothing
  else was found, a value opening the first line (``"B\n\nB is better because"``, ``"No, I..."``).

Markers the judge only *quotes* are ignored where that can be seen: inside fenced code blocks other
than JSON, in Markdown block quotes, inside an inline quotation that holds more than the marker,
inside the string values of a parsed JSON object, and inside any span of at least
``_QUOTE_CONTEXT`` characters copied verbatim from a candidate or the prompt. The last remaining
marker decides; a different valid value on the same line makes it ambiguous. This module knows
no protocol; `nepotism.judging.parse` defines the grammars.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Grammar", "Marker", "clean_value", "find_json", "find_markers", "find_value", "strip_reasoning"]

_QUOTE_CONTEXT = 30
_MAX_JSON_ATTEMPTS = 500
_THINK_TAGS = ("think", "thinking", "reasoning")
_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_BLOCKQUOTE = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
_INLINE_QUOTE = re.compile(r'"[^"\n]*"|“[^”\n]*”|`[^`\n]*`')
_BRACKET = re.compile(r"\[\[([^\[\]\n]{1,80})\]\]")
_DOLLAR = re.compile(r"\$\$([^$\n]{1,80})\$\$")
_BOXED = re.compile(r"\\boxed\{([^{}\n]{1,80})\}")
_BARE_MAX = 60
_LEADING_MAX = 30


@dataclass(frozen=True)
class Grammar:
    """How one protocol's answer is written. ``normalise`` returns a canonical value or None."""

    normalise: Callable[[str], Any]
    json_keys: frozenset[str] = frozenset()
    line: re.Pattern[str] | None = None  # must define a group named "v"


@dataclass(frozen=True)
class Marker:
    """One place where the judge wrote an answer; ``value`` is None when it was not valid."""

    start: int
    end: int
    value: Any
    kind: str
    conflicting: bool = field(default=False, compare=False)


def strip_reasoning(text: str) -> str:
    """Remove ``<think>…</think>`` (and ``thinking``/``reasoning``) blocks from ``text``.

    A closing tag without an opening one (the chat template opened the block) drops everything up
    to it; an opening tag that is never closed (the budget ran out while thinking) drops
    everything from it on, so half a thought is never parsed as a verdict.
    """
    for tag in _THINK_TAGS:
        text = re.sub(rf"<{tag}>.*?</{tag}>", "", text, flags=re.DOTALL | re.IGNORECASE)
        closes = [m.end() for m in re.finditer(rf"</{tag}>", text, flags=re.IGNORECASE)]
        if closes:
            text = text[closes[-1]:]
        opened = re.search(rf"<{tag}>", text, flags=re.IGNORECASE)
        if opened:
            text = text[: opened.start()]
    return text


def clean_value(raw: str) -> str:
    """``raw`` without surrounding space, emphasis, quotes, brackets and end punctuation."""
    return raw.strip().strip("*_`'\"“”[]()").strip().rstrip(".!,;:").strip().strip("*_`'\"“”").strip()


def _spans_masked(text: str) -> list[tuple[int, int]]:
    spans = [(m.start(), m.end()) for m in _FENCE.finditer(text)
             if m.group(1).lower() not in ("", "json", "json5", "jsonc")]
    spans += [(m.start(), m.end()) for m in _BLOCKQUOTE.finditer(text)]
    return spans


def _inside(spans: Iterable[tuple[int, int]], start: int, end: int) -> bool:
    return any(s <= start and end <= e for s, e in spans)


def _longest(fits, limit: int) -> int:
    """Largest n in [0, limit] with fits(n) true, for fits monotone (true up to some n)."""
    low, high = 0, limit
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low


def _copied(text: str, start: int, end: int, sources: Sequence[str]) -> bool:
    """True when the marker sits in a span of at least ``_QUOTE_CONTEXT`` characters more than the
    marker itself that was copied verbatim from a candidate or the prompt."""
    marker = text[start:end]
    for src in sources:
        if marker not in src:
            continue
        left = _longest(lambda n: text[start - n:end] in src, start)
        right = _longest(lambda n: text[start:end + n] in src, len(text) - end)
        if left + right >= _QUOTE_CONTEXT and text[start - left:end + right] in src:
            return True
        if max(left, right) >= _QUOTE_CONTEXT:
            return True
    return False


def _in_inline_quote(text: str, start: int, end: int, raw_value: str) -> bool:
    """True when the marker lies inside a quotation that holds more than its value."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    value = clean_value(raw_value)
    for q in _INLINE_QUOTE.finditer(text, line_start, line_end):
        if q.start() <= start and end <= q.end() and clean_value(q.group(0)[1:-1]) != value:
            return True
    return False


def _norm_key(key: str) -> str:
    return re.sub(r"[\s\-]+", "_", key.strip().lower())


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    return None


def find_json(text: str, masked: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int, Any]]:
    """Every top-level JSON object or array in ``text`` outside ``masked``, as (start, end, value)."""
    decoder = json.JSONDecoder()
    found: list[tuple[int, int, Any]] = []
    attempts, pos = 0, 0
    while attempts < _MAX_JSON_ATTEMPTS:
        match = re.compile(r"[{\[]").search(text, pos)
        if match is None:
            break
        start = match.start()
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            pos = start + 1
            continue
        if not _inside(masked, start, end) and isinstance(value, (dict, list)):
            found.append((start, end, value))
        pos = end
    return found


def _has_object(value: Any, depth: int = 0) -> bool:
    if isinstance(value, dict):
        return True
    return isinstance(value, list) and depth < 4 and any(_has_object(v, depth + 1) for v in value)


def _key_values(value: Any, keys: frozenset[str], depth: int = 0) -> list[Any]:
    out: list[Any] = []
    if depth > 3:
        return out
    if isinstance(value, dict):
        for k, v in value.items():
            if _norm_key(str(k)) in keys and _scalar(v) is not None:
                out.append(v)
            elif isinstance(v, (dict, list)):
                out.extend(_key_values(v, keys, depth + 1))
    elif isinstance(value, list):
        for v in value:
            out.extend(_key_values(v, keys, depth + 1))
    return out


def _leading(text: str, grammar: Grammar) -> Marker | None:
    """A value that opens the output on its own first line (``"B\n\nB is better because..."``)
    or before the first comma, colon or full stop of it (``"No, I did not write this."``)."""
    match = re.search(r"\S[^\n]*", text)
    if match is None or _inside(_spans_masked(text), match.start(), match.end()):
        return None
    line = match.group(0)
    head = re.split(r"[,;:!]|\.[*_`]*(?:\s|$)| - ", line, maxsplit=1)[0]
    for piece in (line, head):
        if len(piece) <= _LEADING_MAX:
            value = grammar.normalise(clean_value(piece))
            if value is not None:
                return Marker(match.start(), match.end(), value, "leading")
    return None


def find_markers(text: str, grammar: Grammar, sources: Sequence[str] = ()) -> list[Marker]:
    """Every marker the judge itself wrote in ``text`` (already stripped of reasoning), in order."""
    masked = _spans_masked(text)
    markers: list[Marker] = []
    json_spans: list[tuple[int, int]] = []
    for start, end, value in find_json(text, masked):
        if not _has_object(value):
            continue  # [[1]] or [[7]] decode as JSON but are bracket markers
        raw = text[start:end]
        if len(raw) >= _QUOTE_CONTEXT and any(raw in src for src in sources):
            masked.append((start, end))
            continue
        json_spans.append((start, end))
        values = {grammar.normalise(clean_value(_scalar(v) or "")) for v in _key_values(value, grammar.json_keys)}
        if values:
            single = next(iter(values)) if len(values) == 1 else None
            markers.append(Marker(start, end, single, "json", conflicting=len(values) > 1))
    blocked = masked + json_spans
    if grammar.json_keys:
        keys = "|".join(sorted((re.escape(k).replace("_", "[_ ]") for k in grammar.json_keys), key=len, reverse=True))
        field_re = re.compile(rf'"(?i:{keys})"\s*:\s*(?:"([^"\n]{{0,80}})"|(true|false|-?\d+(?:\.\d+)?))')
        for m in field_re.finditer(text):
            if not _inside(blocked, m.start(), m.end()) and not _copied(text, m.start(), m.end(), sources):
                raw = m.group(1) if m.group(1) is not None else m.group(2)
                markers.append(Marker(m.start(), m.end(), grammar.normalise(clean_value(raw)), "json-field"))
    patterns: list[tuple[str, re.Pattern[str], bool]] = [
        ("bracket", _BRACKET, True), ("dollar", _DOLLAR, False), ("boxed", _BOXED, False),
    ]
    if grammar.line is not None:
        patterns.append(("line", grammar.line, False))
    for kind, pattern, binds_invalid in patterns:
        for m in pattern.finditer(text):
            start, end = m.start(), m.end()
            raw = m.group("v") if "v" in pattern.groupindex else m.group(1)
            if _inside(blocked, start, end) or _in_inline_quote(text, start, end, raw) \
                    or _copied(text, start, end, sources):
                continue
            value = grammar.normalise(clean_value(raw))
            if value is not None or binds_invalid:
                markers.append(Marker(start, end, value, kind))
    if not markers and len(text.strip()) <= _BARE_MAX:
        value = grammar.normalise(clean_value(text))
        if value is not None:
            markers.append(Marker(0, len(text), value, "bare"))
    if not markers:
        leading = _leading(text, grammar)
        if leading is not None:
            markers.append(leading)
    markers.sort(key=lambda mk: (mk.end, mk.start))
    return markers


def find_value(text: str, grammar: Grammar, sources: Sequence[str] = ()) -> tuple[Any, str]:
    """``(value, "")`` read from the last marker, or ``(None, reason)`` when there is none to read.

    Reasons: ``"no marker"``, ``"invalid value"`` (the last marker holds something the protocol
    does not allow), ``"ambiguous"`` (two different answers in the last marker or on its line).
    """
    markers = find_markers(text, grammar, sources)
    if not markers:
        return None, "no marker"
    last = markers[-1]
    if last.conflicting:
        return None, "ambiguous"
    if last.value is None:
        return None, "invalid value"
    line_start = text.rfind("\n", 0, last.start) + 1
    line_end = text.find("\n", last.end)
    line_end = len(text) if line_end < 0 else line_end
    for other in markers[:-1]:
        if other.value is not None and other.value != last.value \
                and other.end > line_start and other.start < line_end:
            return None, "ambiguous"
    return last.value, ""
