import asyncio

import pytest

from nepotism.backends.base import Request
from nepotism.records import Message
from nepotism.runner import CallExecutor, Endpoint, Limiter, RetryPolicy, plan_call, request_key
from tests.runner.conftest import ScriptedBackend

FAST = RetryPolicy(max_attempts=3, base_delay_s=0.0, max_delay_s=0.0)


def _endpoint(backend, concurrency=4, retry=FAST):
    return Endpoint(
        "judge",
        backend,
        "openai",
        served_model="srv",
        limiter=Limiter(concurrency),
        retry=retry,
        price_input_per_mtok=1.0,
        price_output_per_mtok=2.0,
    )


def _calls(endpoint, texts, replicate=0):
    return [plan_call(endpoint, Request(model="judge", messages=(Message("user", t),)), replicate=replicate) for t in texts]


def _run(store, endpoint, calls, seen=None):
    results = []

    def take(result):
        # the call is committed before it is handed over
        stored = store.get_call(result.call.key)
        assert stored is not None and stored.status == result.completion.status
        results.append(result)
        if seen is not None:
            seen.append(result.call.key)

    executor = CallExecutor(store, {"judge": endpoint})
    asyncio.run(executor.run(calls, take))
    return results, executor.stats


def test_key_depends_on_replicate_and_request_not_on_credentials():
    ep = _endpoint(None)
    req = Request(model="judge", messages=(Message("user", "q"),), extra={"api_key": "s1", "top_p": 0.5})
    same = Request(model="judge", messages=(Message("user", "q"),), extra={"api_key": "s2", "top_p": 0.5})
    other = Request(model="judge", messages=(Message("user", "q"),), extra={"top_p": 0.6})
    assert request_key(ep, req) == request_key(ep, same)
    assert request_key(ep, req) != request_key(ep, req, 1)
    assert request_key(ep, req) != request_key(ep, other)
    split = Request(model="judge", messages=(Message("user", "ab"), Message("user", "c")))
    moved = Request(model="judge", messages=(Message("user", "a"), Message("user", "bc")))
    assert request_key(ep, split) != request_key(ep, moved)
    with pytest.raises(ValueError):
        request_key(ep, req, -1)


def test_retries_transient_failures_and_records_attempts(store):
    backend = ScriptedBackend({"p0": ["http_5xx:503", "timeout"], "p1": ["http_429"] * 5, "p2": ["http_4xx:400"]})
    ep = _endpoint(backend)
    calls = _calls(ep, ["p0", "p1", "p2", "p3"])
    results, stats = _run(store, ep, calls)
    by_text = {r.call.request.messages[0].content: r for r in results}
    assert by_text["p0"].completion.ok and by_text["p0"].attempts == 3
    assert not by_text["p1"].completion.ok and by_text["p1"].attempts == 3  # capped at max_attempts
    assert by_text["p1"].completion.error == "http_429"
    assert not by_text["p2"].completion.ok and by_text["p2"].attempts == 1  # not retryable
    assert backend.calls == {"p0": 3, "p1": 3, "p2": 1, "p3": 1}
    stored = store.get_call(calls[1].key)
    assert stored.status == "failed" and stored.error == "http_429"
    assert stored.response["attempts"] == 3 and stored.response["errors"] == ["http_429"] * 3
    assert store.get_call(calls[0].key).response["errors"] == ["http_5xx:503", "timeout"]
    assert stats.failed == 2 and stats.retries == 4 and stats.sent == 4
    assert stats.spend_usd == pytest.approx(2 * (10 * 1.0 + 3 * 2.0) / 1e6)


def test_backend_exception_becomes_a_failed_call(store):
    backend = ScriptedBackend({"boom": ["raise"]})
    ep = _endpoint(backend)
    results, _ = _run(store, ep, _calls(ep, ["boom"]))
    assert results[0].completion.error.startswith("exception:RuntimeError")
    assert store.get_call(results[0].call.key).status == "failed"


def test_rerun_replays_ok_calls_and_retries_only_failed_ones(store):
    backend = ScriptedBackend({"bad": ["http_4xx:400"]})
    ep = _endpoint(backend)
    calls = _calls(ep, ["a", "b", "bad"]) + _calls(ep, ["a"], replicate=1)
    _run(store, ep, calls)
    assert sum(backend.calls.values()) == 4
    results, stats = _run(store, ep, calls)
    assert backend.calls == {"a": 2, "b": 1, "bad": 2}  # only the failed call went out again
    assert stats.cached == 3 and stats.sent == 1
    assert all(r.completion.ok for r in results)
    cached = [r for r in results if r.cached]
    assert {r.completion.text for r in cached} <= {"I pick [[A]]", "I pick [[B]]"}
    assert all(r.completion.finish_reason == "stop" and r.completion.usage["prompt_tokens"] == 10 for r in cached)


def test_same_key_is_sent_once_and_delivered_to_each(store):
    backend = ScriptedBackend()
    ep = _endpoint(backend)
    calls = _calls(ep, ["x", "x", "y"])
    results, stats = _run(store, ep, calls)
    assert backend.calls == {"x": 1, "y": 1}
    assert len(results) == 3 and stats.done == 3


def test_concurrency_per_endpoint_is_bounded(store):
    backend = ScriptedBackend(delay=0.005)
    ep = _endpoint(backend, concurrency=3)
    _run(store, ep, _calls(ep, [f"q{i}" for i in range(30)]))
    assert backend.peak == 3


def test_unknown_model_is_refused_before_sending(store):
    backend = ScriptedBackend()
    ep = _endpoint(backend)
    call = _calls(ep, ["x"])[0]
    other = type(call)(call.key, "nobody", call.request)
    with pytest.raises(KeyError):
        asyncio.run(CallExecutor(store, {"judge": ep}).run([other], lambda r: None))
    assert not backend.calls


def test_cancellation_leaves_whole_rows_and_resume_repeats_nothing(store):
    backend = ScriptedBackend(delay=0.01)
    ep = _endpoint(backend, concurrency=2)
    calls = _calls(ep, [f"q{i}" for i in range(20)])

    async def cancel_midway():
        executor = CallExecutor(store, {"judge": ep})
        task = asyncio.create_task(executor.run(calls, lambda r: None))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_midway())
    done = store.get_calls([c.key for c in calls])
    assert 0 < len(done) < len(calls)
    assert all(c.status == "ok" and c.text for c in done.values())
    sent_before = dict(backend.calls)
    _run(store, ep, calls)
    for call in calls:
        text = call.request.messages[0].content
        if call.key in done:
            assert backend.calls[text] == sent_before[text]  # committed calls are never repeated
    assert len(store.get_calls([c.key for c in calls])) == len(calls)


def test_calls_answered_together_are_committed_together_before_use(store):
    """Group commit: 40 calls answered in the same turns of the loop are stored in a few
    transactions, each call before it is handed over (`_run` checks), claims all ended."""
    backend = ScriptedBackend(delay=0.01)
    endpoint = _endpoint(backend, concurrency=40)
    transactions = []
    put_calls = store.put_calls

    def counting(calls, **kwargs):
        calls = list(calls)
        transactions.append(len(calls))
        return put_calls(calls, **kwargs)

    store.put_calls = counting
    results, stats = _run(store, endpoint, _calls(endpoint, [f"q{i}" for i in range(40)]))
    assert len(results) == stats.sent == sum(transactions) == 40
    assert len(transactions) < 40 and max(transactions) > 1
    assert store._conn().execute("SELECT COUNT(*) FROM call_claims").fetchone()[0] == 0


def _slow_commits(store, seconds):
    """Make ``store.put_calls`` take ``seconds`` longer; returns the list of each transaction's size."""
    import time

    transactions = []
    put_calls = store.put_calls

    def slow(calls, **kwargs):
        calls = list(calls)
        transactions.append(len(calls))
        time.sleep(seconds)
        return put_calls(calls, **kwargs)

    store.put_calls = slow
    return transactions


def test_one_group_commits_at_a_time_and_the_calls_answered_meanwhile_go_next(store):
    """While a group of calls commits (30 ms here), the calls answered meanwhile wait for it and
    go together as the next group: transactions of several calls, not one per turn of the loop
    (10 calls answered together every 2 ms); each call still stored before it is used (`_run`
    checks) and none lost. A group is never more calls than the slots (10)."""
    backend = ScriptedBackend(delay=0.002)
    endpoint = _endpoint(backend, concurrency=10)
    transactions = _slow_commits(store, 0.03)
    results, stats = _run(store, endpoint, _calls(endpoint, [f"q{i}" for i in range(300)]))
    assert len(results) == stats.sent == sum(transactions) == 300
    assert len(transactions) <= 60 and max(transactions) <= 10, transactions
    assert store._conn().execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 300


@pytest.mark.parametrize("phases", [1, 2])
def test_the_calls_answered_and_not_yet_stored_never_exceed_the_slots(store, phases):
    """The loss bound of a kill: a call holds its endpoint's slot from being sent until its answer
    is committed, so the calls sent and not yet stored are never more than the concurrency, also
    while commits are slow (20 ms for calls answered every 1 ms) and when two executors (a run's
    generation and judging) share the endpoint. Before, group commit let up to 4,096 answered
    calls wait for the group being committed, every slot sending meanwhile."""
    import threading

    backend = ScriptedBackend(delay=0.001)
    endpoint = _endpoint(backend, concurrency=4)
    stored = [0]
    lock = threading.Lock()
    put_calls = store.put_calls

    def slow(calls_, **kwargs):
        import time

        calls_ = list(calls_)
        time.sleep(0.02)
        changed = put_calls(calls_, **kwargs)
        with lock:
            stored[0] += len(calls_)
        return changed

    store.put_calls = slow
    unstored = []
    complete = backend.complete

    async def counting(request):
        with lock:
            unstored.append(sum(backend.calls.values()) + 1 - stored[0])
        return await complete(request)

    backend.complete = counting

    async def go():
        parts = [_calls(endpoint, [f"p{k}-q{i}" for i in range(60)]) for k in range(phases)]
        await asyncio.gather(*(CallExecutor(store, {"judge": endpoint}).run(part, lambda r: None) for part in parts))

    asyncio.run(go())
    assert stored[0] == len(unstored) == 60 * phases
    assert max(unstored) <= 4, max(unstored)


def test_the_collector_is_restored_after_sending(store):
    import gc

    before = gc.get_threshold()
    backend = ScriptedBackend()
    endpoint = _endpoint(backend)
    _run(store, endpoint, _calls(endpoint, ["a", "b"]))
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0 and gc.isenabled()


def test_a_disabled_progress_view_tracks_nothing():
    from nepotism.runner import ProgressView, RunStats

    stats = RunStats(phase="judge", total=3)
    with ProgressView(enabled=False) as view:
        view.track(stats)
    assert stats.view is None


def test_the_loop_goes_on_while_a_commit_is_written(store):
    """Store writes run on the writer thread: while the first group commit is held up, the event
    loop goes on (another task keeps running on it); none of the held calls is used before its
    commit ends."""
    import threading

    backend = ScriptedBackend(delay=0.001)
    endpoint = _endpoint(backend, concurrency=2)
    calls = _calls(endpoint, [f"q{i}" for i in range(20)])
    release = threading.Event()
    ticked_meanwhile = []
    held: list[str] = []
    ticks = [0]
    put_calls = store.put_calls

    def slow_first(calls_, **kwargs):
        calls_ = list(calls_)
        if not held:
            held.extend(c["key"] for c in calls_)
            before = ticks[0]
            # wait (up to 10 s) for the loop to turn a few times meanwhile
            for _ in range(1000):
                if ticks[0] > before + 5 or release.wait(0.01):
                    break
            ticked_meanwhile.append(ticks[0] - before)
        return put_calls(calls_, **kwargs)

    store.put_calls = slow_first
    results = []

    def take(result):
        assert store.get_call(result.call.key) is not None  # stored before it is used
        results.append(result)

    async def go():
        async def tick():
            while True:
                ticks[0] += 1
                await asyncio.sleep(0.001)

        ticker = asyncio.create_task(tick())
        try:
            await CallExecutor(store, {"judge": endpoint}).run(calls, take)
        finally:
            ticker.cancel()

    asyncio.run(go())
    assert ticked_meanwhile and ticked_meanwhile[0] > 5
    assert len(results) == 20


def test_a_failed_commit_stops_the_run_and_its_calls_are_never_used(store):
    backend = ScriptedBackend(delay=0.001)
    endpoint = _endpoint(backend, concurrency=2)
    used = []

    def broken(calls_, **kwargs):
        raise OSError("disk gone")

    store.put_calls = broken
    executor = CallExecutor(store, {"judge": endpoint})
    with pytest.raises(OSError, match="disk gone"):
        asyncio.run(executor.run(_calls(endpoint, [f"q{i}" for i in range(6)]), used.append))
    assert used == []


def test_claims_run_on_the_writer_thread_each_key_once(store, monkeypatch):
    """A claim waits for SQLite's write lock while the writer thread holds it: made on the event
    loop it stopped every call in flight, so claims go to the writer thread; the workers share
    a claim on its way (each key claimed once, ahead of the workers, in chunks)."""
    import threading

    from nepotism.store import Store

    claimed: list[tuple[str, list[str]]] = []
    real = Store.claim_calls

    def spy(self, keys, owner, **kw):
        claimed.append((threading.current_thread().name, list(keys)))
        return real(self, keys, owner, **kw)

    monkeypatch.setattr(Store, "claim_calls", spy)
    backend = ScriptedBackend({})
    ep = _endpoint(backend, concurrency=16)
    calls = _calls(ep, [f"c{i}" for i in range(300)])
    executor = CallExecutor(store, {"judge": ep})
    executor.claim_chunk = 20
    results = []
    asyncio.run(executor.run(calls, results.append))
    assert len(results) == 300 and all(r.completion.ok for r in results)
    assert claimed and all(name.startswith("nepotism-writer") for name, _ in claimed)
    keys = [k for _, chunk in claimed for k in chunk]
    assert sorted(keys) == sorted(c.key for c in calls)  # every key claimed, none twice
    assert max(len(chunk) for _, chunk in claimed) == 20
    assert not executor._claiming and not executor._states
    assert store.claim_call(calls[0].key, "someone-else") == "done"  # claims ended with the commits
