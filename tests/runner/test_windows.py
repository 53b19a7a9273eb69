"""Judging a window at a time (`Runner.judge`, `CallExecutor.run_windows`): bounded memory, the
first call before the whole plan is rendered, and every guarantee of a single window kept across
window boundaries (one send per key, judgments written when missing, failures not sent twice)."""

from __future__ import annotations

import asyncio

from nepotism.backends.base import Request
from nepotism.records import Message
from nepotism.runner import Endpoint, Limiter, RetryPolicy, Runner
from tests.runner.conftest import ScriptedBackend, Task, interpret, render

FAST = RetryPolicy(max_attempts=2, base_delay_s=0.0)


def _runner(store, backend, *, window, concurrency=4, **kw):
    eps = {m: Endpoint(m, backend, "openai", limiter=Limiter(concurrency), retry=FAST) for m in ("j1", "j2")}
    return Runner(store, eps, judge_window=window, **kw)


def _shared(task: Task, *, model: str) -> Request:
    """Tasks ``iN#x`` and ``iN#y`` render the same request: one call, two judgments."""
    return Request(model=model, messages=(Message("user", f"{task.instance.split('#')[0]}|{task.a}|{task.b}"),), max_tokens=8)


def test_the_calls_rendered_but_not_delivered_stay_bounded_and_the_first_goes_out_early(store):
    backend = ScriptedBackend(delay=0.001)
    tasks = [Task(f"i{i}", judge) for i in range(600) for judge in ("j1", "j2")]
    rendered, delivered, at_first_send = [0], [0], []

    def counting_render(task, *, model):
        rendered[0] += 1
        return render(task, model=model)

    def counting_interpret(task, completion):
        delivered[0] += 1
        return interpret(task, completion)

    original = backend.complete

    async def complete(request):
        if not at_first_send:
            at_first_send.append(rendered[0])
        return await original(request)

    backend.complete = complete
    outstanding = []

    def watch(task, *, model):
        outstanding.append(rendered[0] - delivered[0])
        return counting_render(task, model=model)

    window, concurrency = 8, 4
    out = asyncio.run(
        _runner(store, backend, window=window, concurrency=concurrency).judge(tasks, watch, counting_interpret, keep=False)
    )
    assert out.stats.sent == out.stats.done == 1200 and out.counts == {"parsed": 1200}
    # the first call went out after a few windows (its claim is taken on the writer thread while the
    # next windows are rendered, up to `refill_below` = two windows queued), not after 1,200 renders
    assert at_first_send and at_first_send[0] <= 3 * window
    # by construction: queued (under two windows when the next is taken) + that window + in flight
    # (two models) + answered calls awaiting their commit (at most StoreWriter.max_pending groups,
    # each of at most the calls in flight); all of the plan, 1,200, before windows
    assert max(outstanding) <= 3 * window + 2 * concurrency + 64 * 2 * concurrency < len(tasks)
    assert len(store.judgments()) == 1200


def test_a_key_in_two_windows_is_sent_once_and_both_judgments_are_written(store):
    backend = ScriptedBackend(delay=0.01)
    # i0#x opens the first window, i0#y the last: the same call, far apart
    tasks = [Task("i0#x", "j1")] + [Task(f"i{i}", "j1") for i in range(1, 20)] + [Task("i0#y", "j1")]
    out = asyncio.run(_runner(store, backend, window=4).judge(tasks, _shared, interpret))
    assert backend.calls["i0|m1|m2"] == 1 and sum(backend.calls.values()) == 20
    assert out.stats.done == 21 and len(out.judgments) == 21
    assert {j.instance_id for j in store.judgments()} >= {"i0#x", "i0#y"}
    # a rerun: all cached; drop one of the two judgments the shared call backs: only it is written
    store._conn().execute("DELETE FROM judgments WHERE instance_id = 'i0#y'")
    again = asyncio.run(_runner(store, backend, window=4).judge(tasks, _shared, interpret))
    assert again.stats.cached == 21 and sum(backend.calls.values()) == 20
    assert sorted(again.call_keys) == sorted(j.id for j in again.judgments if j.instance_id == "i0#y")
    assert len(store.judgments()) == 21


def test_a_key_in_flight_when_its_twin_is_rendered_joins_it(store):
    """Window one's call still in flight when window two holds the same key: sent once."""
    backend = ScriptedBackend(delay=0.05)
    tasks = [Task("i0#x", "j1"), Task("i1", "j1"), Task("i0#y", "j1"), Task("i2", "j1")]
    out = asyncio.run(_runner(store, backend, window=2).judge(tasks, _shared, interpret))
    assert backend.calls["i0|m1|m2"] == 1
    assert out.stats.sent == 3 and out.stats.done == 4


def test_a_call_that_failed_is_not_sent_again_for_a_later_window(store):
    backend = ScriptedBackend({"i0|m1|m2": ["http_4xx:400"] * 5}, delay=0.001)
    tasks = [Task("i0#x", "j1")] + [Task(f"i{i}", "j1") for i in range(1, 12)] + [Task("i0#y", "j1")]
    out = asyncio.run(_runner(store, backend, window=3).judge(tasks, _shared, interpret))
    assert backend.calls["i0|m1|m2"] == 1  # a 4xx is not retried, and not sent again for i0#y
    assert out.stats.failed == 2 and out.counts == {"failed": 2, "parsed": 11}
    assert sorted(j.instance_id for j in store.judgments(status="failed")) == ["i0#x", "i0#y"]


def test_windows_give_the_judgments_and_counts_of_one_window(store, tmp_path):
    from nepotism.store import Store

    tasks = [Task(f"i{i % 7}#{i}", judge, replicate=i % 2) for i in range(60) for judge in ("j1", "j2")]
    one = asyncio.run(_runner(store, ScriptedBackend(), window=10_000).judge(tasks, _shared, interpret))
    with Store(tmp_path / "other.db") as other:
        many = asyncio.run(_runner(other, ScriptedBackend(), window=5).judge(tasks, _shared, interpret))
        assert sorted(j.id for j in other.judgments()) == sorted(j.id for j in store.judgments())
    assert many.judgments == one.judgments and many.counts == one.counts
    assert many.stats.sent == one.stats.sent and many.stats.done == one.stats.done == 120


def _identify(task):
    from nepotism.backends.base import failed

    return [j.id for j in interpret(task, failed("timeout: any"))]  # ids name the question, not the answer


def test_a_rerun_counts_stored_judgments_without_reading_or_interpreting_their_calls(store, monkeypatch):
    import nepotism.runner.calls as calls_mod

    backend = ScriptedBackend({"i3|m1|m2": ["http_4xx:400"]})
    tasks = [Task(f"i{i}", judge) for i in range(10) for judge in ("j1", "j2")]
    first = asyncio.run(_runner(store, backend, window=6).judge(tasks, render, interpret, keep=False))
    assert first.counts == {"failed": 1, "parsed": 19}
    store._conn().execute("DELETE FROM judgments WHERE instance_id = 'i5' AND judge = 'j2'")  # a killed run
    interpreted, replayed = [], []
    monkeypatch.setattr(calls_mod, "_replayed", lambda row, f=calls_mod._replayed: replayed.append(row) or f(row))

    def watching(task, completion):
        interpreted.append(task)
        return interpret(task, completion)

    again = asyncio.run(
        _runner(store, ScriptedBackend(), window=6).judge(tasks, render, watching, keep=False, identify=_identify)
    )
    # only the failed call (sent again) and the call whose judgment was lost are read and interpreted
    assert sorted((t.instance, t.judge) for t in interpreted) == [("i3", "j1"), ("i5", "j2")]
    assert len(replayed) == 1 and again.stats.sent == 1 and again.stats.cached == 19
    assert again.counts == {"parsed": 20} and len(store.judgments()) == 20
    plain = asyncio.run(_runner(store, ScriptedBackend(), window=6).judge(tasks, render, interpret, keep=False))
    fast = asyncio.run(
        _runner(store, ScriptedBackend(), window=6).judge(tasks, render, interpret, keep=False, identify=_identify)
    )
    assert plain.counts == fast.counts == again.counts and plain.stats.cached == fast.stats.cached == 20
    # an export of the shortcut's plan holds every judgment of the plan
    out = store._conn().execute(f'SELECT COUNT(*) FROM temp."{fast.plan}"').fetchone()[0]
    assert out == 20


def test_a_renamed_condition_is_new_judgments_of_the_same_calls(store):
    """Same requests, other judgment ids: nothing sent, every judgment written (not counted as stored)."""
    import dataclasses

    tasks = [Task(f"i{i}", "j1") for i in range(8)]
    asyncio.run(_runner(store, ScriptedBackend(), window=3).judge(tasks, render, interpret, keep=False))

    def renamed(task, completion):
        return [dataclasses.replace(j, condition="renamed") for j in interpret(task, completion)]

    def identify(task):
        from nepotism.backends.base import failed

        return [j.id for j in renamed(task, failed("timeout: any"))]

    out = asyncio.run(_runner(store, ScriptedBackend(), window=3).judge(tasks, render, renamed, keep=False, identify=identify))
    assert out.stats.sent == 0 and out.stats.cached == 8 and out.counts == {"parsed": 8}
    assert sorted(j.condition for j in store.judgments()) == ["default"] * 8 + ["renamed"] * 8
