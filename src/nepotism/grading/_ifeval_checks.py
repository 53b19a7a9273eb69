"""Programmatic checkers for the 25 IFEval instruction types (strict mode), written for nepotism.

Each checker takes the response text and the instruction's keyword arguments and returns True
(followed), False (not followed) or None (cannot be decided: only the language check, when the
language of the text cannot be detected). Semantics follow the IFEval definitions (paper 002's
rubric source): counts use "at least" as >= and "less than" as <. No NLTK: words are ``\\w+`` runs
and sentences come from a rule-based splitter below, so nothing is downloaded at run time.
Language detection uses `langdetect` with a fixed seed (deterministic).

Left out: IFEval's "loose" variants (response with first/last line or asterisks removed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

__all__ = ["CHECKERS", "count_sentences", "count_words", "detect_language"]

_ABBREVIATIONS = (
    "mr|mrs|ms|dr|prof|sr|jr|st|vs|etc|inc|ltd|co|corp|no|fig|vol|approx|dept|est|e\\.g|i\\.e|ph\\.d|a\\.m|p\\.m|u\\.s"
)


def count_words(text: str) -> int:
    """Number of ``\\w+`` runs (letters, digits, underscore) in ``text``."""
    return len(re.findall(r"\w+", text))


def count_sentences(text: str) -> int:
    """Number of sentences: runs ended by ``.``, ``!`` or ``?`` (followed by space or the end).

    Decimal points, common abbreviations (Mr., e.g., Ph.D.), single-letter initials, dotted
    acronyms (U.S.A.) and web addresses do not end a sentence; ``...`` and ``?!`` end one only once.
    """
    body = f" {text} "
    body = re.sub(r"(?<=\d)\.(?=\d)", "<d>", body)
    body = re.sub(r"(?i)\b(?:https?://|www\.)\S+", "URL", body)
    body = re.sub(r"(?i)\b(?:\S+\.)+(?:com|org|net|edu|gov|io)\b", "URL", body)
    body = re.sub(rf"(?i)\b({_ABBREVIATIONS})\.", lambda m: m.group(1).replace(".", "<d>") + "<d>", body)
    body = re.sub(r"\b((?:[A-Za-z]\.){2,})", lambda m: m.group(1).replace(".", "<d>"), body)
    body = re.sub(r"(?<=\s)([A-Z])\.(?=\s+[A-Z])", r"\1<d>", body)
    parts = re.split(r"[.!?]+[\"'”’)\]]*(?=\s|$)", body)
    return sum(1 for part in parts if re.search(r"\w", part))


_LANG_READY = False


def detect_language(text: str) -> str | None:
    """ISO 639-1 code of ``text`` by langdetect (seeded), or None when it cannot tell."""
    global _LANG_READY
    from langdetect import DetectorFactory, detect
    from langdetect.lang_detect_exception import LangDetectException

    if not _LANG_READY:
        DetectorFactory.seed = 0
        _LANG_READY = True
    try:
        language: str = detect(text)
    except LangDetectException:
        return None
    return language


def _compare(count: int, relation: str, target: int) -> bool:
    if relation == "less than":
        return count < target
    if relation == "at least":
        return count >= target
    raise ValueError(f"unknown relation {relation!r} (expected 'less than' or 'at least')")


def _english_case(text: str, upper: bool) -> bool:
    cased = text.isupper() if upper else text.islower()
    if not cased:
        return False
    language = detect_language(text)
    return language is None or language == "en"  # undetectable language: judge the case only


def _capital_words(text: str, capital_frequency: int, capital_relation: str) -> bool:
    words = re.findall(r"[^\W\d_]+(?:['’][^\W\d_]+)*", text)
    return _compare(sum(1 for w in words if w.isupper()), capital_relation, int(capital_frequency))


def _two_responses(text: str) -> bool:
    parts = text.split("******")
    kept = []
    for index, part in enumerate(parts):
        if part.strip():
            kept.append(part.strip())
        elif 0 < index < len(parts) - 1:
            return False  # an empty response between two separators
    return len(kept) == 2 and kept[0] != kept[1]


def _postscript(text: str, postscript_marker: str) -> bool:
    marker = postscript_marker.strip().lower()
    if marker == "p.s.":
        pattern = r"\s*p\.\s?s\..*$"
    elif marker == "p.p.s":
        pattern = r"\s*p\.\s?p\.\s?s.*$"
    else:
        pattern = r"\s*" + re.escape(marker) + r".*$"
    return re.search(pattern, text.lower(), re.MULTILINE) is not None


def _json(text: str) -> bool:
    body = text.strip()
    body = re.sub(r"^```(?:json)?\s*", "", body, flags=re.IGNORECASE)
    body = re.sub(r"\s*```$", "", body).strip()
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


def _sections(text: str, section_spliter: str, num_sections: int) -> bool:
    parts = re.split(r"\s?" + re.escape(section_spliter.strip()) + r"\s?\d+\s?", text)
    return len(parts) - 1 >= int(num_sections)


def _bullets(text: str, num_bullets: int) -> bool:
    stars = re.findall(r"^\s*\*[^*].*$", text, re.MULTILINE)
    dashes = re.findall(r"^\s*-.*$", text, re.MULTILINE)
    return len(stars) + len(dashes) == int(num_bullets)


def _highlights(text: str, num_highlights: int) -> bool:
    single = [m for m in re.findall(r"\*[^\n*]*\*", text) if m.strip("*").strip()]
    double = [m for m in re.findall(r"\*\*[^\n*]*\*\*", text) if m[2:-2].strip()]
    return len(single) + len(double) >= int(num_highlights)


def _title(text: str) -> bool:
    return any(m.strip("<>").strip() for m in re.findall(r"<<[^\n]+>>", text))


def _paragraphs_by_stars(text: str, num_paragraphs: int) -> bool:
    parts = re.split(r"\s?\*\*\*\s?", text)
    count = len(parts)
    for index, part in enumerate(parts):
        if not part.strip():
            if 0 < index < len(parts) - 1:
                return False
            count -= 1
    return count == int(num_paragraphs)


def _nth_paragraph_first_word(text: str, num_paragraphs: int, nth_paragraph: int, first_word: str) -> bool:
    parts = re.split(r"\n\n", text)
    count = sum(1 for p in parts if p.strip())
    nth = int(nth_paragraph)
    if nth > count or nth < 1:
        return False
    paragraph = parts[nth - 1].strip()
    if not paragraph:
        return False
    word = paragraph.split()[0].lstrip("'\"")
    word = re.split(r"[.,?!'\"]", word, maxsplit=1)[0].lower()
    return count == int(num_paragraphs) and word == first_word.strip().lower()


def _language(text: str, language: str) -> bool | None:
    found = detect_language(text)
    return None if found is None else found == language


CHECKERS: dict[str, Callable[..., bool | None]] = {
    "change_case:capital_word_frequency": _capital_words,
    "change_case:english_capital": lambda t: _english_case(t, upper=True),
    "change_case:english_lowercase": lambda t: _english_case(t, upper=False),
    "combination:repeat_prompt": lambda t, prompt_to_repeat: t.strip().lower().startswith(prompt_to_repeat.strip().lower()),
    "combination:two_responses": _two_responses,
    "detectable_content:number_placeholders": lambda t, num_placeholders: len(re.findall(r"\[.*?\]", t)) >= int(num_placeholders),
    "detectable_content:postscript": _postscript,
    "detectable_format:constrained_response": lambda t: any(
        option in t.strip() for option in ("My answer is yes.", "My answer is no.", "My answer is maybe.")
    ),
    "detectable_format:json_format": _json,
    "detectable_format:multiple_sections": _sections,
    "detectable_format:number_bullet_lists": _bullets,
    "detectable_format:number_highlighted_sections": _highlights,
    "detectable_format:title": _title,
    "keywords:existence": lambda t, keywords: all(re.search(re.escape(k), t, re.IGNORECASE) for k in keywords),
    "keywords:forbidden_words": lambda t, forbidden_words: (
        not any(re.search(r"\b" + re.escape(w) + r"\b", t, re.IGNORECASE) for w in forbidden_words)
    ),
    "keywords:frequency": lambda t, keyword, frequency, relation: _compare(
        len(re.findall(re.escape(keyword), t, re.IGNORECASE)), relation, int(frequency)
    ),
    "keywords:letter_frequency": lambda t, letter, let_frequency, let_relation: _compare(
        t.lower().count(letter.lower()), let_relation, int(let_frequency)
    ),
    "language:response_language": _language,
    "length_constraints:nth_paragraph_first_word": _nth_paragraph_first_word,
    "length_constraints:number_paragraphs": _paragraphs_by_stars,
    "length_constraints:number_sentences": lambda t, num_sentences, relation: _compare(
        count_sentences(t), relation, int(num_sentences)
    ),
    "length_constraints:number_words": lambda t, num_words, relation: _compare(count_words(t), relation, int(num_words)),
    "punctuation:no_comma": lambda t: "," not in t,
    "startend:end_checker": lambda t, end_phrase: t.strip().strip('"').lower().endswith(end_phrase.strip().lower()),
    "startend:quotation": lambda t: len(t.strip()) > 1 and t.strip()[0] == '"' and t.strip()[-1] == '"',
}
