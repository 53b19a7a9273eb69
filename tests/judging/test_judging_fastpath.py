"""The fast paths of judging give exactly what the plain paths give.

Prompts rendered through a skeleton equal the full Jinja2 render (byte for byte, so cache keys do
not move) over many random tasks of every protocol; a skeleton that would not reproduce the full
render is never used; requests, judgments and label probabilities assembled directly equal the
ones the validating constructors build; shared task options never let an invalid value through.
"""

import dataclasses
import importlib
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nepotism.backends.base import Completion, Request, failed, logsumexp
from nepotism.judging import (
    JudgeTask,
    interpret_all,
    label_map,
    label_probabilities,
    normalise_options,
    plan_categorise,
    plan_pairwise,
    plan_pointwise,
    plan_recognition,
    plan_rubric,
    render,
    render_prompt,
)
from nepotism.judging import skeleton as skmod
from nepotism.records import Instance, Judgment, Message, Response, RubricItem

rmod = importlib.import_module("nepotism.judging.render")
imod = importlib.import_module("nepotism.judging.interpret")

# pieces chosen to break naive substitution: template syntax, sentinel characters, edge whitespace
_PIECES = [
    "a",
    "b",
    " ",
    "\n",
    "\t",
    "  ",
    "{{ x }}",
    "{% if %}",
    "\ue000",
    "\ue0011\ue001",
    "[[A]]",
    "é",
    "<<<",
    ">>>",
    "",
    "\r\n",
    "Yes",
    "7/10",
    "\u2003",
]


def _text(rng, most=10):
    return "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, most)))


def _world(seed, n=24):
    rng = random.Random(seed)
    instances, responses = [], {}
    for i in range(n):
        if i % 3 == 0:
            roles = ["user", "system", "assistant"]
            prompt = tuple(Message(rng.choice(roles), _text(rng)) for _ in range(rng.randint(1, 3)))
        else:
            prompt = _text(rng) or "q"
        rubric = tuple(RubricItem(f"r{k}", _text(rng) or "x", rng.choice([1.0, 2, -1, 0.5])) for k in range(rng.randint(0, 3)))
        inst = Instance(f"i{i}", prompt, reference_answer=rng.choice([None, "", _text(rng)]), rubric=rubric)
        instances.append(inst)
        responses[inst.id] = [Response(inst.id, g, _text(rng)) for g in ("ga", "gb", "gc")]
    return instances, responses


def _tasks(instances, responses):
    judges = ["ga", "gb"]
    with_rubric = [i for i in instances if i.rubric]
    positive = [i for i in instances if all(r.points >= 0 for r in i.rubric)]
    tasks = []
    for opts in [
        {},
        {"mode": "labels"},
        {"ways": 2, "label_style": "numbers"},
        {"reasoning": "cot", "impartial": True},
        {"show_reference": True},
    ]:
        tasks += plan_pairwise(instances, responses, judges, options=opts)
    tasks += plan_pairwise(with_rubric, responses, judges, options={"show_rubric": True, "mode": "labels"})
    for opts in [{}, {"mode": "labels"}, {"scale": (0, 5), "show_reference": True}, {"reasoning": "think"}]:
        tasks += plan_pointwise(instances, responses, judges, options=opts)
    tasks += plan_pointwise(positive, responses, judges, options={"kind": "fraction"})
    tasks += plan_rubric(instances, responses, judges, options={"mode": "labels"})
    tasks += plan_rubric(instances, responses, judges, all_rubrics=True, options={"reasoning": "cot"})
    tasks += plan_recognition(instances, responses, judges, options={"subject": "student"})
    tasks += plan_recognition(instances, responses, judges, pairwise=True, options={"mode": "labels"})
    tasks += plan_categorise(instances, judges, options={"categories": [("math", "numbers"), "chat"]})
    tasks += plan_categorise(
        instances, judges, responses_by_instance=responses, options={"categories": ["a", "b"], "mode": "labels"}
    )
    return tasks


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_skeleton_prompts_equal_the_full_render_for_every_protocol(seed):
    tasks = _tasks(*_world(seed))
    assert len({t.protocol for t in tasks}) == 7
    for task in tasks:
        full = rmod._render_full(task)
        assert render_prompt(task) == full  # first of its shape: builds the skeleton
        assert render_prompt(task) == full  # then through the skeleton
    used = [s for s in rmod._SKELETONS.values() if s is not None]
    assert used, "no skeleton was used at all"


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(_PIECES + ["x", "Z", "\x00"]), max_size=8).map("".join), min_size=4, max_size=4))
def test_skeleton_prompts_equal_full_render_for_arbitrary_texts(texts):
    question, first, second, reference = texts
    inst = Instance("h", question or "q", reference_answer=reference)
    a, b = Response("h", "a", first), Response("h", "b", second)
    for options in ({"show_reference": True}, {"mode": "labels", "ways": 2}):
        task = JudgeTask("pairwise", "a", inst, (a, b), options=options)
        assert render_prompt(task) == rmod._render_full(task)
        point = JudgeTask("pointwise", "a", inst, (a,), options={"show_reference": True})
        assert render_prompt(point) == rmod._render_full(point)


def test_a_shape_whose_skeleton_does_not_reproduce_the_full_render_is_rendered_in_full(monkeypatch):
    real = rmod._render_full

    def depends_on_content(task):  # a template that looks at a text, not just prints it
        return real(task) + f"{len(task.candidates[0].text)}\n"

    monkeypatch.setattr(rmod, "_render_full", depends_on_content)
    monkeypatch.setattr(rmod, "_SKELETONS", {})
    inst = Instance("s", "question")
    for text in ("one", "three", "seventeen chars!!"):
        task = JudgeTask("pointwise", "j", inst, (Response("s", "g", text),))
        assert render_prompt(task) == depends_on_content(task)
        assert render_prompt(task).endswith(f"{len(text)}\n")
    assert list(rmod._SKELETONS.values()) == [None]


def test_skeleton_fill_strips_like_a_full_render():
    rendered = f"{skmod.sentinel(0)} middle {skmod.sentinel(1)}\n"
    skel = skmod.Skeleton.from_rendered(rendered)
    assert skel.slots == {0, 1}
    assert skel.fill(["a", "b"]) == "a middle b\n"
    assert skel.fill(["  a", "b \n "]) == "a middle b\n"
    assert skel.fill([" \n", "\t"]) == "middle\n"
    with pytest.raises(ValueError, match="sentinel"):
        skmod.Skeleton.from_rendered("stray \ue000 character\n")


def test_render_builds_the_same_request_as_the_validating_constructor(instance, responses):
    tasks = plan_pairwise(
        [instance],
        {instance.id: list(responses.values())},
        ["alpha"],
        pairs="judge-vs-others",
        options={"mode": "labels"},
        replicates=2,
    )
    for task in tasks * 2:  # the second round goes the direct way
        got = render(task, model="served")
        want = Request(
            model="served",
            messages=(Message("user", render_prompt(task)),),
            max_tokens=1,
            temperature=0.0,
            seed=task.replicate,
            labels=tuple(label_map(task)),
        )
        assert type(got) is Request and got == want
        assert vars(got) == vars(want) | {"extra": got.extra} and dict(got.extra) == {}
        assert isinstance(got.messages[0], Message) and got.messages == want.messages
    with pytest.raises(ValueError, match="model"):
        render(tasks[0], model="")  # still checked for a model it has not seen


def _reference_probabilities(logprobs, labels):
    if not logprobs:
        return None
    values = {}
    for label, verdict in labels.items():
        try:
            value = float(logprobs.get(label, -math.inf))
        except (TypeError, ValueError):
            value = -math.inf
        values[verdict] = value if math.isfinite(value) else -math.inf
    total = logsumexp(list(values.values()))
    if total == -math.inf:
        return None
    return {v: math.exp(x - total) if x != -math.inf else 0.0 for v, x in values.items()}


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["A", "B", "C", "D"]),
        st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), st.integers(-50, 0), st.just("x"), st.none()),
    )
)
def test_label_probabilities_are_bit_identical_to_the_reference(logprobs):
    labels = {"A": "A", "B": "B", "C": "tie"}
    assert label_probabilities(logprobs, labels) == _reference_probabilities(logprobs, labels)


def test_judgments_assembled_directly_equal_constructed_ones(instance, responses):
    tasks = plan_pairwise([instance], {instance.id: list(responses.values())}, ["alpha"], options={"mode": "labels", "ways": 3})
    tasks += plan_rubric([instance], {instance.id: list(responses.values())}, ["alpha"], all_rubrics=True)
    completions = [
        Completion(text="A", label_logprobs={"A": -0.2, "B": -2.0, "C": -3.0}, usage={"prompt_tokens": 9}, latency_s=0.25),
        Completion(text='{"results": [true, false, true]}', usage={}),
        failed("timeout"),
    ]
    for task in tasks:
        for completion in completions:
            for got in interpret_all(task, completion):
                assert type(got) is Judgment
                rebuilt = Judgment(**{f.name: getattr(got, f.name) for f in dataclasses.fields(Judgment)})
                assert vars(got) == vars(rebuilt)
                assert got.template_id == rmod.task_template_id(task)


def test_direct_judgments_are_still_validated(monkeypatch, instance, responses):
    task = plan_pairwise([instance], {instance.id: list(responses.values())}, ["alpha"], options={"mode": "labels", "ways": 2})[0]
    monkeypatch.setattr(imod, "_info", lambda t: rmod._info(t)._replace(label_map={"A": "A", "B": "maybe"}))
    with pytest.raises(ValueError, match="pairwise verdict"):
        interpret_all(task, Completion(text="B", label_logprobs={"A": -3.0, "B": -0.1}))


def test_shared_options_never_admit_a_value_normalise_options_refuses(instance, responses):
    good = JudgeTask(
        "pairwise", "alpha", instance, (responses["alpha"], responses["beta"]), options={"impartial": True, "ways": 2}
    )
    with pytest.raises(ValueError, match="true or false"):
        JudgeTask("pairwise", "alpha", instance, (responses["alpha"], responses["beta"]), options={"impartial": 1, "ways": 2})
    other = JudgeTask(
        "pairwise", "alpha", instance, (responses["alpha"], responses["beta"]), options={"impartial": True, "ways": 2.0}
    )
    assert other.options["ways"] == 2.0 and type(other.options["ways"]) is float
    assert type(good.options["ways"]) is int
    assert rmod.task_template_id(other) != rmod.task_template_id(good)
    public = normalise_options("pairwise", {"impartial": True, "ways": 2})
    public["ways"] = 3  # the caller's copy; tasks keep theirs
    again = JudgeTask(
        "pairwise", "alpha", instance, (responses["alpha"], responses["beta"]), options={"impartial": True, "ways": 2}
    )
    assert again.options["ways"] == 2 and again == good
    with pytest.raises(TypeError):
        again.options["ways"] = 3  # read-only


def test_invalid_plan_options_still_fail_on_the_first_task(instance, responses):
    by = {instance.id: list(responses.values())}
    assert plan_pairwise([], by, ["alpha"], options={"ways": 5}) == []
    with pytest.raises(ValueError, match="ways"):
        plan_pairwise([instance], by, ["alpha"], options={"ways": 5})


_BITS = [
    "[[",
    "]]",
    "A",
    "B",
    "C",
    "tie",
    "1",
    "2",
    "7",
    "Yes",
    "no",
    " ",
    "\n",
    "\t",
    "*",
    "**",
    ">",
    '"',
    "`",
    "$$",
    "Verdict: ",
    "Answer:",
    "{",
    "}",
    ".",
    "-",
    "<think>",
    "</think>",
    "x" * 12,
]


def _grammars():
    parse = importlib.import_module("nepotism.judging.parse")
    return [
        parse.pairwise_grammar(ways=3),
        parse.pairwise_grammar(ways=2, numbers=True),
        parse.pairwise_grammar(ways=2, recognition=True),
        parse.yes_no_grammar(),
        parse.yes_no_grammar(recognition=True),
        parse.scale_grammar(1, 10),
        parse.fraction_grammar(4),
        parse.category_grammar(["math", "chat"]),
    ]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(_BITS), max_size=9).map("".join),
    st.sampled_from(["", "[[A]] is what the other answer said", "I choose [[B]]"]),
)
def test_sole_bracket_shortcut_agrees_with_the_full_marker_search(text, source):
    markers = importlib.import_module("nepotism.judging.markers")
    for grammar in _grammars():
        for candidate in (text, f"[[{text}]]", f" [[{text.strip()}]]\n"):
            fast = imod._sole_bracket(candidate, grammar)
            if fast is imod._NOT_SOLE:
                continue
            value, _ = markers.find_value(markers.strip_reasoning(candidate), grammar, [source, candidate * 3])
            assert fast == value, (candidate, grammar)


def test_sole_bracket_shortcut_is_taken_for_the_usual_answers():
    parse = importlib.import_module("nepotism.judging.parse")
    grammar = parse.pairwise_grammar(ways=3)
    assert imod._sole_bracket("[[B]]", grammar) == "B"
    assert imod._sole_bracket("  [[ tie ]]\n", grammar) == "tie"
    assert imod._sole_bracket("[[D]]", grammar) is None  # a marker with an invalid value binds
    assert imod._sole_bracket("[[A]] because", grammar) is imod._NOT_SOLE
    assert imod._sole_bracket('[["A"]]', grammar) is imod._NOT_SOLE


@pytest.mark.parametrize("seed", [0, 1])
def test_judgment_ids_from_the_task_equal_the_ids_of_what_interpret_all_gives(seed):
    """`judgment_ids` (a cached rerun counts stored judgments by them without interpreting) names
    exactly what `interpret_all` returns, for every protocol and any answer: ok, unreadable, failed."""
    from nepotism.judging import judgment_ids

    instances, responses = _world(seed)
    answers = [
        Completion(text="[[A]] yes 7/10 1"),
        Completion(text=""),
        failed("timeout: slow"),
        Completion(text="A", label_logprobs={"A": -0.1, "B": -2.5, "C": -4.0, "1": -3.0, "yes": -0.2}),
    ]
    protocols = set()
    for task in _tasks(instances, responses):
        protocols.add(task.protocol)
        for answer in answers:
            assert judgment_ids(task) == [j.id for j in interpret_all(task, answer)]
    assert protocols == {"pairwise", "pointwise", "rubric", "rubric-all", "recognition", "recognition-pairwise", "categorise"}
