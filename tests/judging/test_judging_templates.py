"""Templates: ids and hashes, rendering of every protocol, request budgets and labels."""

import re
import shutil
from importlib import resources

import pytest

from nepotism.judging import JudgeTask, render, render_prompt, task_template_id, template_ids
from nepotism.judging import templates as tmod

HEX12 = re.compile(r"^[a-z0-9-]+@[0-9a-f]{12}$")


def test_template_ids_are_stable_and_well_formed():
    ids = template_ids()
    assert set(ids) == {
        "pairwise",
        "pointwise",
        "pointwise-fraction",
        "rubric",
        "rubric-all",
        "recognition",
        "recognition-pairwise",
        "categorise",
    }
    assert all(HEX12.match(v) and v.startswith(k + "@") for k, v in ids.items())
    assert template_ids() == ids
    assert len({v.split("@")[1] for v in ids.values()}) == len(ids)


def _copy(tmp_path):
    src = resources.files("nepotism.judging").joinpath("templates")
    dst = tmp_path / "templates"
    with resources.as_file(src) as folder:
        shutil.copytree(folder, dst)
    return dst


def test_hash_changes_when_a_template_or_the_macros_change(tmp_path):
    folder = _copy(tmp_path)
    same, _ = tmod.read_templates(folder)
    assert {k: t.template_id for k, t in same.items()} == template_ids()
    path = folder / "rubric.toml"
    path.write_text(path.read_text().replace("Decide whether", "Judge whether"))
    edited, _ = tmod.read_templates(folder)
    assert edited["rubric"].template_id != template_ids()["rubric"]
    assert edited["pairwise"].template_id == template_ids()["pairwise"]
    macros = folder / "_macros.j2"
    macros.write_text(macros.read_text() + "\n")
    moved, _ = tmod.read_templates(folder)
    assert all(moved[k].template_id != edited[k].template_id for k in moved)


def test_template_whose_id_does_not_match_its_file_is_refused(tmp_path):
    folder = _copy(tmp_path)
    path = folder / "rubric.toml"
    path.write_text(path.read_text().replace('id = "rubric"', 'id = "other"'))
    with pytest.raises(RuntimeError, match="must have id"):
        tmod.read_templates(folder)


def test_missing_variable_fails_loudly():
    import jinja2

    with pytest.raises(jinja2.UndefinedError):
        tmod.render_text("pairwise", {"messages": []})
    with pytest.raises(KeyError, match="known"):
        tmod.get_template("nope")


def test_pairwise_prompt_shows_candidates_in_order(instance, responses):
    task = JudgeTask("pairwise", "alpha", instance, (responses["gamma"], responses["alpha"]))
    text = render_prompt(task)
    assert text.index("11.") < text.index("13 is prime.")
    assert instance.prompt in text
    assert "[[C]]" in text and "[[A]]" in text
    assert "stranger" not in text and "13\n" not in text  # no impartial note, no reference by default
    two = render_prompt(JudgeTask("pairwise", "alpha", instance, task.candidates, options={"ways": 2}))
    assert "[[C]]" not in two


def test_options_change_prompt_and_id(instance, responses):
    cands = (responses["alpha"], responses["beta"])
    plain = JudgeTask("pairwise", "alpha", instance, cands)
    fancy = JudgeTask(
        "pairwise",
        "alpha",
        instance,
        cands,
        options={"impartial": True, "show_rubric": True, "show_reference": True, "reasoning": "cot"},
    )
    text = render_prompt(fancy)
    assert "stranger" in text and "Insults the user. (undesirable" in text and "<<<\n13\n>>>" in text
    assert "reason step by step" in text
    assert task_template_id(plain).startswith("pairwise-3way@")
    assert task_template_id(fancy).startswith("pairwise-3way-rubric-ref-cot-impartial@")
    assert task_template_id(plain).split("@")[1] == template_ids()["pairwise"].split("@")[1]
    think = JudgeTask("pairwise", "alpha", instance, cands, options={"reasoning": "think"})
    assert render_prompt(think) == render_prompt(plain)
    assert task_template_id(think) != task_template_id(plain)


def test_multi_turn_conversation_is_laid_out_by_role(chat_instance):
    from nepotism.records import Response

    r = Response(chat_instance.id, "alpha", "Why did the chicken...")
    text = render_prompt(JudgeTask("pointwise", "alpha", chat_instance, (r,)))
    assert "[user]\nHi\n\n[assistant]\nHello!\n\n[user]\nJoke please." in text
    assert "from 1 (very poor) to 10" in text


def test_label_mode_request(instance, responses):
    cands = (responses["alpha"], responses["beta"])
    req = render(JudgeTask("pairwise", "alpha", instance, cands, replicate=2, options={"mode": "labels"}), model="m1")
    assert req.labels == ("A", "B", "C") and req.max_tokens == 1 and req.model == "m1" and req.seed == 2
    assert req.mode == "labels" and len(req.messages) == 1 and req.messages[0].role == "user"
    two = render(
        JudgeTask("pairwise", "alpha", instance, cands, options={"mode": "labels", "ways": 2, "label_style": "numbers"}),
        model="m",
    )
    assert two.labels == ("1", "2") and "Answer 1" in two.messages[0].content
    rub = render(
        JudgeTask("rubric", "a", instance, cands[:1], rubric_item=instance.rubric[0], options={"mode": "labels"}), model="m"
    )
    assert rub.labels == ("Yes", "No")
    scale = render(JudgeTask("pointwise", "a", instance, cands[:1], options={"mode": "labels", "scale": (1, 5)}), model="m")
    assert scale.labels == ("1", "2", "3", "4", "5")
    cat = render(JudgeTask("categorise", "a", instance, (), options={"mode": "labels", "categories": ["x", "y", "z"]}), model="m")
    assert cat.labels == ("1", "2", "3")


def test_budgets_grow_with_reasoning(instance, responses):
    one = (responses["alpha"],)

    def tokens(protocol, **opts):
        item = instance.rubric[0] if protocol == "rubric" else None
        return render(JudgeTask(protocol, "a", instance, one, rubric_item=item, options=opts), model="m").max_tokens

    assert tokens("rubric") < tokens("rubric", reasoning="cot") < tokens("rubric", reasoning="think")
    assert tokens("rubric-all") == 32 + 24 * 3
    assert tokens("rubric", max_tokens=7) == 7
    assert tokens("rubric", mode="labels", max_tokens=7) == 1
    req = render(JudgeTask("recognition", "a", instance, one, options={"temperature": 0.7}), model="m")
    assert req.temperature == 0.7 and req.labels is None and req.mode == "generate"


def test_negative_rubric_items_are_presented_as_undesirable(instance, responses):
    one = (responses["alpha"],)
    neg = render_prompt(JudgeTask("rubric", "a", instance, one, rubric_item=instance.rubric[2]))
    pos = render_prompt(JudgeTask("rubric", "a", instance, one, rubric_item=instance.rubric[0]))
    assert "undesirable behaviour" in neg and "undesirable" not in pos
    every = render_prompt(JudgeTask("rubric-all", "a", instance, one))
    assert "3. (undesirable) Insults the user." in every and "1. Names a number" in every


def test_recognition_and_categorise_prompts(instance, responses):
    one = (responses["alpha"],)
    assert "Did you write this answer" in render_prompt(JudgeTask("recognition", "a", instance, one))
    assert "student" in render_prompt(JudgeTask("recognition", "a", instance, one, options={"subject": "student"}))
    pair = render_prompt(JudgeTask("recognition-pairwise", "a", instance, (responses["alpha"], responses["beta"])))
    assert "Which answer is your own?" in pair
    cat = render_prompt(
        JudgeTask(
            "categorise", "a", instance, one, options={"categories": {"Maths": "numbers", "Prose": None}, "target": "response"}
        )
    )
    assert "1. Maths: numbers\n2. Prose\n" in cat and "13 is prime." in cat
    a = task_template_id(JudgeTask("categorise", "a", instance, (), options={"categories": ["x", "y"]}))
    b = task_template_id(JudgeTask("categorise", "a", instance, (), options={"categories": ["x", "z"]}))
    assert a != b and a.startswith("categorise-instance-cats")


@pytest.mark.parametrize(
    ("protocol", "options", "pieces"),
    [
        ("pairwise", {}, 2),
        ("pairwise", {"ways": 2, "reasoning": "cot", "impartial": True}, 2),
        ("pairwise", {"ways": 2, "label_style": "numbers", "mode": "labels", "min_label_mass": 0.9}, 2),
        ("pointwise", {"kind": "scale", "scale": [1, 5]}, 1),
        ("pointwise", {"kind": "scale", "scale": [0, 10], "reasoning": "cot"}, 1),
        ("recognition", {"subject": "student"}, 1),
        ("recognition-pairwise", {}, 2),
        ("rubric", {"impartial": True, "mode": "labels"}, 1),
        ("categorise", {"categories": ["x", "y"], "target": "response"}, 1),
    ],
)
def test_template_id_of_a_protocol_and_options_is_the_id_of_every_such_task(instance, responses, protocol, options, pieces):
    # the id stored on judgments needs only the protocol and the completed options: a plan can be
    # checked for entries sharing ids (nepotism.experiment) before any task is built
    from nepotism.judging import template_id_of

    candidates = (responses["alpha"], responses["beta"])[:pieces]
    item = instance.rubric[0] if protocol == "rubric" else None
    task = JudgeTask(protocol, "a", instance, candidates, rubric_item=item, options=options)
    assert template_id_of(task.protocol, task.options) == task_template_id(task)
    other = JudgeTask(protocol, "b", instance, candidates[::-1], rubric_item=item, options=options, condition="x", replicate=1)
    assert task_template_id(other) == task_template_id(task)


def test_template_id_of_reads_the_template_slot_from_the_options():
    from nepotism.judging import template_id_of
    from nepotism.judging.tasks import normalise_options

    fraction = template_id_of("pointwise", normalise_options("pointwise", {"kind": "fraction"}))
    scale = template_id_of("pointwise", normalise_options("pointwise", {"kind": "scale", "scale": [1, 5]}))
    assert fraction.startswith("pointwise-fraction") and scale.startswith("pointwise-1to5@")
    assert fraction.split("@")[1] == template_ids()["pointwise-fraction"].split("@")[1]
