"""`StoreWriter`: writes run on a thread of their own, in order, each reported back on the loop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from nepotism.store.writer import StoreWriter
from tests.store.keys import opaque_key


def _call(key: str) -> dict:
    return {"key": key, "request": {"backend": "b", "model": "m"}, "response": None, "text": "t"}


def test_writes_run_in_order_off_the_loop_and_are_reported_once_committed(store):
    threads, reported = [], []

    async def main() -> None:
        writer = StoreWriter(store)
        loop_thread = threading.get_ident()
        for i in range(5):

            def write(i=i):
                threads.append(threading.get_ident())
                store.put_calls([_call(opaque_key(str(i)))])

            def done(error, i=i):
                # on the loop, once committed: another connection sees the row
                assert error is None and threading.get_ident() == loop_thread
                assert store.get_call(opaque_key(str(i))) is not None
                reported.append(i)

            writer.submit(write, done)
        await writer.drain()
        assert writer.pending == 0
        writer.close()
        assert loop_thread not in threads

    asyncio.run(main())
    assert reported == [0, 1, 2, 3, 4] and len(set(threads)) == 1


def test_a_failed_write_is_reported_not_raised_and_later_writes_go_on(store):
    outcomes = []

    async def main() -> None:
        writer = StoreWriter(store)
        writer.submit(lambda: store.put_calls([{"key": "not-a-key", "request": {}}]), outcomes.append)
        writer.submit(lambda: store.put_calls([_call(opaque_key(str(1)))]), outcomes.append)
        await writer.drain()
        writer.close()

    asyncio.run(main())
    assert isinstance(outcomes[0], ValueError) and outcomes[1] is None
    assert store.get_call(opaque_key(str(1))) is not None


def test_close_runs_what_is_queued_and_closes_the_threads_connection(store):
    gate = threading.Event()

    async def main() -> None:
        connections = len(store._connections)
        writer = StoreWriter(store)
        writer.submit(lambda: gate.wait(10), lambda error: None)
        writer.submit(lambda: store.put_calls([_call(opaque_key(str(2)))]), lambda error: None)
        gate.set()
        writer.close()  # blocks until both writes ran; the thread's own connection is closed
        assert len(store._connections) == connections
        with pytest.raises(RuntimeError):
            writer.submit(lambda: None, lambda error: None)

    asyncio.run(main())
    assert store.get_call(opaque_key(str(2))) is not None


def test_room_waits_while_too_many_writes_are_pending(store):
    gate = threading.Event()
    order = []

    async def main() -> None:
        writer = StoreWriter(store, max_pending=2)
        for _ in range(2):
            writer.submit(lambda: gate.wait(10), lambda error: order.append("written"))

        async def wait_room() -> None:
            await writer.room()
            order.append("room")

        waiting = asyncio.create_task(wait_room())
        await asyncio.sleep(0)
        assert order == []  # both writes are still pending
        gate.set()
        await waiting
        await writer.drain()
        writer.close()

    asyncio.run(main())
    assert order[0] == "written" and "room" in order
