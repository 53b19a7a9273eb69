"""Retry-After: a retry never comes earlier than the server asked, and the wait is counted."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime
from email.utils import format_datetime

import httpx
import pytest

from nepotism.backends.base import Completion, Request, failed
from nepotism.backends.openai_http import OpenAIHTTPBackend
from nepotism.backends.openai_wire import retry_after_s
from nepotism.experiment import load_experiment
from nepotism.records import Message
from nepotism.runner.experiment_run import run_experiment
from nepotism.runner.limits import Limiter
from nepotism.runner.retry import RetryPolicy, asked_wait
from nepotism.store import Store
from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, standin_thread

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    "headers,expected",
    [
        ({"Retry-After": "1"}, 1.0),
        ({"retry-after": " 2.5 "}, 2.5),
        ({"Retry-After": format_datetime(datetime.fromtimestamp(NOW + 7, UTC), usegmt=True)}, 7.0),
        ({"Retry-After": format_datetime(datetime.fromtimestamp(NOW - 30, UTC), usegmt=True)}, 0.0),
        ({"retry-after-ms": "250"}, 0.25),
        ({"x-ratelimit-reset-requests": "6m0s"}, 360.0),
        ({"x-ratelimit-reset-tokens": "20ms"}, 0.02),
        ({"x-ratelimit-reset-requests": "1h2m3.5s"}, 3723.5),
        ({"Retry-After": "1", "x-ratelimit-reset-tokens": "3s"}, 3.0),  # the longest wins
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": "nan"}, None),
        ({"Retry-After": "inf"}, None),
        ({"Retry-After": "1e12"}, None),  # a Unix time sent as seconds is not a wait
        ({"Retry-After": "-4"}, 0.0),
        ({"x-ratelimit-reset-requests": "6 minutes"}, None),
        ({"Content-Type": "application/json"}, None),
        ({}, None),
    ],
)
def test_retry_after_headers(headers, expected):
    got = retry_after_s(headers, now=NOW)
    assert got == (pytest.approx(expected) if expected is not None else None)


def _backend(status: int, headers: dict[str, str]) -> OpenAIHTTPBackend:
    def answer(_req: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"error": {"message": "slow down"}}, headers=headers)

    return OpenAIHTTPBackend("http://test/v1", transport=httpx.MockTransport(answer))


@pytest.mark.parametrize(
    "status,headers,wait",
    [
        (429, {"Retry-After": "2"}, 2.0),
        (503, {"Retry-After": "3"}, 3.0),
        (429, {}, None),
        (500, {"Retry-After": "2"}, None),  # only 429 and 503 carry a wait
    ],
)
def test_the_http_backend_reports_the_asked_wait(status, headers, wait):
    async def go() -> Completion:
        backend = _backend(status, headers)
        try:
            return await backend.complete(Request("m", messages=(Message("user", "hi"),)))
        finally:
            await backend.aclose()

    completion = asyncio.run(go())
    assert not completion.ok and asked_wait(completion) == wait


def test_asked_wait_ignores_odd_values():
    assert asked_wait(failed("http_429", raw={"retry_after_s": math.nan})) is None
    assert asked_wait(failed("http_429", raw={"retry_after_s": True})) is None
    assert asked_wait(failed("http_429", raw={"retry_after_s": -1})) is None
    assert asked_wait(Completion(text="x", raw={"retry_after_s": 3})) is None


def test_a_limiter_on_hold_starts_nothing_until_the_pause_is_over():
    async def go() -> list[float]:
        limiter = Limiter(4)
        loop = asyncio.get_running_loop()
        start = loop.time()
        limiter.hold(0.3)
        starts = []

        async def one() -> None:
            async with limiter.slot():
                starts.append(loop.time() - start)

        await asyncio.gather(*(one() for _ in range(3)))
        return starts

    assert min(asyncio.run(go())) >= 0.3


@pytest.mark.slow
def test_429_with_retry_after_1_is_never_retried_earlier(tmp_path):
    config = StandinConfig(latency_s=0.001, fault_rates={"http_429": 0.3}, retry_after="1", seed=5, log_requests=True)
    with standin_thread(config) as (url, server):
        # the backoff alone would retry after 0.01-0.05 s
        exp = load_experiment(standin_experiment(tmp_path, url, items=2, recognition=False, attempts=6))
        with Store(tmp_path / "s.db") as store:
            summary = asyncio.run(run_experiment(exp, store))
        log = list(server.log)
    limited = [entry for entry in log if entry[2] == 429]
    assert limited, "the seeded rates must produce 429s"
    gaps = []
    for stamp, fingerprint, status in log:
        if status != 429:
            continue
        later = [t for t, f, _s in log if f == fingerprint and t > stamp]
        if later:
            gaps.append(min(later) - stamp)
    assert gaps and min(gaps) >= 1.0, sorted(gaps)[:5]
    waits = summary.generation["server_waits"] + summary.judging["server_waits"]
    waited = summary.generation["waited_s"] + summary.judging["waited_s"]
    assert waits == summary.generation["retries"] + summary.judging["retries"] == len(gaps)
    assert waited == pytest.approx(1.0 * waits)
    assert summary.status == "done"


def test_a_server_asking_for_too_long_gets_no_retry(tmp_path):
    from nepotism.runner.calls import CallExecutor, Endpoint, plan_call

    class Asks:
        name = "asks"
        sent = 0

        async def complete(self, request: Request) -> Completion:
            Asks.sent += 1
            return failed("http_429", raw={"retry_after_s": 7200.0})

        async def aclose(self) -> None:
            pass

    async def go() -> list:
        endpoint = Endpoint("m", Asks(), "openai", limiter=Limiter(1), retry=RetryPolicy(max_attempts=5))
        call = plan_call(endpoint, Request("m", messages=(Message("user", "q"),)))
        results = []
        with Store(tmp_path / "s.db") as store:
            await CallExecutor(store, {"m": endpoint}).run([call], results.append)
        return results

    results = asyncio.run(go())  # (waiting two hours would hit the test timeout)
    assert Asks.sent == 1 and results[0].completion.error == "http_429"
