"""The import → metrics journey through the installed ``nepotism`` executable, as a user runs it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / ".." / "shared" / "data"
ARENA_BENCH = SHARED / "arena_bench_v1" / "model_judgment"
UPSTREAM = ROOT / "tests" / "fixtures" / "importers" / "upstream"
EXE = Path(sys.executable).with_name("nepotism")


def nepotism(*args, cwd: Path) -> subprocess.CompletedProcess:
    assert EXE.exists(), f"the nepotism executable is not installed beside {sys.executable}"
    return subprocess.run([str(EXE), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not ARENA_BENCH.exists(), reason="../shared/data/arena_bench_v1 is absent")
def test_arena_bench_import_then_metrics(tmp_path):
    files = sorted(ARENA_BENCH.glob("*.jsonl.gz"))
    out = tmp_path / "arena_bench.csv"
    imported = nepotism("import", *files, "--format", "fastchat-single", "--out", out, "--json", cwd=ROOT)
    assert imported.returncode == 0, imported.stderr
    summary = json.loads(imported.stdout)
    assert summary["outputs"][str(out)] == {"kind": "pointwise", "rows": 4800}
    metrics = nepotism("metrics", out, "--json", "--bootstrap", "200", cwd=ROOT)
    assert metrics.returncode == 0, metrics.stderr
    records = {
        r["scope"]: r
        for r in json.loads(metrics.stdout)["results"]
        if r["metric"] == "self-preference-ratio" and r["judge"] == "gpt-4" and r["variant"]["ties"] == "not preferred"
    }
    # the judge ("gpt-4", i.e. gpt-4-0613 when arena-bench ran) is not among the 16 generators: the self
    # scope is not measurable, and says so; its family (GPT-4-0314, GPT-4-Turbo, both GPT-3.5) and students
    # (OpenChat-3.5, Starling) are
    assert set(records) == {"self", "family", "student", "family-student"}
    assert records["self"]["value"] is None
    assert records["self"]["note"] == ("not measurable: the judge's own answers are not among the 16 generators it scored")
    for scope, generators in (
        ("family", {"gpt-4-0314", "gpt-4-1106-preview", "gpt-3.5-turbo", "gpt-3.5-turbo-1106"}),
        ("student", {"openchat_3.5", "Starling-LM-7B-alpha"}),
    ):
        record = records[scope]
        assert set(record["generators"]) == generators
        assert record["ci_low"] < record["value"] < record["ci_high"] and record["n_clusters"] == 300
    human = nepotism("metrics", out, cwd=ROOT)
    assert human.returncode == 0 and "nepotism metrics" in human.stdout
    # the verdict table, whatever its column widths
    assert re.search(r"^gpt-4 +own answers +not measurable ", human.stdout, re.M)
    assert "its own answers are not among the 16 generators it judged" in human.stdout
    # the judge alone, pointwise: equal scores count half (the verdict's reading, docs/answer.md)
    assert re.search(r"^gpt-4 +family +cannot separate +76\.4% ", human.stdout, re.M)


def test_malformed_upstream_file_exit_2_nothing_written(tmp_path):
    bad = tmp_path / "gpt-4_single.jsonl"
    lines = (UPSTREAM / "gpt-4_single.jsonl").read_text().splitlines()
    lines[3] = lines[3].replace('"score": 7', '"score": "seven"')
    bad.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.csv"
    result = nepotism("import", bad, "--format", "fastchat-single", "--out", out, cwd=tmp_path)
    assert result.returncode == 2
    assert f"{bad}, line 4, field 'score'" in result.stderr
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["gpt-4_single.jsonl"]


def test_option_a_format_does_not_take(tmp_path):
    result = nepotism(
        "import",
        UPSTREAM / "gpt-4_single.jsonl",
        "--format",
        "fastchat-single",
        "--baseline",
        "x",
        "--out",
        tmp_path / "o.csv",
        cwd=tmp_path,
    )
    assert result.returncode == 2 and "--baseline is not an option of --format fastchat-single" in result.stderr
    assert not (tmp_path / "o.csv").exists()


def test_list(tmp_path):
    result = nepotism("import", "--list", cwd=tmp_path)
    assert result.returncode == 0 and "fastchat-single" in result.stdout and "reward-pairs" in result.stdout


FIXTURES = UPSTREAM.parent
#: One file per format (and per upstream shape of a format) in its upstream schema, or a real extract:
#: (file under tests/fixtures/importers, format, options, main kind, rows, companion reference kind).
JOURNEYS = [
    ("upstream/gpt-4_single.jsonl", "fastchat-single", (), "pointwise", 6, None),
    ("upstream/gpt-4_pair.jsonl", "fastchat-pair", (), "pairwise", 8, None),
    ("upstream/mt_bench_human.jsonl", "mt-bench-human", (), "pairwise", 1, "preference-ref"),
    ("upstream/arena-hard-v0.1_gpt-4-0613.jsonl", "arena-hard", ("--baseline", "gpt-4-0314"), "pairwise", 6, None),
    ("upstream/arena-hard-v2.0_gpt-4o-mini.jsonl", "arena-hard", (), "pairwise", 4, None),
    ("upstream/clean_battle_sample.json", "arena-battles", (), "pairwise", 2, "preference-ref"),
    ("upstream/LLMBar__Natural_sample.json", "reward-pairs", (), "preference-ref", 4, "correctness-ref"),
    ("upstream/rewardbench_filtered.jsonl", "reward-pairs", (), "preference-ref", 3, "correctness-ref"),
    ("upstream/rewardbench_scores.json", "reward-pairs", (), "pointwise", 4, "correctness-ref"),
    (
        "alpaca_eval_annotations.json",
        "alpaca-eval",
        ("--instructions", FIXTURES / "alpaca_eval_instructions.json"),
        "pairwise",
        7,
        None,
    ),
    ("annotations_compact_sample.csv.gz", "alpaca-eval-compact", (), "pairwise", 23, None),
    (
        "dataset=judgebench,response_model=claude-3-5-sonnet-20240620,judge_name=arena_hard,"
        "judge_model=claude-3-haiku-20240307.jsonl.gz",
        "judgebench",
        (),
        "pairwise",
        8,
        "preference-ref",
    ),
    ("llama-3.3-70b_gpt-4o_eval.jsonl", "mbpp-selfpref", (), "pairwise", 12, "correctness-ref"),
    ("healthbench_sample.jsonl", "healthbench", (), "rubric", 32, "rubric-items"),
    ("upstream/elobench_battle_records.csv", "table", ("--mapping", UPSTREAM / "elobench_mapping.toml"), "pairwise", 6, None),
]
#: Formats whose journey runs elsewhere, on files the test writes with the upstream library itself.
ELSEWHERE = {"inspect-log": "tests/importers/test_importers_inspect_log.py"}


def test_every_format_has_a_journey():
    from nepotism.importers import formats

    assert {fmt for _, fmt, *_ in JOURNEYS} | set(ELSEWHERE) == set(formats())
    assert all((ROOT / test).is_file() for test in ELSEWHERE.values())


@pytest.mark.parametrize(("source", "fmt", "extra", "kind", "rows", "ref_kind"), JOURNEYS)
def test_each_upstream_format_in_one_command(tmp_path, source, fmt, extra, kind, rows, ref_kind):
    out, ref = tmp_path / "main.jsonl", tmp_path / "ref.csv"
    with_ref = ("--reference-out", ref) if ref_kind else ()
    result = nepotism("import", FIXTURES / source, "--format", fmt, *extra, "--out", out, *with_ref, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    outputs = json.loads(result.stdout)["outputs"]
    assert outputs[str(out)] == {"kind": kind, "rows": rows}
    if ref_kind:
        assert outputs[str(ref)]["kind"] == ref_kind
