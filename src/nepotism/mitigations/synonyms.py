"""Synonym replacement of k words in an answer (paper 003's lightest authorship obfuscation).

Two choosers pick the words and their replacements; `apply_replacements` enforces the contract
whatever chose them: exactly ``k`` distinct words change, each chosen word is neither a stop word
nor a word of the question (the meaning-bearing words the question names are kept), each appears
in the answer as a whole word, and its replacement differs from it. Replacements keep the
original's capitalisation and touch every whole-word occurrence of the word.

* a third-party model (`synonym_prompt` / `parse_choice`): the model is asked for JSON naming the
  words and their replacements;
* the offline WordNet chooser (`wordnet_choice`), which needs no model: the first ``k`` eligible
  words (in order of appearance) that WordNet knows a synonym for, each replaced by its most frequent-sense synonym.

A choice that breaks the contract is a failure (`Perturbation.ok` false, with the reason), never a
silent partial edit. Left out: checking that a replacement is grammatical in context.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nepotism.records import Message

__all__ = [
    "STOP_WORDS",
    "Perturbation",
    "apply_replacements",
    "eligible_words",
    "parse_choice",
    "synonym_prompt",
    "wordnet_choice",
]

#: Function words never replaced (a fixed list, so results do not depend on an installed corpus).
STOP_WORDS = frozenset(
    """
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves also yes one two three answer option options correct
""".split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]|[A-Za-z]")


@dataclass(frozen=True)
class Perturbation:
    """The result of perturbing one text: the new text, or why it could not be done."""

    text: str | None
    ok: bool
    changed: tuple[tuple[str, str], ...] = ()
    reason: str | None = None
    method: str = ""
    detail: dict[str, Any] = field(default_factory=dict, compare=False)


def _words(text: str) -> list[str]:
    return _WORD.findall(text or "")


def eligible_words(answer: str, question: str) -> list[str]:
    """Distinct answer words (lower case, in order of appearance) that may be replaced."""
    banned = {w.lower() for w in _words(question)}
    seen: dict[str, None] = {}
    for word in _words(answer):
        low = word.lower()
        if len(low) > 2 and low not in STOP_WORDS and low not in banned and "'" not in low:
            seen.setdefault(low, None)
    return list(seen)


def _match_case(template: str, word: str) -> str:
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def apply_replacements(
    answer: str, question: str, choice: Sequence[tuple[str, str]], *, k: int = 2, method: str = ""
) -> Perturbation:
    """Replace the chosen words (see the module docstring for the contract)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    allowed = set(eligible_words(answer, question))
    pairs: list[tuple[str, str]] = []
    for word, replacement in choice:
        word, replacement = str(word).strip().lower(), str(replacement).strip()
        if not word or word in {w for w, _ in pairs}:
            continue
        if word not in allowed:
            return Perturbation(None, False, reason=f"word {word!r} is a stop word, a question word or absent", method=method)
        if not replacement or replacement.lower() == word or not re.fullmatch(r"[A-Za-z][A-Za-z' -]*", replacement):
            return Perturbation(None, False, reason=f"bad replacement {replacement!r} for {word!r}", method=method)
        pairs.append((word, replacement))
    if len(pairs) < k:
        return Perturbation(None, False, reason=f"{len(pairs)} usable word(s), {k} needed", method=method)
    pairs = pairs[:k]
    text = answer
    for word, replacement in pairs:
        pattern = re.compile(rf"(?<![A-Za-z'-]){re.escape(word)}(?![A-Za-z'-])", re.IGNORECASE)
        text = pattern.sub(lambda m: _match_case(m.group(0), replacement), text)  # sub calls it at once
    return Perturbation(text, True, changed=tuple(pairs), method=method)


def wordnet_choice(
    answer: str, question: str, *, k: int = 2, lookup: Callable[[str], list[str]] | None = None
) -> list[tuple[str, str]]:
    """Pick ``k`` eligible words WordNet has a synonym for, with that synonym (offline, no model)."""
    if lookup is None:
        from nepotism.mitigations.wordnet import synonyms

        lookup = synonyms
    banned = set(eligible_words(question, "")) | {w.lower() for w in _words(answer)}
    out: list[tuple[str, str]] = []
    for word in eligible_words(answer, question):
        options = [s for s in lookup(word) if s.lower() not in banned]
        if options:
            out.append((word, options[0]))
        if len(out) == k:
            break
    return out


def synonym_prompt(question: str, answer: str, *, k: int = 2) -> tuple[Message, ...]:
    """Messages asking a third-party model to choose ``k`` words and a synonym for each, as JSON."""
    text = (
        f"Pick exactly {k} words from the ANSWER below and give a synonym for each. Do not pick "
        "common function words (the, of, and, is, ...) and do not pick any word that also appears "
        "in the QUESTION. The synonym must keep the sentence's meaning.\n"
        f'Reply with JSON only, in the form {{"words": ["w1", "w2"], "synonyms": ["s1", "s2"]}}.\n\n'
        f"QUESTION:\n{question}\n\nANSWER:\n{answer}\n"
    )
    return (Message("user", text),)


def parse_choice(text: str | None) -> list[tuple[str, str]] | None:
    """Read ``{"words": [...], "synonyms": [...]}`` (first JSON object in ``text``); None if unreadable."""
    if not text:
        return None
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if not match:
        return None
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    words = data.get("words", data.get("selected_words"))
    subs = data.get("synonyms", data.get("replacements"))
    if isinstance(words, str):
        words = [w.strip(" []'\"") for w in words.split(",")]
    if isinstance(subs, str):
        subs = [w.strip(" []'\"") for w in subs.split(",")]
    if not isinstance(words, list) or not isinstance(subs, list) or len(words) != len(subs):
        return None
    return [(str(w), str(s)) for w, s in zip(words, subs)]
