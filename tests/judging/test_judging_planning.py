"""JudgeTask validation and keys; planner counts and orders."""

import pytest

from nepotism.judging import (
    JudgeTask,
    normalise_options,
    plan_categorise,
    plan_pairwise,
    plan_pointwise,
    plan_recognition,
    plan_rubric,
)
from nepotism.records import Instance, Response


@pytest.fixture
def data(instance, responses):
    other = Instance("q3", "Say hi.")
    rs = {
        instance.id: list(responses.values()),
        other.id: [Response(other.id, "alpha", "hi"), Response(other.id, "beta", "hello")],
    }
    return [instance, other], rs


def test_defaults_completed_and_key_stable(instance, responses):
    cands = (responses["alpha"], responses["beta"])
    implicit = JudgeTask("pairwise", "alpha", instance, cands)
    explicit = JudgeTask("pairwise", "alpha", instance, cands, options={"ways": 3, "mode": "text"})
    assert implicit.key == explicit.key and implicit == explicit
    assert implicit.options["ways"] == 3 and implicit.options["reasoning"] == "none"
    keys = {
        implicit.key,
        JudgeTask("pairwise", "alpha", instance, cands[::-1]).key,
        JudgeTask("pairwise", "alpha", instance, cands, replicate=1).key,
        JudgeTask("pairwise", "alpha", instance, cands, condition="masked").key,
        JudgeTask("pairwise", "beta", instance, cands).key,
        JudgeTask("pairwise", "alpha", instance, cands, options={"ways": 2}).key,
    }
    assert len(keys) == 6
    assert hash(implicit) == hash(explicit)


@pytest.mark.parametrize(
    "protocol, options, match",
    [
        ("pairwise", {"wayz": 3}, "unknown option"),
        ("pairwise", {"ways": 4}, "must be one of"),
        ("pairwise", {"mode": "labels", "reasoning": "think"}, "not reasoning='think'"),
        ("rubric", {"mode": "labels", "reasoning": "cot"}, "after an explanation"),
        ("pairwise", {"label_style": "numbers"}, "two-way"),
        ("rubric-all", {"mode": "labels"}, "mode='text'"),
        ("pointwise", {"scale": (5, 1)}, "low < high"),
        ("pointwise", {"kind": "fraction", "mode": "labels"}, "one label token"),
        ("categorise", {"categories": ["only"]}, "at least two"),
        ("categorise", {"categories": ["a", "A"]}, "distinct"),
        ("categorise", {"categories": [str(i) for i in range(10)], "mode": "labels"}, "1-9"),
        ("pairwise", {"impartial": "yes"}, "true or false"),
        ("pairwise", {"max_tokens": 0}, "positive"),
        ("nonsense", {}, "unknown protocol"),
    ],
)
def test_bad_options_are_refused(protocol, options, match):
    with pytest.raises(ValueError, match=match):
        normalise_options(protocol, options)


def test_candidate_counts_and_rubric_rules(instance, responses):
    a, b = responses["alpha"], responses["beta"]
    with pytest.raises(ValueError, match="takes 2"):
        JudgeTask("pairwise", "j", instance, (a,))
    with pytest.raises(ValueError, match="rubric_item is required"):
        JudgeTask("rubric", "j", instance, (a,))
    with pytest.raises(ValueError, match="rubric_item is required"):
        JudgeTask("pointwise", "j", instance, (a,), rubric_item=instance.rubric[0])
    with pytest.raises(ValueError, match="answer instance"):
        JudgeTask("pointwise", "j", instance, (Response("other", "alpha", "x"),))
    with pytest.raises(ValueError, match="points >= 0"):
        JudgeTask("pointwise", "j", instance, (a,), options={"kind": "fraction"})
    bare = Instance("q9", "x")
    with pytest.raises(ValueError, match="no rubric"):
        JudgeTask("rubric-all", "j", bare, (Response("q9", "g", "y"),))
    with pytest.raises(ValueError, match="takes 1"):
        JudgeTask("categorise", "j", instance, (), options={"categories": ["x", "y"], "target": "response"})
    assert JudgeTask("rubric", "j", instance, (b,), rubric_item=instance.rubric[1]).judgment_protocol == "rubric"
    assert JudgeTask("recognition-pairwise", "j", instance, (a, b)).judgment_protocol == "recognition"


def test_plan_pairwise_all_pairs_both_orders_replicates(data):
    instances, rs = data
    tasks = plan_pairwise(instances, rs, ["alpha", "beta"], replicates=2)
    # q1: 3 pairs, q3: 1 pair; x2 orders x2 judges x2 replicates
    assert len(tasks) == (3 + 1) * 2 * 2 * 2
    assert len({t.key for t in tasks}) == len(tasks)
    first, swapped = tasks[0], tasks[2]
    assert [r.generator for r in first.candidates] == ["alpha", "beta"]
    assert [r.generator for r in swapped.candidates] == ["beta", "alpha"]
    assert [t.replicate for t in tasks[:4]] == [0, 1, 0, 1]
    one_order = plan_pairwise(instances, rs, ["alpha"], both_orders=False)
    assert len(one_order) == 4
    assert plan_pairwise(instances, rs, ["alpha"], options={"ways": 2})[0].options["ways"] == 2


def test_plan_pairwise_judge_vs_others(data):
    instances, rs = data
    tasks = plan_pairwise(instances, rs, ["alpha", "gamma", "outsider"], pairs="judge-vs-others")
    # alpha: q1 vs beta, gamma; q3 vs beta -> 3 pairs x 2 orders; gamma: q1 only -> 2 pairs x 2
    assert len(tasks) == 3 * 2 + 2 * 2
    for t in tasks:
        assert t.judge in [r.generator for r in t.candidates]
    assert [r.generator for r in tasks[0].candidates][0] == "alpha"
    explicit = plan_pairwise(instances, rs, ["j"], pairs=[("gamma", "alpha")], both_orders=False)
    assert len(explicit) == 1 and [r.generator for r in explicit[0].candidates] == ["gamma", "alpha"]
    with pytest.raises(ValueError):
        plan_pairwise(instances, rs, ["j"], pairs="some")
    with pytest.raises(ValueError, match="positive"):
        plan_pairwise(instances, rs, ["j"], replicates=0)


def test_duplicate_generator_is_refused(instance, responses):
    dup = {instance.id: [responses["alpha"], Response(instance.id, "alpha", "another")]}
    with pytest.raises(ValueError, match="two responses"):
        plan_pointwise([instance], dup, ["j"])


def test_plan_pointwise_rubric_recognition_categorise(data, instance):
    instances, rs = data
    assert len(plan_pointwise(instances, rs, ["j1", "j2"])) == (3 + 2) * 2
    assert len(plan_pointwise(instances, rs, ["j1"], generators=["beta"], replicates=3)) == 2 * 3
    single = plan_rubric(instances, rs, ["j"])
    assert len(single) == 3 * 3  # only q1 has a rubric: 3 responses x 3 items
    assert {t.rubric_item.id for t in single} == {"r1", "r2", "r3"}
    assert len(plan_rubric(instances, rs, ["j"], all_rubrics=True)) == 3
    assert len(plan_recognition(instances, rs, ["alpha"])) == 5
    pair = plan_recognition(instances, rs, ["alpha"], pairwise=True)
    assert len(pair) == 3 * 2 and all(t.protocol == "recognition-pairwise" for t in pair)
    cats = {"categories": ["Maths", "Chat"]}
    assert len(plan_categorise(instances, ["j"], options=cats, replicates=2)) == 4
    on_responses = plan_categorise(instances, ["j"], responses_by_instance=rs, options=cats)
    assert len(on_responses) == 5 and on_responses[0].options["target"] == "response"
