"""LiteLLMBackend against the loopback OpenAI-compatible stand-in (offline, no real provider)."""

import asyncio
import math

import pytest

import nepotism.backends.litellm_backend as lb
from nepotism.backends import Backend, Request
from nepotism.backends.litellm_backend import LiteLLMBackend
from nepotism.errors import InputError
from nepotism.records import Message
from nepotism.testing.standin import StandinConfig, standin_thread

KEY = "sk-litellm-test-9f8e7d6c"
ENV = "NEPOTISM_TEST_LITELLM_KEY"
ASK = (Message("user", "Which answer is better, A or B?"),)


def run(backend, *requests):
    async def _go():
        return [await backend.complete(r) for r in requests]

    return asyncio.run(_go())


def test_public_names_and_missing_key():
    assert set(lb.__all__) == {"BACKEND", "LiteLLMBackend", "litellm_available"}
    with pytest.raises(InputError):
        LiteLLMBackend("openai/x", api_key_env="NEPOTISM_SURELY_UNSET_VARIABLE")


@pytest.fixture(scope="module")
def served():
    if not lb.litellm_available():
        pytest.skip("litellm is not installed (pip install 'nepotism[litellm]')")
    lb._litellm()  # imported the backend's way: no fetch of LiteLLM's remote price list
    mp = pytest.MonkeyPatch()
    mp.setenv(ENV, KEY)
    with standin_thread(StandinConfig(latency_s=0.0, expected_api_key=KEY, hang_s=30)) as (url, server):
        yield LiteLLMBackend("openai/standin", api_base=url, api_key_env=ENV, timeout=1.5), server
    mp.undo()


def test_modes_against_the_standin(served):
    backend, server = served
    assert isinstance(backend, Backend)
    assert KEY not in repr(backend) and KEY not in repr(vars(backend))
    gen, gen2, labels, raw_labels, cont = run(
        backend,
        Request("m", messages=ASK, max_tokens=16),
        Request("m", messages=ASK, max_tokens=16),
        Request("m", messages=ASK, labels=("A", "B")),
        Request("m", prompt="Better: A or B?", labels=("A", "B")),
        Request("m", prompt="The weather is", continuation=" sunny today"),
    )
    assert gen.ok and gen.text and gen.text == gen2.text
    for c in (labels, raw_labels):
        assert c.ok, c.error
        assert set(c.label_logprobs) == {"A", "B"} and all(v < 0 for v in c.label_logprobs.values())
        assert 0 < sum(math.exp(v) for v in c.label_logprobs.values()) <= 1
    assert cont.ok and len(cont.continuation_logprobs) == 2  # " sunny", " today" in the stand-in
    assert all(KEY not in str(c.raw) for c in (gen, labels, raw_labels, cont))
    assert server.stats["auth_ok"] >= 5 and server.stats.get("auth_missing", 0) == 0
    (chat_cont,) = run(backend, Request("m", messages=ASK, continuation=" x"))
    assert chat_cont.error_class == "unsupported:continuation_logprobs"


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        ("http_500", "http_5xx:500"),
        ("http_503", "http_5xx:503"),
        ("http_429", "http_429"),
        ("malformed", "malformed_body"),
        ("empty_choices", "malformed_body"),
        ("drop", "connection"),
        ("hang", "timeout"),
    ],
)
def test_failures_are_classified(served, fault, expected):
    backend, _ = served
    (c,) = run(backend, Request("m", messages=(Message("user", f"go <<standin:fault={fault}>>"),)))
    assert c.status == "failed" and c.error_class == expected, c.error
    assert KEY not in (c.error or "") and KEY not in str(c.raw)


def test_wrong_key_is_a_4xx_without_the_key(served, monkeypatch):
    _, server = served
    monkeypatch.setenv("NEPOTISM_TEST_LITELLM_BAD", "sk-wrong-key-123456")
    bad = LiteLLMBackend("openai/standin", api_base=served[0].api_base, api_key_env="NEPOTISM_TEST_LITELLM_BAD")
    (c,) = run(bad, Request("m", messages=ASK))
    assert c.error_class == "http_4xx:401"
    assert "sk-wrong-key-123456" not in c.error
