"""Replicas: one model on several endpoints, through the real aiohttp client against stand-ins.

Calls spread by least outstanding requests; a dead or faulting endpoint is backed off and its
calls fail over to the others; every endpoint is counted."""

from __future__ import annotations

import asyncio
import socket

import pytest

from nepotism.backends.base import Request
from nepotism.backends.openai_http import OpenAIHTTPBackend
from nepotism.records import Message
from nepotism.testing.standin import StandinConfig, standin_thread


def _dead_url() -> str:
    """A loopback URL where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _requests(n: int) -> list[Request]:
    return [Request(model="standin-alpha", messages=(Message("user", f"question {i}"),), max_tokens=8) for i in range(n)]


async def _run_all(backend: OpenAIHTTPBackend, requests: list[Request], concurrency: int | None = None):
    """Every request at once, or at most ``concurrency`` in flight (as the runner's limiter sends)."""
    gate = asyncio.Semaphore(concurrency or len(requests))

    async def one(request):
        async with gate:
            return await backend.complete(request)

    try:
        return await asyncio.gather(*(one(r) for r in requests))
    finally:
        await backend.aclose()


def test_calls_spread_over_healthy_replicas_by_outstanding_requests():
    with standin_thread(StandinConfig(latency_s=0.05)) as (a, sa), standin_thread(StandinConfig(latency_s=0.05)) as (b, sb):
        backend = OpenAIHTTPBackend([a, b], model="standin-alpha", max_connections=64)
        done = asyncio.run(_run_all(backend, _requests(64)))
    assert all(c.ok for c in done)
    stats = backend.endpoint_stats()
    assert [stats[u]["requests"] for u in (a, b)] == [32, 32]  # 64 at once: each gets half
    assert sa.stats["peak_in_flight"] == sb.stats["peak_in_flight"] == 32
    assert all(s["failed"] == s["failed_over"] == 0 for s in stats.values())


def test_a_faster_replica_gets_more_calls():
    """4 calls in flight at a time: the fast replica frees its slots first, so the next calls go to
    it (fewest outstanding), while the slow one keeps about one call at a time."""
    with standin_thread(StandinConfig(latency_s=0.005)) as (fast, _), standin_thread(StandinConfig(latency_s=0.1)) as (slow, _):
        backend = OpenAIHTTPBackend([slow, fast], model="standin-alpha", max_connections=4)
        done = asyncio.run(_run_all(backend, _requests(80), concurrency=4))
    stats = backend.endpoint_stats()
    assert all(c.ok for c in done) and stats[fast]["requests"] + stats[slow]["requests"] == 80
    assert stats[fast]["requests"] > 2 * stats[slow]["requests"]


def test_a_dead_replica_is_backed_off_and_its_calls_fail_over():
    dead = _dead_url()
    with standin_thread(StandinConfig(latency_s=0.01)) as (alive, server):
        backend = OpenAIHTTPBackend([dead, alive], model="standin-alpha", max_connections=8)
        done = asyncio.run(_run_all(backend, _requests(40), concurrency=8))
    assert all(c.ok for c in done)  # no call failed: each that met the dead one went on
    stats = backend.endpoint_stats()
    assert stats[dead]["answered"] == 0 and stats[dead]["failed"] == stats[dead]["failed_over"] >= 1
    # backed off after its first failures: the dead endpoint saw only the first wave
    assert stats[dead]["requests"] <= 8
    assert stats[alive]["answered"] == 40 == server.stats["requests"]


def test_a_replica_answering_500_is_backed_off_and_its_calls_fail_over():
    with (
        standin_thread(StandinConfig(latency_s=0.01, fault_rates={"http_500": 1.0})) as (bad, bad_server),
        standin_thread(StandinConfig(latency_s=0.01)) as (good, _),
    ):
        backend = OpenAIHTTPBackend([bad, good], model="standin-alpha", max_connections=4)

        async def sequential():
            out = [await backend.complete(r) for r in _requests(30)]
            await backend.aclose()
            return out

        done = asyncio.run(sequential())
    assert all(c.ok for c in done)
    stats = backend.endpoint_stats()
    assert stats[bad]["failed"] == stats[bad]["failed_over"] == bad_server.stats["requests"]
    assert bad_server.stats["requests"] == 1  # backed off for 1 s after its first 500
    assert stats[good]["answered"] == 30


def test_when_every_replica_fails_the_call_fails_with_the_last_error():
    with standin_thread(StandinConfig(latency_s=0.0, fault_rates={"http_503": 1.0})) as (bad, _):
        dead = _dead_url()
        backend = OpenAIHTTPBackend([dead, bad], model="standin-alpha")
        (only,) = asyncio.run(_run_all(backend, _requests(1)))
    assert not only.ok and only.error.startswith("http_5xx:503")
    stats = backend.endpoint_stats()
    assert stats[dead]["failed"] == 1 and stats[bad]["failed"] == 1


def test_one_url_keeps_the_plain_path():
    with standin_thread(StandinConfig(latency_s=0.0)) as (url, _):
        backend = OpenAIHTTPBackend(url, model="standin-alpha")
        done = asyncio.run(_run_all(backend, _requests(3)))
    assert all(c.ok for c in done)
    assert backend.endpoint_stats() == {url: {"requests": 0, "answered": 0, "failed": 0, "failed_over": 0}}
    with pytest.raises(ValueError):
        OpenAIHTTPBackend([], model="x")
