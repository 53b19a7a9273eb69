"""The inspect-log importer on real Inspect AI logs, written by inspect_ai itself in the test
(`inspect_logs.py`: its mockllm provider, no network), then chained through the installed
executable as a user would: import -> metrics -> report, and `nepotism.audit` on the log paths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nepotism.errors import InputError

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))
WRITER = Path(__file__).with_name("inspect_logs.py")
GPT4O, MINI, HAIKU, OPUS = (
    "mockllm/gpt-4o",
    "mockllm/gpt-4o-mini-2024-07-18",
    "mockllm/claude-3-haiku-20240307",
    "mockllm/claude-3-opus-20240229",
)


def _run(*args, cwd=None, timeout=300):
    return subprocess.run([NEPOTISM, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=cwd)


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """Three .eval logs (one per evaluated model), a .json copy and an events-free copy of the first."""
    pytest.importorskip("inspect_ai", reason="the `inspect` extra (inspect_ai) is not installed")
    out = tmp_path_factory.mktemp("inspect-logs")
    done = subprocess.run([sys.executable, str(WRITER), str(out)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    evals = sorted(out.glob("*.eval"))
    assert len(evals) == 3
    return {"dir": out, "evals": evals, "json": next(out.glob("json/*.json")), "noevents": next(out.glob("noevents/*.eval"))}


@pytest.fixture(scope="module")
def table(logs):
    from nepotism.importers import import_source

    return import_source("inspect-log", logs["evals"])


def _key(frame):
    return (
        frame[["instance_id", "judge", "model", "score", "condition", "replicate", "status", "reason"]]
        .sort_values(["instance_id", "judge", "model", "condition", "replicate"])
        .reset_index(drop=True)
    )


def test_every_model_graded_score_is_a_row_with_its_grader(table):
    frame = table.tables["pointwise"]
    # 3 evaluated models x 9 samples x 2 epochs x 3 single-grader scorers; match and the panel left out
    assert len(frame) == 162
    assert table.counts["scores_not_model_graded"] == 54 and table.counts["panel_scores"] == 54
    assert set(frame["instance_id"]) == {f"arithmetic/q{i}" for i in range(9)}
    assert sorted(frame["replicate"].unique()) == [0, 1]  # epochs 1 and 2
    qa = frame[frame["condition"] == "model_graded_qa"]
    assert set(qa["judge"]) == {GPT4O, OPUS}
    fact = frame[frame["condition"] == "model_graded_fact"]  # no model given: each model grades itself
    assert (fact["judge"] == fact["model"]).all() and set(fact["model"]) == {GPT4O, MINI, HAIKU}


def test_grades_map_to_numbers_and_an_unscored_sample_stays_unscored(table):
    frame = table.tables["pointwise"]
    by_gpt4o = frame[(frame["judge"] == GPT4O) & (frame["condition"] == "model_graded_qa")]
    silent = by_gpt4o[by_gpt4o["instance_id"] == "arithmetic/q7"]
    assert len(silent) == 6 and silent["score"].isna().all()  # 3 models x 2 epochs, never 0
    assert set(silent["status"]) == {"unparsed"} and set(silent["reason"]) == {"grader_failed"}
    scored = by_gpt4o.drop(silent.index)
    assert set(scored["score"]) == {0.0, 1.0} and (scored["status"] == "parsed").all()
    # the planted favouritism: gpt-4o passes every answer of its own family, fails Claude's wrong ones
    assert (scored[scored["model"] != HAIKU]["score"] == 1.0).all()
    haiku = scored[scored["model"] == HAIKU]
    wrong = haiku["instance_id"].str[-1].astype(int).map(lambda i: (i + 2) % 3 == 0)
    assert (haiku["score"] == np.where(wrong, 0.0, 1.0)).all()


def test_json_logs_and_logs_without_events_give_the_same_table(logs):
    from nepotism.importers import import_source

    # the log the copies were made of, by name (the three logs' names sort in a random order: their ids)
    original = next(p for p in logs["evals"] if p.name == logs["noevents"].name)
    assert logs["json"].stem == original.stem
    first = import_source("inspect-log", [original])
    for other in (logs["json"], logs["noevents"]):
        again = import_source("inspect-log", [other])
        pd.testing.assert_frame_equal(_key(again.tables["pointwise"]), _key(first.tables["pointwise"]))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("C", (1.0, None)),
        ("P", (0.5, None)),
        ("I", (0.0, None)),
        ("N", (0.0, None)),
        ("yes", (1.0, None)),
        ("false", (0.0, None)),
        (True, (1.0, None)),
        (7, (7.0, None)),
        ("0.25", (0.25, None)),
        (float("nan"), (None, "unscored")),
        ("maybe", (None, "unknown_value")),
        ("inf", (None, "unknown_value")),
    ],
)
def test_score_values(value, expected):
    from nepotism.importers.inspect_log import _value

    assert _value(value) == expected


def test_import_metrics_report_through_the_executable(logs, tmp_path):
    table_file, texts = tmp_path / "inspect.csv", tmp_path / "texts.jsonl"
    done = _run("import", *logs["evals"], "--format", "inspect-log", "--out", table_file, "--texts-out", texts, "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["outputs"][str(table_file)] == {"kind": "pointwise", "rows": 162}
    assert summary["counts"]["unparsed"] == 6 and summary["names_not_in_registry"] == []
    assert len(texts.read_text().splitlines()) == 27  # 9 samples x 3 evaluated models

    done = _run("metrics", table_file, "--json", "--bootstrap", "200")
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)["results"]  # the results document's records

    def spr(judge, scope, ties):
        found = [
            r
            for r in records
            if r["metric"] == "self-preference-ratio"
            and r["judge"] == judge
            and r["condition"] == "model_graded_qa"
            and r["scope"] == scope
            and r["variant"]["ties"] == ties
        ]
        assert len(found) == 1
        return found[0]

    # gpt-4o vs Claude-3-Haiku on the 8 scored samples: Haiku is wrong on q1 and q4 (gpt-4o passes all of
    # its own): 2 wins and 6 ties of 8 -> 0.25 strict, 0.625 with ties as halves; the same for its family
    for scope in ("self", "family"):
        strict, half = spr(GPT4O, scope, "not preferred"), spr(GPT4O, scope, "half")
        assert strict["value"] == pytest.approx(0.25) and half["value"] == pytest.approx(0.625)
        assert strict["n"] == 8 and strict["n_excluded"] == 1 and strict["ci_low"] is not None
    assert spr(OPUS, "family", "half")["value"] is not None  # Claude-3-Opus grading Claude-3-Haiku

    report = tmp_path / "report"
    done = _run("report", table_file, "--out", report, "--bootstrap", "200")
    assert done.returncode == 0, done.stderr
    assert {"report.html", "report.md", "results.json", "results.csv"} <= {p.name for p in report.iterdir()}
    assert "mockllm/gpt-4o" in (report / "report.md").read_text()


def test_metrics_and_report_take_the_logs_directly(logs, tmp_path):
    done = _run("metrics", *logs["evals"], "--json", "--bootstrap", "0")
    assert done.returncode == 0, done.stderr
    direct = json.loads(done.stdout)["results"]
    folder = json.loads(_run("metrics", logs["dir"], "--json", "--bootstrap", "0").stdout)["results"]
    assert direct == folder and any(r["judge"] == GPT4O and r["scope"] == "self" for r in direct)
    done = _run("report", logs["json"], "--out", tmp_path / "r", "--bootstrap", "0", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"] > 0


def test_audit_accepts_inspect_logs(logs, table):
    import nepotism

    results = nepotism.audit(logs["evals"], bootstrap=nepotism.Bootstrap(n_resamples=0))
    assert results.summary["kind"] == "pointwise" and results.summary["rows"] == 162
    values = results.select(metric="self-preference-ratio", judge=GPT4O, scope="self", condition="model_graded_qa").frame()
    assert sorted(values["value"].round(3)) == [0.25, 0.625]
    single = nepotism.audit(logs["json"], bootstrap=nepotism.Bootstrap(n_resamples=0))
    assert single.summary["rows"] == 54


def test_a_file_that_is_no_inspect_log_is_an_error_naming_it(tmp_path):
    pytest.importorskip("inspect_ai", reason="the `inspect` extra (inspect_ai) is not installed")
    bad = tmp_path / "broken.eval"
    bad.write_bytes(b"PK\x03\x04 not a zip at all")
    out = tmp_path / "out.csv"
    done = _run("import", bad, "--format", "inspect-log", "--out", out)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "broken.eval" in done.stderr and "not readable as an Inspect AI log" in done.stderr
    assert not out.exists()
    other = tmp_path / "results.json"
    other.write_text('{"version": 2, "status": "success"}')
    from nepotism.importers import import_source

    with pytest.raises(InputError, match="results.json"):
        import_source("inspect-log", [other])


def test_without_the_extra_the_import_says_how_to_install_it(monkeypatch, tmp_path):
    import importlib.util

    from click.testing import CliRunner

    from nepotism.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "inspect_ai" else real(name, *a))
    log = tmp_path / "run.eval"
    log.write_bytes(b"PK")
    result = CliRunner().invoke(main, ["import", str(log), "--format", "inspect-log", "--out", str(tmp_path / "o.csv")])
    assert result.exit_code == 2 and "pip install 'nepotism[inspect]'" in result.output


def test_report_reads_a_json_log_as_judgments_with_texts(logs, tmp_path):
    """An Inspect log in JSON is judgments, not a results file, for every part of `report`: --texts
    (the answers behind the cases) is taken (before: refused, exit 2, 'SOURCE is a results file')."""
    texts = tmp_path / "texts.jsonl"
    assert (
        _run("import", *logs["evals"], "--format", "inspect-log", "--out", tmp_path / "t.csv", "--texts-out", texts).returncode
        == 0
    )
    done = _run("report", logs["json"], "--out", tmp_path / "r", "--bootstrap", "0", "--texts", texts)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "r" / "report.html").exists()
