"""OpenAIHTTPBackend against llama-cpp-python's own OpenAI-compatible server (loopback, SmolLM2)."""

import asyncio
import math
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

pytest.importorskip("llama_cpp")
for _mod in ("fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings"):
    pytest.importorskip(_mod)

from nepotism.backends import Request  # noqa: E402
from nepotism.backends.gguf import GGUFBackend  # noqa: E402
from nepotism.backends.local_models import ModelFileError, model_path  # noqa: E402
from nepotism.backends.openai_http import OpenAIHTTPBackend  # noqa: E402
from nepotism.records import Message  # noqa: E402

pytestmark = pytest.mark.slow

JUDGE = (
    Message("system", "You are a careful judge. Reply with the letter of the better answer."),
    Message("user", "Question: what is 2 + 2?\nAnswer A: 4\nAnswer B: 5\nWhich answer is better, A or B?"),
)


_SERVE = """
import sys
from llama_cpp.server.__main__ import main
from nepotism.backends.gguf import plain_cpu_weights
sys.argv = ["llama_cpp.server", *sys.argv[1:]]
with plain_cpu_weights():
    main()
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server_url(model_setting):
    """The server on the packaged SmolLM2 with the threads and batch size of `model_setting`."""
    try:
        path = model_path("smollm2-135m-instruct")
    except ModelFileError as exc:
        pytest.skip(str(exc))
    port = _free_port()
    proc = subprocess.Popen(
        # llama_cpp.server, loading the model as GGUFBackend does (plain CPU buffers; see
        # gguf.plain_cpu_weights: the AMX repack crashes llama_decode on this machine's CPU)
        [
            sys.executable,
            "-c",
            _SERVE,
            "--model",
            str(path),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "1024",
            "--n_threads",
            str(model_setting.threads),
            "--n_threads_batch",
            str(model_setting.threads),
            "--n_batch",
            str(model_setting.n_batch),
            "--n_ubatch",
            str(model_setting.n_batch),
            "--flash_attn",
            str(model_setting.flash_attn).lower(),
            "--logits_all",
            "true",
            "--model_alias",
            "smollm2",
            "--chat_format",
            "chatml",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url + "/models", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("llama_cpp.server did not start")
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(20)


def run(backend, *requests, sequential=False):
    async def go():
        try:
            if sequential:
                return [await backend.complete(r) for r in requests]
            return await asyncio.gather(*(backend.complete(r) for r in requests))
        finally:
            await backend.aclose()

    return asyncio.run(go())


def test_chat_and_label_logprobs_through_the_real_server(server_url, model_setting):
    # One request at a time, label request first: llama.cpp's server keeps the previous prompt in its
    # KV cache and re-evaluates only the new suffix, which moves these log-probs by up to ~0.09 nats
    # (measured: B -2.297 cold, -2.385 after any earlier request with the same prompt). The cold
    # call must match the in-process backend; the warm one only within that drift.
    backend = OpenAIHTTPBackend(server_url, model="smollm2", timeout=120, max_connections=1)
    labels_cold, chat, labels_warm = run(
        backend,
        Request("smollm2", messages=JUDGE, labels=("A", "B")),
        Request("smollm2", messages=JUDGE, max_tokens=8),
        Request("smollm2", messages=JUDGE, labels=("A", "B")),
        sequential=True,
    )
    assert chat.ok and chat.text and chat.usage["completion_tokens"] >= 1
    for labels in (labels_cold, labels_warm):
        assert labels.ok, labels.error
        assert all(math.isfinite(v) for v in labels.label_logprobs.values())
        assert 0 < sum(math.exp(v) for v in labels.label_logprobs.values()) <= 1
    # the server and the in-process backend render the same chat (chatml) and should agree
    (local,) = asyncio.run(_local(Request("smollm2", messages=JUDGE, labels=("A", "B")), model_setting))
    for label in ("A", "B"):
        assert labels_cold.label_logprobs[label] == pytest.approx(local.label_logprobs[label], abs=0.01)
        assert labels_warm.label_logprobs[label] == pytest.approx(local.label_logprobs[label], abs=0.15)


async def _local(request, setting):
    """The in-process backend with the server's settings."""
    backend = GGUFBackend("smollm2-135m-instruct", n_ctx=1024, **setting.gguf())
    return [await backend.complete(request)]


def test_prompt_completion_through_the_real_server(server_url):
    backend = OpenAIHTTPBackend(server_url, model="smollm2", timeout=120)
    (c,) = run(backend, Request("smollm2", prompt="The capital of France is", max_tokens=4))
    assert c.ok and c.text


@pytest.mark.xfail(
    strict=True, reason="llama-cpp-python 0.3.36 shifts echoed logprobs by one position (llama-cpp-python issue #1983)"
)
def test_echoed_continuation_logprobs_agree_with_in_process(server_url, model_setting):
    req = Request("smollm2", prompt="The capital of France is", continuation=" Paris.")
    (http,) = run(OpenAIHTTPBackend(server_url, model="smollm2", timeout=120), req)
    (local,) = asyncio.run(_local(req, model_setting))
    assert http.ok and local.ok
    assert http.continuation_logprobs == pytest.approx(local.continuation_logprobs, abs=0.05)
