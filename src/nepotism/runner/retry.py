"""Which failed calls are worth another attempt, and how long to wait before it.

Transient failures (``http_429``, ``http_5xx:*``, ``timeout``, ``malformed_body``, ``connection``)
are retried up to ``max_attempts`` attempts in all, waiting ``base_delay_s * 2**(attempt - 1)``
seconds (capped at ``max_delay_s``) times a random factor in ``[1 - jitter, 1]`` ("equal-ish"
jitter, so that many clients hit by the same outage do not come back together). When the server
said how long to wait (a 429 or 503 with ``Retry-After`` and the like, reported by the backend in
``Completion.raw["retry_after_s"]``, see `asked_wait`), the retry never comes earlier than that,
and the whole endpoint holds its sends for as long; a server asking for more than
``max_retry_after_s`` gets no retry (the call fails with its 429). Everything else
(``http_4xx:*``, ``unsupported:*``, ...) is a property of the request and fails at once.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

__all__ = ["RETRYABLE", "RetryPolicy", "asked_wait", "is_retryable"]

#: Error classes (the part of `Completion.error` before any ``": detail"``) worth retrying.
RETRYABLE = ("http_429", "http_5xx", "timeout", "malformed_body", "connection")


def is_retryable(error: str | None) -> bool:
    """True when a failed call's ``error`` names a transient failure."""
    if not error:
        return False
    head = error.split(": ", 1)[0]
    return head.split(":", 1)[0] in RETRYABLE


def asked_wait(completion: Any) -> float | None:
    """Seconds the server asked to wait before the next request (None when it did not say)."""
    if completion.ok:
        return None
    try:
        value = completion.raw.get("retry_after_s")
    except AttributeError:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        return float(value)
    return None


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts a call gets and how long to back off between them."""

    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    jitter: float = 0.5
    max_retry_after_s: float = 3600.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if not (0 <= self.base_delay_s < math.inf and 0 <= self.max_delay_s < math.inf):
            raise ValueError("retry delays must be finite and >= 0")
        if not 0 <= self.max_retry_after_s < math.inf:
            raise ValueError("max_retry_after_s must be finite and >= 0")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter must be between 0 and 1")

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        base = min(self.max_delay_s, self.base_delay_s * 2.0 ** (attempt - 1))
        return base * (1.0 - self.jitter * rng.random())
