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
        "alpaca-eval-compact",
        "alpaca-eval",
        "mbpp-selfpref",
        "judgebench",
        "fastchat-single",
        "fastchat-pair",
        "mt-bench-human",
        "arena-hard",
        "arena-battles",
        "reward-pairs",
        "healthbench",
        "inspect-log",
        "table",
    }


def test_unknown_format_and_missing_file(tmp_path):
    with pytest.raises(InputError):
        importers.import_source("nope", [FIXTURES / "annotations_compact_sample.csv.gz"])
    with pytest.raises(InputError):
        importers.import_source("judgebench", [tmp_path / "absent.jsonl"])


def test_merge_several_judgebench_files():
    arena = (
        FIXTURES
        / "dataset=judgebench,response_model=claude-3-5-sonnet-20240620,judge_name=arena_hard,judge_model=claude-3-haiku-20240307.jsonl.gz"
    )
    result = importers.import_source("judgebench", [arena, arena.with_name(arena.name)])
    assert len(result.tables["pairwise"]) == 8  # the second copy repeats every judgment exactly: kept once
    assert result.counts["repeats_dropped"] == 8


def test_merge_refuses_mixed_kinds():
    data = FIXTURES / "dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl.gz"
    reward = (
        FIXTURES
        / "dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=reward_model,judge_model=Ray2333_GRM-Gemma-2B-rewardmodel-ft.jsonl.gz"
    )
    with pytest.raises(InputError):
        importers.import_source("judgebench", [data, reward])


def test_docs_are_generated_from_the_importers():
    from nepotism.importers._docs import markdown

    docs = Path(__file__).resolve().parents[2] / "docs" / "importers.md"
    assert docs.read_text(encoding="utf-8") == markdown(), (
        "docs/importers.md is stale: python -m nepotism.importers._docs > docs/importers.md"
    )
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


BATTLE = (
    '{"question_id": "q1", "model_a": "gpt-4o-2024-05-13", "model_b": "claude-3-opus-20240229", '
    '"winner": "model_a", "judge": "gpt-4o-2024-05-13"}'
)


@pytest.mark.parametrize(
    ("record", "field", "words"),
    [
        (BATTLE.replace('"winner": "model_a"', '"winner": "model_a", "winner": "model_b"'), "winner", "twice"),
        (BATTLE.replace('"q1"', '"q\\ud800"'), "question_id", "surrogate"),
    ],
)
def test_a_json_file_is_checked_as_json_lines_are(tmp_path, record, field, words):
    """A ``.json`` source (one array) had neither check of the JSON Lines reader: a key given twice kept
    its last value silently, a lone-surrogate escape was a traceback. Through the installed executable:
    one line naming the file and field, exit 2, nothing written."""
    import subprocess
    import sys

    source = tmp_path / "battles.json"
    source.write_text(f"[{BATTLE},\n {record}]\n")
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("nepotism")),
            "import",
            str(source),
            "--format",
            "arena-battles",
            "--out",
            str(tmp_path / "out.csv"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr[-2000:]
    assert "battles.json" in done.stderr and f"field '{field}'" in done.stderr and words in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["battles.json"]
