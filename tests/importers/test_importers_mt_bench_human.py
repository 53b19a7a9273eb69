"""mt-bench-human: human votes as a preference reference with annotator identity."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from nepotism.errors import InputError
from nepotism.importers import import_source, mt_bench_human
from nepotism.importers.mt_bench_human import import_mt_bench_human
from nepotism.tables import read_table, write_table

UPSTREAM = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "upstream"


def test_all():
    assert mt_bench_human.__all__ == ["FORMATS", "import_mt_bench_human"]


def test_votes_and_annotators(tmp_path):
    result = import_mt_bench_human(UPSTREAM / "mt_bench_human.jsonl", benchmark="mt_bench")
    refs = result.tables["preference-ref"]
    assert len(refs) == 4 and list(refs["annotator"]) == ["author_2", "expert_13", "expert_13", "author_0"]
    assert list(refs["winner"]) == ["gpt-3.5-turbo", "gpt-3.5-turbo", "tie", "tie"]
    assert list(refs["winner_raw"]) == ["model_b", "model_b", "tie", "tie (bothbad)"]
    assert list(refs["instance_id"]) == ["mt_bench/81", "mt_bench/81", "mt_bench/81/turn2", "mt_bench/82"]
    # two annotators of one pair are two rows: the table validates with annotator in the key
    write_table(refs, tmp_path / "ref.csv")
    assert len(read_table(tmp_path / "ref.csv").frame) == 4
    judged = result.tables["pairwise"]
    assert result.main == "pairwise" and judged[["judge", "verdict", "condition"]].values.tolist() == [
        ["gpt-4", "A", "orders-combined"]
    ]
    assert result.counts["annotators"] == 3 and result.counts["ties_bothbad"] == 1


def test_texts_are_the_turns_messages():
    texts = import_mt_bench_human(UPSTREAM / "mt_bench_human.jsonl").texts.set_index(["instance_id", "model"])
    assert texts.loc[("fastchat/81/turn2", "alpaca-13b"), "prompt"] == "Start every sentence with A."
    assert texts.loc[("fastchat/81/turn2", "alpaca-13b"), "text"] == "A trip."
    assert texts.loc[("fastchat/81", "gpt-3.5-turbo"), "text"].startswith("Aloha!")


def test_parquet_and_json_array(tmp_path):
    rows = [json.loads(line) for line in (UPSTREAM / "mt_bench_human.jsonl").read_text().splitlines()][:4]
    pd.DataFrame(rows).to_parquet(tmp_path / "human-00000.parquet")
    assert len(import_source("mt-bench-human", [tmp_path / "human-00000.parquet"]).tables["preference-ref"]) == 4
    (tmp_path / "human_judgments.json").write_text(json.dumps(rows))
    assert len(import_source("mt-bench-human", [tmp_path / "human_judgments.json"]).tables["preference-ref"]) == 4
    rows[2]["winner"] = "model_c"
    (tmp_path / "bad.json").write_text(json.dumps(rows))
    with pytest.raises(InputError) as err:
        import_source("mt-bench-human", [tmp_path / "bad.json"])
    assert (err.value.record, err.value.field) == (3, "winner") and "record 3" in str(err.value)
