"""Per-backend admission control: a concurrency bound plus request and token rate limits.

`TokenBucket` is a classic token bucket on the event loop's clock: it refills continuously at
``rate_per_min / 60`` units per second up to ``capacity`` (one minute's worth by default), and
`TokenBucket.acquire` waits until enough units are there. `Limiter` combines an
``asyncio.Semaphore`` (bounded concurrency) with an optional requests-per-minute bucket and an
optional tokens-per-minute bucket, and `Limiter.hold`: after a server asked for a pause (a 429
with ``Retry-After``), no request of that endpoint starts before the pause is over. Token costs
are estimates made before the call (see `estimate_tokens`: characters / 4 of the prompt plus
``max_tokens``); the real usage is not fed back. Left out: sharing limits across processes.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable

from nepotism.backends.base import Request

__all__ = ["Limiter", "TokenBucket", "estimate_prompt_tokens", "estimate_tokens"]


def estimate_prompt_tokens(request: Request) -> int:
    """A rough prompt size in tokens: characters / 4, rounded up (at least 1).

    Counts the message contents (or the raw prompt) plus a continuation, if any. This is the
    usual rule of thumb for English text with BPE tokenizers; it is only used for rate limits
    and for the dry-run's cost estimate, never for results.
    """
    if request.messages is not None:
        chars = sum(len(m.content) for m in request.messages)
    else:
        chars = len(request.prompt or "")
    chars += len(request.continuation or "")
    return max(1, -(-chars // 4))


def estimate_tokens(request: Request) -> int:
    """Estimated prompt tokens plus the most output tokens the request may produce."""
    output = 1 if request.mode != "generate" else request.max_tokens
    return estimate_prompt_tokens(request) + output


class TokenBucket:
    """Allow ``rate_per_min`` units per minute, with bursts up to ``capacity`` units.

    ``clock`` and ``sleep`` default to the running loop's clock and `asyncio.sleep` (tests pass
    a virtual clock).
    """

    def __init__(
        self,
        rate_per_min: float,
        capacity: float | None = None,
        *,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        if not 0 < rate_per_min < math.inf:
            raise ValueError("a token bucket's rate must be positive and finite")
        self.rate = rate_per_min / 60.0
        self.capacity = float(capacity if capacity is not None else rate_per_min)
        if not 0 < self.capacity < math.inf:
            raise ValueError("a token bucket's capacity must be positive and finite")
        self._level = self.capacity
        self._stamp: float | None = None
        self._lock = asyncio.Lock()
        self._clock = clock
        self._sleep = sleep or asyncio.sleep

    def _refill(self, now: float) -> None:
        if self._stamp is not None:
            self._level = min(self.capacity, self._level + (now - self._stamp) * self.rate)
        self._stamp = now

    async def acquire(self, amount: float = 1.0) -> None:
        """Wait until ``amount`` units are available and take them.

        An amount above the capacity is capped at the capacity (a single huge request waits for
        a full bucket instead of forever). Waiters are served in arrival order.
        """
        amount = min(float(amount), self.capacity)
        clock = self._clock or asyncio.get_running_loop().time
        async with self._lock:
            while True:
                self._refill(clock())
                if self._level >= amount:
                    self._level -= amount
                    return
                await self._sleep((amount - self._level) / self.rate)


class Limiter:
    """Bounded concurrency plus optional requests/min (``rpm``) and tokens/min (``tpm``) limits."""

    def __init__(self, concurrency: int, *, rpm: float | None = None, tpm: float | None = None) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency = concurrency
        self._slots = asyncio.Semaphore(concurrency)
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop the slots serve
        self._requests = TokenBucket(rpm) if rpm is not None else None
        self._tokens = TokenBucket(tpm) if tpm is not None else None
        self._resume_at = -math.inf  # loop time before which no request starts

    def hold(self, seconds: float) -> None:
        """Start no request for ``seconds`` from now (a server asked for a pause)."""
        if seconds > 0:
            self._resume_at = max(self._resume_at, asyncio.get_running_loop().time() + seconds)

    def slot(self, tokens: int = 1) -> _Slot:
        """Hold one concurrency slot for the body (``async with limiter.slot(tokens):``), after
        paying the rate limits. A plain object rather than a generator-based context manager:
        it is entered once per call sent."""
        return _Slot(self, tokens)

    async def acquire(self, tokens: int = 1) -> None:
        """Take one concurrency slot after paying the rate limits, to give back with `release`:
        the runner holds a call's slot from sending it until its answer is stored."""
        await self._enter(tokens)

    def release(self) -> None:
        """Give back a slot taken with `acquire`."""
        self._slots.release()

    async def _enter(self, tokens: int) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # used from a new loop (another asyncio.run): fresh slots
            self._slots, self._loop = asyncio.Semaphore(self.concurrency), loop
        await self._slots.acquire()
        try:
            if self._resume_at > -math.inf:
                loop = asyncio.get_running_loop()
                while (pause := self._resume_at - loop.time()) > 0:
                    await asyncio.sleep(pause)
            if self._requests is not None:
                await self._requests.acquire(1)
            if self._tokens is not None:
                await self._tokens.acquire(tokens)
        except BaseException:
            self._slots.release()
            raise

    @property
    def counts_tokens(self) -> bool:
        """Whether a tokens-per-minute limit needs each request's estimated tokens."""
        return self._tokens is not None


class _Slot:
    __slots__ = ("_limiter", "_tokens")

    def __init__(self, limiter: Limiter, tokens: int) -> None:
        self._limiter, self._tokens = limiter, tokens

    async def __aenter__(self) -> None:
        await self._limiter._enter(self._tokens)

    async def __aexit__(self, *exc: object) -> None:
        self._limiter._slots.release()
