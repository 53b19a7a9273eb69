"""arena-hard: two games per question, strong/weak labels kept, unparsed and failed games kept as rows."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from nepotism.errors import InputError
from nepotism.importers import arena_hard
from nepotism.importers.arena_hard import LABELS, import_arena_hard

UPSTREAM = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "upstream"


def test_all():
    assert arena_hard.__all__ == ["FORMATS", "LABELS", "import_arena_hard"]


def test_labels_cover_show_result():
    # every label arena-hard-auto show_result.py scores, with the side it favours
    assert {k: v[0] for k, v in LABELS.items()} == {
        "A>>B": "A",
        "A>B": "A",
        "A=B": "tie",
        "B>A": "B",
        "B>>A": "B",
        "A<<B": "B",
        "A<B": "B",
        "B=A": "tie",
        "B<<A": "A",
        "B<A": "A",
    }


def test_v01_needs_a_baseline():
    with pytest.raises(InputError) as err:
        import_arena_hard(UPSTREAM / "arena-hard-v0.1_gpt-4-0613.jsonl")
    assert (err.value.line, err.value.field) == (1, "baseline") and "--baseline" in err.value.message


def test_v01_games():
    frame = import_arena_hard(UPSTREAM / "arena-hard-v0.1_gpt-4-0613.jsonl", baseline="gpt-4-0314").tables["pairwise"]
    assert len(frame) == 6 and set(frame["judge"]) == {"gpt-4-1106-preview"}
    g = frame.set_index(["source_line", "game"])
    # game 1: baseline shown first
    assert (g.loc[(1, 1), "model_a"], g.loc[(1, 1), "verdict"], g.loc[(1, 1), "strength"]) == ("gpt-4-0314", "B", "weak")
    assert (g.loc[(1, 2), "model_a"], g.loc[(1, 2), "verdict"], g.loc[(1, 2), "strength"]) == ("gpt-4-0613", "A", "strong")
    assert g.loc[(2, 1), "verdict"] == "tie" and pd.isna(g.loc[(2, 1), "strength"])
    assert g.loc[(2, 2), "status"] == "unparsed" and g.loc[(2, 2), "reason"] == "no_verdict"
    assert (g.loc[(3, 1), "verdict"], g.loc[(3, 1), "label"]) == ("A", "B<<A")
    assert g.loc[(3, 2), "reason"] == "invalid_verdict" and g.loc[(3, 2), "label"] == "A>>>B"


def test_v20_failed_game_and_categories():
    result = import_arena_hard(UPSTREAM / "arena-hard-v2.0_gpt-4o-mini.jsonl")
    frame = result.tables["pairwise"].set_index(["source_line", "game"])
    assert frame.loc[(1, 1), "model_a"] == "o3-mini-2025-01-31" and frame.loc[(1, 1), "category"] == "hard_prompt"
    assert frame.loc[(2, 1), "status"] == "failed" and frame.loc[(2, 1), "reason"] == "call_failed"
    assert frame.loc[(2, 2), "model_b"] == "gemini-2.0-flash-001"
    assert result.counts["failed"] == 1 and result.counts["strong_verdicts"] == 1


def test_single_grading_file_is_refused(tmp_path):
    path = tmp_path / "single.jsonl"
    path.write_text(
        json.dumps(
            {"question_id": "q", "model": "m", "judge": "gpt-4", "games": [{"user_prompt": "", "judgment": "[[7]]", "score": 7}]}
        )
        + "\n"
    )
    with pytest.raises(InputError) as err:
        import_arena_hard(path, baseline="gpt-4-0314")
    assert err.value.field == "games[0].score" and "single-grading" in err.value.message
