"""Tests of nepotism.grading.multiple_choice: letter extraction and ambiguity."""

from __future__ import annotations

import pytest

import nepotism.grading.multiple_choice as mc
from nepotism.grading.multiple_choice import extract_letter, grade_multiple_choice


def test_all_is_exported():
    assert set(mc.__all__) == {"extract_letter", "grade_multiple_choice"}


@pytest.mark.parametrize(
    "text, letter, rule",
    [
        ("(B)", "B", "leading"),
        ("B)", "B", "leading"),
        ("B", "B", "leading"),
        ("B. Paris is the capital of France.", "B", "leading"),
        ("b) paris", "B", "leading"),
        ("**C**", "C", "leading"),
        ("Answer: B", "B", "stated"),
        ("ANSWER: c", "C", "stated"),
        ("The answer is **B**", "B", "stated"),
        ("the answer is b.", "B", "stated"),
        (r"\boxed{B}", "B", "stated"),
        (r"so \boxed{\text{(D)}}", "D", "stated"),
        ("The answer is B because option A is wrong and (C) is off topic.", "B", "stated"),
        ("Option (A) looks tempting, but the correct option is C.", "C", "stated"),
        ("I choose A.", "A", "stated"),
        ("Answer: B\n\\boxed{B}", "B", "stated"),
        ("Let me think.\n(C)\n", "C", "line"),
    ],
)
def test_letter_extraction(text, letter, rule):
    assert extract_letter(text) == (letter, rule)


@pytest.mark.parametrize(
    "text",
    [
        "The answer is B. On second thought, the answer is C.",
        "Answer: A\n\\boxed{D}",
    ],
)
def test_two_letters_asserted_is_ambiguous(text):
    assert extract_letter(text) == (None, "ambiguous")
    result = grade_multiple_choice(text, "B")
    assert result.correct is None and "two different letters" in result.detail


@pytest.mark.parametrize("text", ["The answer is a tricky one", "A plausible guess would be hard", "", "No idea."])
def test_no_letter(text):
    assert extract_letter(text) == (None, None)
    assert grade_multiple_choice(text, "A").correct is None


def test_letters_outside_the_set_are_ignored():
    assert extract_letter("Answer: E", letters="ABCD") == (None, None)
    assert extract_letter("Answer: E") == ("E", "stated")


def test_grading_against_gold():
    assert grade_multiple_choice("The answer is (B).", "(b)").correct is True
    assert grade_multiple_choice("The answer is (B).", "C").correct is False
    with pytest.raises(ValueError):
        grade_multiple_choice("B", "AB")
