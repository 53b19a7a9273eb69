"""User judge templates (paper 000 D.3, prompt sensitivity): placeholders checked when read, errors
naming file, line and field; the prompt, the stored template id and the call change with the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nepotism.errors import InputError
from nepotism.experiment import load_experiment
from nepotism.judging import render, render_prompt, task_template_id
from nepotism.judging.render import _variables
from nepotism.judging.tasks import JudgeTask
from nepotism.judging.templates import COMMON, PLACEHOLDERS, check_user_template, template_slot
from nepotism.records import Instance, Response, RubricItem

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "templates" / "pairwise-terse.toml"
INSTANCE = Instance(
    "q1", "What is 2+2?", reference_answer="4", rubric=(RubricItem("r1", "Says 4.", 1.0), RubricItem("r2", "Is rude.", -1.0))
)
ANSWERS = (Response("q1", "m1", "It is 4."), Response("q1", "m2", "Four."))

TASKS = [
    ("pairwise", ANSWERS, None, {}),
    ("pairwise", ANSWERS, None, {"ways": 2, "show_rubric": True, "show_reference": True, "reasoning": "cot"}),
    ("pointwise", ANSWERS[:1], None, {"show_reference": True}),
    ("pointwise", ANSWERS[:1], None, {"kind": "fraction"}),
    ("rubric", ANSWERS[:1], INSTANCE.rubric[0], {}),
    ("rubric-all", ANSWERS[:1], None, {}),
    ("recognition", ANSWERS[:1], None, {"subject": "student"}),
    ("recognition-pairwise", ANSWERS, None, {}),
    ("categorise", (), None, {"categories": ["math", "chat"]}),
    ("categorise", ANSWERS[:1], None, {"categories": ["math", "chat"], "target": "response"}),
]


@pytest.mark.parametrize("protocol, candidates, item, options", TASKS)
def test_the_placeholder_table_is_what_rendering_passes(protocol, candidates, item, options):
    instance = Instance("q1", "What is 2+2?", rubric=INSTANCE.rubric[:1]) if options.get("kind") == "fraction" else INSTANCE
    task = JudgeTask(protocol, "judge", instance, candidates, rubric_item=item, options=options)
    required, optional = PLACEHOLDERS[template_slot(protocol, task.options)]
    passed = set(_variables(task))
    assert passed <= required | optional | COMMON[0] | COMMON[1]
    assert required | COMMON[0] <= passed


def _write(tmp_path: Path, body: str, name: str = "t.toml") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


PAIRWISE = '''protocol = "pairwise"
template = """
{{ m_note }}Question: {{ messages[0].content }}
A: {{ first }}
B: {{ second }}
Say [[A]] or [[B]].
"""
'''


@pytest.mark.parametrize(
    "body, line, field, words",
    [
        # line 3 of the file holds {{ m_note }}: the template text starts on line 3 (after `template = """`)
        (PAIRWISE, 3, "template", "unknown placeholder {{ m_note }}"),
        (
            PAIRWISE.replace("{{ m_note }}", "").replace("B: {{ second }}", "B: {{ secnd }}"),
            5,
            "template",
            "unknown placeholder {{ secnd }}",
        ),
        (PAIRWISE.replace("{{ m_note }}", "").replace("B: {{ second }}\n", ""), 3, "template", "never shows second"),
        (PAIRWISE.replace("{{ m_note }}", "").replace("{{ messages[0].content }}", "?"), 3, "template", "never shows messages"),
        (
            PAIRWISE.replace("{{ m_note }}", "").replace("A: {{ first }}", "A: {{ first + }}"),
            4,
            "template",
            "not a valid Jinja2 template",
        ),
        (PAIRWISE.replace('protocol = "pairwise"', 'protocol = "rubric"'), 1, "protocol", "used for protocol 'pairwise'"),
        (PAIRWISE.replace('protocol = "pairwise"\n', ""), None, "protocol", "is required"),
        ('colour = "red"\n' + PAIRWISE, 1, "colour", "unknown key"),
    ],
)
def test_a_bad_template_names_file_line_and_field(tmp_path, body, line, field, words):
    path = _write(tmp_path, body)
    with pytest.raises(InputError) as err:
        check_user_template(path, "pairwise")
    assert (err.value.path, err.value.line, err.value.field) == (str(path), line, field)
    assert words in str(err.value)


def test_a_user_template_renders_and_has_its_own_id(tmp_path):
    path = _write(tmp_path, PAIRWISE.replace("{{ m_note }}", ""))
    task = JudgeTask("pairwise", "judge", INSTANCE, ANSWERS, options={"ways": 2, "template": str(path)})
    assert render_prompt(task) == "Question: What is 2+2?\nA: It is 4.\nB: Four.\nSay [[A]] or [[B]].\n"
    first_id = task_template_id(task)
    first_request = render(task, model="judge")
    assert first_id.startswith("user-t-2way@")
    shipped = JudgeTask("pairwise", "judge", INSTANCE, ANSWERS, options={"ways": 2})
    assert task_template_id(shipped).startswith("pairwise-2way@")
    # an edited file is read again: a new prompt (so a new request, a new call) and a new id
    path.write_text(PAIRWISE.replace("{{ m_note }}", "").replace("Question:", "Q:"))
    os.utime(path, ns=(1, 1))
    again = JudgeTask("pairwise", "judge", INSTANCE, ANSWERS, options={"ways": 2, "template": str(path)})
    assert render_prompt(again).startswith("Q: What is 2+2?") and task_template_id(again) != first_id
    assert render(again, model="judge").messages[0].content.startswith("Q:") and first_request.messages[0].content.startswith(
        "Question:"
    )


def test_the_shipped_example_is_a_valid_pairwise_template():
    template = check_user_template(EXAMPLE, "pairwise")
    assert template.id == "user-pairwise-terse" and template.protocol == "pairwise"
    task = JudgeTask("pairwise", "judge", INSTANCE, ANSWERS, options={"template": str(EXAMPLE), "impartial": True})
    prompt = render_prompt(task)
    assert prompt.startswith("Be strictly even-handed.") and "[[C]] for a tie" in prompt


def _experiment(tmp_path: Path, conditions: str, protocol: str = "pairwise") -> Path:
    (tmp_path / "items.jsonl").write_text('{"id": "q", "prompt": "hi"}\n')
    path = tmp_path / "exp.toml"
    path.write_text(f"""[experiment]
name = "t"
registry = ["{ROOT / "examples" / "standin_models.toml"}"]
[dataset]
path = "items.jsonl"
[models.standin-alpha]
backend = "openai"
base_url = "http://127.0.0.1:1/v1"
[judging]
judges = ["standin-alpha"]
conditions = {conditions}
[[judging.protocols]]
protocol = "{protocol}"
""")
    return path


def test_an_experiment_resolves_and_checks_the_template_when_read(tmp_path):
    (tmp_path / "tpl").mkdir()
    good = _write(tmp_path / "tpl", PAIRWISE.replace("{{ m_note }}", ""), "short.toml")
    exp = load_experiment(_experiment(tmp_path, '["default", {name = "short", options = {template = "tpl/short.toml"}}]'))
    assert exp.conditions[1].options["template"] == str(good)
    bad = _write(tmp_path / "tpl", PAIRWISE, "bad.toml")
    with pytest.raises(InputError) as err:
        load_experiment(_experiment(tmp_path, '[{name = "bad", options = {template = "tpl/bad.toml"}}]'))
    assert (err.value.path, err.value.line, err.value.field) == (str(bad), 3, "template")
    with pytest.raises(InputError, match="used for protocol 'recognition'") as err:
        load_experiment(
            _experiment(tmp_path, '[{name = "short", options = {template = "tpl/short.toml"}}]', protocol="recognition")
        )
    assert err.value.path == str(good) and err.value.field == "protocol"
    with pytest.raises(InputError, match="not found"):
        load_experiment(_experiment(tmp_path, '[{name = "x", options = {template = "tpl/none.toml"}}]'))
