"""MBPP self-preference importer: both-order pairing, label order, correctness and texts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nepotism.errors import InputError
from nepotism.importers import mbpp_selfpref
from nepotism.importers.mbpp_selfpref import import_mbpp_selfpref, split_tests

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
FIXTURE = FIXTURES / "llama-3.3-70b_gpt-4o_eval.jsonl"
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "mbpp_selfpref" / "llama-3.3-70b_gpt-4o_eval.jsonl"


def test_all():
    assert set(mbpp_selfpref.__all__) == {"FORMATS", "VERDICT_SOURCES", "import_mbpp_selfpref", "split_tests"}


def _check_both_orders(result, n):
    pairs = result.tables["pairwise"]
    assert len(pairs) == 2 * n
    assert set(pairs["judge"]) == {"llama-3.3-70b"}
    for _, group in pairs.groupby("instance_id"):
        assert sorted(group["game"]) == [1, 2]
        g1 = group[group["game"] == 1].iloc[0]
        g2 = group[group["game"] == 2].iloc[0]
        assert (g1["model_a"], g1["model_b"]) == ("llama-3.3-70b", "gpt-4o")
        assert (g2["model_a"], g2["model_b"]) == ("gpt-4o", "llama-3.3-70b")
    probs = pairs[["prob_a", "prob_tie", "prob_b"]].to_numpy()
    assert np.allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    # a parsed verdict always agrees with the label of the largest probability ([A, T, B] order)
    parsed = pairs[pairs["verdict"].notna()]
    top = np.array(["A", "tie", "B"])[np.argmax(parsed[["prob_a", "prob_tie", "prob_b"]].to_numpy(), axis=1)]
    assert (parsed["verdict"].to_numpy() == top).all()


def test_fixture_both_orders_and_refs():
    result = import_mbpp_selfpref(FIXTURE)
    _check_both_orders(result, 6)
    raw = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    refs = result.tables["correctness-ref"]
    assert len(refs) == 12
    first = refs[refs["instance_id"] == f"mbpp/{raw[0]['unique_id']}"].set_index("model")["correct"]
    assert first["llama-3.3-70b"] == raw[0]["assistent_1_is_correct"]
    assert first["gpt-4o"] == raw[0]["assistent_2_is_correct"]
    # game 1's reply "```" does not parse: read as a reply it is unparsed, probabilities kept
    row = import_mbpp_selfpref(FIXTURE, verdicts="reply").tables["pairwise"].iloc[0]
    assert raw[0]["game_1_output"] == "```" and pd.isna(row["verdict"])
    assert row["prob_a"] == pytest.approx(raw[0]["game_1_spb_score"][0])
    assert row["prob_b"] == pytest.approx(raw[0]["game_1_spb_score"][2])


def test_texts_for_sandbox():
    result = import_mbpp_selfpref(FIXTURE)
    texts = result.texts
    assert set(texts.columns) == {"instance_id", "prompt", "tests", "model", "text"}
    assert len(texts) == 12
    assert all(len(t) >= 1 and all(line.startswith("assert") for line in t) for t in texts["tests"])


def test_split_tests():
    assert split_tests("do x\n\nYour code should satisfy these tests:\nassert f(1) == 2\nassert f(2) == 3\n") == [
        "assert f(1) == 2",
        "assert f(2) == 3",
    ]
    assert split_tests("no tests here") == []


def test_tables_validate(tmp_path):
    from nepotism.tables import read_table, write_table

    result = import_mbpp_selfpref(FIXTURE)
    for kind, frame in result.tables.items():
        write_table(frame, tmp_path / f"{kind}.csv")
        assert read_table(tmp_path / f"{kind}.csv").kind == kind


def _bad_copy(tmp_path, mutate):
    lines = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    mutate(lines)
    path = tmp_path / FIXTURE.name
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    return path


def test_missing_field_names_line(tmp_path):
    path = _bad_copy(tmp_path, lambda rows: rows[2].pop("assistent_2_answer"))
    with pytest.raises(InputError) as err:
        import_mbpp_selfpref(path)
    assert (err.value.line, err.value.field) == (3, "assistent_2_answer")


def test_bad_probabilities(tmp_path):
    path = _bad_copy(tmp_path, lambda rows: rows[1].__setitem__("game_2_spb_score", [0.5, 0.5]))
    with pytest.raises(InputError) as err:
        import_mbpp_selfpref(path)
    assert (err.value.line, err.value.field) == (2, "game_2_spb_score")


def test_file_name_must_name_models(tmp_path):
    path = tmp_path / "selfpref.jsonl"
    shutil.copy(FIXTURE, path)
    with pytest.raises(InputError):
        import_mbpp_selfpref(path)
    assert len(import_mbpp_selfpref(path, judge="j", other="o").tables["pairwise"]) == 12


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/data/mbpp_selfpref is not present beside the repo")
def test_real_file():
    result = import_mbpp_selfpref(SHARED, verdicts="reply")
    _check_both_orders(result, 378)
    pairs = result.tables["pairwise"]
    assert result.counts["unparsed"] == int(pairs["verdict"].isna().sum()) == 226
    assert len(result.tables["correctness-ref"]) == 756


def test_verdicts_from_probabilities_fill_unparsed_replies_and_agree_with_parsed_ones():
    by_reply = import_mbpp_selfpref(FIXTURE, verdicts="reply").tables["pairwise"]
    by_prob = import_mbpp_selfpref(FIXTURE)  # the default: paper 004 reads the recorded probabilities
    pairs = by_prob.tables["pairwise"]
    assert pairs["verdict"].notna().all() and by_prob.counts["unparsed"] == 0
    assert by_prob.counts["reply_disagrees"] == 0
    parsed = by_reply["verdict"].notna()
    assert (pairs["verdict"][parsed] == by_reply["verdict"][parsed]).all()
    # the first game's reply is a code fence: its verdict now comes from [A, T, B] = its scores
    raw = json.loads(FIXTURE.read_text().splitlines()[0])
    assert pairs.iloc[0]["reply"] == "```"
    assert pairs.iloc[0]["verdict"] == ["A", "tie", "B"][int(np.argmax(raw["game_1_spb_score"]))]


def test_verdicts_from_probabilities_leave_games_without_scores_unparsed(tmp_path):
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    rows[0]["game_2_spb_score"] = None
    path = tmp_path / "judge_other_eval.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = import_mbpp_selfpref(path, verdicts="probabilities")
    pairs = result.tables["pairwise"]
    assert result.counts["unparsed"] == 1
    assert pairs[pairs["verdict"].isna()]["reason"].tolist() == ["no_label_logprobs"]


@pytest.mark.parametrize("scores,verdict", [([0.4, 0.4, 0.2], "A"), ([0.4, 0.2, 0.4], "A"), ([0.2, 0.4, 0.4], "tie")])
def test_an_exact_tie_for_the_top_takes_the_first_label_in_a_t_b_order(tmp_path, scores, verdict):
    """Paper 004 takes the argmax of the three candidates' scores: on an exact tie, the first of the
    tied labels in the recorded [A, T, B] order (before: unparsed as no_label_logprobs)."""
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    rows[1]["game_1_spb_score"] = scores
    path = tmp_path / "judge_other_eval.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = import_mbpp_selfpref(path)
    row = result.tables["pairwise"].iloc[2]
    assert (row["game"], row["verdict"], row["status"]) == (1, verdict, "parsed")
    assert result.counts["unparsed"] == 0 and result.counts["top_probability_ties"] == 1
    assert any("tied for the top" in note for note in result.notes)
    assert import_mbpp_selfpref(path, verdicts="reply").counts["top_probability_ties"] == 0


def test_unknown_verdict_source_is_an_input_error():
    with pytest.raises(InputError, match="verdicts"):
        import_mbpp_selfpref(FIXTURE, verdicts="logits")


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/data/mbpp_selfpref is not present beside the repo")
def test_real_file_from_probabilities():
    result = import_mbpp_selfpref(SHARED)
    assert result.counts["unparsed"] == 0  # every game has scores
    assert result.counts["top_probability_ties"] == 9  # read as the first tied label, not left out
    assert result.counts["reply_disagrees"] == 0
