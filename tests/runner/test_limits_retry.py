import asyncio
import random

import pytest

import nepotism.runner as runner
from nepotism.backends.base import Request
from nepotism.records import Message
from nepotism.runner import Limiter, RetryPolicy, TokenBucket, estimate_tokens, is_retryable


@pytest.mark.parametrize("module", ["calls", "engine", "limits", "progress", "retry", "experiment_run"])
def test_all_is_exported(module):
    import importlib

    mod = importlib.import_module(f"nepotism.runner.{module}")
    assert mod.__all__
    for name in [*mod.__all__, *runner.__all__]:
        assert hasattr(mod, name) or hasattr(runner, name)
    for name in mod.__all__:
        assert hasattr(mod, name)


def test_token_bucket_waits_for_refill_on_virtual_clock():
    now = [0.0]
    slept = []

    async def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    async def main():
        bucket = TokenBucket(60, capacity=2, clock=lambda: now[0], sleep=sleep)  # 1 per second
        for _ in range(5):
            await bucket.acquire()
        return now[0]

    end = asyncio.run(main())
    assert end == pytest.approx(3.0)  # 2 from the burst, then one per second
    assert slept == [pytest.approx(1.0)] * 3


def test_token_bucket_caps_huge_amounts_at_capacity():
    now = [0.0]

    async def sleep(seconds):
        now[0] += seconds

    async def main():
        bucket = TokenBucket(600, clock=lambda: now[0], sleep=sleep)
        await bucket.acquire(10_000)
        await bucket.acquire(600)
        return now[0]

    assert asyncio.run(main()) == pytest.approx(60.0)


def test_limiter_bounds_concurrency():
    peak, current = [0], [0]

    async def job(limiter):
        async with limiter.slot():
            current[0] += 1
            peak[0] = max(peak[0], current[0])
            await asyncio.sleep(0.001)
            current[0] -= 1

    async def main():
        limiter = Limiter(3)
        await asyncio.gather(*(job(limiter) for _ in range(20)))

    asyncio.run(main())
    assert peak[0] == 3


@pytest.mark.parametrize(
    "error, expected",
    [
        ("http_429", True),
        ("http_5xx:503: busy", True),
        ("timeout", True),
        ("connection: reset", True),
        ("malformed_body: ValueError: x", True),
        ("http_4xx:400: bad", False),
        ("unsupported:label_logprobs: no", False),
        ("exception:TypeError: x", False),
        (None, False),
    ],
)
def test_retryable_classes(error, expected):
    assert is_retryable(error) is expected


def test_backoff_grows_is_capped_and_jittered():
    policy = RetryPolicy(max_attempts=8, base_delay_s=1.0, max_delay_s=5.0, jitter=0.5)
    rng = random.Random(1)
    delays = [policy.delay(a, rng) for a in range(1, 7)]
    bases = [1, 2, 4, 5, 5, 5]
    for d, b in zip(delays, bases):
        assert b * 0.5 <= d <= b
    assert len(set(delays)) == len(delays)


def test_retry_policy_rejects_nonsense():
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(jitter=2)


def test_estimate_tokens_chars_over_four_plus_output():
    req = Request(model="m", messages=(Message("user", "x" * 41),), max_tokens=100)
    assert estimate_tokens(req) == 11 + 100
    labels = Request(model="m", messages=(Message("user", "x" * 8),), labels=("A", "B"))
    assert estimate_tokens(labels) == 2 + 1
