"""arena-battles: human votes → preference-ref (annotators), judge-model votes → pairwise."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from nepotism.errors import InputError
from nepotism.importers import arena_battles, import_source
from nepotism.importers.arena_battles import import_arena_battles

UPSTREAM = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "upstream"


def test_all():
    assert arena_battles.__all__ == ["FORMATS", "import_arena_battles"]


def test_humans_and_a_judge():
    result = import_arena_battles(UPSTREAM / "clean_battle_sample.json")
    refs, judged = result.tables["preference-ref"], result.tables["pairwise"]
    assert result.main == "pairwise"
    assert refs[["winner", "winner_raw", "annotator"]].values.tolist() == [
        ["vicuna-13b", "model_a", "arena_user_973"],
        ["tie", "tie (bothbad)", "arena_user_22"],
    ]
    assert judged[["judge", "verdict", "winner_raw"]].values.tolist() == [["gpt-4", "B", "model_b"], ["gpt-4", "tie", "tie"]]
    assert list(refs["source_record"]) == [1, 2] and list(judged["source_record"]) == [3, 4]
    assert result.counts["ties_bothbad"] == 1 and result.counts["human_votes"] == 2


def test_judge_option_makes_every_row_a_judgment():
    result = import_arena_battles(UPSTREAM / "clean_battle_sample.json", judge="gpt-4-0613")
    assert list(result.tables) == ["pairwise"] and len(result.tables["pairwise"]) == 4
    assert set(result.tables["pairwise"]["judge"]) == {"gpt-4-0613"}


def test_a_blank_judge_option_is_an_input_error(tmp_path):
    # it raised AttributeError ('NoneType' has no attribute 'strip') on a row without a judge field,
    # and on a row with one silently judged the row by that voter
    path = tmp_path / "battles.jsonl"
    path.write_text(json.dumps({"model_a": "gpt-4", "model_b": "claude-v1", "winner": "model_a"}) + "\n")
    with pytest.raises(InputError, match="blank") as caught:
        import_source("arena-battles", [path], judge="")
    assert caught.value.field == "--judge"


def test_no_question_id_and_parquet(tmp_path):
    rows = json.loads((UPSTREAM / "clean_battle_sample.json").read_text())
    for row in rows:
        del row["question_id"]
    pd.DataFrame(rows).to_parquet(tmp_path / "battles.parquet")
    result = import_source("arena-battles", [tmp_path / "battles.parquet"])
    assert list(result.tables["preference-ref"]["instance_id"]) == ["arena/battles-1", "arena/battles-2"]


def test_unknown_winner_names_the_record(tmp_path):
    rows = json.loads((UPSTREAM / "clean_battle_sample.json").read_text())
    rows[1]["winner"] = "both"
    (tmp_path / "b.json").write_text(json.dumps(rows))
    with pytest.raises(InputError) as err:
        import_arena_battles(tmp_path / "b.json")
    assert (err.value.record, err.value.field) == (2, "winner")
