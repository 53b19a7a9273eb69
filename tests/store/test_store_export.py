"""Exporting tables in parquet, CSV and JSON Lines, judgments in the public recorded formats."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import nepotism.store.export as export_mod
from nepotism.errors import InputError
from nepotism.records import Instance, Judgment, Reference, Response
from nepotism.store.export import atomic_write, format_from_suffix
from nepotism.tables import read_table
from tests.store.keys import opaque_key

FORMATS = ["parquet", "csv", "jsonl"]


def _read(path, fmt):
    if fmt == "parquet":
        return pd.read_parquet(path)
    if fmt == "csv":
        return pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={"verdict": object})
    return pd.read_json(path, lines=True)


def _records(frame):
    out = []
    for row in frame.to_dict("records"):
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()})
    return out


def _add_mixed(store):
    store.add_judgments(
        [
            Judgment(
                "q1",
                "judge-a",
                "pairwise",
                ("gen-x", "gen-y"),
                "parsed",
                verdict="A",
                label_probs={"A": 0.625, "B": 0.25, "tie": 0.125},
            ),
            Judgment("q1", "judge-a", "pairwise", ("gen-y", "gen-x"), "parsed", verdict="tie", condition="swapped"),
            Judgment("q2", "judge-a", "pairwise", ("gen-x", "gen-y"), "unparsed", raw_output="?", reason="no_verdict"),
            Judgment("q2", "judge-b", "pairwise", ("gen-x", "gen-y"), "failed", replicate=1, reason="timeout"),
            Judgment("q1", "judge-a", "pointwise", ("gen-x",), "parsed", score=7.25),
            Judgment("q2", "judge-a", "pointwise", ("gen-y",), "unparsed"),
            Judgment("q1", "judge-a", "rubric", ("gen-x",), "parsed", verdict="yes", rubric_id="r1"),
            Judgment(
                "q1",
                "judge-a",
                "rubric",
                ("gen-x",),
                "parsed",
                verdict="no",
                rubric_id="r2",
                template_id="rubric-all@0123456789ab",
            ),
            Judgment("q1", "judge-a", "rubric", ("gen-y",), "unparsed", rubric_id="r1"),
        ]
    )


def test_public_names():
    assert set(export_mod.__all__) == {
        "FORMATS",
        "JUDGMENT_COLUMNS",
        "PARTITION_COLUMNS",
        "atomic_write",
        "export_table",
        "format_from_suffix",
        "partition_folder",
        "write_partitioned",
    }


@pytest.mark.parametrize("fmt", FORMATS)
def test_pairwise_export_round_trip(store, tmp_path, fmt):
    _add_mixed(store)
    out = tmp_path / f"pairwise.{fmt}"
    assert store.export("judgments", out, fmt=fmt, protocol="pairwise") == 4
    frame = _read(out, fmt)
    assert list(frame.columns) == [
        "instance_id",
        "judge",
        "model_a",
        "model_b",
        "verdict",
        "status",
        "reason",
        "prob_a",
        "prob_b",
        "prob_tie",
        "label_mass",
        "condition",
        "replicate",
        "category",
    ]
    assert _records(frame) == [
        {
            "instance_id": "q1",
            "judge": "judge-a",
            "model_a": "gen-x",
            "model_b": "gen-y",
            "verdict": "A",
            "status": "parsed",
            "reason": None,
            "prob_a": 0.625,
            "prob_b": 0.25,
            "prob_tie": 0.125,
            "label_mass": None,
            "condition": "default",
            "replicate": 0,
            "category": None,
        },
        {
            "instance_id": "q1",
            "judge": "judge-a",
            "model_a": "gen-y",
            "model_b": "gen-x",
            "verdict": "tie",
            "status": "parsed",
            "reason": None,
            "prob_a": None,
            "prob_b": None,
            "prob_tie": None,
            "label_mass": None,
            "condition": "swapped",
            "replicate": 0,
            "category": None,
        },
        {
            "instance_id": "q2",
            "judge": "judge-a",
            "model_a": "gen-x",
            "model_b": "gen-y",
            "verdict": None,
            "status": "unparsed",
            "reason": "no_verdict",
            "prob_a": None,
            "prob_b": None,
            "prob_tie": None,
            "label_mass": None,
            "condition": "default",
            "replicate": 0,
            "category": None,
        },
        {
            "instance_id": "q2",
            "judge": "judge-b",
            "model_a": "gen-x",
            "model_b": "gen-y",
            "verdict": None,
            "status": "failed",
            "reason": "timeout",
            "prob_a": None,
            "prob_b": None,
            "prob_tie": None,
            "label_mass": None,
            "condition": "default",
            "replicate": 1,
            "category": None,
        },
    ]


def test_export_keeps_the_label_mass_of_a_low_mass_verdict_and_reads_back(store, tmp_path):
    from nepotism.tables import read_table

    store.add_judgments(
        [
            Judgment(
                "q",
                "j",
                "pairwise",
                ("a", "b"),
                "parsed",
                verdict="A",
                label_probs={"A": 0.8, "B": 0.2},
                label_mass=0.9,
                label_logprobs={"A": -0.3, "B": -1.7},
            ),
            Judgment(
                "q",
                "j",
                "pairwise",
                ("b", "a"),
                "unparsed",
                reason="low_label_mass",
                label_mass=0.001,
                label_logprobs={"A": -7.0, "B": -math.inf},
                label_top_k={"A": True, "B": False},
                warnings=("label_not_in_top_k:B",),
            ),
        ]
    )
    out = tmp_path / "p.csv"
    store.export("judgments", out, fmt="csv")
    header, *lines = out.read_text().splitlines()
    assert (
        header
        == "instance_id,judge,model_a,model_b,verdict,status,reason,prob_a,prob_b,prob_tie,label_mass,condition,replicate,category"
    )
    assert sorted(lines) == ["q,j,a,b,A,parsed,,0.8,0.2,,0.9,default,0,", "q,j,b,a,,unparsed,low_label_mass,,,,0.001,default,0,"]
    frame = read_table(out).frame.sort_values("model_a")
    assert frame["status"].tolist() == ["parsed", "unparsed"] and frame["reason"].tolist() == [None, "low_label_mass"]
    assert frame["label_mass"].tolist() == [0.9, 0.001]
    stored = store.judgments(reason="low_label_mass")[0]
    assert stored.label_top_k == {"A": True, "B": False} and stored.warnings == ("label_not_in_top_k:B",)
    assert stored.label_logprobs == {"A": -7.0, "B": -math.inf} and stored.label_probs is None


@pytest.mark.parametrize("fmt", FORMATS)
def test_pointwise_and_rubric_exports(store, tmp_path, fmt):
    _add_mixed(store)
    out = tmp_path / f"pointwise.{fmt}"
    assert store.export("pointwise", out, fmt=fmt) == 2
    frame = _read(out, fmt)
    assert list(frame.columns) == [
        "instance_id",
        "judge",
        "model",
        "score",
        "status",
        "reason",
        "condition",
        "replicate",
        "category",
    ]
    assert _records(frame)[0] == {
        "instance_id": "q1",
        "judge": "judge-a",
        "model": "gen-x",
        "score": 7.25,
        "status": "parsed",
        "reason": None,
        "condition": "default",
        "replicate": 0,
        "category": None,
    }
    assert _records(frame)[1]["score"] is None

    out = tmp_path / f"rubric.{fmt}"
    assert store.export("judgments", out, fmt=fmt, protocol="rubric") == 3
    frame = _read(out, fmt)
    assert list(frame.columns) == [
        "instance_id",
        "judge",
        "model",
        "rubric_id",
        "met",
        "status",
        "reason",
        "condition",
        "replicate",
        "setup",
        "category",
    ]
    got = {(r["model"], r["rubric_id"]): (r["met"], r["setup"]) for r in _records(frame)}
    assert got == {
        ("gen-x", "r1"): (True, "single-rubric"),
        ("gen-x", "r2"): (False, "all-rubrics"),
        ("gen-y", "r1"): (None, "single-rubric"),
    }


def test_pairwise_without_probabilities_has_only_the_required_columns(store, tmp_path):
    store.add_judgments([Judgment("q", "j", "pairwise", ("a", "b"), "parsed", verdict="B")])
    out = tmp_path / "p.csv"
    store.export("judgments", out, fmt="csv")
    assert out.read_text().splitlines() == [
        "instance_id,judge,model_a,model_b,verdict,status,reason,condition,replicate,category",
        "q,j,a,b,B,parsed,,default,0,",
    ]


def test_mixed_protocols_need_a_choice(store, tmp_path):
    _add_mixed(store)
    with pytest.raises(InputError, match="several protocols"):
        store.export("judgments", tmp_path / "j.csv", fmt="csv")
    with pytest.raises(InputError, match="unknown protocol"):
        store.export("judgments", tmp_path / "j.csv", fmt="csv", protocol="telepathy")
    assert not (tmp_path / "j.csv").exists()


def test_recognition_exports_as_the_two_table_kinds_metrics_reads(store, tmp_path):
    """Both recognition questions are stored under protocol "recognition"; the single-answer one
    exports as a recognition table, the two-answer one as recognition-pairwise."""
    store.add_judgments(
        [
            Judgment("q", "j", "recognition", ("a",), "parsed", verdict="yes"),
            Judgment("q", "j", "recognition", ("b",), "unparsed", reason="no_verdict"),
            Judgment("q", "j", "recognition", ("a", "b"), "parsed", verdict="B"),
        ]
    )
    single, pair = tmp_path / "recognition.csv", tmp_path / "recognition-pairwise.csv"
    # without --protocol, the two kinds are a choice to make (it was the one-answer kind, silently)
    with pytest.raises(InputError, match=r"several protocols \['recognition', 'recognition-pairwise'\]"):
        store.export("judgments", single, fmt="csv")
    assert store.export("judgments", single, fmt="csv", protocol="recognition") == 2
    assert store.export("judgments", pair, fmt="csv", protocol="recognition-pairwise") == 1
    table = read_table(single)
    assert table.kind == "recognition"
    frame = table.frame.sort_values("model")
    assert frame["claimed"].tolist() == [True, None] and frame["model"].tolist() == ["a", "b"]
    table = read_table(pair)
    assert table.kind == "recognition-pairwise" and table.frame["choice"].tolist() == ["B"]


def test_other_protocols_use_the_generic_columns(store, tmp_path):
    store.add_judgments([Judgment("q", "j", "categorise", ("a",), "parsed", verdict="coding")])
    out = tmp_path / "c.jsonl"
    assert store.export("judgments", out, fmt="jsonl") == 1
    row = json.loads(out.read_text())
    assert row == {
        "instance_id": "q",
        "judge": "j",
        "protocol": "categorise",
        "candidates": '["a"]',
        "verdict": "coding",
        "score": None,
        "status": "parsed",
        "reason": None,
        "condition": "default",
        "replicate": 0,
        "category": None,
    }


@pytest.mark.parametrize("fmt", FORMATS)
def test_raw_tables_round_trip(store, tmp_path, fmt):
    store.add_responses([Response("q1", "gen-x", 'line one\nline, two "quoted" ✓'), Response("q2", "gen-y", "")])
    store.add_references([Reference("q1", "correctness", ("gen-x",), correct=True)])
    out = tmp_path / f"responses.{fmt}"
    assert store.export("responses", out, fmt=fmt) == 2
    frame = _read(out, fmt)
    assert list(frame.columns) == ["id", "instance_id", "generator", "text", "metadata", "created_at"]
    texts = dict(zip(frame["generator"], frame["text"].fillna(""), strict=True))
    assert texts == {"gen-x": 'line one\nline, two "quoted" ✓', "gen-y": ""}
    out = tmp_path / f"references.{fmt}"
    assert store.export("references", out, fmt=fmt) == 1
    assert _records(_read(out, fmt))[0]["correct"] == 1


def test_calls_export_keeps_json_columns_as_text(store, tmp_path):
    key = opaque_key("p")
    store.put_call(key, request={"model": "m"}, response={"x": 1}, text="A", latency_s=0.5)
    out = tmp_path / "calls.parquet"
    assert store.export("calls", out, fmt="parquet") == 1
    row = pd.read_parquet(out).iloc[0]
    assert row["key"] == key and json.loads(row["response"]) == {"x": 1} and row["latency_s"] == 0.5


def test_bad_table_and_format_are_input_errors(store, tmp_path):
    with pytest.raises(InputError, match="unknown table"):
        store.export("secrets", tmp_path / "x.csv", fmt="csv")
    with pytest.raises(InputError, match="format"):
        store.export("calls", tmp_path / "x.csv", fmt="xlsx")
    with pytest.raises(InputError, match="directory"):
        store.export("calls", tmp_path / "missing" / "x.csv", fmt="csv")


def test_format_from_suffix(tmp_path):
    assert format_from_suffix(tmp_path / "a.PARQUET") == "parquet"
    assert format_from_suffix(tmp_path / "a.ndjson") == "jsonl"
    assert format_from_suffix(tmp_path / "a.csv") == "csv"
    with pytest.raises(InputError, match="extension"):
        format_from_suffix(tmp_path / "a.txt")


def test_atomic_write_leaves_nothing_behind_on_failure(tmp_path):
    out = tmp_path / "keep.csv"
    out.write_text("old\n")

    def broken(path):
        path.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError):
        atomic_write(out, broken)
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.csv"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("protocol", "rows"), [("pairwise", 4), ("pointwise", 2), ("rubric", 3)])
def test_exports_are_readable_as_recorded_judgment_tables(store, tmp_path, fmt, protocol, rows):
    from nepotism.tables import read_table

    _add_mixed(store)
    out = tmp_path / f"{protocol}.{fmt}"
    store.export(protocol, out, fmt=fmt)
    table = read_table(out)
    assert table.kind == protocol
    assert len(table.frame) == rows


@pytest.mark.parametrize("share", [0.0, 1e9], ids=["judgments scanned, plan probed", "plan walked"])
def test_an_export_with_a_plan_writes_only_the_plans_judgments(store, tmp_path, monkeypatch, share):
    """Both ways of reading a plan (`export._plan_filter`, chosen by the plan's share of the
    judgments) write the same rows."""
    monkeypatch.setattr(export_mod, "_PLAN_SCAN_SHARE", share)
    _add_mixed(store)
    everything = tmp_path / "all.csv"
    store.export("judgments", everything, fmt="csv", protocol="pairwise")
    kept = [j for j in store.judgments(protocol="pairwise") if j.instance_id == "q1"]
    plan = store.open_plan()
    store.add_plan_ids(plan, [j.id for j in kept])
    store.add_plan_ids(plan, [kept[0].id, "not-a-stored-id"])  # repeats and unknown ids are harmless
    out = tmp_path / "plan.csv"
    assert store.export("judgments", out, fmt="csv", protocol="pairwise", plan=plan) == 2
    rows = _records(_read(out, "csv"))
    assert [(r["instance_id"], r["condition"]) for r in rows] == [("q1", "default"), ("q1", "swapped")]
    # the plan's rows are those of the full export, byte for byte, in the same order
    assert out.read_text().splitlines() == everything.read_text().splitlines()[:3]
    every_id = store.open_plan()
    store.add_plan_ids(every_id, [j.id for j in store.judgments(protocol="pairwise")])
    same = tmp_path / "same.csv"
    store.export("judgments", same, fmt="csv", protocol="pairwise", plan=every_id)
    assert same.read_bytes() == everything.read_bytes()
    store.drop_plan(plan)
    with pytest.raises(Exception, match="no such table"):
        store.export("judgments", out, fmt="csv", protocol="pairwise", plan=plan)
    with pytest.raises(ValueError, match="not a plan name"):
        store.add_plan_ids('x"; DROP TABLE judgments; --', [])


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_export_is_written_as_it_is_read_in_row_groups(store, tmp_path, monkeypatch, fmt):
    """Rows stream from SQLite into the file (Parquet a row group at a time): the same rows and
    columns as a table built whole, and an optional column that only the last row fills is still
    there (the columns are decided by a first pass before any row is written)."""
    monkeypatch.setattr(export_mod, "_ROWS_PER_GROUP", 4)
    monkeypatch.setattr(export_mod, "_ROWS_PER_CHUNK", 3)
    judgments = [
        Judgment(f"q{i:02d}", "judge-a", "pairwise", ("gen-x", "gen-y"), "parsed", verdict="AB"[i % 2]) for i in range(10)
    ]
    judgments.append(
        Judgment("q99", "judge-a", "pairwise", ("gen-x", "gen-y"), "unparsed", reason="low_label_mass", label_mass=0.25)
    )
    store.add_judgments(judgments)
    out = tmp_path / f"p.{fmt}"
    assert store.export("judgments", out, fmt=fmt) == 11
    frame = _read(out, fmt)
    assert list(frame.columns) == [
        "instance_id",
        "judge",
        "model_a",
        "model_b",
        "verdict",
        "status",
        "reason",
        "prob_a",
        "prob_b",
        "prob_tie",
        "label_mass",
        "condition",
        "replicate",
        "category",
    ]
    assert list(frame["instance_id"]) == [f"q{i:02d}" for i in range(10)] + ["q99"]
    assert list(frame["verdict"][:10]) == ["AB"[i % 2] for i in range(10)]
    assert frame["label_mass"].isna().sum() == 10 and frame["label_mass"].iloc[-1] == 0.25
    if fmt == "parquet":
        import pyarrow.parquet as pq

        groups = pq.ParquetFile(out)
        assert groups.num_row_groups > 1
        assert max(groups.metadata.row_group(i).num_rows for i in range(groups.num_row_groups)) <= 4


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_empty_export_has_its_columns(store, tmp_path, fmt):
    out = tmp_path / f"p.{fmt}"
    assert store.export("judgments", out, fmt=fmt, protocol="pairwise") == 0
    if fmt == "parquet":
        assert list(pd.read_parquet(out).columns) == list(export_mod.JUDGMENT_COLUMNS["pairwise"])
    elif fmt == "csv":
        assert out.read_text().splitlines() == [",".join(export_mod.JUDGMENT_COLUMNS["pairwise"])]
    else:
        assert out.read_text() == ""


def test_reasoning_tokens_count_each_written_reply_in_gpt2_tokens(store, tmp_path):
    """Paper 004 counts the tokens a judge writes with GPT-2's tokenizer: every written reply is counted
    in that one unit, whatever the backend reported in its own tokenizer (before: the backend's count);
    a reply the usage says nothing was written for (a label read, no usage) has no count."""
    from nepotism import gpt2_tokens

    replies = ["I think [[B]]", "I think [[B]]", "Answer A is right; B is not. [[A]]", "A", "x", "x", "[[A]]", "[[A]]"]
    usages = [
        {"completion_tokens": 5},
        {"completion_tokens": 5},
        {"output_tokens": 3},
        {"completion_tokens": 0},
        None,
        {"prompt_tokens": 9},
        {"completion_tokens": 5},
        {"completion_tokens": 2.0},
    ]
    store.add_judgments(
        [
            Judgment(f"q{n}", "judge-a", "pairwise", ("gen-x", "gen-y"), "parsed", verdict="A", raw_output=reply, usage=usage)
            for n, (reply, usage) in enumerate(zip(replies, usages))
        ]
    )
    out = tmp_path / "pairwise.jsonl"
    store.export("judgments", out, fmt="jsonl", protocol="pairwise")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["reasoning_tokens"] for r in rows] == [5, 5, 12, None, None, None, 3, 3]
    assert gpt2_tokens.count("Answer A is right; B is not. [[A]]") == 12 and gpt2_tokens.ENCODING == "gpt2"
    assert [r["model_a"] for r in rows] == ["gen-x"] * len(usages)


# -- every table kind, every optional column: the exact bytes (pinned before the row builder was regrouped) --


def _every_kind():
    usage = {"prompt_tokens": 40, "completion_tokens": 12}
    return [
        Judgment(
            "q1",
            "judge-a",
            "pairwise",
            ("gen-x", "gen-y"),
            "parsed",
            verdict="A",
            label_probs={"A": 0.625, "B": 0.25, "tie": 0.125},
            label_mass=0.98,
            usage=usage,
            raw_output="Answer A is right; B is not. [[A]]",
        ),  # 12 GPT-2 tokens
        Judgment("q1", "judge-a", "pairwise", ("gen-y", "gen-x"), "parsed", verdict="tie", condition="swapped"),
        Judgment(
            "q2",
            "judge-b",
            "pairwise",
            ("gen-x", "gen-y"),
            "unparsed",
            raw_output="?",
            reason="low_label_mass",
            label_mass=0.25,
            usage={"prompt_tokens": 40, "completion_tokens": 0},
        ),
        Judgment("q2", "judge-b", "pairwise", ("gen-y", "gen-x"), "failed", replicate=1, reason="generation:timeout"),
        Judgment("q1", "judge-a", "pointwise", ("gen-x",), "parsed", score=7.25, label_mass=0.5),
        Judgment("q2", "judge-a", "pointwise", ("gen-y",), "unparsed", reason="no_score"),
        Judgment("q1", "judge-a", "rubric", ("gen-x",), "parsed", verdict="yes", rubric_id="r1"),
        Judgment(
            "q1", "judge-a", "rubric", ("gen-x",), "parsed", verdict="no", rubric_id="r2", template_id="rubric-all@0123456789ab"
        ),
        Judgment("q1", "judge-a", "recognition", ("gen-x",), "parsed", verdict="yes"),
        Judgment("q2", "judge-b", "recognition", ("gen-y",), "unparsed", reason="no_verdict"),
        Judgment("q1", "judge-a", "recognition", ("gen-x", "gen-y"), "parsed", verdict="B"),
        Judgment("q1", "judge-a", "categorise", ("gen-x",), "parsed", verdict="coding"),
    ]


GOLDEN = {
    "pairwise.csv": (
        "instance_id,judge,model_a,model_b,verdict,status,reason,prob_a,prob_b,prob_tie,label_mass,condition,replicate,category,reasoning_tokens\n"
        "q1,judge-a,gen-x,gen-y,A,parsed,,0.625,0.25,0.125,0.98,default,0,math,12\n"
        "q1,judge-a,gen-y,gen-x,tie,parsed,,,,,,swapped,0,math,\n"
        "q2,judge-b,gen-x,gen-y,,unparsed,low_label_mass,,,,0.25,default,0,,\n"
        "q2,judge-b,gen-y,gen-x,,failed,generation:timeout,,,,,default,1,,\n"
    ),
    "pairwise.jsonl": (
        '{"instance_id": "q1", "judge": "judge-a", "model_a": "gen-x", "model_b": "gen-y", "verdict": "A", "status": "parsed", "reason": null, "prob_a": 0.625, "prob_b": 0.25, "prob_tie": 0.125, "label_mass": 0.98, "condition": "default", "replicate": 0, "category": "math", "reasoning_tokens": 12}\n'
        '{"instance_id": "q1", "judge": "judge-a", "model_a": "gen-y", "model_b": "gen-x", "verdict": "tie", "status": "parsed", "reason": null, "prob_a": null, "prob_b": null, "prob_tie": null, "label_mass": null, "condition": "swapped", "replicate": 0, "category": "math", "reasoning_tokens": null}\n'
        '{"instance_id": "q2", "judge": "judge-b", "model_a": "gen-x", "model_b": "gen-y", "verdict": null, "status": "unparsed", "reason": "low_label_mass", "prob_a": null, "prob_b": null, "prob_tie": null, "label_mass": 0.25, "condition": "default", "replicate": 0, "category": null, "reasoning_tokens": null}\n'
        '{"instance_id": "q2", "judge": "judge-b", "model_a": "gen-y", "model_b": "gen-x", "verdict": null, "status": "failed", "reason": "generation:timeout", "prob_a": null, "prob_b": null, "prob_tie": null, "label_mass": null, "condition": "default", "replicate": 1, "category": null, "reasoning_tokens": null}\n'
    ),
    "pointwise.csv": (
        "instance_id,judge,model,score,status,reason,label_mass,condition,replicate,category\n"
        "q1,judge-a,gen-x,7.25,parsed,,0.5,default,0,math\n"
        "q2,judge-a,gen-y,,unparsed,no_score,,default,0,\n"
    ),
    "rubric.csv": (
        "instance_id,judge,model,rubric_id,met,status,reason,condition,replicate,setup,category\n"
        "q1,judge-a,gen-x,r2,false,parsed,,default,0,all-rubrics,math\n"
        "q1,judge-a,gen-x,r1,true,parsed,,default,0,single-rubric,math\n"
    ),
    "recognition.csv": (
        "instance_id,judge,model,claimed,status,reason,condition,replicate,category\n"
        "q1,judge-a,gen-x,true,parsed,,default,0,math\n"
        "q2,judge-b,gen-y,,unparsed,no_verdict,default,0,\n"
    ),
    "recognition-pairwise.csv": (
        "instance_id,judge,model_a,model_b,choice,status,reason,condition,replicate,category\n"
        "q1,judge-a,gen-x,gen-y,B,parsed,,default,0,math\n"
    ),
    "categorise.csv": (
        "instance_id,judge,protocol,candidates,verdict,score,status,reason,condition,replicate,category\n"
        'q1,judge-a,categorise,"[""gen-x""]",coding,,parsed,,default,0,math\n'
    ),
}


def test_every_table_kind_exports_the_same_bytes(store, tmp_path):
    """Each table kind with its optional columns (label probabilities, mass, output tokens, the
    instance's category, a generation failure's reason) as CSV, and pairwise as JSON Lines too:
    byte for byte what the exports wrote when the rows were built one literal per protocol."""
    store.add_instances([Instance("q1", "One?", category="math"), Instance("q2", "Two?")])
    store.add_judgments(_every_kind())
    for name, expected in GOLDEN.items():
        kind, fmt = name.rsplit(".", 1)
        out = tmp_path / name
        store.export("judgments", out, fmt=fmt, protocol=kind)
        assert out.read_text(encoding="utf-8") == "".join(expected), name
