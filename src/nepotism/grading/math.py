"""Grade a free-form math response against a gold final answer (MATH, GSM8K style).

Extraction: the final answer is read from the response by the first of these rules that finds one
(each rule takes the *last* match in the text):

1. ``boxed``       — ``\\boxed{...}`` / ``\\fbox{...}`` with nested braces (or ``\\boxed 5``);
2. ``hash``        — a GSM8K ``#### 42`` line;
3. ``answer-is``   — "the (final) answer is …" / "Answer: …", up to the end of the sentence/line;
4. ``last-number`` — the last number in the text (integers with thousands commas, decimals,
   simple fractions ``a/b``).

Equivalence: both sides are normalised (thousands commas, a trailing percent sign, ``\\dfrac``,
``\\!``, enclosing ``$``) and then compared with the `math-verify` library (sympy under the hood;
handles ``\\frac12`` = 0.5 = 1/2, ``10^{3}`` = 1000, ``x = 3`` = 3, intervals, units in ``\\text``).
Only when math-verify cannot parse one of the two sides does a normalised string comparison
decide; ``GradeResult.decided_by`` says which path decided. No answer found → ``correct=None``.

Left out: grading of proofs or multi-part answers beyond what math-verify understands; a percent
is compared by its number (50% equals 50, not 0.5).
"""

from __future__ import annotations

import re
import threading
from typing import Any

from nepotism.grading._result import GradeResult

__all__ = ["EXTRACTION_ORDER", "extract_answer", "grade_math", "normalise_answer", "equivalent"]

EXTRACTION_ORDER = ("boxed", "hash", "answer-is", "last-number")

_BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*")
_HASH_RE = re.compile(r"^\s*####\s*(.+?)\s*$", re.MULTILINE)
_ANSWER_IS_RE = re.compile(r"\banswer\**\s*(?:is|=|:)\s*:?\s*(.+?)\s*(?:$|\.(?:\s|$))", re.IGNORECASE | re.MULTILINE)
_NUMBER_RE = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?|-?\.\d+")
_THOUSANDS_RE = re.compile(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")


def _braced(text: str, start: int) -> str | None:
    """Return the content of the brace group opening at ``text[start]`` (nested braces allowed)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i]
    return None


def _last_boxed(text: str) -> str | None:
    found = None
    for match in _BOX_RE.finditer(text):
        end = match.end()
        if end < len(text) and text[end] == "{":
            content = _braced(text, end)
            if content is not None:
                found = content
        else:
            bare = re.match(r"[^\s$]+?(?=[.,;]?(?:\s|\$|$))", text[end:])
            if bare:
                found = bare.group(0)
    return found


def _clean_phrase(value: str) -> str:
    value = value.strip().strip("*").strip()
    value = re.sub(r"^\$+|\$+$", "", value).strip()
    return value.rstrip(".").strip()


def _number_of_phrase(phrase: str) -> str:
    """Reduce a worded phrase holding exactly one number ("Each child got 5 books") to that number.

    Phrases with LaTeX, with several numbers or without words are kept whole.
    """
    if "\\" in phrase or not re.search(r"(?<![\\a-zA-Z])[a-zA-Z]{3,}", phrase):
        return phrase
    numbers = _NUMBER_RE.findall(phrase)
    return numbers[0].replace(" ", "") if len(numbers) == 1 else phrase


def extract_answer(text: str) -> tuple[str | None, str | None]:
    """Return ``(answer, rule)`` by the first rule of `EXTRACTION_ORDER` that finds one."""
    if not text:
        return None, None
    boxed = _last_boxed(text)
    if boxed is not None and boxed.strip():
        return boxed.strip(), "boxed"
    hashes = [p for p in map(_clean_phrase, _HASH_RE.findall(text)) if p]
    if hashes:
        return _number_of_phrase(hashes[-1]), "hash"
    phrases = [p for p in map(_clean_phrase, _ANSWER_IS_RE.findall(text)) if p]
    if phrases:
        return _number_of_phrase(phrases[-1]), "answer-is"
    numbers = _NUMBER_RE.findall(text)
    if numbers:
        return numbers[-1].replace(" ", ""), "last-number"
    return None, None


def normalise_answer(answer: str) -> str:
    """Return a canonical string form of an answer for the string comparison and for parsing."""
    value = answer.strip()
    value = re.sub(r"^\$+|\$+$", "", value).strip()
    value = value.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    value = value.replace("\\!", "").replace("{,}", ",").replace("\\left", "").replace("\\right", "")
    value = re.sub(r"\\(?:%|percent)\s*$|%\s*$", "", value).strip()
    value = re.sub(r"^\\text\{\s*(.*?)\s*\}$", r"\1", value)
    if _THOUSANDS_RE.match(value):
        value = value.replace(",", "")
    value = re.sub(r"^[a-zA-Z]\s*=\s*(?=[-\d\\(\[])", "", value)
    return value.strip().rstrip(".")


def _string_key(answer: str) -> str:
    value = normalise_answer(answer)
    value = re.sub(r"\\text\{([^{}]*)\}|\\mbox\{([^{}]*)\}", lambda m: m.group(1) or m.group(2) or "", value)
    value = re.sub(r"\\[,;: ]|\s+", "", value)
    return value.lower()


def _parse(answer: str) -> list[Any]:
    from math_verify import parse

    timeout = 5 if threading.current_thread() is threading.main_thread() else None
    parsed: list[Any] = parse(f"${answer}$", parsing_timeout=timeout)
    return parsed


def equivalent(gold: str, predicted: str) -> tuple[bool, str]:
    """Return ``(equal, decided_by)`` comparing two final answers (``"math-verify"`` or ``"string"``)."""
    from math_verify import verify

    gold_n, pred_n = normalise_answer(gold), normalise_answer(predicted)
    try:
        gold_p, pred_p = _parse(gold_n), _parse(pred_n)
    except Exception:  # math-verify raises on pathological input; fall back to strings
        gold_p = pred_p = []
    if gold_p and pred_p:
        timeout = 5 if threading.current_thread() is threading.main_thread() else None
        try:
            return bool(verify(gold_p, pred_p, timeout_seconds=timeout)), "math-verify"
        except Exception:
            pass
    return _string_key(gold_n) == _string_key(pred_n), "string"


def grade_math(response: str, answer: str) -> GradeResult:
    """Grade ``response`` (free text) against the gold final ``answer``.

    ``correct`` is None (ungradable) when no answer can be extracted from the response.
    """
    if answer is None or not str(answer).strip():
        raise ValueError("the gold answer is empty")
    extracted, rule = extract_answer(response or "")
    if extracted is None:
        return GradeResult(None, None, None, None, "no final answer found in the response")
    equal, decided_by = equivalent(str(answer), extracted)
    return GradeResult(equal, extracted, rule, decided_by)
