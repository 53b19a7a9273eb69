"""The answer grammars of every protocol, and the all-rubrics list reader.

Accepted written forms, besides a whole output that is only the value:

* pairwise / pairwise recognition: ``[[A]]``, ``$$A$$``, ``\\boxed{A}``, a JSON field
  (``"verdict"``, ``"winner"``, ``"preferred"``, ``"outcome"``, ... holding ``"A"``,
  ``"Answer A"`` or ``"A is better"``), ``Final verdict: A`` / ``Verdict: B``, and the
  ``[[A>B]]``/``[[A=B]]`` style. Three-way ties are written ``C`` (the label the prompts ask for),
  ``T`` or ``tie``; a tie in a two-way task is not a valid answer. Numbered labels read ``1``/``2``.
* scale: ``Rating: [[7]]``, ``[[7/10]]``, ``"rating": 7``, ``Score: 7``; out of range is invalid.
* fraction: ``{"met": "2/3"}``, ``[[2/3]]``, ``Met: 2/3``; the denominator must be the number of
  rubric items.
* yes/no (rubric, recognition): ``{"criterion_met": true}``, ``[[yes]]``, ``Verdict: no``,
  ``Answer: yes``; ``true``/``false`` and ``met``/``not met`` count as yes/no.
* category: ``{"category": "Maths"}``, ``[[Maths]]``, ``Category: 2``; names match ignoring case.

Nothing here builds judgments; `nepotism.judging.interpret` does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from nepotism.judging.markers import Grammar, clean_value, find_json, strip_reasoning

__all__ = [
    "category_grammar",
    "fraction_grammar",
    "pairwise_grammar",
    "parse_rubric_list",
    "scale_grammar",
    "yes_no_grammar",
]

_WHO = r"(?:answer|reply|response|assistant|option|candidate|output)"
_TIE_WORDS = {"c", "t", "tie", "draw", "equal", "neither", "same", "tied"}
_YES = {"yes", "y", "true", "met", "mine", "1"}
_NO = {"no", "n", "false", "not met", "unmet", "not mine", "0"}
_VERDICT_KEYS = frozenset({
    "verdict", "final_verdict", "winner", "preferred", "preferred_answer", "preferred_response",
    "better", "better_answer", "better_response", "outcome", "choice", "decision", "judgment",
    "judgement", "answer", "final_answer",
})
_KEYWORD_TAIL = r"\s*(?:(?:is|was)\b\s*)?[:=\-–]?\s*[*_\"'`\[$]*\s*"


def pairwise_grammar(*, ways: int = 3, numbers: bool = False, recognition: bool = False) -> Grammar:
    """Grammar for A/B(/tie) answers; values are ``"A"``, ``"B"`` and ``"tie"``."""
    first, second = ("1", "2") if numbers else ("a", "b")
    names = {first: "A", second: "B"}

    def normalise(raw: str) -> str | None:
        text = raw.strip().lower()
        arena = re.fullmatch(r"([a-z0-9])\s*(>>|>|=|<<|<)\s*([a-z0-9])", text)
        if arena:
            left, op, right = arena.groups()
            if {left, right} != {first, second}:
                return None
            if op == "=":
                return "tie" if ways == 3 else None
            return names[left] if op.startswith(">") else names[right]
        match = re.fullmatch(rf"(?:{_WHO}\s*)?([a-z0-9]+)(?:\s+is\s+(?:the\s+)?(?:better|preferred|mine)"
                             r"(?:\s+one)?)?", text)
        if not match:
            return "tie" if ways == 3 and text in ("both are equal", "about the same") else None
        token = match.group(1)
        if token in names:
            return names[token]
        if token in _TIE_WORDS and ways == 3 and not numbers:
            return "tie"
        return None

    keys = _VERDICT_KEYS | ({"yours", "mine", "written_by_me", "author", "which", "own"} if recognition else set())
    value = r"(?P<v>[12])\b" if numbers else r"(?P<v>(?i:(?:answer|reply|response|assistant)\s+)?[A-Z]\b|(?i:tie)\b)"
    words = r"final\s+verdict|verdict|decision|winner|(?:the\s+)?better\s+(?:answer|reply|response)"
    if recognition:
        words += r"|my\s+(?:own\s+)?answer|mine"
    line = re.compile(rf"(?:(?i:{words}){_KEYWORD_TAIL}|(?i:answer|choice):\s*[*_\"'`\[$]*\s*){value}")
    return Grammar(normalise, keys, line)


def scale_grammar(low: int, high: int) -> Grammar:
    """Grammar for a number on the scale low..high (``7``, ``7/10``, ``7 out of 10``)."""

    def normalise(raw: str) -> float | None:
        match = re.fullmatch(r"(-?\d+(?:\.\d+)?)(?:\s*(?:/|out\s+of)\s*(\d+))?", raw.strip().lower())
        if not match:
            return None
        if match.group(2) is not None and int(match.group(2)) != high:
            return None
        value = float(match.group(1))
        return value if low <= value <= high else None

    line = re.compile(rf"(?i:rating|score|grade){_KEYWORD_TAIL}"
                      r"(?P<v>-?\d+(?:\.\d+)?(?:\s*(?:/|out\s+of)\s*\d+)?)")
    return Grammar(normalise, frozenset({"rating", "score", "grade", "overall_rating", "overall_score"}), line)


def fraction_grammar(items: int) -> Grammar:
    """Grammar for ``X/Y`` rubric items met; the value is ``(X, Y)`` with Y equal to ``items``."""

    def normalise(raw: str) -> tuple[int, int] | None:
        match = re.fullmatch(r"(\d+)\s*/\s*(\d+)", raw.strip())
        if not match:
            return None
        met, total = int(match.group(1)), int(match.group(2))
        return (met, total) if total == items and met <= total else None

    line = re.compile(rf"(?i:criteria\s+met|items\s+met|met|score|count){_KEYWORD_TAIL}(?P<v>\d+\s*/\s*\d+)")
    keys = frozenset({"met", "score", "count", "criteria_met", "items_met", "fraction", "result"})
    return Grammar(normalise, keys, line)


def _yes_no(raw: str) -> str | None:
    text = re.sub(r"\s+", " ", raw.strip().lower())
    if text in _YES:
        return "yes"
    if text in _NO:
        return "no"
    return None


def yes_no_grammar(*, recognition: bool = False) -> Grammar:
    """Grammar for yes/no answers (rubric criteria, pointwise recognition)."""
    if recognition:
        keys = {"answer", "judgment", "judgement", "verdict", "wrote_it", "written_by_me", "is_mine",
                "mine", "yours", "by_me", "is_student", "student"}
        words = r"verdict|judge?ment"
    else:
        keys = {"criterion_met", "criteria_met", "met", "meets_criterion", "meets_criteria", "verdict",
                "answer", "result"}
        words = r"criteri(?:on|a)\s+met|verdict"
    line = re.compile(rf"(?:(?i:{words}){_KEYWORD_TAIL}|(?i:answer):\s*[*_\"'`\[$]*\s*)"
                      r"(?P<v>(?i:yes|no|true|false))\b")
    return Grammar(_yes_no, frozenset(keys), line)


def category_grammar(names: Sequence[str]) -> Grammar:
    """Grammar for one of ``names`` (by name ignoring case and spacing, or by 1-based number)."""
    folded = {re.sub(r"\s+", " ", n).casefold(): n for n in names}

    def normalise(raw: str) -> str | None:
        text = re.sub(r"\s+", " ", raw.strip()).casefold()
        if text.isdigit():
            index = int(text)
            return names[index - 1] if 1 <= index <= len(names) else None
        text = re.sub(r"^\d+\s*[.)]\s*", "", text)
        text = clean_value(text).casefold()
        if text in folded:
            return folded[text]
        head = clean_value(text.split(":", 1)[0]).casefold()
        return folded.get(head)

    line = re.compile(r"(?i:category|label)\s*[:=]\s*(?P<v>[^\n]{1,80})")
    return Grammar(normalise, frozenset({"category", "label", "class", "question_category", "type"}), line)


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
            if isinstance(value.get(key), list):
                return value[key]
    return None


def parse_rubric_list(text: str, items: int) -> tuple[list[str | None], str]:
    """Per-item ``"yes"``/``"no"``/None from an all-rubrics answer, and a note on what was off.

    The last JSON list of results in the visible output is used (``{"results": [...]}`` or a bare
    list); entries are booleans, yes/no strings or objects with ``criterion_met`` and optionally
    an ``item`` number. Numbered entries are placed by number (a repeated number makes that item
    unparsed); unnumbered ones by position. A list longer than the rubric cannot be aligned, so
    every item is unparsed; a shorter one leaves the missing items unparsed. When no list can be
    decoded (a truncated answer) the ``"criterion_met": true|false`` fields are read in order.
    """
    visible = strip_reasoning(text)
    out: list[str | None] = [None] * items
    lists = [lst for _, _, v in find_json(visible) if (lst := _results_list(v)) is not None]
    if lists:
        entries = [_entry(v) for v in lists[-1]]
    else:
        found = re.findall(r'"criteri(?:on|a)_met"\s*:\s*"?(true|false|yes|no)"?', visible, re.IGNORECASE)
        entries = [(None, _yes_no(v)) for v in found]
        if not entries:
            return out, "no list"
    if entries and all(number is not None for number, _ in entries):
        counts: dict[int, int] = {}
        for number, _ in entries:
            counts[number] = counts.get(number, 0) + 1
        for number, verdict in entries:
            if 1 <= number <= items and counts[number] == 1:
                out[number - 1] = verdict
        note = "" if sorted(counts) == list(range(1, items + 1)) and len(entries) == items else "misnumbered"
        return out, note
    if len(entries) > items:
        return out, "too many entries"
    for i, (_, verdict) in enumerate(entries):
        out[i] = verdict
    return out, "" if len(entries) == items else "too few entries"
