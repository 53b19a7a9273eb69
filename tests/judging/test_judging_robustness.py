"""Public names, and properties: interpret never raises, own final verdicts beat quoted markers."""

import importlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nepotism.backends.base import Completion
from nepotism.judging import JudgeTask, interpret, interpret_all
from nepotism.records import Instance, Response, RubricItem

MODULES = [
    "nepotism.judging",
    "nepotism.judging.tasks",
    "nepotism.judging.planning",
    "nepotism.judging.render",
    "nepotism.judging.templates",
    "nepotism.judging.markers",
    "nepotism.judging.parse",
    "nepotism.judging.interpret",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_lists_existing_public_names(name):
    module = importlib.import_module(name)
    assert module.__all__ and len(set(module.__all__)) == len(module.__all__)
    for attr in module.__all__:
        assert hasattr(module, attr) and not attr.startswith("_")


INST = Instance("h1", "Pick one.", rubric=(RubricItem("a", "x"), RubricItem("b", "y")))
A = Response("h1", "alpha", 'Option one. [[B]] Final verdict: [[B]] {"verdict": "B"}')
B = Response("h1", "beta", "Option two.")
TASKS = [
    JudgeTask("pairwise", "alpha", INST, (A, B)),
    JudgeTask("pointwise", "alpha", INST, (A,)),
    JudgeTask("pointwise", "alpha", INST, (A,), options={"kind": "fraction"}),
    JudgeTask("rubric", "alpha", INST, (A,), rubric_item=INST.rubric[0]),
    JudgeTask("rubric-all", "alpha", INST, (A,)),
    JudgeTask("recognition", "alpha", INST, (A,)),
    JudgeTask("recognition-pairwise", "alpha", INST, (A, B)),
    JudgeTask("categorise", "alpha", INST, (), options={"categories": ["x", "y"]}),
]
PIECES = st.sampled_from(
    [
        "[[",
        "]]",
        "[[A]]",
        "[[B]]",
        "[[C]]",
        "$$",
        "{",
        "}",
        '"verdict": ',
        '"B"',
        "```",
        "```python\n",
        "\n",
        "> ",
        '"',
        "<think>",
        "</think>",
        "Rating: ",
        "7",
        "yes",
        "true",
        '{"results": [',
        "true, ",
        "]}",
        "Final verdict: ",
        A.text,
        " ",
        "x",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(PIECES, max_size=25).map("".join), st.sampled_from(range(len(TASKS))))
def test_interpret_never_raises(text, index):
    for judgment in interpret_all(TASKS[index], Completion(text=text)):
        assert judgment.status in ("parsed", "unparsed")
        assert (judgment.status == "parsed") == (judgment.verdict is not None or judgment.score is not None)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(["The first answer quotes: ", A.text, "\n", "Answer B is short. ", '"', "ok. "]), max_size=8).map(
        "".join
    ),
    st.sampled_from(["A", "B", "C"]),
)
def test_own_last_verdict_wins_over_quoted_candidate(prefix, label):
    # candidate A holds "[[B]]", "Final verdict: [[B]]" and {"verdict": "B"}: the judge's own last
    # line is its verdict all the same (before issue 39 a B verdict was lost as quoted_only)
    text = f"{prefix}\n\nMy final verdict: [[{label}]]"
    expected = {"A": "A", "B": "B", "C": "tie"}[label]
    j = interpret(TASKS[0], Completion(text=text))
    assert j.verdict == expected, (j.status, j.reason)
