"""Every judge and generator named in the real files of ../shared/data is in the model registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from nepotism.importers import import_source
from nepotism.models import default_registry

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"

SOURCES = [
    ("fastchat-single", "arena_bench_v1/model_judgment/*.jsonl.gz"),
    ("fastchat-single", "routellm/judgements.jsonl.gz"),
    ("judgebench", "judgebench/*judge_name=arena_hard*.jsonl.gz"),
    ("judgebench", "judgebench/*judge_name=reward_model*.jsonl.gz"),
    ("mbpp-selfpref", "mbpp_selfpref/*_eval.jsonl"),
    ("alpaca-eval-compact", "alpaca_eval/annotations_compact.csv.gz"),
]


@pytest.mark.parametrize(("fmt", "pattern"), SOURCES, ids=[p for _, p in SOURCES])
def test_names_resolve(fmt, pattern):
    files = sorted(SHARED.glob(pattern))
    if not files:
        pytest.skip(f"../shared/data/{pattern} is absent")
    registry = default_registry()
    names = set()
    for frame in import_source(fmt, files).tables.values():
        for column in ("judge", "model", "model_a", "model_b"):
            if column in frame:
                names |= {str(n).split("@", 1)[0] for n in frame[column].dropna().unique()}
    assert sorted(n for n in names if not registry.knows(n)) == []
