"""What a server sends is bounded: the answer body (also after HTTP decompression) and the time a
whole call takes. Each limit is met as a failed call with its reason, against the stand-in sending
on purpose a padded answer, a gzip bomb or its answer a byte at a time, and over httpx's mock
transport; the memory of a client met by a 2 MB gzip body inflating to 2 GiB is measured."""

from __future__ import annotations

import json
import os
import sys
import textwrap

import httpx
import pytest

from nepotism.backends import Request
from nepotism.backends.openai_http import MAX_RESPONSE_BYTES, OpenAIHTTPBackend
from nepotism.records import Message
from nepotism.testing.peak import run_measured
from nepotism.testing.standin import StandinConfig, standin_thread
from tests.backends.test_openai_http_backend import run as _complete

MSG = (Message("user", "Pick A or B."),)
MiB = 1 << 20


def test_the_default_limit_is_far_above_any_real_answer():
    assert MAX_RESPONSE_BYTES == 16 * MiB
    assert OpenAIHTTPBackend("http://127.0.0.1:9/v1").max_response_bytes == MAX_RESPONSE_BYTES
    with pytest.raises(ValueError):
        OpenAIHTTPBackend("http://127.0.0.1:9/v1", max_response_bytes=0)


def test_a_padded_answer_longer_than_the_limit_is_a_failed_call_and_the_client_stops_reading():
    config = StandinConfig(latency_s=0.0, fault_rates={"huge_body": 1.0}, huge_bytes=256 * MiB)
    with standin_thread(config) as (url, server):
        (c,) = _complete(OpenAIHTTPBackend(url, max_response_bytes=2 * MiB, timeout=60), Request("m", messages=MSG))
        assert c.status == "failed" and c.error_class == "response_too_large", c.error
        assert "2,097,152 bytes (max_response_mb)" in c.error and "nothing of it is kept" in c.error
        assert c.raw in (None, {}) and c.text is None
        # the server saw the client leave long before the end of its body (without the limit,
        # the whole 256 MiB was read, parsed and kept)
        assert server.stats["huge_body_sent"] < 64 * MiB
    # the same answer under the limit is read as usual
    small = StandinConfig(latency_s=0.0, fault_rates={"huge_body": 1.0}, huge_bytes=1 * MiB)
    with standin_thread(small) as (url, _server):
        (ok,) = _complete(OpenAIHTTPBackend(url, max_response_bytes=2 * MiB), Request("m", messages=MSG))
    assert ok.ok and "[[" in ok.text and len(ok.raw["padding"]) == 1 * MiB


def test_a_gzip_bomb_is_read_to_the_limit_only():
    config = StandinConfig(latency_s=0.0, fault_rates={"gzip_bomb": 1.0}, bomb_bytes=512 * MiB)
    with standin_thread(config) as (url, _server):
        (c,) = _complete(OpenAIHTTPBackend(url, max_response_bytes=4 * MiB), Request("m", messages=MSG))
    assert c.error_class == "response_too_large" and "gzip-compressed" in c.error, c.error


_BOMBED_CLIENT = textwrap.dedent("""
    import asyncio, json, sys
    from nepotism.backends import Request
    from nepotism.backends.openai_http import OpenAIHTTPBackend
    from nepotism.records import Message

    async def go():
        backend = OpenAIHTTPBackend(sys.argv[1], timeout=120)
        try:
            return await asyncio.gather(*(backend.complete(Request("m", messages=(Message("user", f"q{i}"),)))
                                          for i in range(4)))
        finally:
            await backend.aclose()

    print(json.dumps([c.error for c in asyncio.run(go())]))
""")


@pytest.mark.slow
def test_a_client_met_by_2_gib_gzip_bombs_stays_small():
    """Four calls at once, each answered by a 2 MB gzip body inflating to 2 GiB, with the default
    limit: the client process's peak resident memory (measured by the kernel, `run_measured`) stays far
    below one bomb; before, it read each body whole (and crashed under a memory limit)."""
    config = StandinConfig(latency_s=0.0, fault_rates={"gzip_bomb": 1.0}, bomb_bytes=2 << 30)
    with standin_thread(config) as (url, _server):
        proc, peak = run_measured(
            [sys.executable, "-c", _BOMBED_CLIENT, url],
            capture_output=True,
            text=True,
            env=os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)},
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    errors = json.loads(proc.stdout)
    assert len(errors) == 4 and all(e.startswith("response_too_large") for e in errors), errors
    peak_mib = peak / 2**20
    print(f"peak RSS of a client met by four 2 GiB gzip bombs: {peak_mib:.0f} MiB")
    assert peak_mib < 512, peak_mib


def test_a_server_trickling_its_answer_cannot_hold_a_call_past_its_timeout():
    """One byte every 0.3 s keeps every wait for bytes short, so a timeout between bytes never
    fires: the answer (≈ 300 bytes) took ≈ 90 s with timeout = 1. The whole call is bounded now."""
    config = StandinConfig(latency_s=0.0, fault_rates={"trickle": 1.0}, trickle_s=0.3)
    with standin_thread(config) as (url, server):
        (c,) = _complete(OpenAIHTTPBackend(url, timeout=1), Request("m", messages=MSG))
        sent = server.stats.get("trickle_sent", 0)
    assert c.status == "failed" and c.error == "timeout: no whole answer within 1 s"
    assert 0 < sent < 100  # the client left after a few bytes of ≈ 300


def _huge(status: int, **headers):
    body = b'{"padding": "' + b"x" * (3 * MiB) + b'", "choices": []}'
    return lambda req: httpx.Response(status, content=body, headers=headers)


@pytest.mark.parametrize("status", [200, 500, 404])
def test_over_an_httpx_transport_the_limit_holds_for_answers_and_error_bodies(status):
    backend = OpenAIHTTPBackend("http://mock/v1", transport=httpx.MockTransport(_huge(status)), max_response_bytes=1 * MiB)
    (c,) = _complete(backend, Request("m", messages=MSG))
    assert c.error_class == "response_too_large" and "Content-Length is 3,145,7" in c.error, c.error


def test_a_response_too_large_is_not_retried_and_moves_to_no_other_replica():
    from nepotism.backends.base import is_retryable

    config = StandinConfig(latency_s=0.0, fault_rates={"huge_body": 1.0}, huge_bytes=8 * MiB)
    with standin_thread(config) as (url, server), standin_thread(config) as (url2, server2):
        backend = OpenAIHTTPBackend([url, url2], max_response_bytes=1 * MiB)
        (c,) = _complete(backend, Request("m", messages=MSG))
        stats = backend.endpoint_stats()
    assert c.error_class == "response_too_large" and not is_retryable(c.error)
    assert sum(s["requests"] for s in stats.values()) == 1 and sum(s["failed_over"] for s in stats.values()) == 0
