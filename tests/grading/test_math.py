"""Tests of nepotism.grading.math: extraction order, equivalence edge cases, real MATH-500 / GSM8K rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nepotism.grading.math as gm
from nepotism.grading.math import equivalent, extract_answer, grade_math

#: the data beside the repository (../shared is not part of a clone: the tests using it skip)
DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def test_all_is_exported():
    assert set(gm.__all__) == {"EXTRACTION_ORDER", "extract_answer", "grade_math", "normalise_answer", "equivalent"}
    for name in gm.__all__:
        assert hasattr(gm, name)


@pytest.mark.parametrize(
    "text, answer, rule",
    [
        (r"so $x = \boxed{\frac{1}{\sqrt{2}}}$ done", r"\frac{1}{\sqrt{2}}", "boxed"),
        (r"first \boxed{1} then \boxed{\{a, \{b\}\}}", r"\{a, \{b\}\}", "boxed"),
        (r"thus \boxed 5.", "5", "boxed"),
        ("She sells 9 eggs.\n#### 18", "18", "hash"),
        ("#### $1,200.", "1,200", "hash"),
        ("#### Each child got 5 books.", "5", "hash"),
        ("Adding up, the answer is $\\frac{3}{4}$. Good.", r"\frac{3}{4}", "answer-is"),
        ("Final Answer: **42**", "42", "answer-is"),
        ("We get 3 apples and then 12 pears", "12", "last-number"),
        ("cost is 1,234,567 dollars", "1,234,567", "last-number"),
        ("no digits here", None, None),
        ("", None, None),
    ],
)
def test_extraction(text, answer, rule):
    assert extract_answer(text) == (answer, rule)


def test_boxed_wins_over_later_rules():
    text = "The answer is 7.\n#### 8\n\\boxed{9}"
    assert extract_answer(text) == ("9", "boxed")
    assert extract_answer("The answer is 7.\n#### 8") == ("8", "hash")


@pytest.mark.parametrize(
    "gold, predicted, expected",
    [
        ("0.5", r"\frac12", True),
        ("1/2", r"\dfrac{1}{2}", True),
        (r"\frac{1}{2}", "0.5", True),
        ("1000", "10^{3}", True),
        ("3", "x = 3", True),
        ("(1,2]", "(1, 2]", True),
        ("(1,2]", "[1,2]", False),
        (r"[-2, \infty)", r"[-2,\infty)", True),
        ("50", r"50\%", True),
        (r"50\%", "50", True),
        ("1000", "1,000", True),
        ("1234567", "1,234,567", True),
        ("12", r"12\text{ cm}", True),
        ("4", "5", False),
        (r"\frac{\pi}{2}", r"\pi/2", True),
        ("2\\sqrt{3}", "\\sqrt{12}", True),
        (r"\text{Evelyn}", "Evelyn", True),
        (r"\text{(C)}", "(C)", True),
        (r"\text{(C)}", "(D)", False),
    ],
)
def test_equivalence(gold, predicted, expected):
    equal, decided_by = equivalent(gold, predicted)
    assert equal is expected, (gold, predicted, decided_by)
    assert decided_by in ("math-verify", "string")


def test_grade_result_fields():
    result = grade_math("so the total is \\boxed{\\dfrac{1}{2}}", "0.5")
    assert (result.correct, result.extracted, result.method, result.decided_by) == (True, r"\dfrac{1}{2}", "boxed", "math-verify")
    wrong = grade_math("#### 17", "18")
    assert wrong.correct is False and wrong.method == "hash"
    none = grade_math("I do not know.", "18")
    assert none.correct is None and none.extracted is None and not none.gradable
    with pytest.raises(ValueError):
        grade_math("#### 1", "  ")


def test_string_fallback_decides_when_unparseable():
    equal, decided_by = equivalent(r"\text{Monday}", r"\text{monday}")
    assert equal is True
    equal, _ = equivalent(r"\text{Monday}", r"\text{Tuesday}")
    assert equal is False


@pytest.mark.skipif(not (DATA / "math500/test.jsonl").exists(), reason="../shared/data is absent beside the repository")
def test_math500_gold_solutions_grade_correct():
    rows = [json.loads(line) for line in open(DATA / "math500/test.jsonl")]
    assert len(rows) == 500
    correct = sum(grade_math(r["solution"], r["answer"]).correct is True for r in rows)
    assert correct / len(rows) >= 0.97  # measured: 500/500


@pytest.mark.slow
@pytest.mark.skipif(
    not (DATA / "routellm/gsm8k_responses.csv.gz").exists(), reason="../shared/data is absent beside the repository"
)
def test_gsm8k_agreement_with_stored_correctness():
    """No gold answers ship with the file: the answer of a response marked correct is the gold
    for the other model's response on the same prompt; compare our verdict with its stored flag."""
    import pandas as pd

    frame = pd.read_csv(DATA / "routellm/gsm8k_responses.csv.gz")
    models = ["mistralai/Mixtral-8x7B-Instruct-v0.1", "gpt-4-1106-preview"]
    agree = total = 0
    for _, row in frame.iterrows():
        for gold_model, other in (models, models[::-1]):
            if bool(row[gold_model]):
                gold, _ = extract_answer(str(row[gold_model + "_response"]))
                result = grade_math(str(row[other + "_response"]), gold)
                if result.correct is not None:
                    total += 1
                    agree += result.correct == bool(row[other])
                break
    assert total > 1100
    assert agree / total >= 0.96  # measured 1191/1225 = 0.972; most misses: "$75.00" flagged wrong upstream
