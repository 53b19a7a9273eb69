"""The event loop the commands run their calls on: uvloop where it is installed, else asyncio's.

A run spends most of its CPU around the calls in the event loop and the HTTP client on it. uvloop
(libuv under asyncio's API) does the loop's own work — polling sockets, reading and writing them,
scheduling callbacks — in C: on the loopback stand-in at C = 256 `nepotism run` used ≈ 0.50 ms of
CPU per call on uvloop against ≈ 0.58 ms on asyncio's default loop (docs/scale.md, "Run
throughput"). uvloop is a dependency on Linux and macOS (it does not build on Windows); when it
cannot be imported the commands run on asyncio's own loop, and ``nepotism --version`` says which.

Nothing here changes a process-wide setting (no event-loop policy is installed): `run` makes one
loop for one coroutine, the way `asyncio.run` does (same Ctrl-C handling: the main task is
cancelled and KeyboardInterrupt raised). SIGTERM — what Slurm, Kubernetes and systemd send to
stop a job before they kill it — is handled the same way while `run` runs: the main task is
cancelled (its cleanup runs: calls answered so far are stored, the run is marked interrupted)
and `Terminated`, a KeyboardInterrupt, is raised; without it the process died at once, with no
message and its run left "running". The library's async entry points (`run_experiment`, ...)
run on whatever loop their caller made.

The standard streams leave `run` in the blocking mode they had when it started. uvloop (libuv)
switches a file descriptor to non-blocking for good once anything on the loop watches it
(uvloop issue #712), and CPython's text streams then drop what a full pipe does not take, with no
error: a ``--json`` document printed after the run arrived cut at 96 KiB with exit status 0.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["Terminated", "loop_name", "new_loop", "run"]

T = TypeVar("T")


def _uvloop() -> Any:
    try:
        import uvloop
    except ImportError:  # Windows, or a platform without a wheel: asyncio's loop
        return None
    return uvloop


def new_loop() -> asyncio.AbstractEventLoop:
    """A new event loop: uvloop's when it is importable, else asyncio's default."""
    uvloop = _uvloop()
    return uvloop.new_event_loop() if uvloop is not None else asyncio.new_event_loop()


def loop_name() -> str:
    """Which loop `run` uses: ``uvloop 0.23.0``, or ``asyncio (uvloop not installed)``."""
    uvloop = _uvloop()
    return f"uvloop {uvloop.__version__}" if uvloop is not None else "asyncio (uvloop not installed)"


class Terminated(KeyboardInterrupt):
    """`run` was stopped by SIGTERM (after its main task was cancelled and had cleaned up)."""


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on a loop from `new_loop`; SIGTERM cancels ``main`` and raises
    `Terminated` (where the loop can take signals: the main thread, not Windows)."""
    stopped: list[int] = []
    blocking = _stdio_blocking()
    try:
        with asyncio.Runner(loop_factory=new_loop) as runner:
            try:
                return runner.run(_stopped_by_sigterm(main, stopped))
            except asyncio.CancelledError:
                if stopped:
                    raise Terminated("SIGTERM") from None
                raise
    finally:
        for fd, was in blocking.items():
            if _blocking(fd) not in (None, was):
                os.set_blocking(fd, was)


def _blocking(fd: int) -> bool | None:
    """Whether ``fd`` is in blocking mode; None when it is closed (or this platform cannot say)."""
    try:
        return os.get_blocking(fd)
    except (OSError, AttributeError):
        return None


def _stdio_blocking() -> dict[int, bool]:
    """The blocking mode of stdin, stdout and stderr, for those that are open."""
    return {fd: was for fd in (0, 1, 2) if (was := _blocking(fd)) is not None}


async def _stopped_by_sigterm(main: Coroutine[Any, Any, T], stopped: list[int]) -> T:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def stop() -> None:
        stopped.append(signal.SIGTERM)
        if task is not None:
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, stop)
    except (NotImplementedError, RuntimeError, ValueError):  # no signals here (Windows, a thread)
        return await main
    try:
        return await main
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
