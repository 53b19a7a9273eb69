"""Tests of `nepotism grade` and nepotism.grading.batch on small fixture files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

import nepotism.grading.batch as batch
from nepotism.cli import main
from nepotism.errors import InputError
from nepotism.grading.batch import grade_file
from nepotism.tables import read_table

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "grading"


def _run(*args):
    return CliRunner().invoke(main, ["grade", *map(str, args)])


def test_all_is_exported():
    assert set(batch.__all__) == {"TASKS", "BatchResult", "GradeRow", "grade_file", "grade_rows"}


def test_math_cli_writes_correctness_reference(tmp_path):
    out = tmp_path / "ref.csv"
    result = _run(FIX / "math_responses.jsonl", "--task", "math", "--out", out)
    assert result.exit_code == 0, result.output
    assert "2 correct, 1 incorrect, 1 ungradable" in result.output
    table = read_table(out)
    assert table.kind == "correctness-ref"
    got = {(r.instance_id, r.model): r.correct for r in table.frame.itertuples()}
    assert got == {("m1", "gpt-4o"): True, ("m1", "llama-3"): False, ("m2", "llama-3"): True}


def test_mc_cli_json_lists_ungradable(tmp_path):
    out = tmp_path / "ref.jsonl"
    result = _run(FIX / "mc_responses.csv", "--task", "mc", "--out", out, "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["counts"] == {"correct": 1, "incorrect": 1, "ungradable": 1}
    assert payload["ungradable"][0]["instance_id"] == "q2" and payload["ungradable"][0]["line"] == 4
    assert read_table(out).kind == "correctness-ref"


@dataclass
class _Result:
    status: str
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0


def _fake_runner(code, *, tests, timeout, memory_mb):
    namespace: dict = {}
    try:
        exec(compile(code + "\n" + tests, "<candidate>", "exec"), namespace)
    except AssertionError:
        return _Result("failed")
    return _Result("passed")


def test_code_batch_with_fake_runner():
    result = grade_file(FIX / "code_responses.jsonl", "code", runner=_fake_runner)
    assert result.counts == {"correct": 2, "incorrect": 1, "ungradable": 0}
    assert list(result.frame["correct"]) == [True, False, True]


@pytest.mark.slow
def test_code_cli_real_sandbox(tmp_path):
    pytest.importorskip("nepotism.sandbox")
    out = tmp_path / "ref.parquet"
    result = _run(FIX / "code_responses.jsonl", "--task", "code", "--out", out)
    assert result.exit_code == 0, result.output
    assert "2 correct, 1 incorrect, 0 ungradable" in result.output


def test_ifeval_cli_with_instances(tmp_path):
    out = tmp_path / "rubric.csv"
    result = _run(FIX / "ifeval_responses.jsonl", "--task", "ifeval", "--instances", FIX / "ifeval_instances.jsonl", "--out", out)
    assert result.exit_code == 0, result.output
    assert "4 responses, 2 following every instruction" in result.output
    assert "instructions: 3 met, 2 not met, 1 ungradable" in result.output
    table = read_table(out)
    assert table.kind == "rubric-ref" and len(table) == 5
    met = {(r.instance_id, r.model, r.rubric_id): r.met for r in table.frame.itertuples()}
    assert met[("1", "llama-3", "punctuation:no_comma")] is False
    assert ("2", "llama-3", "language:response_language") not in met


def test_ifeval_inline_columns(tmp_path):
    src = tmp_path / "resp.csv"
    src.write_text(
        'instance_id,model,text,instruction_id_list,kwargs\na,m,"no commas here","[""punctuation:no_comma""]","[{}]"\n',
        encoding="utf-8",
    )
    result = grade_file(src, "ifeval")
    assert result.frame.to_dict("records") == [
        {"instance_id": "a", "model": "m", "rubric_id": "punctuation:no_comma", "met": True}
    ]


def test_missing_column_is_input_error_with_line(tmp_path):
    out = tmp_path / "ref.csv"
    result = _run(FIX / "math_missing_answer.jsonl", "--task", "math", "--out", out)
    assert result.exit_code == 2
    assert "line 2" in result.output and "field 'answer'" in result.output
    assert not out.exists()
    with pytest.raises(InputError) as err:
        grade_file(FIX / "math_missing_answer.jsonl", "math")
    assert (err.value.line, err.value.field) == (2, "answer")


def test_other_input_errors(tmp_path):
    src = tmp_path / "resp.csv"
    src.write_text("instance_id,model,answer\nq1,m,B\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        grade_file(src, "mc")
    assert err.value.field == "text"
    bad = tmp_path / "resp.txt"
    bad.write_text("x", encoding="utf-8")
    assert _run(bad, "--task", "math", "--out", tmp_path / "o.csv").exit_code == 2
    assert (
        _run(
            FIX / "math_responses.jsonl",
            "--task",
            "math",
            "--instances",
            FIX / "ifeval_instances.jsonl",
            "--out",
            tmp_path / "o.csv",
        ).exit_code
        == 2
    )
    unknown = tmp_path / "ifr.jsonl"
    unknown.write_text('{"instance_id": "99", "model": "m", "text": "x"}\n', encoding="utf-8")
    with pytest.raises(InputError) as err:
        grade_file(unknown, "ifeval", instances=FIX / "ifeval_instances.jsonl")
    assert (err.value.line, err.value.field) == (1, "instance_id")
