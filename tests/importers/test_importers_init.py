"""The importers package: format registry and merging of several sources."""

from __future__ import annotations

from pathlib import Path

import pytest

import nepotism.importers as importers
from nepotism.errors import InputError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"


def test_all():
    assert set(importers.__all__) == {"FORMATS", "Imported", "import_source", "merge"}
    assert set(importers.FORMATS) == {"alpaca-eval-compact", "alpaca-eval", "mbpp-selfpref", "judgebench"}


def test_unknown_format_and_missing_file(tmp_path):
    with pytest.raises(InputError):
        importers.import_source("nope", [FIXTURES / "annotations_compact_sample.csv.gz"])
    with pytest.raises(InputError):
        importers.import_source("judgebench", [tmp_path / "absent.jsonl"])


def test_merge_several_judgebench_files():
    arena = FIXTURES / "dataset=judgebench,response_model=claude-3-5-sonnet-20240620,judge_name=arena_hard,judge_model=claude-3-haiku-20240307.jsonl.gz"
    result = importers.import_source("judgebench", [arena, arena.with_name(arena.name)])
    assert len(result.tables["pairwise"]) == 16


def test_merge_refuses_mixed_kinds():
    data = FIXTURES / "dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl.gz"
    reward = FIXTURES / "dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=reward_model,judge_model=Ray2333_GRM-Gemma-2B-rewardmodel-ft.jsonl.gz"
    with pytest.raises(InputError):
        importers.import_source("judgebench", [data, reward])
