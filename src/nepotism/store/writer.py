"""`StoreWriter`: store writes on a thread of their own, off an asyncio event loop.

A run's event loop sends calls and reads answers; writing them to SQLite (encoding the rows,
the transaction, the WAL file, now and then a checkpoint) would stop every call in flight while
it lasts. A `StoreWriter` runs the writes it is given on one thread with its own connection (the
store opens one per thread), one after the other in the order they were submitted, and reports
each one's outcome back on the loop (``done(None)`` once committed, ``done(error)`` when it
failed), so that a caller uses what it wrote only after it is committed. The number of writes
submitted and not yet reported is bounded by the caller (`StoreWriter.pending`, `room`).

Left out: what is written (the callers pass functions of the `Store`), and any retrying (a failed
write is reported, not repeated).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any

from nepotism.store.database import Store

__all__ = ["Done", "StoreWriter"]

Done = Callable[[BaseException | None], None]


class StoreWriter:
    """One writing thread for ``store``; create it on the running event loop, `close` it there.

    ``submit(write, done)`` queues ``write()`` (a function writing to ``store``, run on the
    thread) and returns at once; ``done`` is called on the loop with None once ``write`` returned,
    or with the exception it raised. Writes run in submission order, each as its own function
    (a `Store` method is one transaction). `drain` waits until every write submitted so far is
    reported; `close` runs what is still queued, then ends the thread and closes its connection.
    """

    def __init__(self, store: Store, *, max_pending: int = 64) -> None:
        self.store = store
        #: writes submitted whose outcome has not been reported on the loop yet
        self.pending = 0
        self.max_pending = max_pending
        self._loop = asyncio.get_running_loop()
        self._queue: queue.SimpleQueue[tuple[Callable[[], Any], Done] | None] = queue.SimpleQueue()
        self._changed = asyncio.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._work, name=f"nepotism-writer:{store.path.name}", daemon=True)
        self._thread.start()

    @property
    def closed(self) -> bool:
        """Whether `close` was called (nothing more can be submitted)."""
        return self._closed

    def submit(self, write: Callable[[], Any], done: Done) -> None:
        """Queue ``write`` for the thread; ``done(error or None)`` runs on the loop afterwards."""
        if self._closed:
            raise RuntimeError("the store writer is closed")
        self.pending += 1
        self._queue.put((write, done))

    async def room(self) -> None:
        """Return once fewer than ``max_pending`` writes are waiting (back-pressure)."""
        while self.pending >= self.max_pending:
            self._changed.clear()
            await self._changed.wait()

    async def drain(self) -> None:
        """Return once every write submitted so far has been reported."""
        while self.pending:
            self._changed.clear()
            await self._changed.wait()

    def close(self) -> None:
        """Run the writes still queued, end the thread (blocking until then) and close its
        connection. Outcomes not reported yet are reported on the loop if it still runs."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join()

    def _work(self) -> None:
        try:
            while (item := self._queue.get()) is not None:
                write, done = item
                try:
                    write()
                    error: BaseException | None = None
                except BaseException as exc:  # reported to the caller on the loop
                    error = exc
                try:
                    self._loop.call_soon_threadsafe(self._report, done, error)
                except RuntimeError:  # the loop is closed: nobody is waiting any more
                    pass
        finally:
            self.store._close_thread_connection()

    def _report(self, done: Done, error: BaseException | None) -> None:
        self.pending -= 1
        self._changed.set()
        done(error)
