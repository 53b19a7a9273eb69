"""JudgeBench importer: labels, both-order LLM-judge games, reward-model scores."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from nepotism.errors import InputError
from nepotism.importers import judgebench
from nepotism.importers.judgebench import import_judgebench

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
ARENA = (
    FIXTURES
    / "dataset=judgebench,response_model=claude-3-5-sonnet-20240620,judge_name=arena_hard,judge_model=claude-3-haiku-20240307.jsonl.gz"
)
REWARD = (
    FIXTURES
    / "dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=reward_model,judge_model=Ray2333_GRM-Gemma-2B-rewardmodel-ft.jsonl.gz"
)
DATA = FIXTURES / "dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl.gz"
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "judgebench"


def _raw(path):
    return [json.loads(line) for line in gzip.open(path, "rt")]


def test_all():
    assert judgebench.__all__ == ["FORMATS", "import_judgebench"]


def test_data_file_gives_preference_ref():
    result = import_judgebench(DATA)
    assert result.main == "preference-ref" and list(result.tables) == ["preference-ref", "correctness-ref"]
    correct = result.tables["correctness-ref"]
    assert len(correct) == 2 * len(result.tables["preference-ref"]) and correct["correct"].sum() == len(correct) // 2
    refs = result.tables["preference-ref"]
    raw = _raw(DATA)
    for row, record in zip(refs.itertuples(), raw):
        assert row.model_a == "gpt-4o-2024-05-13@A" and row.model_b == "gpt-4o-2024-05-13@B"
        assert row.winner == (row.model_a if record["label"] == "A>B" else row.model_b)
        assert row.category == record["source"]


def test_arena_games_in_shown_order():
    result = import_judgebench(ARENA)
    pairs = result.tables["pairwise"]
    raw = _raw(ARENA)
    assert len(pairs) == 2 * len(raw)
    assert set(pairs["judge"]) == {"claude-3-haiku-20240307"}
    for record in raw:
        rows = pairs[pairs["instance_id"] == f"judgebench/{record['pair_id']}"].set_index("game")
        assert rows.loc[1, "model_a"].endswith("@A") and rows.loc[2, "model_a"].endswith("@B")
        for game in (1, 2):
            decision = record["judgments"][game - 1]["decision"]
            expected = {"A>B": "A", "B>A": "B", "A=B": "tie", None: None}[decision]
            got = rows.loc[game, "verdict"]
            assert (pd.isna(got) and expected is None) or got == expected
    assert result.counts["unparsed"] >= 1  # the fixture holds a game with no readable verdict
    assert "preference-ref" in result.tables


def test_reward_scores_follow_the_responses():
    result = import_judgebench(REWARD)
    points = result.tables["pointwise"]
    raw = _raw(REWARD)
    assert len(points) == 4 * len(raw)
    for record in raw:
        rows = points[points["instance_id"] == f"judgebench/{record['pair_id']}"]
        s1 = record["judgments"][0]["judgment"]["scores"]
        s2 = record["judgments"][1]["judgment"]["scores"]
        by = {(r.model.split("@")[1], r.replicate): r.score for r in rows.itertuples()}
        assert by[("A", 0)] == s1[0] and by[("B", 0)] == s1[1]
        assert by[("B", 1)] == s2[0] and by[("A", 1)] == s2[1]


def test_tables_validate(tmp_path):
    from nepotism.tables import read_table, write_table

    for path in (ARENA, REWARD, DATA):
        for kind, frame in import_judgebench(path).tables.items():
            write_table(frame, tmp_path / f"{kind}.jsonl")
            assert read_table(tmp_path / f"{kind}.jsonl").kind == kind


def _mutated(tmp_path, source, mutate):
    rows = _raw(source)
    mutate(rows)
    path = tmp_path / source.name
    with gzip.open(path, "wt") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    return path


def test_unknown_label(tmp_path):
    path = _mutated(tmp_path, DATA, lambda rows: rows[1].__setitem__("label", "A=B"))
    with pytest.raises(InputError) as err:
        import_judgebench(path)
    assert (err.value.line, err.value.field) == (2, "label")


def test_unknown_decision(tmp_path):
    path = _mutated(tmp_path, ARENA, lambda rows: rows[0]["judgments"][1].__setitem__("decision", "A>>B"))
    with pytest.raises(InputError) as err:
        import_judgebench(path)
    assert err.value.line == 1 and err.value.field == "judgments[1].decision"


def test_failed_game_is_empty_not_tie(tmp_path):
    path = _mutated(tmp_path, ARENA, lambda rows: rows[0]["judgments"].__setitem__(0, None))
    result = import_judgebench(path)
    row = result.tables["pairwise"].iloc[0]
    assert pd.isna(row["verdict"]) and row["judge"] == "claude-3-haiku-20240307"
    assert result.counts["failed"] == 1


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/data/judgebench is not present beside the repo")
def test_real_files():
    files = sorted(SHARED.glob("*.jsonl.gz"))
    assert len(files) == 9
    for path in files:
        result = import_judgebench(path)
        n = len(result.tables["preference-ref"])
        assert n in (270, 350)
        if "arena_hard" in path.name:
            assert len(result.tables["pairwise"]) == 2 * n
        elif "reward_model" in path.name:
            assert len(result.tables["pointwise"]) == 4 * n
            assert result.tables["pointwise"]["score"].notna().all()
