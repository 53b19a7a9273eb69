"""Grade a multiple-choice response: read the chosen option letter and compare it with the gold one.

A letter counts as *asserted* by one of these patterns, tried in this order:

1. ``stated`` — a statement of the choice anywhere: ``\\boxed{B}`` (also ``\\boxed{\\text{(B)}}``),
   "the answer is (B)", "Answer: **B**", "correct option/choice is B", "I choose B";
2. ``leading`` — the response opens with the letter: ``B``, ``(B)``, ``B)``, ``B.``, ``B:``,
   ``**B**``, ``B. some text``;
3. ``line`` — a line holding only a letter marker (``(B)``, ``B)``, ``**B**``, ``B``).

The first pattern that finds anything decides; when it finds two different letters (the response
asserts both) the response is ambiguous and ``correct`` is None, as when no letter is found.
Lowercase letters count only inside a marker (``(b)``, ``b)``, ``answer: b``), because a bare "a"
is usually an article. Letters beyond ``letters`` (default A–J) are ignored.

Left out: matching the option *text* instead of its letter.
"""

from __future__ import annotations

import re

from nepotism.grading._result import GradeResult

__all__ = ["extract_letter", "grade_multiple_choice"]

_DEFAULT_LETTERS = "ABCDEFGHIJ"


def _patterns(letters: str) -> dict[str, list[re.Pattern[str]]]:
    up = re.escape(letters.upper())
    anyc = re.escape(letters.upper() + letters.lower())
    # a letter wrapped in a marker: (B), **B**, B), b) ...; case-insensitive letter inside
    marked = rf"(?:\(\s*([{anyc}])\s*\)|\*\*\s*\(?([{anyc}])\)?\s*\*\*|([{anyc}])\)|\[([{anyc}])\])"
    bare_upper = rf"([{up}])(?![A-Za-z0-9'])"
    lower_end = rf"([{re.escape(letters.lower())}])(?=\s*(?:[.:,;)]|$))"
    stated_lead = (
        r"(?:\b(?:final\s+)?answer\s*(?:is|:|=)|\b(?:correct|right|best)\s+(?:answer|option|choice)\s*(?:is|:)"
        r"|\b(?:I|we)\s+(?:choose|pick|select))\s*(?:option\s+|choice\s+|letter\s+)?:?\s*"
    )
    return {
        "stated": [
            re.compile(rf"\\boxed\{{\s*(?:\\text(?:bf)?\{{)?\s*\(?([{anyc}])\)?\s*\}}?\s*\}}"),
            re.compile(stated_lead + rf"(?:{marked}|{bare_upper}|{lower_end})"),
        ],
        "leading": [
            re.compile(rf"\A\s*(?:{marked}|([{up}])(?=\s*(?:[.:]|$|\s*\n))|([{anyc}])(?=[.:]\s))"),
        ],
        "line": [
            re.compile(rf"^\s*(?:{marked}|([{up}]))\s*[.:]?\s*$", re.MULTILINE),
        ],
    }


_CACHE: dict[str, dict[str, list[re.Pattern[str]]]] = {}


def _letters_found(pattern: re.Pattern[str], text: str) -> list[str]:
    found = []
    for match in pattern.finditer(text):
        groups = [g for g in match.groups() if g]
        if groups:
            found.append(groups[0].upper())
    return found


def extract_letter(text: str, letters: str = _DEFAULT_LETTERS) -> tuple[str | None, str | None]:
    """Return ``(letter, rule)``; ``(None, "ambiguous")`` when two letters are asserted.

    ``(None, None)`` when no letter is found at all.
    """
    if not text:
        return None, None
    # make "answer is" matching case-insensitive on the words but not on a bare letter
    patterns = _CACHE.setdefault(letters, _patterns(letters))
    lowered_words = re.sub(
        r"\b(ANSWER|Answer|FINAL|Final|CORRECT|Correct|OPTION|Option|CHOICE|Choice|IS|Is|THE|The)\b",
        lambda m: m.group(0).lower(),
        text,
    )
    for rule in ("stated", "leading", "line"):
        found: list[str] = []
        for pattern in patterns[rule]:
            found += _letters_found(pattern, lowered_words if rule == "stated" else text)
        if found:
            if len(set(found)) > 1:
                return None, "ambiguous"
            return found[0], rule
    return None, None


def grade_multiple_choice(response: str, answer: str, *, letters: str = _DEFAULT_LETTERS) -> GradeResult:
    """Grade ``response`` against the gold option letter ``answer`` (``"B"``, ``"(b)"``, ...)."""
    gold = re.sub(r"[^A-Za-z]", "", str(answer or "")).upper()
    if len(gold) != 1 or gold not in letters.upper():
        raise ValueError(f"the gold answer {answer!r} is not one option letter of {letters}")
    letter, rule = extract_letter(response or "", letters)
    if letter is None:
        detail = "two different letters asserted" if rule == "ambiguous" else "no option letter found"
        return GradeResult(None, None, rule, None, detail)
    return GradeResult(letter == gold, letter, rule, "letter")
