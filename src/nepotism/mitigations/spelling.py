"""Spelling errors at a given rate: an offline, seeded authorship obfuscation (paper 003 Fig. 15).

Paper 003 compares synonym replacement with other obfuscations, spelling errors among them, by how
much each moves self-evaluation relative to third-party evaluation. `misspell` plants typos in the
judge's own answer without any model: of the answer's eligible words (those synonym replacement
may touch, `nepotism.mitigations.synonyms.eligible_words`: no stop words, no words of the question)
with at least four letters, ``round(rate × count)`` (at least one) are chosen with a generator
seeded by the experiment's seed and the response, and each gets one typo: two adjacent inner
letters swapped (the first and last letters stay, as in human typos that keep a word readable).
Every occurrence of a chosen word changes, keeping its capitalisation (`apply_replacements`
enforces the same contract as for synonyms). The same seed and answer give the same text.
Left out: keyboard-distance substitutions, dropped or doubled letters.
"""

from __future__ import annotations

import random

from nepotism.mitigations.synonyms import Perturbation, apply_replacements, eligible_words

__all__ = ["misspell", "typo"]


def typo(word: str, rng: random.Random) -> str | None:
    """``word`` with two adjacent inner letters swapped (a position where they differ), or None."""
    spots = [i for i in range(1, len(word) - 2) if word[i] != word[i + 1] and word[i].isalpha() and word[i + 1].isalpha()]
    if not spots:
        return None
    i = rng.choice(spots)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def misspell(answer: str, question: str, *, rate: float, seed: int | str = 0, key: str = "") -> Perturbation:
    """Plant typos in ``round(rate × eligible words)`` (≥ 1) words of ``answer`` (module docstring)."""
    if not 0 < rate <= 1:
        raise ValueError("rate must be in (0, 1]")
    rng = random.Random(f"spelling:{seed}:{key}")
    words = [w for w in eligible_words(answer, question) if len(w) >= 4]
    choice = []
    for word in words:
        wrong = typo(word, rng)
        if wrong is not None:
            choice.append((word, wrong))
    if not choice:
        return Perturbation(None, False, reason="no word of four letters or more to misspell", method="spelling")
    k = max(1, round(rate * len(choice)))
    picked = rng.sample(choice, k)
    return apply_replacements(answer, question, picked, k=k, method="spelling")
