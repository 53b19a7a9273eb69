"""Rewriting perturbations: paraphrase, judge paraphrase, spurious-feature ablation, cross-reason.

Each model-based rewrite is two pure functions around one model call: a prompt builder (messages
for the rewriting model) and `read_rewrite`, which takes the model's text and returns a
`Perturbation` — a failure (empty output, an output that is mostly the instruction, a length far
from the original's) is counted, never used. Which model rewrites is the caller's choice: a
third-party model for `paraphrase_prompt` and `ablation_prompt` (paper 003; paper 000 §5.7), the
judge itself for `judge_paraphrase_prompt` (003: the judge rewrites the competitor's answer in its
own words). Cross-reason (paper 003 §5: the option chosen by the judge paired with a reasoning
written by the competitor, and vice versa) asks a writing model for a reason *for the option it is
attached to* (`cross_reason_prompt`, checked by `read_reason`: a reason that names another option is
a failure); `cross_reason` is the mechanical variant (``cross_reason = "splice"``), which pairs one
answer's label with the other answer's reasoning as written.

Left out: checking that a rewrite kept the meaning (the third-party control judges measure what a
rewrite did to quality).
"""

from __future__ import annotations

import re

from nepotism.mitigations.synonyms import Perturbation
from nepotism.records import Message

__all__ = [
    "ABLATIONS",
    "ablation_prompt",
    "rewrite_budget",
    "cross_reason",
    "cross_reason_prompt",
    "judge_paraphrase_prompt",
    "option_texts",
    "paraphrase_prompt",
    "read_reason",
    "read_rewrite",
    "split_label",
]

#: What each ablation neutralises, in the rewriting model's instructions (paper 000 §5.7).
ABLATIONS = {
    "style": (
        "Rewrite the text in a plain, neutral tone: same facts, same order, same layout and "
        "mostly the same words, but no flourishes, hedges or characteristic phrasing."
    ),
    "format": (
        "Rewrite the text as plain sentences in one paragraph: remove headings, lists, bold, "
        "code fences around prose and any other layout, but keep the wording and the facts."
    ),
    "wording": (
        "Rewrite the text replacing as many words as possible by synonyms or equivalent "
        "expressions, keeping the sentence structure, the layout and the facts."
    ),
}
_CLOSING = "\nReply with the rewritten text only, nothing before or after it."


def rewrite_budget(text: str) -> int:
    """The max_tokens a rewrite of ``text`` may use: about its length in tokens (¼ of its characters,
    with room), between 48 and 512."""
    return max(48, min(512, int(len(text) / 3)))


def paraphrase_prompt(text: str) -> tuple[Message, ...]:
    """Ask a model to paraphrase ``text`` keeping every fact and the final choice."""
    return (
        Message(
            "user",
            "Paraphrase the following answer in your own words. Keep every fact, the "
            "reasoning and the final choice exactly as they are." + _CLOSING + f"\n\nANSWER:\n{text}\n",
        ),
    )


def judge_paraphrase_prompt(text: str) -> tuple[Message, ...]:
    """Ask the judge to restate a competitor's answer the way it would write it itself."""
    return (
        Message(
            "user",
            "Here is another assistant's answer. Rewrite it the way you yourself would "
            "phrase it, keeping its content, reasoning and final choice unchanged even "
            "if you disagree with them." + _CLOSING + f"\n\nANSWER:\n{text}\n",
        ),
    )


def ablation_prompt(text: str, feature: str) -> tuple[Message, ...]:
    """Ask a rewriting model to neutralise one spurious feature (``style``, ``format``, ``wording``)."""
    if feature not in ABLATIONS:
        raise ValueError(f"unknown feature {feature!r}; use one of {sorted(ABLATIONS)}")
    return (Message("user", ABLATIONS[feature] + _CLOSING + f"\n\nTEXT:\n{text}\n"),)


def read_rewrite(
    original: str, output: str | None, *, method: str, min_ratio: float = 0.3, max_ratio: float = 3.0, keep_label: bool = False
) -> Perturbation:
    """Check and clean a rewriting model's output (see the module docstring)."""
    if output is None:
        return Perturbation(None, False, reason="the rewriting call failed", method=method)
    text = re.sub(r"^\s*(?:here is|here's)[^\n:]*:\s*\n", "", output.strip(), flags=re.IGNORECASE).strip()
    text = re.sub(r"^(?:rewritten|paraphrased) (?:text|answer)\s*:\s*", "", text, flags=re.IGNORECASE).strip()
    if not text:
        return Perturbation(None, False, reason="empty rewrite", method=method)
    ratio = len(text) / max(1, len(original.strip()))
    if not min_ratio <= ratio <= max_ratio:
        return Perturbation(
            None, False, reason=f"rewrite length ratio {ratio:.2f} out of [{min_ratio}, {max_ratio}]", method=method
        )
    if text == original.strip():
        return Perturbation(None, False, reason="the rewrite is the original text", method=method)
    if keep_label:
        before, after = split_label(original)[0], split_label(text)[0]
        if before is not None and after != before:
            return Perturbation(None, False, reason=f"the rewrite changed the choice {before!r} -> {after!r}", method=method)
    return Perturbation(text, True, method=method)


_LABEL = re.compile(r"(?m)^[^\n]*?\b(?i:final\s+)?(?i:answer)(?i:\s+is)?\s*[:\-]?\s*\(?([A-D])\)?(?![A-Za-z]).*$")


def split_label(text: str) -> tuple[str | None, str]:
    """(choice letter, reasoning) of an answer with a line naming its choice (``Answer: X``,
    ``The answer is (X)``); the reasoning is the rest of the text. (None, text) when there is none."""
    match = _LABEL.search(text or "")
    if not match:
        return None, (text or "").strip()
    reasoning = (text[: match.start()] + text[match.end() :]).strip()
    return match.group(1).upper(), reasoning


def cross_reason(label_from: str, reasoning_from: str) -> Perturbation:
    """One answer's choice with the other answer's reasoning (paper 003's cross-reason probe)."""
    label, _ = split_label(label_from)
    other_label, reasoning = split_label(reasoning_from)
    if label is None or other_label is None:
        return Perturbation(None, False, reason="an answer has no 'Answer: X' line", method="cross-reason")
    if not reasoning:
        return Perturbation(None, False, reason="no reasoning to borrow", method="cross-reason")
    return Perturbation(f"Answer: {label}\n{reasoning}", True, changed=((other_label, label),), method="cross-reason")


def cross_reason_prompt(question: str, option: str) -> tuple[Message, ...]:
    """Ask a model to argue for ``option`` (a letter) of a multiple-choice question, in its own words."""
    return (
        Message(
            "user",
            "Here is a multiple-choice question. Explain in a short paragraph why option "
            f"{option} is the correct answer. Argue for option {option} only, even if you would "
            f"choose another one; do not mention that you were asked to. End with the line "
            f"'Answer: {option}'.\n\nQUESTION:\n{question}\n",
        ),
    )


_OPTION = re.compile(r"(?m)^\s*\(?([A-J])[.)]\s+(\S.*?)\s*$")


def option_texts(question: str) -> dict[str, str]:
    """The options of a multiple-choice question, ``{letter: text}``, from its ``A. text`` /
    ``(B) text`` lines (empty when it has fewer than two)."""
    found = {m.group(1): m.group(2) for m in _OPTION.finditer(question or "")}
    return found if len(found) >= 2 else {}


def _names(text: str, phrase: str) -> bool:
    return re.search(r"(?<![\w.])" + re.escape(phrase.lower()) + r"(?![\w])", text.lower()) is not None


def read_reason(
    output: str | None, option: str, *, method: str = "cross-reason", options: dict[str, str] | None = None
) -> Perturbation:
    """The answer ``Answer: <option>`` + the model's reasoning, or a counted failure: the call failed,
    no reasoning, a line of the text gives another option as the answer (``Answer: X``, ``the
    answer is X``), or — with the question's ``options`` (`option_texts`) — the reasoning names
    another option's text and never its own (a reason labelled B that argues for A's content).
    Either way the text does not argue for the option it is attached to. A reasoning that names
    both (a refutation, or a self-contradiction) is kept: the check cannot tell them apart."""
    if output is None:
        return Perturbation(None, False, reason="the reason-writing call failed", method=method)
    label, reasoning = split_label(output.strip())
    named = {m.group(1).upper() for m in _LABEL.finditer(output)}
    if named - {option}:  # any line giving another option as the answer, not only the first
        return Perturbation(None, False, reason="the reason argues for another option", method=method)
    if len(reasoning.split()) < 3:
        return Perturbation(None, False, reason="no reasoning to borrow", method=method)
    own = (options or {}).get(option)
    others = [text for letter, text in (options or {}).items() if letter != option]
    if own and not _names(reasoning, own) and any(_names(reasoning, text) for text in others):
        return Perturbation(None, False, reason="the reasoning names another option's answer, not its own", method=method)
    return Perturbation(f"Answer: {option}\n{reasoning}", True, method=method)
