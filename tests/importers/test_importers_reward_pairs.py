"""reward-pairs: LLMBar, RewardBench rows and scores, JudgeBench reward-model outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nepotism.errors import InputError
from nepotism.importers import import_source, reward_pairs
from nepotism.importers.reward_pairs import import_reward_pairs
from nepotism.tables import read_table, write_table

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
UPSTREAM = FIXTURES / "upstream"
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
needs_llmbar = pytest.mark.skipif(not (SHARED / "llmbar").exists(), reason="../shared/data/llmbar is absent")
needs_judgebench = pytest.mark.skipif(not (SHARED / "judgebench").exists(), reason="../shared/data/judgebench is absent")


def test_all():
    assert reward_pairs.__all__ == ["FORMATS", "import_reward_pairs"]


def test_llmbar_labels(tmp_path):
    result = import_reward_pairs(UPSTREAM / "LLMBar__Natural_sample.json")
    refs = result.tables["preference-ref"]
    assert result.main == "preference-ref" and len(refs) == 4
    assert list(refs["winner"]) == ["unknown@output_1", "unknown@output_1", "unknown@output_2", "unknown@output_2"]
    assert refs["instance_id"].tolist()[0] == "LLMBar__Natural_sample/1"
    correct = result.tables["correctness-ref"]
    assert correct["correct"].tolist() == [True, False, True, False, False, True, False, True]
    texts = result.texts
    assert len(texts) == 8 and texts["prompt"].notna().all()
    for kind in ("preference-ref", "correctness-ref"):
        write_table(result.tables[kind], tmp_path / f"{kind}.csv")
        assert read_table(tmp_path / f"{kind}.csv").kind == kind


def test_rewardbench_rows():
    result = import_reward_pairs(UPSTREAM / "rewardbench_filtered.jsonl")
    refs = result.tables["preference-ref"]
    assert refs[["model_a", "model_b", "winner"]].values.tolist() == [
        ["gpt-4", "llama-2-7b-chat", "gpt-4"],
        ["gpt-4@chosen", "gpt-4@rejected", "gpt-4@chosen"],  # one model wrote both: tagged
        ["unknown@chosen", "unknown@rejected", "unknown@chosen"],
    ]
    assert list(refs["category"]) == ["hep-python", "math-prm", "alpacaeval-easy"]
    assert result.texts.set_index(["instance_id", "model"]).loc[("rewardbench_filtered/3003", "unknown@rejected"), "text"] == ""


def test_rewardbench_scores_are_pointwise():
    result = import_reward_pairs(UPSTREAM / "rewardbench_scores.json")
    assert result.main == "pointwise" and list(result.tables)[:2] == ["pointwise", "correctness-ref"]
    points = result.tables["pointwise"]
    assert set(points["judge"]) == {"Ray2333/GRM-Gemma-2B-rewardmodel-ft"}
    assert points["score"].tolist() == [2.75, -1.25, -0.5, 0.125]
    assert list(points["source_record"]) == [1, 1, 2, 2]


def test_scores_without_a_name(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(
        json.dumps({"prompt": "p", "chosen": "a", "rejected": "b", "score_chosen": 1.0, "score_rejected": 0.0}) + "\n"
    )
    with pytest.raises(InputError) as err:
        import_reward_pairs(path)
    assert "--judge" in err.value.message and err.value.line == 1
    assert set(import_reward_pairs(path, judge="rm").tables["pointwise"]["judge"]) == {"rm"}


def test_not_a_pair(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"prompt": "p", "answer": "a"}) + "\n")
    with pytest.raises(InputError) as err:
        import_reward_pairs(path)
    assert err.value.line == 1 and "chosen" in err.value.message


def test_llmbar_bad_label(tmp_path):
    rows = json.loads((UPSTREAM / "LLMBar__Natural_sample.json").read_text())
    rows[3]["label"] = 3
    (tmp_path / "l.json").write_text(json.dumps(rows))
    with pytest.raises(InputError) as err:
        import_reward_pairs(tmp_path / "l.json")
    assert (err.value.record, err.value.field) == (4, "label")


def test_judgebench_reward_model_file():
    path = (
        FIXTURES
        / "dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=reward_model,judge_model=Ray2333_GRM-Gemma-2B-rewardmodel-ft.jsonl.gz"
    )
    result = import_reward_pairs(path)
    assert result.main == "pointwise" and list(result.tables)[:2] == ["pointwise", "correctness-ref"]


@needs_llmbar
def test_real_llmbar_files():
    files = sorted((SHARED / "llmbar").glob("*.json"))
    result = import_source("reward-pairs", files)
    assert len(result.tables["preference-ref"]) == 885 and result.counts["pairs"] == 885


@needs_judgebench
def test_real_judgebench_reward_models():
    files = sorted((SHARED / "judgebench").glob("*judge_name=reward_model*.jsonl.gz"))
    result = import_source("reward-pairs", files)
    points = result.tables["pointwise"]
    assert points["judge"].nunique() == 5 and len(points) == 5 * 350 * 4
