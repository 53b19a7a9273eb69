import tomllib
from pathlib import Path

import pytest

from nepotism.errors import InputError
from nepotism.mitigations.config import load_plan, parse_plan

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mitigations" / "mitigations.toml"
BASE = """
[experiment]
name = "t"
[dataset]
path = "items.jsonl"
[models."qwen2.5-coder-0.5b-instruct"]
backend = "openai"
base_url = "http://127.0.0.1:9/v1"
[models."smollm2-135m-instruct"]
backend = "openai"
base_url = "http://127.0.0.1:9/v1"
[judging]
judges = ["qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct"]
[[judging.protocols]]
protocol = "pairwise"
pairs = "judge-vs-others"
options = { mode = "labels", ways = 2 }
"""


def _parse(extra: str):
    return parse_plan(tomllib.loads(BASE + extra), "exp.toml")


def test_the_example_parses():
    plan = load_plan(EXAMPLE)
    kinds = {c.kind for c in plan.conditions}
    assert kinds == {
        "synonym",
        "paraphrase",
        "judge-paraphrase",
        "cross-reason",
        "code-restyle",
        "ablate",
        "judge-option",
        "exclude-relatives",
        "jury",
        "calibration",
        "rubric-agreement",
    }
    assert plan.rewriter == "qwen2.5-coder-0.5b-instruct"


def test_defaults_are_filled():
    plan = _parse('[mitigate]\n[[mitigate.conditions]]\nname = "s"\nkind = "synonym"\n')
    assert dict(plan.conditions[0].params) == {"k": 2, "chooser": "wordnet", "fallback": False}
    assert plan.heldout_fraction == 0.5 and plan.control


@pytest.mark.parametrize(
    "extra, field",
    [
        ("", "mitigate"),
        ("[mitigate]\nconditions = []\n", "mitigate.conditions"),
        ('[mitigate]\n[[mitigate.conditions]]\nname = "s"\nkind = "magic"\n', "mitigate.conditions[0].kind"),
        ('[mitigate]\n[[mitigate.conditions]]\nname = "s"\nkind = "synonym"\nk = 0\n', "mitigate.conditions[0].k"),
        ('[mitigate]\n[[mitigate.conditions]]\nname = "s"\nkind = "synonym"\ncolour = 1\n', "mitigate.conditions[0].colour"),
        ('[mitigate]\n[[mitigate.conditions]]\nname = "p"\nkind = "paraphrase"\n', "mitigate.conditions[0].kind"),
        ('[mitigate]\nrewriter = "nobody"\n[[mitigate.conditions]]\nname = "p"\nkind = "paraphrase"\n', "mitigate.rewriter"),
        (
            '[mitigate]\n[[mitigate.conditions]]\nname = "o"\nkind = "judge-option"\noptions = { reasoning = "deep" }\n',
            "mitigate.conditions[0].options",
        ),
        ('[mitigate]\n[[mitigate.conditions]]\nname = "default"\nkind = "jury"\n', "mitigate.conditions"),
        ('[mitigate]\n[[mitigate.conditions]]\nname = "a:b"\nkind = "jury"\n', "mitigate.conditions[0].name"),
        (
            '[mitigate]\nheldout_fraction = 1\n[[mitigate.conditions]]\nname = "c"\nkind = "calibration"\n',
            "mitigate.heldout_fraction",
        ),
    ],
)
def test_bad_input_names_the_key(extra, field):
    with pytest.raises(InputError) as err:
        _parse(extra)
    assert err.value.field == field
