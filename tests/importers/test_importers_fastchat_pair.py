"""fastchat-pair: both games of FastChat pairwise judgments, verdicts in the shown order."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from nepotism.analyses.comparisons import build_comparisons
from nepotism.errors import InputError
from nepotism.importers import fastchat_pair
from nepotism.importers.fastchat_pair import import_fastchat_pair
from nepotism.tables import read_table, write_table

UPSTREAM = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "upstream"


def test_all():
    assert fastchat_pair.__all__ == ["FORMATS", "import_fastchat_pair"]


def test_games_in_shown_order():
    frame = import_fastchat_pair(UPSTREAM / "gpt-4_pair.jsonl").tables["pairwise"]
    assert len(frame) == 8
    first = frame[frame["source_line"] == 1].set_index("game")
    # model_1 = gpt-4 won both games: game 1 shows it first (A), game 2 second (B)
    assert (first.loc[1, "model_a"], first.loc[1, "verdict"]) == ("gpt-4", "A")
    assert (first.loc[2, "model_a"], first.loc[2, "verdict"]) == ("vicuna-13b-v1.3", "B")
    second = frame[frame["source_line"] == 2].set_index("game")
    assert second.loc[1, "verdict"] == "tie" and (second.loc[2, "model_a"], second.loc[2, "verdict"]) == ("gpt-4", "A")
    third = frame[frame["source_line"] == 3].set_index("game")
    assert pd.isna(third.loc[1, "verdict"]) and third.loc[1, "status"] == "unparsed" and third.loc[1, "reason"] == "no_verdict"
    assert third.loc[2, "verdict"] == "B" and third.loc[2, "model_a"] == "claude-v1"  # gpt-4 (model_1) shown second
    fourth = frame[frame["source_line"] == 4]
    assert fourth["instance_id"].unique().tolist() == ["fastchat/111/turn2"]
    assert fourth.set_index("game").loc[1, "status"] == "failed"


def test_both_orders_combine(tmp_path):
    write_table(import_fastchat_pair(UPSTREAM / "gpt-4_pair.jsonl").tables["pairwise"], tmp_path / "p.csv")
    comparisons = build_comparisons(read_table(tmp_path / "p.csv").frame).frame
    row = comparisons[
        (comparisons["instance_id"] == "fastchat/81")
        & comparisons["model_x"].isin(["gpt-4"])
        & comparisons["model_y"].isin(["vicuna-13b-v1.3"])
    ]
    assert len(row) == 1 and row["outcome"].iloc[0] == 1  # gpt-4 preferred in both orders


def test_single_mode_pairs_are_refused(tmp_path):
    path = tmp_path / "pair.jsonl"
    path.write_text(
        json.dumps(
            {
                "question_id": 1,
                "model_1": "a",
                "model_2": "b",
                "g1_winner": "model_1",
                "g2_winner": "model_1",
                "judge": ["gpt-4", "single-v1"],
                "m1_score": 8,
                "m2_score": 5,
            }
        )
        + "\n"
    )
    with pytest.raises(InputError) as err:
        import_fastchat_pair(path)
    assert "fastchat-single" in err.value.message and err.value.line == 1


def test_unknown_winner(tmp_path):
    path = tmp_path / "pair.jsonl"
    path.write_text(
        json.dumps(
            {
                "question_id": 1,
                "model_1": "a",
                "model_2": "b",
                "g1_winner": "A",
                "g2_winner": "model_1",
                "judge": ["gpt-4", "pair-v2"],
            }
        )
        + "\n"
    )
    with pytest.raises(InputError) as err:
        import_fastchat_pair(path)
    assert (err.value.line, err.value.field) == (1, "g1_winner")
