"""Option strip_think (paper 004 App. A): judges see reasoning models' answers without <think> blocks."""

import pytest

from nepotism.experiment import parse_experiment
from nepotism.judging import JudgeTask, interpret, render, render_prompt, task_template_id
from nepotism.backends.base import Completion
from nepotism.records import Instance, Response

INSTANCE = Instance("q1", "What is 2 + 2?")
THINKER = Response("q1", "r1-distill", "<think>Maybe 5? No: two and two make four.</think>\nThe answer is 4.")
PLAIN = Response("q1", "alpha", "2 + 2 = 4, because adding two twice gives four.")


def _task(**options):
    return JudgeTask("pairwise", "alpha", INSTANCE, (THINKER, PLAIN), options=options)


def test_the_judge_sees_the_answer_without_its_reasoning():
    raw, stripped = render_prompt(_task()), render_prompt(_task(strip_think=True))
    assert "Maybe 5?" in raw and "<think>" in raw
    assert "Maybe 5?" not in stripped and "<think>" not in stripped
    assert "The answer is 4." in stripped and PLAIN.text in stripped
    assert task_template_id(_task(strip_think=True)).startswith("pairwise-3way-nothink@")
    assert render(_task(strip_think=True), model="m").messages[0].content == stripped


def test_the_task_keeps_the_raw_responses():
    task = _task(strip_think=True)
    render_prompt(task)
    assert task.candidates == (THINKER, PLAIN) and task.candidates[0].text.startswith("<think>")
    judgment = interpret(task, Completion(text="[[A]]"))
    assert judgment.candidates == (THINKER.generator, PLAIN.generator) and judgment.verdict == "A"


def test_template_opened_block_and_unfinished_reasoning():
    # the chat template opened the block: everything before the closing tag is reasoning
    opened = Response("q1", "r1", "two and two...</think>4")
    # the model never left its reasoning: nothing is shown
    unfinished = Response("q1", "r1", "The answer is <think>still thinking")
    text = render_prompt(JudgeTask("pointwise", "alpha", INSTANCE, (opened,), options={"strip_think": True}))
    assert "two and two" not in text and "4" in text
    text = render_prompt(JudgeTask("pointwise", "alpha", INSTANCE, (unfinished,), options={"strip_think": True}))
    assert "still thinking" not in text and "The answer is" in text


def test_option_is_checked_and_set_from_the_experiment_file():
    with pytest.raises(ValueError, match="strip_think"):
        _task(strip_think="yes")
    exp = parse_experiment(
        {
            "experiment": {"name": "x"},
            "dataset": {"path": "items.jsonl"},
            "models": {"gpt-4o": {"backend": "openai", "base_url": "http://127.0.0.1:1/v1"}},
            "judging": {"judges": ["gpt-4o"], "protocols": [{"protocol": "pairwise", "options": {"strip_think": True}}]},
        },
        path="x.toml",
    )
    assert exp.protocols[0].options["strip_think"] is True
