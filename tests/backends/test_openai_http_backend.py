"""OpenAIHTTPBackend against the loopback stand-in server: real sockets on 127.0.0.1."""

import asyncio
import json
import math
import subprocess
import sys

import pytest

from nepotism.backends import Request
from nepotism.backends.openai_http import OpenAIHTTPBackend
from nepotism.errors import InputError
from nepotism.records import Message
from nepotism.testing import standin as standin_mod
from nepotism.testing.standin import StandinConfig, standin_thread

KEY = "sk-test-5f2c9a7e1d"  # a made-up key; the test checks it never leaks


def msgs(text):
    return (Message("system", "You are a judge."), Message("user", text))


@pytest.fixture(scope="module")
def server():
    with standin_thread(StandinConfig(latency_s=0.005, expected_api_key=KEY, hang_s=30)) as pair:
        yield pair


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv("NEPOTISM_TEST_KEY", KEY)
    return "NEPOTISM_TEST_KEY"


def run(backend, *requests):
    async def go():
        try:
            return await asyncio.gather(*(backend.complete(r) for r in requests))
        finally:
            await backend.aclose()

    return asyncio.run(go())


def test_chat_text_is_deterministic_and_agrees_with_label_logprobs(server, key_env):
    url, _ = server
    backend = OpenAIHTTPBackend(url, api_key_env=key_env, timeout=5)
    text1, text2, labels = run(
        backend,
        Request("judge", messages=msgs("Compare X and Y.")),
        Request("judge", messages=msgs("Compare X and Y.")),
        Request("judge", messages=msgs("Compare X and Y."), labels=("A", "B", "C")),
    )
    assert text1.ok and text1.text == text2.text and text1.finish_reason == "stop"
    assert text1.usage["completion_tokens"] > 0 and text1.latency_s > 0
    best = max(labels.label_logprobs, key=labels.label_logprobs.get)
    assert f"[[{best}]]" in text1.text
    assert labels.text and labels.usage["completion_tokens"] == 1
    probs = [math.exp(v) for v in labels.label_logprobs.values()]
    assert 0 < sum(probs) <= 1


def test_label_logprobs_match_the_server_distribution_and_missing_labels(server, key_env):
    url, _ = server
    backend = OpenAIHTTPBackend(url, api_key_env=key_env, model="served-name")
    (c,) = run(backend, Request("judge", messages=msgs("Q"), labels=("A", "B", "Zebra")))
    dist = dict(standin_mod._next_token_logprobs("served-name", "system: You are a judge.\nuser: Q"))
    expected_a = math.log(math.exp(dist["A"]) + math.exp(dist[" A"]))  # both spellings summed
    assert c.label_logprobs["A"] == pytest.approx(expected_a)
    assert c.label_logprobs["Zebra"] == -math.inf
    assert c.warnings == ("label_not_in_top_k:Zebra",)
    assert c.raw["model"] == "served-name"  # the configured server-side name was sent


def test_prompt_requests_use_the_completions_endpoint(server, key_env):
    url, _ = server
    backend = OpenAIHTTPBackend(url, api_key_env=key_env)
    gen, lab = run(
        backend,
        Request("m", prompt="Answer: ", max_tokens=4),
        Request("m", prompt="Answer: ", labels=("A", "B")),
    )
    assert gen.ok and gen.raw["object"] == "text_completion"
    assert lab.ok and set(lab.label_logprobs) == {"A", "B"}


def test_continuation_logprobs(server, key_env):
    url, _ = server
    backend = OpenAIHTTPBackend(url, api_key_env=key_env)
    prompt, cont = "Q: name a colour.\nA:", " A deep blue, like the sea."
    (c,) = run(backend, Request("m", prompt=prompt, continuation=cont))
    assert c.ok
    expected = [standin_mod._token_logprob("m", t) for t in standin_mod._TOKEN.findall(cont)]
    assert c.continuation_logprobs == pytest.approx(expected)
    (chat,) = run(OpenAIHTTPBackend(url, api_key_env=key_env), Request("m", messages=msgs("Q"), continuation="x"))
    assert chat.status == "failed" and chat.error_class == "unsupported:continuation_logprobs"


@pytest.mark.parametrize(
    "fault,expected",
    [
        ("http_500", "http_5xx:500"),
        ("http_503", "http_5xx:503"),
        ("http_429", "http_429"),
        ("malformed", "malformed_body"),
        ("empty_choices", "malformed_body"),
        ("hang", "timeout"),
        ("drop", "connection"),
    ],
)
def test_each_failure_is_classified(server, key_env, fault, expected):
    url, _ = server
    backend = OpenAIHTTPBackend(url, api_key_env=key_env, timeout=0.5)
    (c,) = run(backend, Request("m", messages=msgs(f"<<standin:fault={fault}>> Q")))
    assert c.status == "failed" and c.text is None
    assert c.error_class == expected
    assert KEY not in repr(c)


def test_unreachable_server_is_a_connection_failure():
    backend = OpenAIHTTPBackend("http://127.0.0.1:9/v1", timeout=2)  # the discard port: nothing listens
    (c,) = run(backend, Request("m", messages=msgs("Q")))
    assert c.error_class == "connection"


def test_wrong_key_is_http_4xx(server, monkeypatch):
    url, _ = server
    monkeypatch.setenv("NEPOTISM_WRONG_KEY", "sk-wrong-0000")
    (c,) = run(OpenAIHTTPBackend(url, api_key_env="NEPOTISM_WRONG_KEY"), Request("m", messages=msgs("Q")))
    assert c.error == "http_4xx:401: bad credentials"


def test_api_key_is_sent_but_never_shown(server, key_env):
    url, srv = server
    before = srv.stats["auth_ok"]
    backend = OpenAIHTTPBackend(url, api_key_env=key_env, timeout=0.5)
    assert KEY not in repr(backend) and KEY not in str(vars(backend))
    results = run(
        backend,
        Request("m", messages=msgs("Q")),
        Request("m", messages=msgs("Q"), labels=("A",)),
        Request("m", prompt="Q", continuation=" more"),
        Request("m", messages=msgs("<<standin:fault=http_503>>")),
        Request("m", messages=msgs("<<standin:fault=malformed>>")),
    )
    assert srv.stats["auth_ok"] - before == 5  # the Authorization header carried the key
    for c in results:
        assert KEY not in repr(c)
        assert KEY not in json.dumps(c.raw)
        assert KEY not in (c.error or "")


def test_missing_key_variable_is_an_input_error(monkeypatch):
    monkeypatch.delenv("NEPOTISM_ABSENT_KEY", raising=False)
    with pytest.raises(InputError, match="NEPOTISM_ABSENT_KEY"):
        OpenAIHTTPBackend("http://127.0.0.1:9/v1", api_key_env="NEPOTISM_ABSENT_KEY")


def test_concurrency_256():
    with standin_thread(StandinConfig(latency_s=0.2)) as (url, srv):
        backend = OpenAIHTTPBackend(url, max_connections=256, timeout=30)
        requests = [Request("m", messages=msgs(f"item {i}"), labels=("A", "B")) for i in range(768)]
        results = run(backend, *requests)
        assert all(c.ok for c in results)
        assert len({json.dumps(c.label_logprobs) for c in results}) > 100  # answers differ by prompt
        assert 128 < srv.stats["peak_in_flight"] <= 256  # the pool is used and bounded


def test_seeded_fault_rates_are_reproducible():
    cfg = StandinConfig(latency_s=0.0, fault_rates={"http_503": 0.3, "malformed": 0.2}, seed=7)

    def errors():
        with standin_thread(cfg) as (url, _):
            backend = OpenAIHTTPBackend(url, max_connections=1)

            async def go():
                try:
                    return [await backend.complete(Request("m", messages=msgs(f"q{i}"))) for i in range(60)]
                finally:
                    await backend.aclose()

            return [c.error_class for c in asyncio.run(go())]

    first = errors()
    assert first == errors()
    assert 5 < first.count("http_5xx:503") < 35 and 2 < first.count("malformed_body") < 25
    assert first.count(None) > 10


def test_httpx_is_imported_only_for_a_transport():
    """A backend over aiohttp (what `nepotism run` makes) does not import httpx (≈ 50-100 ms of
    every command); one given an httpx transport does, and sends through it."""
    code = (
        "import sys\n"
        "from nepotism.backends.openai_http import OpenAIHTTPBackend\n"
        "OpenAIHTTPBackend('http://127.0.0.1:9/v1')\n"
        "print('httpx' in sys.modules)\n"
        "import httpx\n"
        "OpenAIHTTPBackend('http://127.0.0.1:9/v1', transport=httpx.MockTransport(lambda r: httpx.Response(200)))\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "ok"]


def test_labels_after_the_explanation_read_the_token_after_the_marker(server, key_env):
    """Paper 001 §4.2 over HTTP: the judge writes its reasoning and "[[X]]"; the labels are the top
    log-probabilities of the token after "[[" (before: one token, no explanation)."""
    url, _ = server
    backend = OpenAIHTTPBackend(url, api_key_env=key_env, timeout=5, model="served-name")
    (c,) = run(backend, Request("judge", messages=msgs("Q"), labels=("A", "B", "C"), labels_after="[[", max_tokens=64))
    dist = dict(standin_mod._next_token_logprobs("served-name", "system: You are a judge.\nuser: Q"))
    assert c.ok and "[[" in c.text and c.usage["completion_tokens"] > 1  # the whole written reply is kept
    both = {label: math.log(sum(math.exp(dist[s]) for s in (label, " " + label) if s in dist)) for label in "ABC"}
    assert c.label_logprobs == pytest.approx(both)  # both spellings summed, as for a one-token read
    best = max(c.label_logprobs, key=c.label_logprobs.get)
    assert c.text.endswith(f"[[{best}]].") and c.warnings == ()
    (short,) = run(backend, Request("judge", messages=msgs("Q"), labels=("A", "B"), labels_after="[[", max_tokens=4))
    assert short.ok and short.label_logprobs is None and short.warnings == ("no_label_marker",)
