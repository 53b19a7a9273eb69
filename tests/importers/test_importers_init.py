"""The importers package: format registry and merging of several sources."""

from __future__ import annotations

from pathlib import Path

import pytest

import nepotism.importers as importers
from nepotism.errors import InputError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"


def test_all():
    assert set(importers.__all__) == {"Format", "Imported", "formats", "get_format", "import_source", "merge"}
    assert set(importers.formats()) == {
        "alpaca-eval-compact", "alpaca-eval", "mbpp-selfpref", "judgebench", "fastchat-single", "fastchat-pair",
        "mt-bench-human", "arena-hard", "arena-battles", "reward-pairs", "healthbench"}


def test_unknown_format_and_missing_file(tmp_path):
    with pytest.raises(InputError):
        importers.import_source("nope", [FIXTURES / "annotations_compact_sample.csv.gz"])
    with pytest.raises(InputError):
        importers.import_source("judgebench", [tmp_path / "absent.jsonl"])


def test_merge_several_judgebench_files():
    arena = FIXTURES / "dataset=judgebench,response_model=claude-3-5-sonnet-20240620,judge_name=arena_hard,judge_model=claude-3-haiku-20240307.jsonl.gz"
    result = importers.import_source("judgebench", [arena, arena.with_name(arena.name)])
    assert len(result.tables["pairwise"]) == 8  # the second copy repeats every judgment exactly: kept once
    assert result.counts["repeats_dropped"] == 8


def test_merge_refuses_mixed_kinds():
    data = FIXTURES / "dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl.gz"
    reward = FIXTURES / "dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=reward_model,judge_model=Ray2333_GRM-Gemma-2B-rewardmodel-ft.jsonl.gz"
    with pytest.raises(InputError):
        importers.import_source("judgebench", [data, reward])


def test_docs_are_generated_from_the_importers():
    from nepotism.importers._docs import markdown

    docs = Path(__file__).resolve().parents[2] / "docs" / "importers.md"
    assert docs.read_text(encoding="utf-8") == markdown(), (
        "docs/importers.md is stale: python -m nepotism.importers._docs > docs/importers.md")
    for name in importers.formats():
        assert f"\n## `{name}`\n" in markdown()


def test_registry_refuses_options_a_format_does_not_take():
    with pytest.raises(InputError) as err:
        importers.import_source("judgebench", [FIXTURES / "annotations_compact_sample.csv.gz"], baseline="x")
    assert err.value.field == "--baseline" and "it takes none" in err.value.message


def test_format_records_are_complete():
    for spec in importers.formats().values():
        assert spec.summary and spec.upstream and spec.tables and callable(spec.read)
    with pytest.raises(ValueError):
        importers.Format(name="x", summary="s", read=print, tables=("pairwise",), upstream="u", options=("nope",))
