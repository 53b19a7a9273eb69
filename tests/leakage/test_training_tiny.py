"""The tiny SFT and DPO presets really train a LoRA student from a packaged GGUF base on CPU.

Needs the `train` extra and the packaged SmolLM2 model; skipped with the reason otherwise.
"""

import asyncio

import pytest

from nepotism.backends.base import Request
from nepotism.leakage.exports import PreferencePair, SyntheticExample
from nepotism.records import Message

training = pytest.importorskip("nepotism.leakage.training")
if not training.training_available():
    pytest.skip("the `train` extra (torch, transformers, trl, peft) is not installed", allow_module_level=True)

# real training on CPU: on two busy cores a run can outlast pytest's 600 s hang guard (conftest)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

BASE = "smollm2-135m-instruct"
EXAMPLES = [
    SyntheticExample(f"t{i}", f"Name a fruit that is {colour}.", f"A {fruit} is {colour}.", "teacher")
    for i, (colour, fruit) in enumerate([("red", "cherry"), ("yellow", "banana"), ("green", "lime"), ("orange", "orange")])
]


def _base_available() -> bool:
    try:
        from nepotism.backends.local_models import model_path

        model_path(BASE)
        return True
    except Exception:  # noqa: BLE001 - any failure means the packaged model is absent here
        return False


@pytest.mark.skipif(not _base_available(), reason="the packaged SmolLM2 model is not installed")
def test_tiny_sft_trains_saves_and_serves(tmp_path):
    model, tokenizer, manifest = training.train_student("sft", BASE, EXAMPLES, tmp_path, config="tiny")
    assert manifest["method"] == "sft" and manifest["examples"] == 4 and manifest["steps"] >= 1
    assert manifest["losses"] and all(loss > 0 for loss in manifest["losses"])
    assert (tmp_path / "adapter").is_dir() and (tmp_path / "manifest.json").is_file()
    backend = training.TrainedBackend(model, tokenizer, name="student")
    request = Request(model="student", messages=(Message("user", "Name a fruit that is red."),), max_tokens=8)
    completion = asyncio.run(backend.complete(request))
    assert completion.status == "ok" and completion.text
    # the saved adapter is reused for the same inputs, and gives the same greedy answer
    reused = training.load_trained("sft", BASE, EXAMPLES, tmp_path, config="tiny")
    assert reused is not None and reused[2]["reused"] is True and reused[2]["data_digest"] == manifest["data_digest"]
    again = asyncio.run(training.TrainedBackend(reused[0], reused[1], name="student").complete(request))
    assert again.text == completion.text
    # other data, other method or another preset: no match, so it would train again
    assert training.load_trained("sft", BASE, EXAMPLES[:3], tmp_path, config="tiny") is None
    assert training.load_trained("dpo", BASE, EXAMPLES, tmp_path, config="tiny") is None
    assert training.load_trained("sft", BASE, EXAMPLES, tmp_path, config="full") is None
    assert training.load_trained("sft", BASE, EXAMPLES, tmp_path / "elsewhere", config="tiny") is None


@pytest.mark.skipif(not _base_available(), reason="the packaged SmolLM2 model is not installed")
def test_tiny_dpo_trains(tmp_path):
    pairs = [PreferencePair(e.instance_id, e.prompt, e.response, "I do not know.", "teacher") for e in EXAMPLES]
    _, _, manifest = training.train_student("dpo", BASE, pairs, tmp_path, config="tiny")
    assert manifest["method"] == "dpo" and manifest["steps"] >= 1 and manifest["losses"]


@pytest.mark.skipif(not _base_available(), reason="the packaged SmolLM2 model is not installed")
def test_tiny_dpo_after_sft_on_human_answers(tmp_path):
    """Paper 000 §5.3: DPO runs on a policy first fine-tuned on human-written answers. The SFT stage
    trains and is recorded, its adapter merged before DPO; a rerun rebuilds the same student (same
    greedy answer), and other human data is not taken for it."""
    human = [SyntheticExample(e.instance_id, e.prompt, e.response.replace("A ", "The fruit "), "human") for e in EXAMPLES]
    pairs = [PreferencePair(e.instance_id, e.prompt, e.response, "I do not know.", "teacher") for e in EXAMPLES]
    model, tokenizer, manifest = training.train_student("dpo", BASE, pairs, tmp_path, config="tiny", sft_first=human)
    stage = manifest["sft_first"]
    assert stage["method"] == "sft" and stage["examples"] == 4 and stage["steps"] >= 1 and stage["losses"]
    assert (tmp_path / "sft-adapter").is_dir() and manifest["method"] == "dpo" and manifest["steps"] >= 1
    request = Request(model="student", messages=(Message("user", "Name a fruit that is red."),), max_tokens=8)
    first = asyncio.run(training.TrainedBackend(model, tokenizer, name="student").complete(request))
    reused = training.load_trained("dpo", BASE, pairs, tmp_path, config="tiny", sft_first=human)
    assert reused is not None and reused[2]["reused"] is True
    again = asyncio.run(training.TrainedBackend(reused[0], reused[1], name="student").complete(request))
    assert again.text == first.text
    assert training.load_trained("dpo", BASE, pairs, tmp_path, config="tiny", sft_first=human[:3]) is None
    assert training.load_trained("dpo", BASE, pairs, tmp_path, config="tiny") is None  # without the SFT stage
    with pytest.raises(ValueError, match="only a DPO student"):
        training.train_student("sft", BASE, EXAMPLES, tmp_path / "x", config="tiny", sft_first=human)


@pytest.mark.skipif(not _base_available(), reason="the packaged SmolLM2 model is not installed")
def test_tiny_full_fine_tuning_changes_every_weight_and_is_reused(tmp_path):
    """tuning="full" (paper 000 App. C.1 fine-tunes all parameters): no adapter, the weights and the
    tokenizer are saved, the base's weights move, and a rerun reloads the same student."""
    import torch

    model, tokenizer, manifest = training.train_student("sft", BASE, EXAMPLES, tmp_path, config="tiny", tuning="full")
    assert manifest["config"]["tuning"] == "full" and manifest["steps"] >= 1 and "adapter" not in manifest
    assert (tmp_path / "weights" / "config.json").is_file() and not (tmp_path / "adapter").exists()
    assert not hasattr(model, "peft_config")
    base, _ = training.load_base(BASE)
    trained_params, base_params = dict(model.named_parameters()), dict(base.named_parameters())
    assert trained_params.keys() == base_params.keys()
    moved = [name for name in base_params if not torch.equal(trained_params[name], base_params[name])]
    assert len(moved) > len(base_params) // 2  # full fine-tuning moves (nearly) every tensor, LoRA none
    request = Request(model="student", messages=(Message("user", "Name a fruit that is red."),), max_tokens=8)
    first = asyncio.run(training.TrainedBackend(model, tokenizer, name="student").complete(request))
    reused = training.load_trained("sft", BASE, EXAMPLES, tmp_path, config="tiny", tuning="full")
    assert reused is not None and reused[2]["reused"] is True
    again = asyncio.run(training.TrainedBackend(reused[0], reused[1], name="student").complete(request))
    assert first.status == again.status == "ok" and again.text == first.text
    # a LoRA student of the same data is another student
    assert training.load_trained("sft", BASE, EXAMPLES, tmp_path, config="tiny") is None
    with pytest.raises(ValueError, match="tuning must be one of"):
        training.TrainConfig(tuning="half")
