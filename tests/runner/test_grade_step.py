"""The grading step of a run: truth checked before any call, every response graded after judging."""

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from nepotism.cli import main
from nepotism.errors import InputError
from nepotism.experiment import load_experiment
from nepotism.runner import grade_step
from nepotism.runner.experiment_run import load_dataset
from nepotism.testing.standin import StandinConfig, standin_thread

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

ITEMS = [
    {"id": "m1", "prompt": "What is 6 times 7?", "reference_answer": "42", "category": "math"},
    {"id": "m1", "prompt": "What is 6 times 7?", "model": "standin-alpha", "text": "6*7 = \\boxed{42}"},
    {"id": "m1", "prompt": "What is 6 times 7?", "model": "standin-beta", "text": "The answer is 43."},
    {"id": "m2", "prompt": "Half of 3?", "reference_answer": "3/2", "category": "math"},
    {"id": "m2", "prompt": "Half of 3?", "model": "standin-alpha", "text": "It is \\boxed{1.5}"},
    {"id": "m2", "prompt": "Half of 3?", "model": "standin-beta", "text": "I cannot say."},
    {
        "id": "c1",
        "prompt": "Write add(a, b).",
        "category": "code",
        "metadata": {"tests": ["assert add(1, 2) == 3"], "entry_point": "add"},
    },
    {
        "id": "c1",
        "prompt": "Write add(a, b).",
        "model": "standin-alpha",
        "text": "```python\ndef add(a, b):\n    return a + b\n```",
    },
    {
        "id": "c1",
        "prompt": "Write add(a, b).",
        "model": "standin-beta",
        "text": "```python\ndef add(a, b):\n    return a - b\n```",
    },
    {"id": "f1", "prompt": "Say hello without commas.", "category": "chat"},
]


def _experiment(tmp_path: Path, url: str, items=ITEMS, grading='tasks = { math = "math", code = "code" }') -> Path:
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in items))
    models = json.dumps(str(EXAMPLES / "standin_models.toml"))
    text = f"""
[experiment]
name = "graded"
registry = [{models}]

[dataset]
path = "items.jsonl"

[models.standin-alpha]
backend = "openai"
base_url = "{url}"
model = "alpha"

[models.standin-beta]
backend = "openai"
base_url = "{url}"
model = "beta"

[judging]
judges = ["standin-alpha", "standin-beta"]

[[judging.protocols]]
protocol = "pairwise"
pairs = "judge-vs-others"
options = {{ mode = "labels", ways = 2 }}

[grading]
{grading}

[output]
dir = "out"
"""
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return path


def test_all_is_exported():
    assert set(grade_step.__all__) == {"Truth", "grade_run", "grading_truth"}


def test_run_grades_every_recorded_response_and_metrics_use_the_reference(tmp_path):
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, server):
        exp = _experiment(tmp_path, url)
        store = tmp_path / "s.db"
        dry = CliRunner().invoke(main, ["run", str(exp), "--store", str(store), "--dry-run", "--json"])
        assert dry.exit_code == 0, dry.output
        assert json.loads(dry.output)["graded_instances"] == {"code": 1, "math": 2}
        done = CliRunner().invoke(main, ["run", str(exp), "--store", str(store), "--json", "--no-progress"])
        assert done.exit_code == 0, done.output
        summary = json.loads(done.output)
        sent = server.stats["requests"]
        again = CliRunner().invoke(main, ["run", str(exp), "--store", str(store), "--json", "--no-progress"])
        assert server.stats["requests"] == sent  # grading again calls no model
    assert summary["grading"]["math"] == {"correct": 2, "incorrect": 1, "ungradable": 1}
    assert summary["grading"]["code"] == {"correct": 1, "incorrect": 1, "ungradable": 0}
    ref = pd.read_csv(summary["exports"]["correctness-ref"])
    truth = {(r.instance_id, r.model): bool(r.correct) for r in ref.itertuples()}
    assert truth == {
        ("m1", "standin-alpha"): True,
        ("m1", "standin-beta"): False,
        ("m2", "standin-alpha"): True,
        ("c1", "standin-alpha"): True,
        ("c1", "standin-beta"): False,
    }
    assert json.loads(again.output)["grading"] == summary["grading"]
    from nepotism.store import Store

    with Store(tmp_path / "s.db") as s:
        stored = s.references(kind="correctness")
    assert len(stored) == 5 and {r.source for r in stored} == {"grading:math", "grading:code"}
    metrics = CliRunner().invoke(
        main,
        [
            "metrics",
            summary["exports"]["pairwise"],
            "--reference",
            summary["exports"]["correctness-ref"],
            "--bootstrap",
            "0",
            "--json",
            "--models",
            str(EXAMPLES / "standin_models.toml"),
        ],
    )
    assert metrics.exit_code == 0, metrics.output
    assert "self-preference-ratio" in {r["metric"] for r in json.loads(metrics.stdout)["results"]}


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ({"id": "m9", "prompt": "x", "category": "math"}, "reference_answer", "reference_answer"),
        ({"id": "c9", "prompt": "x", "category": "code", "metadata": {"tests": []}}, "metadata.tests", "tests"),
        (
            {"id": "c9", "prompt": "x", "category": "code", "metadata": {"tests": ["assert 1"], "entry_point": 3}},
            "metadata.entry_point",
            "string",
        ),
    ],
)
def test_bad_truth_stops_the_run_before_any_call(tmp_path, row, field, message):
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, server):
        exp = _experiment(tmp_path, url, items=ITEMS + [row])
        result = CliRunner().invoke(main, ["run", str(exp), "--store", str(tmp_path / "s.db")])
        assert server.stats["requests"] == 0
    assert result.exit_code == 2
    assert f"line {len(ITEMS) + 1}" in result.output and field in result.output and message in result.output
    assert not (tmp_path / "out").exists()


def test_ifeval_truth_is_checked_by_the_grader(tmp_path):
    rows = [{"id": "i1", "prompt": "x", "metadata": {"instruction_id_list": ["no:such_rule"], "kwargs": [{}]}}]
    exp = _experiment(tmp_path, "http://127.0.0.1:9/v1", items=rows, grading='task = "ifeval"')
    experiment = load_experiment(exp)
    instances, _ = load_dataset(experiment)
    with pytest.raises(InputError) as err:
        grade_step.grading_truth(experiment, instances)
    assert err.value.field == "metadata.kwargs" and err.value.line == 1 and "no:such_rule" in str(err.value)


@pytest.mark.parametrize(
    ("grading", "field"),
    [
        ('task = "essay"', "grading.task"),
        ('tasks = { math = "algebra" }', "grading.tasks.math"),
        ('task = "math"\ntasks = { code = "code" }', "grading.task"),
        ('task = "math"\ntimeout = 0', "grading.timeout"),
        ('task = "math"\nextra = 1', "grading.extra"),
    ],
)
def test_bad_grading_table_names_the_key(tmp_path, grading, field):
    exp = _experiment(tmp_path, "http://127.0.0.1:9/v1", grading=grading)
    with pytest.raises(InputError) as err:
        load_experiment(exp)
    assert err.value.field == field


def test_category_map_leaves_other_categories_ungraded(tmp_path):
    exp = load_experiment(_experiment(tmp_path, "http://127.0.0.1:9/v1"))
    instances, _ = load_dataset(exp)
    truth = grade_step.grading_truth(exp, instances)
    assert {k: v[0] for k, v in truth.items()} == {"m1": "math", "m2": "math", "c1": "code"}
    assert truth["m1"][2] == 1 and truth["c1"][2] == 7
