"""The answer grammars of every protocol, and the all-rubrics list reader.

Where a verdict may be written, what makes it conflicting and how quotes are told apart is the same
for every protocol and lives in `nepotism.judging.markers` (docs/verdicts.md in prose). This module
says, per protocol, which values are valid and which keywords introduce them:

* pairwise / pairwise recognition: ``A``/``B`` (``1``/``2`` with numbered labels), optionally
  named (``Answer A``, ``Assistant B``) and optionally followed by a positive predicate (``is
  better``, ``is slightly better``, ``wins``, ``is better than B``, recognition: ``is mine``);
  the arena forms ``A>B``, ``B>>A``, ``A=B``; three-way ties ``C`` (the label the prompts ask
  for), ``T``, ``tie``, ``a tie``, ``draw``, ``neither``, ``equal``, ``both are equal``. A tie in a
  two-way task is not valid, nor is anything else: ``B is incorrect``, ``A is worse than B``,
  ``Neither A nor B is correct`` are never read as a letter. Statement keywords: ``Final
  verdict``, ``Verdict``, ``Decision``, ``Winner``, ``The better answer`` (recognition: ``My
  answer``, ``Mine``); hints: ``Answer:``, ``Final answer:``, ``Choice:`` (on multiple-choice items
  they often name a candidate's answer, so they never outweigh a statement).
  JSON keys: ``verdict``, ``winner``, ``preferred``, ``outcome``, ``choice``, ``answer``, ...
* scale: ``7``, ``7/10``, ``7 out of 10`` within the scale (the denominator must be its top);
  statements ``Rating``, ``Final rating``, ``Overall score``...; hints ``Score``, ``Grade``.
* fraction: ``X/Y`` with Y the number of rubric items; statements ``Met``, ``Criteria met``;
  hints ``Score``, ``Count``.
* yes/no (rubric, recognition): ``yes``/``no``, ``true``/``false``, ``met``/``not met``;
  statements ``Verdict``, ``Criterion met`` (recognition: ``Judgment``); hint ``Answer:``.
* category: a category name (ignoring case and spacing) or its 1-based number; statement
  ``Category``; hint ``Label``.

Nothing here builds judgments; `nepotism.judging.interpret` does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from nepotism.judging.markers import Grammar, Sources, clean_value, find_json, quote_status, strip_reasoning

__all__ = [
    "category_grammar",
    "fraction_grammar",
    "pairwise_grammar",
    "parse_rubric_list",
    "scale_grammar",
    "yes_no_grammar",
]

_WHO = r"(?:answer|reply|response|assistant|option|candidate|output)"
_YES = {"yes", "y", "true", "met", "mine", "1"}
_NO = {"no", "n", "false", "not met", "unmet", "not mine", "0"}
_VERDICT_KEYS = frozenset(
    {
        "verdict",
        "final_verdict",
        "winner",
        "preferred",
        "preferred_answer",
        "preferred_response",
        "better",
        "better_answer",
        "better_response",
        "outcome",
        "choice",
        "decision",
        "judgment",
        "judgement",
        "answer",
        "final_answer",
    }
)
# keyword, then what separates it from the value: emphasis, "is", a colon, quotes or brackets
_SEP = r"(?P<s>[*_]*[ \t]*(?:(?:is|was)\b[ \t]*)?[:=\-–]?[*_]*[ \t]*\n?[ \t]*[*_\"'`\[$(]*[ \t]*)"
_REST = r"(?P<v>[^\n]{0,160})"
_DEGREE = r"(?:(?:slightly|significantly|much|clearly|far|somewhat|marginally|a\s+bit|a\s+little|overall)\s+)?"
_POSITIVE = (
    rf"\s+(?:(?:is|was)\s+(?:the\s+)?{_DEGREE}(?:better|preferred|superior|stronger|best|winner)"
    r"(?:\s+(?:one|answer|reply|response|choice|option))?|wins)"
)
_MINE = r"\s+(?:is|was)\s+(?:mine|my\s+own|written\s+by\s+me|the\s+one\s+i\s+wrote)"
_TIE = re.compile(
    r"(?:it\s*(?:'s|is)\s+)?(?:a\s+)?(?:c|t|tie|tied|draw)|equal|same|about\s+the\s+same|"
    r"neither(?:\s+(?:one|answer|response|reply))?(?:\s+is\s+(?:clearly\s+)?better)?|"
    r"both\s+are\s+(?:equal|equally\s+good|about\s+the\s+same)|(?:they\s+are\s+)?(?:equally\s+good|equal)"
)


def _line(words: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w])(?P<k>(?i:{words})){_SEP}{_REST}")


@lru_cache(maxsize=256)
def pairwise_grammar(*, ways: int = 3, numbers: bool = False, recognition: bool = False) -> Grammar:
    """Grammar for A/B(/tie) answers; values are ``"A"``, ``"B"`` and ``"tie"``."""
    first, second = ("1", "2") if numbers else ("a", "b")
    names = {first: "A", second: "B"}
    label = rf"(?:{_WHO}\s*)?([a-z0-9]+)"
    predicate = _POSITIVE + (f"|{_MINE}" if recognition else "")
    plain = re.compile(rf"{label}(?:{predicate})?(?:\s+than\s+{label})?")

    def normalise(raw: str) -> str | None:
        text = re.sub(r"\s+", " ", raw.strip().lower()).rstrip(".!")
        arena = re.fullmatch(r"([a-z0-9])\s*(>>|>|=|<<|<)\s*([a-z0-9])", text)
        if arena:
            left, op, right = arena.groups()
            if {left, right} != {first, second}:
                return None
            if op == "=":
                return "tie" if ways == 3 else None
            return names[left] if op.startswith(">") else names[right]
        if _TIE.fullmatch(text):
            return "tie" if ways == 3 and not numbers else None
        match = plain.fullmatch(text)
        if not match or match.group(1) not in names:
            return None
        other = match.group(2)
        if other is not None and (other not in names or other == match.group(1)):
            return None
        return names[match.group(1)]

    keys = _VERDICT_KEYS | ({"yours", "mine", "written_by_me", "author", "which", "own"} if recognition else set())
    words = r"final\s+verdict|verdict|decision|winner|(?:the\s+)?(?:better|preferred)\s+(?:answer|reply|response|assistant|one)"
    if recognition:
        words += r"|my\s+(?:own\s+)?answer|mine|written\s+by\s+me"
    # "Answer:" and "Final answer:" often name a candidate's answer (multiple choice), not a verdict
    return Grammar(normalise, keys, _line(words), _line(r"(?:final\s+)?(?:answer|choice)(?=\s*:)"))


@lru_cache(maxsize=256)
def scale_grammar(low: int, high: int) -> Grammar:
    """Grammar for a number on the scale low..high (``7``, ``7/10``, ``7 out of 10``)."""

    def normalise(raw: str) -> float | None:
        match = re.fullmatch(r"(-?\d+(?:\.\d+)?)(?:\s*(?:/|out\s+of)\s*(\d+))?(?:\s+points?)?", raw.strip().lower())
        if not match:
            return None
        if match.group(2) is not None and int(match.group(2)) != high:
            return None
        value = float(match.group(1))
        return value if low <= value <= high else None

    words = r"(?:final\s+|overall\s+)?rating|final\s+score|overall\s+score|final\s+grade"
    return Grammar(
        normalise, frozenset({"rating", "score", "grade", "overall_rating", "overall_score"}), _line(words), _line(r"score|grade")
    )


@lru_cache(maxsize=256)
def fraction_grammar(items: int) -> Grammar:
    """Grammar for ``X/Y`` rubric items met; the value is ``(X, Y)`` with Y equal to ``items``."""

    def normalise(raw: str) -> tuple[int, int] | None:
        match = re.fullmatch(r"(\d+)\s*/\s*(\d+)", raw.strip())
        if not match:
            return None
        met, total = int(match.group(1)), int(match.group(2))
        return (met, total) if total == items and met <= total else None

    keys = frozenset({"met", "score", "count", "criteria_met", "items_met", "fraction", "result"})
    return Grammar(normalise, keys, _line(r"criteria\s+met|items\s+met|met"), _line(r"score|count"))


def _yes_no(raw: str) -> str | None:
    text = re.sub(r"\s+", " ", raw.strip().lower())
    if text in _YES:
        return "yes"
    if text in _NO:
        return "no"
    return None


@lru_cache(maxsize=256)
def yes_no_grammar(*, recognition: bool = False) -> Grammar:
    """Grammar for yes/no answers (rubric criteria, pointwise recognition)."""
    if recognition:
        keys = {
            "answer",
            "judgment",
            "judgement",
            "verdict",
            "wrote_it",
            "written_by_me",
            "is_mine",
            "mine",
            "yours",
            "by_me",
            "is_student",
            "student",
        }
        words = r"final\s+verdict|verdict|judge?ment"
    else:
        keys = {"criterion_met", "criteria_met", "met", "meets_criterion", "meets_criteria", "verdict", "answer", "result"}
        words = r"criteri(?:on|a)\s+met|final\s+verdict|verdict"
    return Grammar(_yes_no, frozenset(keys), _line(words), _line(r"(?:final\s+)?answer(?=\s*:)"))


def category_grammar(names: Sequence[str]) -> Grammar:
    """Grammar for one of ``names`` (by name ignoring case and spacing, or by 1-based number)."""
    return _category_grammar(tuple(names))


@lru_cache(maxsize=256)
def _category_grammar(names: tuple[str, ...]) -> Grammar:
    folded = {re.sub(r"\s+", " ", n).casefold(): n for n in names}

    def one(text: str) -> str | None:
        text = re.sub(r"\s+", " ", text.strip()).casefold()
        if text.isdigit():
            index = int(text)
            return names[index - 1] if 1 <= index <= len(names) else None
        text = clean_value(re.sub(r"^\d+\s*[.)]\s*", "", text)).casefold()
        if text in folded:
            return folded[text]
        return folded.get(clean_value(text.split(":", 1)[0]).casefold())

    line = re.compile(r"(?<![\w])(?P<k>(?i:category))(?P<s>\s*[:=]\s*)(?P<v>[^\n]{1,80})")
    weak = re.compile(r"(?<![\w])(?P<k>(?i:label))(?P<s>\s*[:=]\s*)(?P<v>[^\n]{1,80})")
    keys = frozenset({"category", "label", "class", "question_category", "type"})
    return Grammar(one, keys, line, weak, whole_line=True)


def _entry(value: Any) -> tuple[int | None, str | None]:
    """(item number or None, "yes"/"no"/None) from one list entry."""
    if isinstance(value, dict):
        number = None
        for key in ("item", "id", "index", "number", "criterion"):
            raw = value.get(key)
            if isinstance(raw, int) and not isinstance(raw, bool):
                number = raw
                break
            if isinstance(raw, str) and raw.strip().isdigit():
                number = int(raw.strip())
                break
        for key in ("criterion_met", "criteria_met", "met", "meets", "result", "answer", "verdict"):
            if key in value:
                raw = value[key]
                text = ("true" if raw else "false") if isinstance(raw, bool) else str(raw)
                return number, _yes_no(clean_value(text))
        return number, None
    if isinstance(value, bool):
        return None, "yes" if value else "no"
    if isinstance(value, str):
        return None, _yes_no(clean_value(value))
    return None, None


def _results_list(value: Any) -> list[Any] | None:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in ("results", "criteria", "items", "rubric", "answers"):
            found = value.get(key)
            if isinstance(found, list):
                return found
    return None


def _place(entries: list[tuple[int | None, str | None]], items: int) -> tuple[list[str | None], str]:
    """Per-item verdicts from a list's entries, and a note on what was off."""
    out: list[str | None] = [None] * items
    numbered = [(number, verdict) for number, verdict in entries if number is not None]
    if entries and len(numbered) == len(entries):
        counts: dict[int, int] = {}
        for number, _ in numbered:
            counts[number] = counts.get(number, 0) + 1
        for number, verdict in numbered:
            if 1 <= number <= items and counts[number] == 1:
                out[number - 1] = verdict
        note = "" if sorted(counts) == list(range(1, items + 1)) and len(entries) == items else "misnumbered"
        return out, note
    if len(entries) > items:
        return out, "too many entries"
    for i, (_, verdict) in enumerate(entries):
        out[i] = verdict
    return out, "" if len(entries) == items else "too few entries"


_CRITERION_FIELD = re.compile(r'"criteri(?:on|a)_met"\s*:\s*"?(true|false|yes|no)"?', re.IGNORECASE)


def parse_rubric_list(text: str, items: int, sources: Sources | Sequence[str] = ()) -> tuple[list[str | None], str]:
    """Per-item ``"yes"``/``"no"``/None from an all-rubrics answer, and a note on what was off.

    Results lists are JSON lists in the visible output (``{"results": [...]}`` or a bare list)
    with at least one readable entry; entries are booleans, yes/no strings or objects with
    ``criterion_met`` and optionally an ``item`` number. A list whose text also occurs in
    ``sources`` (the answer being graded, the question) is a quote when it is copied with the
    answer's text around it or in quotation marks (`nepotism.judging.markers.quote_status`), and
    never counts; one copied bare, with nothing of the answer around it, counts only when the judge
    wrote no list of its own, it stands on its own line and every other bare list agrees (the
    judge's own list is its own even when the answer holds the same one); ``"quoted_only"`` when
    no list counts. Two of the judge's own lists that place different verdicts make every item
    unparsed (``"conflicting"``). Numbered entries are placed
    by number (a repeated number makes that item unparsed); unnumbered ones by position. A list
    longer than the rubric cannot be aligned, so every item is unparsed; a shorter one leaves the
    missing items unparsed. When no list can be decoded (a truncated answer) the
    ``"criterion_met": true|false`` fields the judge wrote are read in order.
    """
    sources = sources if isinstance(sources, Sources) else Sources(sources)
    visible = strip_reasoning(text, sources)
    none: list[str | None] = [None] * items
    placed, bare, quoted = [], [], False
    for start, end, value in find_json(visible):
        lst = _results_list(value)
        if lst is None:
            continue
        entries = [_entry(v) for v in lst]
        if not any(verdict is not None for _, verdict in entries):
            continue
        copied, standing = quote_status(visible, start, end, sources)
        if copied == "copied":
            quoted = True
        elif copied == "bare":
            bare.append((_place(entries, items), standing))
        else:
            placed.append(_place(entries, items))
    if not placed and any(standing for _, standing in bare):  # the judge's own list, also held by the answer
        placed = [one for one, _ in bare]
    if placed:
        if len({tuple(verdicts) for verdicts, _ in placed}) > 1:
            return none, "conflicting"
        return placed[-1]
    quoted = quoted or bool(bare)
    fields = [m for m in _CRITERION_FIELD.finditer(visible) if not sources.contains(m.group(0))]
    if not fields:
        return none, "quoted_only" if quoted or _CRITERION_FIELD.search(visible) else "no list"
    return _place([(None, _yes_no(m.group(1))) for m in fields], items)
