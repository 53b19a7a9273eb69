"""interpret / interpret_all: label probabilities, failures, judgment fields for every protocol."""

import math

import pytest

from nepotism.backends.base import Completion, failed
from nepotism.judging import JudgeTask, interpret, interpret_all, label_probabilities, task_template_id
from nepotism.judging.interpret import label_mass

LN = math.log


@pytest.fixture
def pair(instance, responses):
    return JudgeTask(
        "pairwise",
        "alpha",
        instance,
        (responses["alpha"], responses["beta"]),
        condition="masked",
        replicate=1,
        options={"mode": "labels"},
    )


def test_label_probabilities_normalise_over_labels(pair):
    j = interpret(
        pair,
        Completion(
            text="A", label_logprobs={"A": LN(0.6), "B": LN(0.2), "C": LN(0.1)}, usage={"prompt_tokens": 50}, latency_s=0.25
        ),
    )
    assert j.status == "parsed" and j.verdict == "A"
    assert j.label_probs == pytest.approx({"A": 0.6 / 0.9, "B": 0.2 / 0.9, "tie": 0.1 / 0.9})
    assert j.protocol == "pairwise" and j.candidates == ("alpha", "beta") and j.judge == "alpha"
    assert j.condition == "masked" and j.replicate == 1 and j.instance_id == "q1"
    assert j.usage == {"prompt_tokens": 50} and j.latency_s == 0.25 and j.raw_output == "A"
    assert j.template_id == task_template_id(pair) and j.template_id.startswith("pairwise-3way-labels-minmass0@")


def test_missing_labels_are_minus_infinity(pair):
    j = interpret(pair, Completion(text="B", label_logprobs={"B": -0.5}))
    assert j.verdict == "B" and j.label_probs == {"A": 0.0, "B": 1.0, "tie": 0.0}
    assert j.label_logprobs == {"A": -math.inf, "B": -0.5, "C": -math.inf} and j.label_mass == pytest.approx(math.exp(-0.5))
    loose = JudgeTask("pairwise", "alpha", pair.instance, pair.candidates, options={"mode": "labels", "min_label_mass": 0})
    j = interpret(loose, Completion(text="B", label_logprobs={"A": -math.inf, "B": -2.0, "C": float("nan")}))
    assert j.verdict == "B" and j.label_probs["tie"] == 0.0 and j.label_logprobs["C"] == -math.inf


@pytest.mark.parametrize("logprobs", [None, {}, {"A": -math.inf, "B": -math.inf}, {"X": -0.1}])
def test_no_usable_label_is_unparsed(pair, logprobs):
    j = interpret(pair, Completion(text="X", label_logprobs=logprobs))
    assert j.status == "unparsed" and j.verdict is None and j.label_probs is None and j.raw_output == "X"
    assert j.reason == "no_label_logprobs"


def test_tied_top_labels_are_unparsed_but_keep_probabilities(pair):
    j = interpret(pair, Completion(text="A", label_logprobs={"A": -1.0, "B": -1.0, "C": -3.0}))
    assert j.status == "unparsed" and j.verdict is None and j.reason == "tied_labels"
    assert j.label_probs["A"] == pytest.approx(j.label_probs["B"])


def test_a_low_mass_label_verdict_is_read_by_default_as_papers_001_and_004_do(pair):
    """The papers take the most probable label whatever its mass: by default (min_label_mass 0) a
    verdict the model hardly wanted to give is read, its mass kept for the count under ½."""
    completion = Completion(text="The", label_logprobs={"A": -7.0, "B": -math.inf, "C": -9.0}, warnings=("label_not_in_top_k:B",))
    j = interpret(pair, completion)
    assert j.status == "parsed" and j.verdict == "A" and j.reason is None
    assert j.label_mass == pytest.approx(math.exp(-7.0) + math.exp(-9.0))


def test_a_label_verdict_the_model_did_not_want_to_give_is_unparsed_under_the_floor_variant(pair):
    # the example: A holds 0.09% of the next-token mass, B is not even in the top-k
    completion = Completion(text="The", label_logprobs={"A": -7.0, "B": -math.inf, "C": -9.0}, warnings=("label_not_in_top_k:B",))
    floor = JudgeTask("pairwise", "alpha", pair.instance, pair.candidates, options={"mode": "labels", "min_label_mass": 0.5})
    j = interpret(floor, completion)
    assert j.status == "unparsed" and j.reason == "low_label_mass" and j.verdict is None
    assert j.label_probs is None  # renormalised probabilities would claim a certainty the model lacked
    assert j.label_mass == pytest.approx(math.exp(-7.0) + math.exp(-9.0))
    assert j.label_logprobs == {"A": -7.0, "B": -math.inf, "C": -9.0}
    assert j.label_top_k == {"A": True, "B": False, "C": True} and j.warnings == ("label_not_in_top_k:B",)


@pytest.mark.parametrize(
    "mass, threshold, status",
    [
        (0.6, 0.5, "parsed"),
        (0.4, 0.5, "unparsed"),
        (0.4, 0.3, "parsed"),
        (0.01, 0.0, "parsed"),
        (0.5, 0.5, "parsed"),
        (0.01, None, "parsed"),
    ],
)
def test_min_label_mass_is_an_option(pair, mass, threshold, status):
    options = {"mode": "labels"} | ({} if threshold is None else {"min_label_mass": threshold})
    task = JudgeTask("pairwise", "alpha", pair.instance, pair.candidates, options=options)
    j = interpret(task, Completion(text="A", label_logprobs={"A": math.log(mass * 0.75), "B": math.log(mass * 0.25)}))
    threshold = 0.0 if threshold is None else threshold  # the default: the argmax, as papers 001 and 004
    assert j.status == status and j.label_mass == pytest.approx(mass)
    assert (j.verdict == "A") == (status == "parsed")
    assert f"-minmass{threshold:g}@" in j.template_id  # how the answer was read is part of its id


@pytest.mark.parametrize("value", [-0.1, 1.5, "half", True, float("nan")])
def test_min_label_mass_must_be_a_share(pair, value):
    with pytest.raises(ValueError, match="min_label_mass"):
        JudgeTask("pairwise", "alpha", pair.instance, pair.candidates, options={"mode": "labels", "min_label_mass": value})


def test_label_mass_helper():
    assert label_mass({"A": math.log(0.2), "B": math.log(0.3), "X": 0.0}, ["A", "B"]) == pytest.approx(0.5)
    assert label_mass({"A": float("nan"), "B": "junk"}, ["A", "B"]) == 0.0
    assert label_mass(None, ["A"]) is None


def test_label_probabilities_helper():
    assert label_probabilities({"Yes": 0.0, "No": 0.0}, {"Yes": "yes", "No": "no"}) == {"yes": 0.5, "no": 0.5}
    assert label_probabilities({"Yes": "junk"}, {"Yes": "yes", "No": "no"}) is None


@pytest.mark.parametrize("mode", ["labels", "text"])
def test_failed_completion_is_failed_never_a_verdict(instance, responses, mode):
    task = JudgeTask("pairwise", "alpha", instance, (responses["alpha"], responses["beta"]), options={"mode": mode})
    j = interpret(task, failed("timeout: read timed out", latency_s=30.0))
    assert j.status == "failed" and j.verdict is None and j.score is None and j.label_probs is None
    assert j.reason == "timeout"
    assert j.raw_output == "error: timeout: read timed out" and j.latency_s == 30.0
    # a failed completion that somehow carries label log-probs still never yields a verdict
    odd = Completion(text=None, label_logprobs={"A": 0.0}, status="failed", error="http_5xx:503")
    assert interpret(task, odd).status == "failed"


def test_empty_text_is_unparsed(instance, responses):
    task = JudgeTask("recognition", "alpha", instance, (responses["alpha"],))
    assert interpret(task, Completion(text=None)).status == "unparsed"
    assert interpret(task, Completion(text="   ")).status == "unparsed"


def test_pointwise_scale_text_and_labels(instance, responses):
    one = (responses["gamma"],)
    text = JudgeTask("pointwise", "alpha", instance, one)
    j = interpret(text, Completion(text="Fine answer.\nRating: [[8]]"))
    assert j.status == "parsed" and j.score == 8.0 and j.verdict is None and j.protocol == "pointwise"
    assert j.candidates == ("gamma",)
    assert interpret(text, Completion(text="Rating: [[12]]")).status == "unparsed"
    labels = JudgeTask("pointwise", "alpha", instance, one, options={"mode": "labels", "scale": (1, 3)})
    j = interpret(labels, Completion(text="3", label_logprobs={"1": -4.0, "2": -2.0, "3": -0.2}))
    assert j.score == 3.0 and set(j.label_probs) == {"1", "2", "3"}


def test_pointwise_fraction(responses):
    from nepotism.records import Instance, Response, RubricItem

    inst = Instance("f1", "Say hi in French.", rubric=(RubricItem("a", "Uses French"), RubricItem("b", "Says hi")))
    task = JudgeTask("pointwise", "j", inst, (Response("f1", "g", "Bonjour"),), options={"kind": "fraction"})
    j = interpret(task, Completion(text='```json\n{"met": "1/2"}\n```'))
    assert j.score == 0.5 and j.template_id.startswith("pointwise-fraction@")
    assert interpret(task, Completion(text='{"met": "1/3"}')).status == "unparsed"


def test_rubric_single(instance, responses):
    item = instance.rubric[2]
    task = JudgeTask("rubric", "beta", instance, (responses["beta"],), rubric_item=item)
    j = interpret(task, Completion(text='{"criterion_met": false}'))
    assert j.verdict == "no" and j.rubric_id == "r3" and j.protocol == "rubric" and j.candidates == ("beta",)
    labels = JudgeTask("rubric", "beta", instance, (responses["beta"],), rubric_item=item, options={"mode": "labels"})
    j = interpret(labels, Completion(text="Yes", label_logprobs={"Yes": -0.1, "No": -2.5}))
    assert j.verdict == "yes" and j.label_probs["yes"] > 0.9


def test_rubric_all_gives_one_judgment_per_item(instance, responses):
    task = JudgeTask("rubric-all", "alpha", instance, (responses["alpha"],))
    text = '{"results": [{"item": 1, "criterion_met": true}, {"item": 2, "criterion_met": true}]}'
    js = interpret_all(task, Completion(text=text))
    assert [j.rubric_id for j in js] == ["r1", "r2", "r3"]
    assert [(j.status, j.verdict) for j in js] == [("parsed", "yes"), ("parsed", "yes"), ("unparsed", None)]
    assert all(j.protocol == "rubric" and j.raw_output == text for j in js)
    assert len({j.id for j in js}) == 3
    assert all(j.status == "failed" for j in interpret_all(task, failed("connection")))
    with pytest.raises(ValueError, match="interpret_all"):
        interpret(task, Completion(text=text))


def test_interpret_all_wraps_single_protocols(pair):
    js = interpret_all(pair, Completion(text="A", label_logprobs={"A": 0.0}))
    assert len(js) == 1 and js[0].verdict == "A"


def test_recognition_pointwise_and_pairwise(instance, responses):
    point = JudgeTask("recognition", "alpha", instance, (responses["alpha"],), options={"reasoning": "cot"})
    j = interpret(point, Completion(text="The phrasing is typical of me.\n[[yes]]"))
    assert j.protocol == "recognition" and j.verdict == "yes" and j.template_id.startswith("recognition-cot@")
    pair = JudgeTask("recognition-pairwise", "alpha", instance, (responses["beta"], responses["alpha"]))
    j = interpret(pair, Completion(text="[[B]]"))
    assert j.protocol == "recognition" and j.verdict == "B" and j.candidates == ("beta", "alpha")
    labels = JudgeTask(
        "recognition-pairwise", "alpha", instance, (responses["beta"], responses["alpha"]), options={"mode": "labels"}
    )
    j = interpret(labels, Completion(text="A", label_logprobs={"A": -0.3, "B": -1.4}))
    assert j.verdict == "A" and set(j.label_probs) == {"A", "B"}


def test_categorise(instance, responses):
    cats = {"categories": ["Mathematics", "Writing", "Others"]}
    task = JudgeTask("categorise", "alpha", instance, (), options=cats)
    j = interpret(task, Completion(text='{"category": "mathematics"}'))
    assert j.protocol == "categorise" and j.verdict == "Mathematics" and j.candidates == ()
    assert interpret(task, Completion(text='{"category": "Poetry"}')).status == "unparsed"
    labels = JudgeTask(
        "categorise", "alpha", instance, (responses["alpha"],), options=cats | {"mode": "labels", "target": "response"}
    )
    j = interpret(labels, Completion(text="2", label_logprobs={"1": -3.0, "2": -0.1, "3": -4.0}))
    assert j.verdict == "Writing" and j.candidates == ("alpha",)


def test_text_mode_judgments_have_no_label_probs(instance, responses):
    task = JudgeTask("pairwise", "alpha", instance, (responses["alpha"], responses["beta"]))
    j = interpret(task, Completion(text="[[A]]", label_logprobs={"A": -5.0, "B": -0.01}))
    assert j.verdict == "A" and j.label_probs is None


def test_labels_after_the_explanation_are_paper_001s_protocol(pair):
    """mode=labels with reasoning=cot: the judge is asked to explain and bracket its verdict, the
    request reads the labels at the token after the last "[[" (paper 001 §4.2); a reply without the
    marker is unparsed as no_label_marker, as the paper leaves such replies out."""
    from nepotism.judging.render import render, render_prompt

    task = JudgeTask("pairwise", "alpha", pair.instance, pair.candidates, options={"mode": "labels", "reasoning": "cot"})
    request = render(task, model="alpha")
    assert request.labels == ("A", "B", "C") and request.labels_after == "[[" and request.max_tokens > 1
    assert "First reason step by step" in render_prompt(task) and "-labels-minmass0-cot@" in task_template_id(task)
    j = interpret(task, Completion(text="A is wrong, B is right. [[B]]", label_logprobs={"A": LN(0.1), "B": LN(0.8)}))
    assert j.status == "parsed" and j.verdict == "B" and j.raw_output.endswith("[[B]]")
    j = interpret(task, Completion(text="Both are fine.", warnings=("no_label_marker",)))
    assert j.status == "unparsed" and j.reason == "no_label_marker"
    one = render(JudgeTask("pairwise", "alpha", pair.instance, pair.candidates, options={"mode": "labels"}), model="alpha")
    assert one.labels_after is None and one.max_tokens == 1  # paper 004's one-token read stays the label default
    with pytest.raises(ValueError, match="after an explanation"):
        JudgeTask("rubric", "alpha", pair.instance, pair.candidates[:1], options={"mode": "labels", "reasoning": "cot"})
