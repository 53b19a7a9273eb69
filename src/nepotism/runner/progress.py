"""Counting what a run did, and showing it as a live progress bar.

`RunStats` holds the counters (planned, done, from cache, failed, retries, tokens, spend); the
executor updates them and calls `RunStats.refresh`, which redraws the attached view, if any.
`ProgressView` draws one rich progress bar per phase (generation, judging) with done/total, rate,
ETA, failures and spend; it writes to stderr and only when it is a terminal (or when forced), so
``--json`` output and logs stay clean. Left out: per-model breakdowns in the bar (the final summary
has them).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nepotism.backends.base import Completion

__all__ = ["ProgressView", "RunStats"]


@dataclass
class RunStats:
    """Counters of one phase of a run. ``spend_usd`` counts only calls made in this run;
    ``server_waits`` and ``waited_s`` count the retries that waited because a server asked for a
    pause (``Retry-After``) and the seconds it asked for. ``shared``: planned calls answered by a
    request of this run made for another planned call with the same key (instances with one
    prompt share their calls): sent once, counted once in ``sent``. A live phase's planned calls
    are ``cached + sent + shared`` (``total``); an offline one's stored failures are delivered
    without being sent or cached (counted in ``failed``)."""

    phase: str = "calls"
    total: int = 0
    done: int = 0
    cached: int = 0
    sent: int = 0
    failed: int = 0
    shared: int = 0
    retries: int = 0
    server_waits: int = 0
    waited_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    spend_usd: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)
    view: Any = field(default=None, repr=False, compare=False)

    def record(self, completion: Completion, cost: float, *, copies: int = 1) -> None:
        """Count one call made in this run (delivered to ``copies`` planned calls)."""
        self.sent += 1
        self.shared += copies - 1
        self.done += copies
        usage: Mapping[str, Any] = completion.usage or {}
        self.prompt_tokens += int(usage.get("prompt_tokens", 0) or 0)
        self.completion_tokens += int(usage.get("completion_tokens", 0) or 0)
        self.spend_usd += cost
        if not completion.ok:
            self._count_failure(completion, copies)
        self.refresh()

    def failure_delivered(self, completion: Completion, *, copies: int = 1, shared: bool = False) -> None:
        """Count a failed call delivered to ``copies`` planned calls without being sent (a stored
        failure replayed offline, or — ``shared`` — a failure of this run shared with a later call
        of its key)."""
        if shared:
            self.shared += copies
        self.done += copies
        self._count_failure(completion, copies)

    def _count_failure(self, completion: Completion, copies: int) -> None:
        self.failed += copies
        cls = completion.error_class or "unknown"
        self.errors[cls] = self.errors.get(cls, 0) + copies

    def refresh(self) -> None:
        if self.view is not None:
            self.view.update(self)

    def as_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "total": self.total,
            "done": self.done,
            "cached": self.cached,
            "sent": self.sent,
            "shared": self.shared,
            "failed": self.failed,
            "retries": self.retries,
            "server_waits": self.server_waits,
            "waited_s": round(self.waited_s, 3),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "spend_usd": round(self.spend_usd, 6),
            "errors": dict(sorted(self.errors.items())),
        }


class ProgressView:
    """A rich progress display; use as a context manager, then `track` each phase's stats."""

    def __init__(self, *, enabled: bool | None = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        console = Console(stderr=True)
        self.enabled = console.is_terminal if enabled is None else enabled
        self._progress = Progress(
            TextColumn("[bold]{task.description:<10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]:>9}"),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("failed {task.fields[failed]}  cached {task.fields[cached]}"),
            TextColumn("{task.fields[waited]}"),
            TextColumn("${task.fields[spend]:.4f}"),
            TimeElapsedColumn(),
            console=console,
            disable=not self.enabled,
            refresh_per_second=4,
            transient=False,
        )
        self._tasks: dict[int, Any] = {}
        self._updated: dict[Any, float] = {}

    def __enter__(self) -> ProgressView:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def track(self, stats: RunStats) -> None:
        """Show ``stats`` as a new bar and keep it updated. A disabled view (``--no-progress``,
        or stderr not a terminal) tracks nothing, so a call costs no progress bookkeeping."""
        if not self.enabled:
            return
        task = self._progress.add_task(stats.phase, total=stats.total or None, rate="", failed=0, cached=0, spend=0.0, waited="")
        self._tasks[id(stats)] = task
        stats.view = self
        self.update(stats)

    def update(self, stats: RunStats) -> None:
        task = self._tasks.get(id(stats))
        if task is None:
            return
        # the bar redraws 4 times a second: its speed (a sum over recent samples) is worth
        # computing about that often, not once per call; the last update always goes through
        now = time.monotonic()
        if now - self._updated.get(task, -1.0) < 0.05 and stats.done < stats.total:
            return
        self._updated[task] = now
        shown = next((t for t in self._progress.tasks if t.id == task), None)
        speed = shown.speed if shown is not None else None
        rate = f"{speed:,.1f}/s" if speed else ""
        self._progress.update(
            task,
            completed=stats.done,
            total=stats.total or None,
            rate=rate,
            failed=stats.failed,
            cached=stats.cached,
            spend=stats.spend_usd,
            waited=f"waited {stats.waited_s:.1f}s (server asked)" if stats.server_waits else "",
        )
