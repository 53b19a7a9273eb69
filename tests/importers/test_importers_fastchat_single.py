"""fastchat-single: FastChat single grades in the upstream schema, and the real arena-bench and RouteLLM files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nepotism.errors import InputError
from nepotism.importers import fastchat_single, import_source
from nepotism.importers.fastchat_single import import_fastchat_single
from nepotism.tables import read_table, write_table

UPSTREAM = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "upstream"
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
ARENA_BENCH = SHARED / "arena_bench_v1" / "model_judgment"
needs_arena_bench = pytest.mark.skipif(not ARENA_BENCH.exists(), reason="../shared/data/arena_bench_v1 is absent")
needs_routellm = pytest.mark.skipif(not (SHARED / "routellm").exists(), reason="../shared/data/routellm is absent")


def _write(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_all():
    assert fastchat_single.__all__ == ["FORMATS", "import_fastchat_single"]


def test_upstream_schema_mapping():
    result = import_fastchat_single(UPSTREAM / "gpt-4_single.jsonl")
    frame = result.tables["pointwise"].set_index(["instance_id", "model"])
    assert result.main == "pointwise" and len(frame) == 6
    assert set(frame["judge"]) == {"gpt-4"}
    assert frame.loc[("fastchat/81", "vicuna-13b-v1.3"), "score"] == 8.0
    assert frame.loc[("fastchat/81", "vicuna-13b-v1.3"), "judge_prompt"] == "single-v1"
    turn2 = frame.loc[("fastchat/81/turn2", "vicuna-13b-v1.3")]
    assert (turn2["score"], turn2["turn"], turn2["judge_prompt"]) == (7.0, 2, "single-v1-multi-turn")
    assert frame.loc[("fastchat/111", "claude-v1"), "score"] == 9.5
    no_rating = frame.loc[("fastchat/81", "claude-v1")]  # FastChat's -1: no [[rating]] in the reply
    assert no_rating["status"] == "unparsed" and no_rating["reason"] == "no_verdict" and no_rating["score"] != no_rating["score"]
    failed = frame.loc[("fastchat/111", "gpt-4")]  # $ERROR$: the call failed after every retry
    assert failed["status"] == "failed" and failed["reason"] == "call_failed"
    assert result.counts == {"judgments": 6, "unparsed": 1, "failed": 1}
    assert list(result.tables["pointwise"]["source_line"]) == [1, 2, 3, 4, 5, 6]


def test_table_validates(tmp_path):
    result = import_fastchat_single(UPSTREAM / "gpt-4_single.jsonl", benchmark="mt_bench")
    write_table(result.tables["pointwise"], tmp_path / "p.jsonl")
    table = read_table(tmp_path / "p.jsonl")
    assert table.kind == "pointwise" and table.frame["instance_id"].str.startswith("mt_bench/").all()
    assert table.frame["score"].isna().sum() == 2  # unparsed and failed: empty, never zero


def test_judge_missing_is_assumed_and_said(tmp_path):
    path = _write(tmp_path / "m.jsonl", [{"question_id": "q1", "model": "claude-1", "score": 7, "judgment": "[[7]]"}])
    result = import_fastchat_single(path)
    assert result.tables["pointwise"]["judge"].tolist() == ["gpt-4"]
    assert result.counts["judge_assumed"] == 1 and any("--judge" in n for n in result.notes)
    named = import_fastchat_single(path, judge="gpt-4-0613")
    assert named.tables["pointwise"]["judge"].tolist() == ["gpt-4-0613"] and "judge_assumed" not in named.counts


@pytest.mark.parametrize(
    ("record", "field", "message"),
    [
        ({"model": "m", "score": 5}, "question_id", "missing field"),
        ({"question_id": 1, "score": 5}, "model", "missing field"),
        ({"question_id": 1, "model": "m"}, "score", "missing field"),
        ({"question_id": 1, "model": "m", "score": "8"}, "score", "not a number"),
        ({"question_id": 1, "model": "m", "score": True}, "score", "not a number"),
        ({"question_id": 1, "model": "m", "score": -3}, "score", "negative"),
        ({"question_id": 1, "model": "m", "score": 5, "turn": "two"}, "turn", "not a turn number"),
        ({"question_id": 1, "model": "m", "score": 5, "judge": 7}, "judge", "judge name"),
    ],
)
def test_malformed_records_name_line_and_field(tmp_path, record, field, message):
    good = {"question_id": 0, "model": "m", "score": 5}
    path = _write(tmp_path / "bad.jsonl", [good, record])
    with pytest.raises(InputError) as err:
        import_fastchat_single(path)
    assert (err.value.path, err.value.line, err.value.field) == (str(path), 2, field)
    assert message in err.value.message


def test_non_finite_score_is_an_error(tmp_path):
    path = tmp_path / "nan.jsonl"
    path.write_text('{"question_id": 1, "model": "m", "score": NaN}\n')
    with pytest.raises(InputError) as err:
        import_fastchat_single(path)
    assert err.value.field == "score" and "finite" in err.value.message


def test_bad_json_names_the_line(tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"question_id": 1, "model": "m", "score": 5}\n{"question_id": 2, \n')
    with pytest.raises(InputError) as err:
        import_fastchat_single(path)
    assert err.value.line == 2


def test_repeats_across_files_are_kept_once_and_clashes_refused(tmp_path):
    row = {"question_id": 5, "model": "m", "judge": ["gpt-4", "single-v1"], "score": 6, "turn": 1}
    a = _write(tmp_path / "a.jsonl", [row])
    b = _write(tmp_path / "b.jsonl", [{**row, "tstamp": 123.0}])  # same judgment; tstamp is not read
    merged = import_source("fastchat-single", [a, b])
    assert len(merged.tables["pointwise"]) == 1 and merged.counts["repeats_dropped"] == 1
    c = _write(tmp_path / "c.jsonl", [{**row, "score": 9}])
    with pytest.raises(InputError) as err:
        import_source("fastchat-single", [a, c])
    assert err.value.path == str(c) and err.value.line == 1 and f"{a} line 1" in err.value.message


@needs_arena_bench
def test_real_arena_bench_files():
    files = sorted(ARENA_BENCH.glob("*.jsonl.gz"))
    assert len(files) == 17
    result = import_source("fastchat-single", files)
    frame = result.tables["pointwise"]
    # 17 files of 300 judgments; gpt-4_single.jsonl repeats gpt-3.5-turbo.jsonl line for line
    assert len(frame) == 4800 and result.counts["repeats_dropped"] == 300
    assert frame["model"].nunique() == 16 and frame["instance_id"].nunique() == 300
    assert set(frame["judge"]) == {"gpt-4"} and result.counts["judge_assumed"] == 5100
    assert (frame["status"] == "unparsed").sum() == 39 and (frame["status"] == "failed").sum() == 1
    failed = frame[frame["status"] == "failed"]
    assert failed["model"].tolist() == ["vicuna-33b-v1.3"]


@needs_routellm
def test_real_routellm_file():
    result = import_fastchat_single(SHARED / "routellm" / "judgements.jsonl.gz")
    frame = result.tables["pointwise"]
    assert len(frame) == 320 and frame["instance_id"].nunique() == 160
    assert set(frame["turn"]) == {1, 2} and set(frame["judge"]) == {"gpt-4"}
    assert set(frame["judge_prompt"]) == {"single-v1", "single-v1-multi-turn", "single-math-v1", "single-math-v1-multi-turn"}
    assert frame["score"].notna().all()
