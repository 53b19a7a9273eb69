"""Read the verdict a judge wrote in its own words: its final verdict statement, never a quote.

This module knows no protocol: a `Grammar` (defined per protocol in `nepotism.judging.parse`)
says which JSON keys and ``Keyword: value`` lines carry an answer and which raw values are valid.
`read_verdict` reads one reply in four steps (docs/verdicts.md says the same for users):

1. **Reasoning is removed.** ``<think>…</think>`` blocks (also ``thinking``/``reasoning``) go; a
   closing tag without an opening one (the chat template opened the block) drops everything before
   it; an opening tag never closed drops everything after it (reason ``unfinished_reasoning`` when
   no verdict is left). Only tags the judge wrote count: not one in a code fence, block quote,
   ``<<< >>>`` block, JSON object or inline quotation, nor one copied from a candidate together
   with the text around it (`_tag_copied`).
2. **Markers are found.** *Statements*: ``[[X]]``, ``$$X$$``, ``\\boxed{X}``, a JSON field with
   one of the grammar's keys (in a parsed object, or a ``"key": value`` pair of broken JSON), and
   ``Keyword: value`` lines with a verdict keyword (``Final verdict: A``, ``Rating: 7``; the value
   is the first clause after the keyword, at most one line break away). *Hints*: lines with a weak
   keyword (``Answer: A``, ``Score: 7``), used only when there is no statement. *Positional*: a
   reply that is nothing but a value (``B``, ``**A.**``, ``[[B]]``, at most ``_BARE_MAX``
   characters, no reasoning block) and, in a reply without any marker at all, a value opening its
   first line (``B\n\nB is better because``).
3. **Quotes are masked.** A marker does not count when it lies in text the judge quotes: a fenced
   code block other than JSON, a Markdown block quote, a ``<<< >>>`` block (one that opens no other)
   or a string inside a JSON object. A marker whose text also occurs in a candidate (or in the
   question or reference answer shown to the judge) is *held*: the comparison (`Sources.contains`)
   ignores whitespace, ``*``, ``_`` and backticks and is a plain substring test (a quote cut inside
   a word is still a quote). A line marker is compared from its last keyword word on (``verdict:
   A`` for ``My final verdict: A``; an unreadable one by its keyword and first word), a JSON field
   as its ``key": "value`` without the outer quotation marks, a bracket, dollar or box holding
   more than its value (``\\boxed{A"}``) up to the value — so a quote cut inside a marker and
   closed by the judge's own punctuation is still recognised. A held marker is ``copied`` (a
   quote) only where the reply reproduces the candidate *around* it: in quotation marks on its
   line, in a fenced block copied from the candidate, or with the candidate's neighbouring text
   (`_with_neighbours`); otherwise it is ``bare`` — the judge's own statement or a bare quote, text
   alone cannot tell. A bare marker that begins or ends its line (a JSON statement: begins it)
   *stands in the verdict position*; the rest of its line is its own, so only a copy reaching
   around that line makes it a quote (`_copy_kind`). A first-line value is masked when a candidate
   holds it followed by the same punctuation or a line end.
4. **The final statement decides.** Among the judge's own statements (else its hints, else the
   positional forms), negated ones (``not [[A]]``, ``[[B]] is incorrect``, ``Verdict: B is
   wrong``) state nothing; the last of the rest is the verdict. It is ``conflicting`` when another
   of them holds a different valid value, or a bare held marker stands on the same line with a
   different value (``[[A]] or [[B]]``; a quoted one is no hedge); ``invalid_verdict`` when it
   holds a value the protocol does not allow (a tie in a two-way task, a rating of 11). Without a
   statement of its own, the judge's last bare statement in the verdict position decides — a
   candidate holding the judge's verdict line does not take it away — unless a marker that could
   be the judge's own disagrees (`_claimed`: another bare one, one in a block that no candidate
   holds, one in text dropped before an unopened closing tag; ``conflicting``), or the reasoning
   tags were left open or closed twice. A line marker whose value is not a clean value
   (``Verdict: B is incorrect; A wins``) is a statement only when written with a colon or ``=``;
   otherwise it is prose and ignored. Two markers of one statement (``Rating: [[7]]``) are one: a
   line marker overlapping a bracket, dollar, box or JSON marker gives way. A first line whose
   sentences name different values (``Answer A is better. Answer B is better.``) is
   ``conflicting``. With nothing to read the reason is ``no_verdict``, ``negated`` (only negated
   statements), or ``quoted_only`` when every marker in the reply was masked as quoted.

The adversarial corpus (``tests/judging/corpus.py``) and the property tests hold the invariant:
what is read is the judge's own verdict or nothing; its gaming set holds the other direction: a
candidate holding the judge's verdict marker does not take the verdict away. What this module
leaves out: protocol grammars (`nepotism.judging.parse`), building judgments
(`nepotism.judging.interpret`), label log-probabilities (read in `interpret`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "Grammar",
    "Marker",
    "Reading",
    "Sources",
    "clean_value",
    "cut_clause",
    "find_json",
    "find_markers",
    "find_value",
    "quote_status",
    "read_verdict",
    "strip_reasoning",
]

_MAX_JSON_ATTEMPTS = 500
_THINK_TAG = re.compile(r"<(/?)(think|thinking|reasoning)>", re.IGNORECASE)
_TAG_QUOTE_MIN, _TAG_QUOTE_LONG = 3, 40
_WALK_SKIP = frozenset(" \t\r\n*_")
_QUOTE_EDGES = frozenset("\"“”'‘’`()[]<>{}:")
_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)
_BLOCKQUOTE = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
_ANGLE_BLOCK = re.compile(r"<<<(?:(?!<<<).)*?>>>", re.DOTALL)  # a block holds no other block's opening
_INLINE_QUOTE = re.compile(r'"[^"\n]*"|“[^”\n]*”|`[^`\n]*`')
_BRACKET = re.compile(r"\[\[([^\[\]\n]{1,80})\]\]")
_DOLLAR = re.compile(r"\$\$([^$\n]{1,80})\$\$")
_BOXED = re.compile(r"\\boxed\{([^{}\n]{1,80})\}")
#: (kind, pattern, whether an invalid value still makes a marker, a literal every match holds)
_CONTAINER_PATTERNS = (("bracket", _BRACKET, True, "[["), ("dollar", _DOLLAR, False, "$$"), ("boxed", _BOXED, False, "\\boxed{"))
_JSON_SCALAR = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")
_BARE_MAX = 60
_LEADING_MAX = 30
# kinds that are statements in their own right (containers); a line marker overlapping one gives way
_CONTAINERS = ("bracket", "dollar", "boxed", "json", "json-field")
# negation in the clause before a marker, and a negative predicate right after it
_NEG_BEFORE = re.compile(r"\b(?:not|never|no\s+longer|rather\s+than|instead\s+of|against)\b|n't\b", re.IGNORECASE)
_NEG_AFTER = re.compile(
    r"[\s*_\"'`)\]]*(?:is|was|are|were)\s+(?:not\b|n't|incorrect|wrong|worse|inferior|weaker|flawed|bad\b|"
    r"poor|less\b|false\b|invalid|mistaken)",
    re.IGNORECASE,
)
_NEG_WORDS = re.compile(r"\b(?:incorrect|wrong|worse|inferior)\b", re.IGNORECASE)
_CLAUSE_START = re.compile(r"[.;,!?:\n]")
_CLAUSE_END = re.compile(
    r"[;,!?(\n\"“”`]|\.(?=\s|$|[*_`\"'])|:(?=\s|$)|\s[-–—]\s|\s(?:because|since|as|but|though|although|while|given|"
    r"due|for)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Grammar:
    """How one protocol's answer is written. ``normalise`` returns a canonical value or None.

    ``line`` matches verdict statements and ``weak_line`` hints; both must define the groups
    ``k`` (the keyword), ``s`` (what separates it from the value) and ``v`` (the rest of the line,
    cut to its first clause by `cut_clause`; with ``whole_line`` the whole rest is tried when the
    clause is not a value).
    """

    normalise: Callable[[str], Any]
    json_keys: frozenset[str] = frozenset()
    line: re.Pattern[str] | None = None
    weak_line: re.Pattern[str] | None = None
    whole_line: bool = False  # values may hold clause marks (category names): try the whole line too


@dataclass(frozen=True)
class Marker:
    """One place where the judge (or a quote) wrote an answer; ``value`` is None when not valid.

    ``core`` is the text compared with the candidates to tell a quote; ``tier`` is
    ``"statement"``, ``"hint"`` or ``"positional"``; ``note`` is ``"negated"`` for a negated
    marker; ``masked`` says why it is not the judge's own beyond doubt, or is empty:
    ``"quoted"`` (in a quoting block — fence, block quote, ``<<< >>>``, JSON string — and held by a
    candidate), ``"block"`` (in a quoting block, held by none: maybe the judge's own words set
    in a block), ``"copied"`` (a candidate's text reproduced with its neighbouring words, in
    quotation marks or in a fenced block copied from it: a quote) or ``"bare"`` (a candidate holds
    the same text, but nothing around it was copied: the judge's own statement or a bare quote).
    ``standing`` says whether a held marker (``"copied"`` or ``"bare"``) is in the verdict
    position (it begins or ends its line, outside quotation marks).
    """

    start: int
    end: int
    value: Any
    kind: str
    core: str = ""
    tier: str = "statement"
    note: str = ""
    masked: str = ""
    standing: bool = False


@dataclass(frozen=True)
class Reading:
    """What `read_verdict` read: the value, or None with a reason (`nepotism.records.UNPARSED_REASONS`).

    ``marker`` is the deciding marker (None when nothing decided); ``n_masked`` how many markers
    were ignored as quotes.
    """

    value: Any
    reason: str = ""
    marker: Marker | None = None
    n_masked: int = 0


# ---------------------------------------------------------------------------------- quotes

_SPACES = re.compile(r"\s+")
_IGNORED = re.compile(r"[*_`\x00]")
_PUNCT_SPACE = re.compile(r" ?([^\w ]) ?")


@lru_cache(maxsize=8192)
def _squash(text: str) -> str:
    """``text`` as compared for quotes: no ``*``/``_``/backticks, one space per whitespace run,
    none next to punctuation."""
    return _PUNCT_SPACE.sub(r"\1", _SPACES.sub(" ", _IGNORED.sub("", text)).strip())


class Sources:
    """The texts shown to the judge as material (candidates, question, reference answer).

    `contains` tells whether a fragment of the reply also occurs in one of them, both compared
    after `_squash` (a plain substring test: a fragment cut in the middle of a source's word still
    counts as copied).
    """

    __slots__ = ("_joined", "texts")

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self.texts = tuple(t for t in texts if t)
        self._joined: str | None = None

    def __bool__(self) -> bool:
        return bool(self.texts)

    def contains(self, fragment: str) -> bool:
        if not self.texts:
            return False
        core = _squash(fragment)
        if not core:
            return False
        if self._joined is None:
            self._joined = "\x00".join(_squash(t) for t in self.texts)
        return core in self._joined


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _as_sources(sources: Sources | Sequence[str]) -> Sources:
    return sources if isinstance(sources, Sources) else Sources(sources)


# ---------------------------------------------------------------------------------- reasoning


def _walk(reply: str, i: int, src: str, j: int, step: int) -> tuple[int, bool, bool]:
    """How many characters of ``reply`` from ``i`` match ``src`` from ``j`` walking by ``step``
    (whitespace, ``*`` and ``_`` skipped on both sides), whether the match ends at a quote's
    edge in the reply — its end, a line break, or a quotation mark or bracket (the first one past
    the match, or the last one in it) —, and whether it ends because ``src`` does."""
    count, newline, n, m = 0, False, len(reply), len(src)
    while True:
        while 0 <= i < n and reply[i] in _WALK_SKIP:
            newline |= reply[i] == "\n"
            i += step
        while 0 <= j < m and src[j] in _WALK_SKIP:
            j += step
        if not 0 <= j < m:  # the candidate ends: so does the quote
            return count, True, True
        if not 0 <= i < n:
            return count, True, False
        if reply[i] != src[j]:  # an edge here, or the last character matched was one (a shared quotation mark)
            return count, newline or _quote_edge(reply, i) or (count > 0 and _quote_edge(reply, i - step)), False
        count, newline = count + 1, False
        i += step
        j += step


def _quote_edge(text: str, i: int) -> bool:
    """A quotation mark or bracket at ``text[i]`` (an apostrophe only when not inside a word)."""
    char = text[i]
    if char in "'’":
        return not (0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum())
    return char in _QUOTE_EDGES


def _with_neighbours(
    text: str, start: int, end: int, occurrences: Iterable[tuple[str, int, int]], skip: tuple[int, int] | None = None
) -> bool:
    """True when ``text[start:end]``, found in a source at one of ``occurrences`` (source, start,
    end), is copied together with the source's text around it: at least `_TAG_QUOTE_MIN`
    characters ending at the quote's edges on both sides, or `_TAG_QUOTE_LONG` characters with
    each side either at an edge or `_TAG_QUOTE_MIN` long (a full stop shared by chance on one
    side does not make the judge's own text after it a quote).

    ``skip`` (left, right), for a statement standing on its line, counts the characters of that
    line beside the span (its keyword, its closing punctuation): they are not neighbours, and
    beyond them the copy must reach *around* the statement: copied text on both sides,
    `_TAG_QUOTE_MIN` characters in all ending at the quote's edges, or `_TAG_QUOTE_LONG` characters
    in all (then one side may instead reach the candidate's own start or end). A sentence or a
    heading a candidate holds just before its marker, which a judge may also write before its
    verdict line, is not enough; nor is the candidate's text after it, which a judge may go on to
    quote after its verdict."""
    for src, at, stop in occurrences:
        right, right_edge, right_done = _walk(text, end, src, stop, 1)
        left, left_edge, left_done = _walk(text, start - 1, src, at - 1, -1)
        if skip is not None:
            before, after = max(0, left - skip[0]), max(0, right - skip[1])
            around = (before or left_done) and (after or right_done)
            if (around and before + after >= _TAG_QUOTE_LONG) or (
                before and after and left_edge and right_edge and before + after >= _TAG_QUOTE_MIN
            ):
                return True
            continue
        if (
            left + right >= _TAG_QUOTE_MIN
            and (left >= _TAG_QUOTE_MIN or left_edge)
            and (right >= _TAG_QUOTE_MIN or right_edge)
            and (left + right >= _TAG_QUOTE_LONG or (left_edge and right_edge))
        ):
            return True
    return False


def _tag_copied(text: str, start: int, end: int, sources: Sources) -> bool:
    """True when a reasoning tag is part of a quote: inside a quotation mark pair on its line, or
    copied from a source together with its neighbouring text (`_with_neighbours`)."""
    if _in_inline_quote(text, start, end, ""):
        return True
    tag = text[start:end].lower()

    def occurrences() -> Iterator[tuple[str, int, int]]:
        for src in sources.texts:
            lowered = src.lower()
            at = lowered.find(tag)
            while at >= 0:
                yield src, at, at + len(tag)
                at = lowered.find(tag, at + 1)

    return _with_neighbours(text, start, end, occurrences())


def _strip(text: str, sources: Sources) -> tuple[str, bool, bool, list[str]]:
    """(visible text, whether an unclosed reasoning block was dropped, whether the tags were
    irregular — a closing tag without an opening one after other tags, which drops text the judge
    may have written outside any block —, the text dropped as opened by the chat template: what
    stood before a closing tag without an opening one)."""
    if "<" not in text:
        return text, False, False, []
    masked = _spans_masked(text)
    if "{" in text:
        masked += [(start, end) for start, end, _ in find_json(text, masked)]
    tags = [
        m
        for m in _THINK_TAG.finditer(text)
        if not (_inside(masked, m.start(), m.end()) or _tag_copied(text, m.start(), m.end(), sources))
    ]
    if not tags:
        return text, False, False, []
    kept: list[str] = []
    dropped: list[str] = []
    pos, open_at, open_name, irregular = 0, -1, "", False
    for i, m in enumerate(tags):
        closing, name = m.group(1) == "/", m.group(2).lower()
        if not closing and open_at < 0:
            kept.append(text[pos : m.start()])
            open_at, open_name = m.start(), name
        elif closing and open_at >= 0 and name == open_name:
            open_at, pos = -1, m.end()
        elif closing and open_at < 0:  # the chat template opened the block: all before it is reasoning
            dropped += [*kept, text[pos : m.start()]]
            kept, pos, irregular = [], m.end(), irregular or i > 0
    if open_at >= 0:
        return "".join(kept), True, irregular, dropped
    kept.append(text[pos:])
    return "".join(kept), False, irregular, dropped


def strip_reasoning(text: str, sources: Sources | Sequence[str] = ()) -> str:
    """``text`` without the judge's reasoning blocks (see step 1 of the module docstring).

    Tags copied from ``sources`` together with their neighbouring text are left as text.
    """
    return _strip(text, _as_sources(sources))[0]


# ---------------------------------------------------------------------------------- values


def clean_value(raw: str) -> str:
    """``raw`` without surrounding space, emphasis, quotes, brackets and end punctuation."""
    return raw.strip().strip("*_`'\"“”[]()").strip().rstrip(".!,;:").strip().strip("*_`'\"“”").strip()


def cut_clause(rest: str) -> str:
    """The first clause of a line's remainder: up to ``;``, ``,``, ``!``, ``?``, ``(``, a full stop
    or colon followed by space, a dash between spaces, or ``because``/``since``/``but``/...."""
    match = _CLAUSE_END.search(rest)
    return rest[: match.start()] if match else rest


def _norm_key(key: str) -> str:
    return re.sub(r"[\s\-]+", "_", key.strip().lower())


def find_json(text: str, masked: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int, Any]]:
    """Every top-level JSON object or array in ``text`` outside ``masked``, as (start, end, value)."""
    decoder = json.JSONDecoder()
    found: list[tuple[int, int, Any]] = []
    attempts, pos = 0, 0
    opener = re.compile(r"[{\[]")
    while attempts < _MAX_JSON_ATTEMPTS:
        match = opener.search(text, pos)
        if match is None:
            break
        start = match.start()
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
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


#: json's string scanner, ``(string, index after its closing quote)`` from the index after an
#: opening quote (undocumented, so the type stubs leave it out)
_SCANSTRING: Callable[[str, int], tuple[str, int]] = vars(json.decoder)["scanstring"]


def _json_members(text: str, start: int, end: int, keys: frozenset[str]) -> list[tuple[int, int, str]]:
    """``(key start, value end, raw value)`` for each member of the valid JSON ``text[start:end]``
    whose key is in ``keys`` and whose value is a string, number or boolean."""
    scan = _SCANSTRING
    out: list[tuple[int, int, str]] = []
    stack: list[str] = []
    expect_key = False
    i = start
    while i < end:
        char = text[i]
        if char == '"':
            string, after = scan(text, i + 1)
            if expect_key and stack and stack[-1] == "{":
                colon = text.index(":", after)
                value_at = colon + 1
                while text[value_at] in " \t\r\n":
                    value_at += 1
                expect_key = False
                if _norm_key(string) in keys:
                    if text[value_at] == '"':
                        raw, value_end = scan(text, value_at + 1)
                        out.append((i, value_end, raw))
                    else:
                        scalar = _JSON_SCALAR.match(text, value_at)
                        if scalar is not None and scalar.group() != "null":
                            out.append((i, scalar.end(), scalar.group()))
                i = value_at
                continue
            i = after
            continue
        if char == "{":
            stack.append("{")
            expect_key = True
        elif char == "[":
            stack.append("[")
        elif char in "}]":
            stack.pop()
        elif char == ",":
            expect_key = bool(stack) and stack[-1] == "{"
        i += 1
    return out


# ---------------------------------------------------------------------------------- markers


def _spans_masked(text: str) -> list[tuple[int, int]]:
    # each pattern is searched only when the text holds the literal every match of it contains
    spans = (
        [(m.start(), m.end()) for m in _FENCE.finditer(text) if m.group(1).lower() not in ("", "json", "json5", "jsonc")]
        if "```" in text
        else []
    )
    if ">" in text:
        spans += _block_quotes(text)
    if "<<<" in text:
        spans += [(m.start(), m.end()) for m in _ANGLE_BLOCK.finditer(text)]
    return spans


def _block_quotes(text: str) -> list[tuple[int, int]]:
    """The spans ``_BLOCKQUOTE.finditer(text)`` gives (lines whose first non-blank character is
    ``>``, line break excluded), found from the ``>`` characters rather than by trying the pattern
    at every position (a verdict such as ``[[A>B]]`` puts one in most replies)."""
    spans = []
    gt = text.find(">")
    while gt >= 0:
        start = text.rfind("\n", 0, gt) + 1
        end = text.find("\n", gt)
        end = len(text) if end < 0 else end
        if not text[start:gt].strip(" \t"):
            spans.append((start, end))
        gt = text.find(">", end)
    return spans


def _inside(spans: Iterable[tuple[int, int]], start: int, end: int) -> bool:
    return any(s <= start and end <= e for s, e in spans)


def _overlaps(spans: Iterable[tuple[int, int]], start: int, end: int) -> bool:
    return any(s < end and start < e for s, e in spans)


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


# what may stand before a statement that begins its line (a bullet, a number, a heading, emphasis)
# and after one that ends it (closing punctuation, emphasis, a closing quotation mark)
_LINE_OPENING = re.compile(r"[ \t]*(?:[-+•]|\d{1,3}[.)]|#{1,6})?[ \t*_]*")
_LINE_CLOSING = re.compile(r"[ \t*_.!)\"'”’]*(?=\r?\n|$)")
_LOOSE_GAP = r"[\s*_`\x00]*"


def _line_of(text: str, start: int, end: int) -> tuple[int, int]:
    """The start of the line holding ``start`` and the end of the line holding ``end``."""
    stop = text.find("\n", end)
    return text.rfind("\n", 0, start) + 1, len(text) if stop < 0 else stop


def _position(text: str, start: int, end: int) -> tuple[bool, bool, bool]:
    """Where the statement ``text[start:end]`` stands: (inside quotation marks on its line — not a
    quotation that is the whole line —, whether it begins its line, whether it ends it). A
    statement that begins or ends its line stands in the verdict position the templates ask for."""
    line_start, line_end = _line_of(text, start, end)
    opening = _LINE_OPENING.match(text, line_start)
    assert opening is not None  # every part of the pattern may be empty
    begins = opening.end() >= start
    ends = _LINE_CLOSING.match(text, end) is not None
    for q in _INLINE_QUOTE.finditer(text, line_start, line_end):
        if q.start() <= start and end <= q.end() and (q.start(), q.end()) != (start, end):
            if not (opening.end() >= q.start() and _LINE_CLOSING.match(text, q.end()) is not None):
                return True, begins, ends
    return False, begins, ends


def quote_status(text: str, start: int, end: int, sources: Sources) -> tuple[str, bool]:
    """How the statement ``text[start:end]`` (a whole JSON list, say) relates to the candidates: ``""``
    when no source holds it, else ``"copied"`` (a quote: in quotation marks, in a fenced block
    copied from a candidate, or with the candidate's neighbouring text) or ``"bare"``, and whether
    it stands in the verdict position (see `find_markers`; the same rules as for a marker)."""
    if not sources.contains(text[start:end]):
        return "", False
    if _in_copied_fence(text, (start, end), sources):
        return "copied", False
    return _copy_kind(text, (start, end), (start, end), sources, json_statement=True)


def _in_copied_fence(text: str, statement: tuple[int, int], sources: Sources) -> bool:
    """True when the statement lies in a code fence (one the reader does not mask: plain or JSON)
    whose whole body a source holds and which holds more than the statement: a fenced block
    copied from a candidate."""
    if "```" not in text:
        return False
    start, end = statement
    for m in _FENCE.finditer(text):
        if m.start(2) <= start and end <= m.end(2):
            extra = _kept(text, m.start(2), m.end(2)) - _kept(text, start, end)
            return extra >= _TAG_QUOTE_MIN and sources.contains(m.group(2))
    return False


def _kept(text: str, start: int, end: int) -> int:
    """How many characters of ``text[start:end]`` a walk compares (`_walk` skips the others)."""
    return sum(1 for char in text[start:end] if char not in _WALK_SKIP)


@lru_cache(maxsize=1024)
def _loose(squashed: str) -> re.Pattern[str]:
    """A pattern finding, in a raw source, the text that squashes to ``squashed`` (or a little more)."""
    return re.compile(_LOOSE_GAP.join(re.escape(char) for char in squashed if char != " "))


def _occurrences(fragment: str, sources: Sources) -> Iterator[tuple[str, int, int]]:
    pattern = _loose(_squash(fragment))
    for src in sources.texts:
        for m in pattern.finditer(src):
            yield src, m.start(), m.end()


def _copy_kind(
    text: str, core: tuple[int, int], statement: tuple[int, int], sources: Sources, *, json_statement: bool = False
) -> tuple[str, bool]:
    """How a marker whose core ``text[core[0]:core[1]]`` a source holds was written: ``"copied"`` (in
    quotation marks, or reproduced with the source's neighbouring text: a quote) or ``"bare"``
    (nothing around it copied), and whether its statement (``statement``: the marker, or the
    JSON object holding it) stands in the verdict position (a JSON statement, ``json_statement``,
    only when it begins its line: ``The answer claims {...}`` reports what an answer holds). For a
    standing statement the rest of its line is its own (a keyword, closing punctuation), and only
    a copy reaching around that line makes it a quote (`_with_neighbours` with ``skip``): a
    candidate that holds ``Final verdict: [[B]]`` after a sentence a judge might also write cannot
    take the judge's own line away."""
    quoted, begins, ends = _position(text, *statement)
    if quoted:
        return "copied", False
    start, end = core
    found = _occurrences(text[start:end], sources)
    if begins or (ends and not json_statement):
        line_start, line_end = _line_of(text, *statement)
        skip = (_kept(text, line_start, start), _kept(text, end, line_end) if ends else _kept(text, end, statement[1]))
        return ("copied" if _with_neighbours(text, start, end, found, skip) else "bare"), True
    return ("copied" if _with_neighbours(text, start, end, found) else "bare"), False


def _negated(text: str, start: int, end: int) -> bool:
    """A negation word in the marker's clause before it, or a negative predicate right after it."""
    before = text[max(0, start - 60) : start]
    boundary = None
    for boundary in _CLAUSE_START.finditer(before):
        pass
    clause = before[boundary.end() :] if boundary is not None else before
    return bool(_NEG_BEFORE.search(clause)) or bool(_NEG_AFTER.match(text, end))


def _value(grammar: Grammar, raw: str) -> Any:
    return grammar.normalise(clean_value(raw))


# a line pattern as `nepotism.judging.parse` writes them: a keyword alternation matched ignoring case
_LINE_SHAPE = re.compile(r"\(\?<!\[\\w\]\)\(\?P<k>\(\?i:(.*)\)\)\(\?P<s>", re.DOTALL)


def _alternatives(words: str) -> list[str] | None:
    """``words`` split at its top-level ``|`` (None if it holds an escaped parenthesis or a class)."""
    if "\\(" in words or "\\)" in words or "[" in words:
        return None
    parts, depth, start = [], 0, 0
    for i, char in enumerate(words):
        depth += (char == "(") - (char == ")")
        if char == "|" and depth == 0:
            parts.append(words[start:i])
            start = i + 1
    return [*parts, words[start:]]


def _literal_first(words: str, budget: int = 64) -> list[str] | None:
    """Alternatives matching what ``words`` matches, each starting with a letter: a leading group
    is distributed (``(?:a|b)x`` -> ``ax|bx``; ``(?:a)?x`` -> ``ax|x``). A pattern whose
    alternatives all start with a letter is searched by the regex engine from their first letters
    only (in C), not tried at every position. None when ``words`` has another shape."""
    alternatives = _alternatives(words)
    if alternatives is None:
        return None
    out: list[str] = []
    for alt in alternatives:
        if alt[:1].isalpha():
            out.append(alt)
            continue
        if not alt.startswith("(?:"):
            return None
        depth, close = 0, -1
        for i, char in enumerate(alt):
            depth += (char == "(") - (char == ")")
            if depth == 0:
                close = i
                break
        inner, rest = alt[3:close], alt[close + 1 :]
        inner_alts = _alternatives(inner)
        if inner_alts is None or "(?" in inner and any(a.startswith("(?=") or a.startswith("(?!") for a in inner_alts):
            return None
        if rest.startswith("?") and not rest.startswith("??"):
            expanded = [a + rest[1:] for a in inner_alts] + [rest[1:]]
        elif rest[:1] in ("*", "+", "{", "?"):
            return None
        else:
            expanded = [a + rest for a in inner_alts]
        if any(not e for e in expanded):
            return None
        more = _literal_first("|".join(expanded), budget - 1) if budget > 0 else None
        if more is None:
            return None
        out.extend(more)
    return out


@lru_cache(maxsize=256)
def _keyword_finder(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """For a line pattern ``(?<![\\w])(?P<k>(?i:WORDS))(?P<s>...`` whose WORDS hold no capital
    letter: WORDS as letter-first alternatives (`_literal_first`) matching case-sensitively, which
    in a lowercased ASCII text finds exactly the places where the pattern's keyword matches the
    original text (None for other patterns)."""
    shape = _LINE_SHAPE.match(pattern.pattern)
    if shape is None or pattern.flags & re.IGNORECASE or shape.group(1) != shape.group(1).lower():
        return None
    alternatives = _literal_first(shape.group(1))
    return None if alternatives is None else re.compile("|".join(alternatives))


def _line_matches(text: str, pattern: re.Pattern[str]) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text)``, the same matches. In an ASCII text (what judges write) the
    pattern is tried only where its keyword occurs: a plain keyword search over the lowercased text
    runs in C from the keywords' first letters, where the pattern, which starts with a look-behind
    and a case-insensitive alternation, is tried at every position (over half of reading a 2-4 KB
    reply). Lowercasing an ASCII text keeps every index, and an ASCII character matches a
    lowercase letter ignoring case exactly when its lowercase is that letter."""
    finder = _keyword_finder(pattern) if text.isascii() else None
    if finder is None:
        yield from pattern.finditer(text)
        return
    lowered, pos = text.lower(), 0
    while (hit := finder.search(lowered, pos)) is not None:
        match = pattern.match(text, hit.start())  # the look-behind sees the text before the start
        if match is None:
            pos = hit.start() + 1
            continue
        yield match
        pos = match.end()  # never empty: it holds the keyword


def _line_markers(text: str, grammar: Grammar, pattern: re.Pattern[str], tier: str) -> list[Marker]:
    out = []
    for m in _line_matches(text, pattern):
        rest = m.group("v")
        clause = cut_clause(rest)
        value = _value(grammar, clause)
        if value is None and grammar.whole_line:
            whole = _value(grammar, rest)
            if whole is not None:
                clause, value = rest, whole
        if not clean_value(clause):
            continue
        end = m.start("v") + len(clause.rstrip())
        keyword = m.group("k")
        words = keyword.split()
        first = m.start("k") + (len(keyword) - len(words[-1]) if words else 0)
        core = text[first:end]
        explicit = bool(re.search(r"[:=]", m.group("s")))
        note = ""
        if value is not None and _NEG_AFTER.match(text, end):
            value, note = None, "negated"
        elif value is None and (_NEG_BEFORE.search(clause) or _NEG_WORDS.search(clause)):
            note = "negated"
        if value is None:
            if not (explicit and tier == "statement"):
                continue
            # an unreadable statement is compared with the candidates by its keyword and first word
            # only, so a quote cut anywhere after them is still recognised as a quote
            head = re.match(r"\s*\S+", clause)
            core = text[first : m.start("v") + (head.end() if head else 0)]
        out.append(Marker(m.start(), end, value, "line" if tier == "statement" else "hint", core, tier, note))
    return out


def find_markers(text: str, grammar: Grammar, sources: Sources | Sequence[str] = ()) -> list[Marker]:
    """Every statement and hint marker in ``text`` (already stripped of reasoning), in order of
    their end, masked ones included (with ``masked`` set). Positional forms are not included."""
    sources = _as_sources(sources)
    masked = _spans_masked(text)
    markers: list[Marker] = []
    json_spans: list[tuple[int, int]] = []
    objects: dict[int, tuple[int, int]] = {}  # a JSON member's start -> the object (the statement) holding it
    if "{" in text:
        for start, end, value in find_json(text, masked):
            if not _has_object(value):
                continue  # [[1]] or [[7]] decode as JSON but are bracket markers
            json_spans.append((start, end))
            for key_at, value_end, raw in _json_members(text, start, end, grammar.json_keys):
                markers.append(Marker(key_at, value_end, _value(grammar, raw), "json", text[key_at:value_end]))
                objects[key_at] = (start, end)
    blocked = masked + json_spans
    if grammar.json_keys and '"' in text:
        keys = "|".join(sorted((re.escape(k).replace("_", "[_ ]") for k in grammar.json_keys), key=len, reverse=True))
        field_re = re.compile(rf'"(?i:{keys})"\s*:\s*(?:"([^"\n]{{0,80}})"|(true|false|-?\d+(?:\.\d+)?))')
        for m in field_re.finditer(text):
            if not _overlaps(json_spans, m.start(), m.end()):
                raw = m.group(1) if m.group(1) is not None else m.group(2)
                markers.append(Marker(m.start(), m.end(), _value(grammar, raw), "json-field", m.group(0)))
    for kind, pattern, binds_invalid, literal in _CONTAINER_PATTERNS:
        if literal not in text:  # every match holds it
            continue
        for m in pattern.finditer(text):
            raw = m.group(1)
            value = _value(grammar, raw)
            if value is not None or binds_invalid:
                core = m.group(0)
                cleaned = clean_value(raw)
                if value is not None and cleaned != raw.strip():
                    # quotes or emphasis inside the delimiters ("\boxed{A"}" where a quote cut
                    # before the brace was closed by the judge's own text): compared up to the value
                    core = text[m.start() : m.start(1) + raw.find(cleaned) + len(cleaned)]
                markers.append(Marker(m.start(), m.end(), value, kind, core))
    containers = [(mk.start, mk.end) for mk in markers]
    if grammar.line is not None:
        markers += [
            mk for mk in _line_markers(text, grammar, grammar.line, "statement") if not _overlaps(containers, mk.start, mk.end)
        ]
    if grammar.weak_line is not None:
        markers += [
            mk for mk in _line_markers(text, grammar, grammar.weak_line, "hint") if not _overlaps(containers, mk.start, mk.end)
        ]
    out = []
    for mk in markers:
        why, standing = "", False
        # a JSON field is compared without its outer quotes: a quote cut inside a key or a string
        # value and closed by the judge's own quotation mark is still the candidate's text
        core = mk.core.strip('"') if mk.kind in ("json", "json-field") else mk.core
        held = sources.contains(core)
        if _inside(masked if mk.kind == "json" else blocked, mk.start, mk.end):
            why = "quoted" if held else "block"
        elif held:
            at = max(text.find(core, mk.start), mk.start)
            statement = objects.get(mk.start, (mk.start, mk.end))
            if _in_copied_fence(text, statement, sources):
                why = "copied"
            else:
                why, standing = _copy_kind(
                    text, (at, at + len(core)), statement, sources, json_statement=mk.kind in ("json", "json-field")
                )
        note = mk.note
        if not note and mk.value is not None and mk.kind in _CONTAINERS and _negated(text, mk.start, mk.end):
            note = "negated"
        value = None if note == "negated" else mk.value
        out.append(Marker(mk.start, mk.end, value, mk.kind, mk.core, mk.tier, note, why, standing))
    out.sort(key=lambda mk: (mk.end, mk.start))
    return out


def _bare(reply: str, grammar: Grammar) -> Marker | None:
    """The whole reply as one value (``B``, ``**A.**``, ``[[B]]``), or None."""
    if len(reply.strip()) > _BARE_MAX:
        return None
    value = _value(grammar, reply)
    if value is None:
        inner = _BRACKET.fullmatch(clean_value(reply))
        value = None if inner is None else _value(grammar, inner.group(1))
    if value is None:
        return None
    return Marker(0, len(reply), value, "bare", reply.strip(), "positional")


def _leading_copied(text: str, start: int, end: int, sources: Sources) -> bool:
    """True when a source holds the leading value followed by what follows it in the reply (the
    same punctuation mark, or a line end), or holds it at all when it carries marker syntax."""
    piece = _squash(text[start:end])
    if not piece:
        return False
    if re.search(r"[^\w\s.,:;!?]", piece) and sources.contains(piece):
        return True  # marker syntax (brackets, dollars, braces) a candidate holds: a cut of its marker
    after = re.match(r"[ \t*_`]*(\S?)", text[end:])
    follow = re.escape(after.group(1)) if after and after.group(1) else r"(?:\r?\n|$)"
    pattern = re.compile(("(?<!\\w)" if _is_word(piece[0]) else "") + re.escape(piece) + r"[ \t*_`]*" + follow)
    return any(pattern.search(_IGNORED.sub("", src)) for src in sources.texts)


def _leading(text: str, grammar: Grammar, sources: Sources) -> Marker | None:
    """A value that opens the visible text on its own first line (``"B\n\nB is better because..."``)
    or before the first comma, colon or full stop of it (``"No, I did not write this."``)."""
    match = re.search(r"\S[^\n]*", text)
    if match is None or _inside(_spans_masked(text), match.start(), match.end()):
        return None
    line = match.group(0)
    head = re.split(r"[,;:!]|\.[*_`]*(?:\s|$)| - ", line, maxsplit=1)[0]
    for piece in (line, head):
        if len(piece) <= _LEADING_MAX:
            value = _value(grammar, piece)
            if value is not None:
                start, end = match.start(), match.start() + len(piece.rstrip())
                if _leading_copied(text, start, end, sources):
                    return Marker(start, end, value, "leading", piece, "positional", "", "copied")
                if _NEG_AFTER.match(text, end):
                    return Marker(start, end, None, "leading", piece, "positional", "negated")
                return Marker(start, end, value, "leading", piece, "positional")
    return None


def _same_line(text: str, a: Marker, b: Marker) -> bool:
    return "\n" not in text[min(a.start, b.start) : max(a.end, b.end)]


def _decide(pool: list[Marker], n_masked: int, text: str = "", bare: Sequence[Marker] = ()) -> Reading:
    """The reading of the judge's own markers ``pool`` (in order): negated markers are no
    statements; the last of the rest decides unless another disagrees, or a marker a candidate
    holds stands bare (not quoted) on its line with a different value."""
    stated = [mk for mk in pool if mk.note != "negated"]
    if not stated:
        return Reading(None, "negated", pool[-1], n_masked)
    final = stated[-1]
    if final.value is None:
        return Reading(None, "invalid_verdict", final, n_masked)
    if any(mk.value is not None and mk.value != final.value for mk in stated):
        return Reading(None, "conflicting", final, n_masked)
    if any(mk.value is not None and mk.value != final.value and _same_line(text, mk, final) for mk in bare):
        return Reading(None, "conflicting", final, n_masked)
    return Reading(final.value, "", final, n_masked)


def _claimed(markers: Sequence[Marker], n_masked: int, hidden: Callable[[], Sequence[Marker]] = lambda: ()) -> Reading | None:
    """The judge's final statement when a candidate holds the same text: the last marker of the
    first tier (statements, else hints) that stands bare in the verdict position (it begins or
    ends its line, nothing around it copied from a candidate), read only when no marker that could
    be the judge's own disagrees: one of the judge's own, another bare one anywhere, or one in a
    quoting block that no candidate holds (the judge's own words, set in a block) — also in text
    dropped before a closing reasoning tag that has no opening one (``hidden``, found only when
    needed). Quotes of a candidate — in quotation marks, in a
    quoting block, or with its neighbouring words — never disagree. None when no such marker
    exists."""
    for tiers in (("statement",), ("statement", "hint")):
        claims = [mk for mk in markers if mk.tier == tiers[-1] and mk.masked == "bare" and mk.standing and mk.value is not None]
        if not claims:
            continue
        final = claims[-1]
        rivals = [
            mk
            for mk in [*markers, *hidden()]
            if mk.tier in tiers and mk.value is not None and mk.value != final.value and mk.masked in ("", "bare", "block")
        ]
        return Reading(None, "conflicting", final, n_masked) if rivals else Reading(final.value, "", final, n_masked)
    return None


def _first_line_conflict(text: str, grammar: Grammar, leading: Marker) -> bool:
    """True when another sentence of the first line, read as a whole, is a different value
    (``Answer A is better. Answer B is better.``)."""
    line = text[leading.start : _line_of(text, leading.start, leading.start)[1]]
    for piece in re.split(r"[,;:!]|\.[*_`]*(?:\s|$)| - ", line)[1:]:
        if len(piece) <= _LEADING_MAX:
            value = _value(grammar, piece)
            if value is not None and value != leading.value:
                return True
    return False


def read_verdict(reply: str | None, grammar: Grammar, sources: Sources | Sequence[str] = ()) -> Reading:
    """The judge's own verdict in ``reply`` (see the module docstring), or why there is none."""
    if reply is None or not reply.strip():
        return Reading(None, "empty_reply")
    sources = _as_sources(sources)
    visible, unfinished, irregular, dropped = _strip(reply, sources)
    markers = find_markers(visible, grammar, sources)
    own = [mk for mk in markers if not mk.masked]
    bare = [mk for mk in markers if mk.masked == "bare"]
    n_masked = len(markers) - len(own)
    pools = [[mk for mk in own if mk.tier == tier] for tier in ("statement", "hint")]
    pools = [pool for pool in pools if pool][:1]  # hints count only when the judge wrote no statement
    if pools and any(mk.note != "negated" for mk in pools[0]):
        return _decide(pools[0], n_masked, visible, bare)
    # reasoning blocks left unclosed, or closed twice, hide text that may hold the judge's statement;
    # so may the text before a closing tag without an opening one (taken as reasoning the chat
    # template opened): a statement there in the judge's own words may be its verdict
    claimed = (
        None
        if unfinished or irregular
        else _claimed(markers, n_masked, lambda: [mk for piece in dropped for mk in find_markers(piece, grammar, sources)])
    )
    if claimed is not None:
        return claimed
    if pools:
        return _decide(pools[0], n_masked, visible, bare)
    if visible == reply:
        bare_reply = _bare(reply, grammar)
        if bare_reply is not None:
            return Reading(bare_reply.value, "", bare_reply, n_masked)
    if n_masked:  # the judge quoted markers: no positional guess in such a reply
        return Reading(None, "quoted_only", None, n_masked)
    leading = _leading(visible, grammar, sources)
    if leading is not None and not leading.masked:
        if leading.value is not None and _first_line_conflict(visible, grammar, leading):
            return Reading(None, "conflicting", leading, n_masked)
        return _decide([leading], n_masked, visible)
    if leading is not None:
        return Reading(None, "quoted_only", None, 1)
    return Reading(None, "unfinished_reasoning" if unfinished else "no_verdict", None, n_masked)


def find_value(text: str, grammar: Grammar, sources: Sources | Sequence[str] = ()) -> tuple[Any, str]:
    """``(value, "")`` or ``(None, reason)``: `read_verdict` without the details."""
    reading = read_verdict(text, grammar, sources)
    return reading.value, reading.reason
