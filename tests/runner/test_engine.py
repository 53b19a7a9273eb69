import asyncio

import pytest

from nepotism.records import Instance, Response
from nepotism.runner import Endpoint, GenerationSpec, Limiter, RetryPolicy, Runner
from tests.runner.conftest import ScriptedBackend, Task, interpret, render

FAST = RetryPolicy(max_attempts=2, base_delay_s=0.0)


def _runner(store, backend, **kw):
    eps = {m: Endpoint(m, backend, "openai", limiter=Limiter(4), retry=FAST) for m in ("j1", "j2", "g1")}
    return Runner(store, eps, **kw)


def _tasks():
    return [Task(f"i{i}", judge, replicate=r) for i in range(4) for judge in ("j1", "j2") for r in range(2)]


def test_judge_stores_judgments_with_their_call_keys(store):
    backend = ScriptedBackend({"i0|m1|m2": ["http_4xx:400"]})
    run_id = store.start_run({"x": 1})
    out = asyncio.run(_runner(store, backend, run_id=run_id).judge(_tasks(), render, interpret))
    assert len(out.judgments) == 16
    stored = store.judgments()
    assert len(stored) == 16
    failed = [j for j in stored if j.status == "failed"]
    # four calls (two judges x two replicates) share the failing prompt; the scripted 4xx hits
    # the first of them only, and a 4xx is not retried
    assert len(failed) == 1
    assert all(j.verdict is None and j.score is None for j in failed)
    assert {j.status for j in stored} <= {"parsed", "failed"}
    assert set(out.call_keys) == {j.id for j in out.judgments}
    # replicates and judges are separate calls
    assert len(set(out.call_keys.values())) == 16


def test_fully_cached_rerun_sends_and_writes_nothing(store, monkeypatch):
    backend = ScriptedBackend()
    asyncio.run(_runner(store, backend).judge(_tasks(), render, interpret))
    sent = sum(backend.calls.values())
    writes = []
    original = store.add_judgments
    monkeypatch.setattr(store, "add_judgments", lambda js, **kw: writes.append(list(js)) or original(js, **kw))
    out = asyncio.run(_runner(store, backend).judge(_tasks(), render, interpret))
    assert sum(backend.calls.values()) == sent
    assert out.stats.cached == 16 and len(out.judgments) == 16
    assert writes == []


def test_replayed_call_without_judgment_gets_it_written(store):
    backend = ScriptedBackend()
    runner = _runner(store, backend)
    tasks = _tasks()
    asyncio.run(runner.judge(tasks, render, interpret))
    # simulate a kill between committing calls and writing judgments: drop some judgments
    conn = store._conn()
    conn.execute("DELETE FROM judgments WHERE instance_id = 'i1'")
    assert len(store.judgments()) == 12
    asyncio.run(_runner(store, backend).judge(tasks, render, interpret))
    assert len(store.judgments()) == 16
    assert sum(backend.calls.values()) == 16


def test_interpret_that_turns_failure_into_verdict_is_refused(store):
    backend = ScriptedBackend({"i0|m1|m2": ["http_4xx:400"] * 8})

    def lying(task, completion):
        from nepotism.records import Judgment

        return [Judgment(task.instance, task.judge, "pairwise", ("m1", "m2"), "parsed", verdict="tie", replicate=task.replicate)]

    with pytest.raises(RuntimeError, match="failure must stay a failure"):
        asyncio.run(_runner(store, backend).judge(_tasks(), render, lying))


def test_generate_makes_only_missing_responses(store):
    backend = ScriptedBackend({"second": ["http_4xx:400"]})
    runner = _runner(store, backend)
    instances = [Instance("a", "first"), Instance("b", "second"), Instance("c", "third")]
    have = [Response("c", "g1", "already there")]
    out = asyncio.run(runner.generate(instances, [GenerationSpec("g1", max_tokens=16)], have=have))
    assert backend.calls == {"first": 1, "second": 1}
    assert [(i, g) for i, g, _ in out.failures] == [("b", "g1")]
    assert {r.instance_id for r in out.responses} == {"a", "c"}
    stored = store.responses()
    assert [(r.instance_id, r.generator) for r in stored] == [("a", "g1")]
    assert stored[0].metadata["call_key"]
    # a second run replays the ok call and retries the failed one
    again = asyncio.run(_runner(store, backend).generate(instances, [GenerationSpec("g1", max_tokens=16)], have=have))
    assert backend.calls == {"first": 1, "second": 2}
    assert again.stats.cached == 1


def test_judging_without_keeping_stores_and_counts_every_judgment(store):
    """``keep=False`` (what `nepotism run` uses): nothing is held after it is written; the
    store gets the same judgments, with the same call keys, as a run that keeps them."""
    kept_store_path = store.path.with_name("kept.db")
    from nepotism.store import Store

    out = asyncio.run(
        _runner(store, ScriptedBackend({"i0|m1|m2": ["http_4xx:400"]})).judge(_tasks(), render, interpret, keep=False)
    )
    assert out.judgments == [] and out.call_keys == {}
    with Store(kept_store_path) as other:
        kept = asyncio.run(_runner(other, ScriptedBackend({"i0|m1|m2": ["http_4xx:400"]})).judge(_tasks(), render, interpret))
        rows = "SELECT id, status, verdict, call_key FROM judgments ORDER BY id"
        assert store._conn().execute(rows).fetchall() == other._conn().execute(rows).fetchall()
    statuses = [j.status for j in kept.judgments]
    assert out.counts == kept.counts == {s: statuses.count(s) for s in sorted(set(statuses))}
    assert sum(out.counts.values()) == 16
    # a rerun counts the replayed judgments too (the failed call is sent again, and now answers)
    again = asyncio.run(_runner(store, ScriptedBackend()).judge(_tasks(), render, interpret, keep=False))
    assert again.counts == {"parsed": 16} and again.stats.cached == 15 and again.stats.sent == 1
