"""Tests of nepotism.grading.ifeval: every instruction type passes and fails on hand-made responses;
strict accuracy on the published GPT-4 responses; rubric items."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nepotism.grading.ifeval as ife
from nepotism.grading._ifeval_checks import count_sentences, count_words
from nepotism.grading.ifeval import (
    INSTRUCTION_TYPES,
    check_instruction,
    describe_instruction,
    grade_ifeval,
    ifeval_rubric_items,
    rubric_ids,
)

#: beside the repository (../shared is not part of a clone: the test using it skips)
DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "ifeval"

_ENGLISH = "the quick brown fox jumps over the lazy dog and then runs far away into the green forest"
_GERMAN = "Der schnelle braune Fuchs springt über den faulen Hund und läuft dann weit weg in den grünen Wald."

# instruction id -> (kwargs, passing response, failing response)
CASES = {
    "change_case:capital_word_frequency": (
        {"capital_frequency": 2, "capital_relation": "at least"},
        "This is VERY IMPORTANT news.",
        "This is Very important news.",
    ),
    "change_case:english_capital": ({}, _ENGLISH.upper(), _ENGLISH.capitalize()),
    "change_case:english_lowercase": ({}, _ENGLISH, _ENGLISH.title()),
    "combination:repeat_prompt": (
        {"prompt_to_repeat": "Write a poem about cats."},
        "Write a poem about cats. Cats are soft.",
        "Here is a poem about cats.",
    ),
    "combination:two_responses": ({}, "First answer.\n******\nSecond answer.", "First answer.\n******\nFirst answer."),
    "detectable_content:number_placeholders": ({"num_placeholders": 2}, "Dear [name], at [address].", "Dear [name], hello."),
    "detectable_content:postscript": ({"postscript_marker": "P.S."}, "Hello.\n\nP.S. See you soon.", "Hello. See you soon."),
    "detectable_format:constrained_response": ({}, "My answer is yes.", "Yes, definitely."),
    "detectable_format:json_format": ({}, '```json\n{"a": 1}\n```', "{'a': 1} is the answer"),
    "detectable_format:multiple_sections": (
        {"section_spliter": "SECTION", "num_sections": 2},
        "SECTION 1\nIntro.\nSECTION 2\nBody.",
        "SECTION 1\nIntro only.",
    ),
    "detectable_format:number_bullet_lists": ({"num_bullets": 2}, "* one\n* two", "* one\n* two\n- three"),
    "detectable_format:number_highlighted_sections": (
        {"num_highlights": 2},
        "*first part* and **second part**",
        "*first part* and plain text",
    ),
    "detectable_format:title": ({}, "<<My Title>>\nText.", "My Title\nText."),
    "keywords:existence": ({"keywords": ["banana", "apple"]}, "An Apple and a banana.", "An apple and a pear."),
    "keywords:forbidden_words": ({"forbidden_words": ["bad", "evil"]}, "A badge of honour.", "That was a bad idea."),
    "keywords:frequency": ({"keyword": "cat", "frequency": 3, "relation": "less than"}, "cat cat", "cat Cat CAT"),
    "keywords:letter_frequency": ({"letter": "z", "let_frequency": 2, "let_relation": "at least"}, "Zebra zoo", "Zebra"),
    "language:response_language": ({"language": "de"}, _GERMAN, _ENGLISH),
    "length_constraints:nth_paragraph_first_word": (
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        'First paragraph.\n\n"Then, second.',
        "First paragraph.\n\nNext, second.",
    ),
    "length_constraints:number_paragraphs": ({"num_paragraphs": 2}, "One.\n***\nTwo.", "One.\n***\n\n***\nTwo."),
    "length_constraints:number_sentences": (
        {"num_sentences": 3, "relation": "less than"},
        "Dr. Smith paid 3.5 dollars. He left!",
        "One. Two. Three.",
    ),
    "length_constraints:number_words": ({"num_words": 5, "relation": "at least"}, "one two three four five", "one two"),
    "punctuation:no_comma": ({}, "No commas here.", "Well, a comma."),
    "startend:end_checker": ({"end_phrase": "Any other questions?"}, 'Done. Any other questions?"', "Any other questions? Bye."),
    "startend:quotation": ({}, '"All quoted."', 'All "quoted".'),
}


def test_all_is_exported():
    assert set(ife.__all__) == {
        "INSTRUCTION_TYPES",
        "check_instruction",
        "describe_instruction",
        "grade_ifeval",
        "ifeval_rubric_items",
        "rubric_ids",
    }


def test_every_type_has_a_case():
    assert set(CASES) == set(INSTRUCTION_TYPES) and len(INSTRUCTION_TYPES) == 25


@pytest.mark.parametrize("instruction_id", sorted(CASES))
def test_instruction_pass_and_fail(instruction_id):
    kwargs, passing, failing = CASES[instruction_id]
    assert check_instruction(instruction_id, passing, kwargs) is True
    assert check_instruction(instruction_id, failing, kwargs) is False
    assert describe_instruction(instruction_id, kwargs)


def test_relations_and_counts():
    assert count_words("It's 3 o'clock, isn't it?") == 8  # \w+ runs split at apostrophes
    assert count_sentences("Mr. Brown met Dr. Who at 5.30 p.m. today. See www.example.com for more! Right?") == 3
    assert count_sentences("Wait... what?! Yes.") == 3
    assert check_instruction("length_constraints:number_words", "a b c", {"num_words": 3, "relation": "less than"}) is False
    with pytest.raises(ValueError):
        check_instruction("length_constraints:number_words", "a", {"num_words": 3, "relation": "about"})


def test_undetectable_language_is_none():
    assert check_instruction("language:response_language", "12345 !!!", {"language": "en"}) is None


def test_bad_ids_and_arguments():
    with pytest.raises(ValueError):
        check_instruction("nope:nothing", "x")
    with pytest.raises(ValueError):
        check_instruction("keywords:existence", "x", {"wrong": 1})
    with pytest.raises(ValueError):
        grade_ifeval("x", ["punctuation:no_comma"], [{}, {}])


def test_grade_and_rubric_items_agree_on_ids():
    instance = {
        "key": 7,
        "instruction_id_list": ["punctuation:no_comma", "keywords:existence", "punctuation:no_comma"],
        "kwargs": [{}, {"keywords": ["sun"], "num_words": None}, {}],
    }
    assert rubric_ids(instance["instruction_id_list"]) == ["punctuation:no_comma", "keywords:existence", "punctuation:no_comma#2"]
    items = ifeval_rubric_items(instance)
    assert [i["rubric_id"] for i in items] == rubric_ids(instance["instruction_id_list"])
    assert items[1] == {
        "instance_id": "7",
        "rubric_id": "keywords:existence",
        "text": 'The response mentions each of these keywords: "sun".',
        "points": 1.0,
        "category": "keywords",
    }
    verdicts = grade_ifeval("The sun, high.", instance["instruction_id_list"], instance["kwargs"])
    assert verdicts == {"punctuation:no_comma": False, "keywords:existence": True, "punctuation:no_comma#2": False}


@pytest.mark.skipif(
    not (DATA / "input_response_data_gpt4_20231107_145030.jsonl").exists(),
    reason="../shared/data is absent beside the repository",
)
def test_gpt4_strict_accuracy_matches_published():
    instances = [json.loads(line) for line in open(DATA / "input_data.jsonl")]
    responses = [json.loads(line) for line in open(DATA / "input_response_data_gpt4_20231107_145030.jsonl")]
    assert len(instances) == len(responses) == 541  # same order; one prompt differs slightly upstream
    prompt_ok = instr_ok = instr_n = 0
    for instance, response in zip(instances, responses):
        verdicts = grade_ifeval(response["response"], instance["instruction_id_list"], instance["kwargs"])
        prompt_ok += all(v is True for v in verdicts.values())
        instr_ok += sum(v is True for v in verdicts.values())
        instr_n += len(verdicts)
        assert len(ifeval_rubric_items(instance)) == len(verdicts)
    # measured: 416/541 = 0.7689 prompt-level, 697/834 = 0.8357 instruction-level (published ~0.77 / ~0.84)
    assert abs(prompt_ok / 541 - 0.7689) < 0.015
    assert abs(instr_ok / instr_n - 0.8357) < 0.015
