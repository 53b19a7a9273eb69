from __future__ import annotations

from pathlib import Path

import pytest

from nepotism.models import Relation, default_registry

NAMES = [
    line.strip()
    for line in (Path(__file__).parent / "model_names.txt").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
]


def test_default_registry_is_cached_and_large():
    assert default_registry() is default_registry()
    assert len(default_registry()) > 200


@pytest.mark.parametrize("name", NAMES)
def test_every_dataset_name_resolves(name):
    assert default_registry().knows(name), name


def test_every_lineage_edge_has_a_source_note():
    missing = []
    for info in default_registry():
        edges = (["parent"] if info.parent else []) + [f"teachers.{t}" for t in info.teachers]
        missing += [(info.id, e) for e in edges if not info.sources.get(e)]
    assert missing == []


@pytest.mark.parametrize(
    ("name", "model_id"),
    [
        ("gpt4_1106_preview", "gpt-4-1106-preview"),
        ("weighted_alpaca_eval_gpt4_turbo", "gpt-4-1106-preview"),
        ("gpt4_0314", "gpt-4-0314"),
        ("alpaca_eval_gpt4", "gpt-4-0314"),
        ("gpt4_0613_concise", "gpt-4-0613"),
        ("text_davinci_003", "text-davinci-003"),
        ("alpaca-7b_concise", "alpaca-7b"),
        ("llama-2-70b-chat-hf", "llama-2-70b-chat"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b-instruct-v0.1"),
        ("SmolLM2-135M-Instruct", "smollm2-135m-instruct"),
        ("Qwen2.5-Coder-0.5B-Instruct", "qwen2.5-coder-0.5b-instruct"),
        ("gemma-3-270m", "gemma-3-270m"),
        ("claude", "claude-v1"),
        ("bedrock_claude", "claude-2.0"),
        ("vicuna-13b-v1.3", "vicuna-13b-v1.3"),
        ("gpt-4o@sample2", "gpt-4o"),
        ("example", "null-model"),
    ],
)
def test_canonical_ids(name, model_id):
    assert default_registry().resolve(name) == model_id


def test_alpaca_eval_judges_are_gpt4():
    reg = default_registry()
    for name in ("gpt4_0314", "gpt4_1106_preview", "gpt4"):
        info = reg.get(name)
        assert (info.family, info.series) == ("openai-gpt", "gpt-4")


@pytest.mark.parametrize(
    ("judge", "model", "expected"),
    [
        ("text_davinci_003", "alpaca-7b", Relation.STUDENT),
        ("gpt-3.5-turbo", "vicuna-13b-v1.5", Relation.STUDENT),
        ("gpt-3.5-turbo", "wizardlm-13b", Relation.STUDENT),
        ("gpt-3.5-turbo", "ultralm-13b", Relation.STUDENT),
        ("gpt-4", "zephyr-7b-beta", Relation.STUDENT),
        ("gpt-4", "tulu-2-dpo-70b", Relation.STUDENT),
        ("gpt-4", "OpenHermes-2.5-Mistral-7B", Relation.STUDENT),
        ("gpt-4", "alpaca-farm-ppo-sim-gpt4-20k", Relation.STUDENT),
        ("claude-2", "claude2-alpaca-13b", Relation.STUDENT),
        ("gpt4_1106_preview", "vicuna-13b", Relation.FAMILY_STUDENT),
        ("gpt4_1106_preview", "gpt4_0314", Relation.SAME_SERIES),
        ("gpt4_1106_preview", "gpt-4o-2024-05-13", Relation.SAME_FAMILY),
        ("llama-2-70b-chat-hf", "llama-2-70b", Relation.LINEAGE),
        ("vicuna-13b-v1.5", "llama-2-13b", Relation.LINEAGE),
        ("Meta-Llama-3-70B-Instruct", "Mixtral-8x7B-Instruct-v0.1", Relation.UNRELATED),
        ("guanaco-65b", "llama-65b", Relation.LINEAGE),
        ("DeepSeek-R1", "DeepSeek-R1-Distill-Qwen-7B", Relation.STUDENT),
        ("alpaca-7b", "text_davinci_003", Relation.TEACHER),
        ("gpt-4", "not-a-model", Relation.UNKNOWN),
        # arena-bench v1: the GPT-4 judge and its relatives, students and strangers
        ("gpt-4", "openchat_3.5", Relation.STUDENT),
        ("gpt-4", "Starling-LM-7B-alpha", Relation.STUDENT),
        ("gpt-4", "vicuna-33b-v1.3", Relation.FAMILY_STUDENT),
        ("gpt-4", "gpt-4-0314", Relation.SAME_SERIES),
        ("gpt-4", "gpt-3.5-turbo-1106", Relation.SAME_FAMILY),
        ("gpt-4", "mistralai/Mixtral-8x7B-Instruct-v0.1", Relation.UNRELATED),
        ("gpt-4", "claude-instant-1", Relation.UNRELATED),
        ("gpt-4", "palm-2-chat-bison-001", Relation.UNRELATED),
    ],
)
def test_documented_lineage(judge, model, expected):
    assert default_registry().relation(judge, model) is expected
