"""IFEval instructions as rubric items with programmatic truth.

An IFEval instance (``key``/``instance_id``, ``prompt``, ``instruction_id_list``, ``kwargs``) holds
several verifiable instructions; each one becomes a rubric item (paper 002 uses them as rubrics):
`ifeval_rubric_items` gives the ``rubric-items`` rows with the instruction in plain words, and
`grade_ifeval` the per-instruction truth (``met`` True / False / None) for one response.
Rubric ids are the instruction ids (``punctuation:no_comma``), with ``#2``, ``#3`` appended when
one id repeats within an instance. Strict mode only; checkers live in ``_ifeval_checks``.

Left out: IFEval "loose" accuracy, IFBench instruction types.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nepotism.grading._ifeval_checks import CHECKERS

__all__ = [
    "INSTRUCTION_TYPES",
    "check_instruction",
    "describe_instruction",
    "grade_ifeval",
    "ifeval_rubric_items",
    "rubric_ids",
]

INSTRUCTION_TYPES = tuple(sorted(CHECKERS))

_DESCRIPTIONS = {
    "change_case:capital_word_frequency": "Words written fully in capital letters appear {capital_relation} {capital_frequency} times.",
    "change_case:english_capital": "The whole response is in English and in capital letters only.",
    "change_case:english_lowercase": "The whole response is in English and in lowercase letters only.",
    "combination:repeat_prompt": 'The response begins by repeating the request word for word: "{prompt_to_repeat}".',
    "combination:two_responses": "The response gives two different answers separated by a line of six asterisks (******).",
    "detectable_content:number_placeholders": "The response holds at least {num_placeholders} placeholders in square brackets, like [name].",
    "detectable_content:postscript": 'The response ends with a postscript starting with "{postscript_marker}".',
    "detectable_format:constrained_response": 'The response contains one of: "My answer is yes.", "My answer is no.", "My answer is maybe.".',
    "detectable_format:json_format": "The entire response is valid JSON (a code fence around it is allowed).",
    "detectable_format:multiple_sections": 'The response has at least {num_sections} sections, each headed "{section_spliter} N".',
    "detectable_format:number_bullet_lists": "The response has exactly {num_bullets} markdown bullet points (lines starting with * or -).",
    "detectable_format:number_highlighted_sections": "At least {num_highlights} parts are highlighted in markdown, like *highlighted part*.",
    "detectable_format:title": "The response has a title in double angular brackets, like <<title>>.",
    "keywords:existence": "The response mentions each of these keywords: {keywords}.",
    "keywords:forbidden_words": "The response never uses these words: {forbidden_words}.",
    "keywords:frequency": 'The word "{keyword}" appears {relation} {frequency} times.',
    "keywords:letter_frequency": 'The letter "{letter}" appears {let_relation} {let_frequency} times.',
    "language:response_language": 'The whole response is in the language with code "{language}".',
    "length_constraints:nth_paragraph_first_word": 'The response has exactly {num_paragraphs} paragraphs separated by blank lines, and paragraph {nth_paragraph} starts with the word "{first_word}".',
    "length_constraints:number_paragraphs": "The response has exactly {num_paragraphs} paragraphs separated by the divider ***.",
    "length_constraints:number_sentences": "The response has {relation} {num_sentences} sentences.",
    "length_constraints:number_words": "The response has {relation} {num_words} words.",
    "punctuation:no_comma": "The response contains no commas.",
    "startend:end_checker": 'The response ends with the exact phrase "{end_phrase}" and nothing after it.',
    "startend:quotation": "The entire response is wrapped in double quotation marks.",
}


def _clean_kwargs(kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (kwargs or {}).items() if v is not None}


def _checker(instruction_id: str) -> Callable[..., bool | None]:
    try:
        return CHECKERS[instruction_id]
    except KeyError:
        raise ValueError(f"unknown IFEval instruction type {instruction_id!r}") from None


def check_instruction(instruction_id: str, response: str, kwargs: Mapping[str, Any] | None = None) -> bool | None:
    """True when ``response`` follows the instruction, False when not, None when undecidable."""
    checker = _checker(instruction_id)
    args = _clean_kwargs(kwargs)
    if instruction_id == "combination:repeat_prompt" and "prompt_to_repeat" not in args:
        raise ValueError("combination:repeat_prompt needs the prompt_to_repeat argument")
    try:
        return checker(response or "", **args)
    except TypeError as err:
        raise ValueError(f"bad arguments {sorted(args)} for {instruction_id}: {err}") from None


def describe_instruction(instruction_id: str, kwargs: Mapping[str, Any] | None = None) -> str:
    """The instruction in plain words, filled with its arguments."""
    _checker(instruction_id)
    args = {k: (", ".join(f'"{w}"' for w in v) if isinstance(v, (list, tuple)) else v) for k, v in _clean_kwargs(kwargs).items()}
    try:
        return _DESCRIPTIONS[instruction_id].format(**args)
    except KeyError as err:
        raise ValueError(f"{instruction_id} is missing its argument {err}") from None


def rubric_ids(instruction_id_list: Sequence[str]) -> list[str]:
    """Rubric ids for an instance's instructions (repeats get ``#2``, ``#3``, ...)."""
    seen: dict[str, int] = {}
    out = []
    for instruction_id in instruction_id_list:
        seen[instruction_id] = seen.get(instruction_id, 0) + 1
        out.append(instruction_id if seen[instruction_id] == 1 else f"{instruction_id}#{seen[instruction_id]}")
    return out


def _pairs(
    instruction_id_list: Sequence[str], kwargs: Sequence[Mapping[str, Any] | None] | None
) -> list[tuple[str, str, Mapping[str, Any] | None]]:
    kwargs = list(kwargs) if kwargs is not None else [{}] * len(instruction_id_list)
    if len(kwargs) != len(instruction_id_list):
        raise ValueError(f"{len(instruction_id_list)} instructions but {len(kwargs)} kwargs entries")
    return list(zip(rubric_ids(instruction_id_list), instruction_id_list, kwargs))


def grade_ifeval(
    response: str,
    instruction_id_list: Sequence[str],
    kwargs: Sequence[Mapping[str, Any] | None] | None = None,
) -> dict[str, bool | None]:
    """Per-instruction truth for one response: ``{rubric_id: met}`` in instruction order."""
    return {rid: check_instruction(iid, response, kw) for rid, iid, kw in _pairs(instruction_id_list, kwargs)}


def ifeval_rubric_items(instance: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``rubric-items`` rows (instance_id, rubric_id, text, points, category) of one IFEval instance.

    ``instance`` needs ``instruction_id_list`` and ``kwargs`` and an id as ``instance_id`` or ``key``.
    Each instruction is worth one point; the category is the instruction group (``keywords``, ...).
    """
    instance_id = instance.get("instance_id", instance.get("key"))
    if instance_id is None:
        raise ValueError("the instance has neither 'instance_id' nor 'key'")
    rows = []
    for rid, iid, kw in _pairs(instance["instruction_id_list"], instance.get("kwargs")):
        rows.append(
            {
                "instance_id": str(instance_id),
                "rubric_id": rid,
                "text": describe_instruction(iid, kw),
                "points": 1.0,
                "category": iid.split(":", 1)[0],
            }
        )
    return rows
