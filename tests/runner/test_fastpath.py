"""The runner's replay fast path gives exactly what the plain path gives.

Cache keys are pinned to values computed before the fast path existed; the shape JSON equals
``json.dumps``; replayed completions equal `completion_from_cached`; the batched reads equal the
store's own; the garbage collector's state is restored; a rerun of real judging protocols returns
judgments identical (every field) to the first run's; the outcome's repr stays short.
"""

import asyncio
import gc
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nepotism.backends.base import Completion, Request, failed
from nepotism.judging import interpret_all, plan_pairwise, plan_rubric
from nepotism.judging import render as render_judging
from nepotism.records import Instance, Message, Response, RubricItem
from nepotism.runner import Endpoint, Limiter, RetryPolicy, Runner, call_record, completion_from_cached
from nepotism.runner import calls as cmod
from nepotism.runner.calls import CallExecutor, PlannedCall, plan_call, request_key
from nepotism.store import fastread
from tests.runner.conftest import ScriptedBackend, Task, interpret, render


def test_cache_keys_are_the_ones_earlier_versions_computed():
    ep = Endpoint("judge-a", None, "openai", served_model="judge-a-served")
    requests = [
        Request(model="m", messages=(Message("user", "Which is better?\n<<<\nA text\n>>>"),), max_tokens=1, labels=("A", "B")),
        Request(
            model="m",
            messages=(Message("system", "Be terse."), Message("user", "héllo ✓ \ud800")),
            max_tokens=16,
            temperature=0.7,
            seed=3,
            extra={"top_p": 0.9, "api_key": "sk-x"},
        ),
        Request(model="m", prompt="Once upon a time", continuation=" there was", max_tokens=1),
    ]
    # computed with the runner as it was before the replay fast path (keys must never move)
    expected = [
        "f5bd8e08474797f06f9e068f91e3c486daa4c13d9ffcf6856bc6f5744eff9dbd",
        "c540b48a8bda33a72b8eeb701e16fb69a6b07666c25ca75b51659174143bfa92",
        "9f1d2a036534c9fba251902202de2a03160505ce03667ebc49a9e4e297e44768",
    ]
    assert [request_key(ep, r, rep) for r, rep in zip(requests, (0, 2, 5))] == expected
    assert [request_key(ep, r, rep) for r, rep in zip(requests, (0, 2, 5))] == expected  # memo hit


@settings(max_examples=200, deadline=None)
@given(
    roles=st.one_of(
        st.none(), st.lists(st.sampled_from(["user", "system", "assistant", "tool", 'é"\\']), min_size=1, max_size=4).map(tuple)
    ),
    lengths=st.lists(st.integers(0, 10**6), min_size=1, max_size=4),
    replicate=st.integers(0, 10**9),
)
def test_shape_bytes_equal_json_dumps(roles, lengths, replicate):
    texts = ["x" * (n % 50) for n in lengths]
    want = json.dumps([list(roles) if roles else roles, [len(t) for t in texts], replicate], separators=(",", ":"))
    assert cmod._shape(roles, texts, replicate) == want.encode()


def _completions():
    return [
        Completion(
            text="A",
            label_logprobs={"A": -0.1, "B": -2.5},
            usage={"prompt_tokens": 5},
            raw={"id": "r1", "choices": []},
            latency_s=0.3,
            finish_reason="length",
        ),
        Completion(text="long answer", continuation_logprobs=(-0.5, -1.25), usage={}, raw={}, warnings=("label 'C' not seen",)),
        Completion(text="", usage={"completion_tokens": 0}),
        failed("http_5xx:503: busy"),
    ]


def test_replayed_completions_equal_completion_from_cached(tmp_path):
    from nepotism.store import Store

    ep = Endpoint("m", None, "openai")
    with Store(tmp_path / "s.db") as store:
        calls = [plan_call(ep, Request(model="m", prompt=f"p{i}")) for i in range(4)]
        store.put_calls(
            [call_record(ep, c, comp, errors=["timeout"] * i) for i, (c, comp) in enumerate(zip(calls, _completions()))]
        )
        rows = fastread.call_rows(store, [c.key for c in calls] + ["0" * 64])
        full = store.get_calls([c.key for c in calls])
        assert set(rows) == set(full) == {c.key for c in calls}
        for key, row in rows.items():
            cached = full[key]
            assert row == (
                cached.text,
                cached.logprobs_json,
                cached.usage_json,
                cached.response_json,
                cached.latency_s,
                cached.status,
                cached.error,
            )
            if not cached.ok:
                continue
            fast, slow = cmod._replayed(row), completion_from_cached(cached)
            assert type(fast) is Completion and fast == slow
            assert dict(fast.usage) == dict(slow.usage) and dict(fast.raw) == dict(slow.raw)
            assert fast.usage == slow.usage and fast.raw == dict(slow.raw)
            assert list(fast.usage.items()) == list(slow.usage.items())
            assert "prompt_tokens" not in fast.raw and fast.raw.get("nothing", 1) == 1


@pytest.mark.parametrize("share", [0.0, float("inf")])  # always scan the table / always look keys up
def test_batched_reads_agree_with_the_store_by_scan_and_by_lookup(tmp_path, monkeypatch, share):
    from nepotism.store import Store

    monkeypatch.setattr(fastread, "_SCAN_SHARE", share)
    with Store(tmp_path / "s.db") as store:
        backend = ScriptedBackend({"i1|m1|m2": ["http_4xx:400"], "i3|m1|m2": ["http_4xx:400"]})
        eps = {"j": Endpoint("j", backend, "openai", limiter=Limiter(2), retry=RetryPolicy(max_attempts=1))}
        tasks = [Task(f"i{i}", "j") for i in range(7)]
        asyncio.run(Runner(store, eps).judge(tasks, render, interpret))
        keys = [c.key for c in Runner(store, eps).plan_judging(tasks, render)]
        everything = store.judged_calls()
        assert len(everything) == 5  # the two failed calls back only failed judgments
        for some in (keys, keys[:3] + ["f" * 64], keys[4:] + keys[4:], [keys[1]]):
            assert fastread.judged_counts(store, some) == {k: v for k, v in everything.items() if k in some}
            full = store.get_calls(some)
            rows = fastread.call_rows(store, some)
            assert set(rows) == set(full)
            assert all(rows[k][5] == full[k].status and rows[k][0] == full[k].text for k in rows)


def test_judged_counts_match_judged_calls(tmp_path):
    from nepotism.store import Store

    with Store(tmp_path / "s.db") as store:
        backend = ScriptedBackend({"i1|m1|m2": ["http_4xx:400"]})
        eps = {"j": Endpoint("j", backend, "openai", limiter=Limiter(2))}
        tasks = [Task(f"i{i}", "j") for i in range(5)]
        asyncio.run(Runner(store, eps).judge(tasks, render, interpret))
        everything = store.judged_calls()
        keys = [c.key for c in Runner(store, eps).plan_judging(tasks, render)]
        assert fastread.judged_counts(store, keys + keys[:2]) == everything
        assert fastread.judged_counts(store, keys[:2]) == {k: v for k, v in everything.items() if k in keys[:2]}
        assert fastread.judged_counts(store, []) == {} and fastread.call_rows(store, []) == {}


@pytest.mark.parametrize("enabled", [True, False])
def test_replay_restores_the_garbage_collector(tmp_path, enabled):
    from nepotism.store import Store

    with Store(tmp_path / "s.db") as store:
        eps = {"j": Endpoint("j", ScriptedBackend(), "openai", limiter=Limiter(2))}
        tasks = [Task(f"i{i}", "j") for i in range(3)]
        asyncio.run(Runner(store, eps).judge(tasks, render, interpret))
        was = gc.isenabled()
        try:
            gc.enable() if enabled else gc.disable()
            asyncio.run(Runner(store, eps).judge(tasks, render, interpret))
            assert gc.isenabled() is enabled

            def boom(task, completion):
                raise RuntimeError("interpret bug")

            with pytest.raises(RuntimeError, match="interpret bug"):
                asyncio.run(Runner(store, eps).judge(tasks, render, boom))
            assert gc.isenabled() is enabled
        finally:
            gc.enable() if was else gc.disable()


def test_resuming_the_collector_leaves_objects_someone_else_froze_frozen():
    was = gc.isenabled()
    gc.enable()
    baseline = gc.get_freeze_count()  # another test in this worker may have frozen objects
    try:
        gc.freeze()
        frozen = gc.get_freeze_count()
        assert frozen > baseline
        paused = cmod._pause_gc()
        junk = [[i] for i in range(1000)]
        cmod._resume_gc(paused)
        # still frozen (objects freed meanwhile may leave the permanent generation: not exact)
        assert gc.isenabled() and gc.get_freeze_count() >= 0.9 * frozen
        del junk
    finally:
        gc.unfreeze()
        gc.enable() if was else gc.disable()
    paused = cmod._pause_gc()
    cmod._resume_gc(paused)
    after = gc.get_freeze_count()  # the no-scan move itself leaves nothing new frozen
    assert after == 0 if baseline == 0 else after <= baseline


def test_resuming_while_calls_are_sent_does_not_walk_the_frozen_objects(monkeypatch):
    """While the runner's own freeze is in force (calls in flight, the plan frozen), pausing and
    resuming the collector around a window never asks ``gc.get_freeze_count()``, which walks
    every frozen object (a run did so several times per window of judge calls); the young
    threshold is the live one and everything is restored after."""
    from nepotism import _gc

    was = gc.isenabled()
    gc.enable()
    if gc.get_freeze_count():
        pytest.skip("another test in this worker left objects frozen")
    before = gc.get_threshold()
    frozen = cmod._freeze_gc()
    try:
        assert frozen == before and gc.get_threshold()[0] == max(before[0], _gc.LIVE_GEN0)
        plan = [[i] for i in range(2000)]

        def walked() -> int:
            raise AssertionError("gc.get_freeze_count() walked the frozen objects")

        monkeypatch.setattr(gc, "get_freeze_count", walked)
        for _ in range(3):
            paused = cmod._pause_gc()
            window = [[i] for i in range(1000)]
            cmod._resume_gc(paused)
            assert gc.isenabled()
        assert cmod._freeze_gc() is None  # (nested: a no-op, as when someone else froze)
        monkeypatch.undo()
        assert gc.get_freeze_count() >= len(plan)  # the plan stayed frozen
        del window
    finally:
        cmod._thaw_gc(frozen)
        gc.enable() if was else gc.disable()
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    paused = cmod._pause_gc()  # with nothing frozen, the count is asked again (and is 0)
    cmod._resume_gc(paused)
    assert gc.get_freeze_count() == 0


def test_a_failing_callback_still_counts_the_hits_it_got_to(tmp_path):
    from nepotism.store import Store

    with Store(tmp_path / "s.db") as store:
        ep = Endpoint("j", ScriptedBackend(), "openai", limiter=Limiter(2))
        calls = [
            PlannedCall(k.key, "j", k.request)
            for k in (plan_call(ep, Request(model="j", messages=(Message("user", f"q{i}"),))) for i in range(3))
        ]
        seen = []
        asyncio.run(CallExecutor(store, {"j": ep}).run(calls, seen.append))
        executor = CallExecutor(store, {"j": ep})

        def second_fails(result):
            if len(seen) == 4:
                raise RuntimeError("stop")
            seen.append(result)

        with pytest.raises(RuntimeError):
            asyncio.run(executor.run(calls, second_fails))
        assert executor.stats.cached == 2 and executor.stats.done == 2


class _LabelBackend:
    name = "labels"

    def __init__(self):
        self.sent = 0

    async def complete(self, request):
        self.sent += 1
        rng = random.Random(request.messages[0].content)
        if request.labels:
            return Completion(
                text="A",
                label_logprobs={x: -rng.random() * 3 for x in request.labels},
                usage={"prompt_tokens": rng.randint(1, 900), "completion_tokens": 1},
                raw={"object": "chat.completion"},
                latency_s=rng.random(),
            )
        return Completion(text='{"results": [true, false]}', usage={"prompt_tokens": 3}, latency_s=0.1)

    async def aclose(self):
        pass


def test_cached_rerun_of_real_protocols_returns_identical_judgments(tmp_path):
    from nepotism.store import Store

    inst = Instance(
        "q", "Which prime?", reference_answer="13", rubric=(RubricItem("r1", "Names a number."), RubricItem("r2", "Is prime."))
    )
    responses = {"q": [Response("q", g, f"{g} says 13") for g in ("a", "b", "c")]}
    tasks = plan_pairwise([inst], responses, ["a", "b"], options={"mode": "labels", "ways": 3}, replicates=2)
    tasks += plan_rubric([inst], responses, ["a"], all_rubrics=True)
    backend = _LabelBackend()
    eps = {m: Endpoint(m, backend, "openai", limiter=Limiter(4), retry=RetryPolicy(max_attempts=1)) for m in ("a", "b")}
    with Store(tmp_path / "s.db") as store:
        first = asyncio.run(Runner(store, eps).judge(tasks, render_judging, interpret_all))
        sent = backend.sent
        again = asyncio.run(Runner(store, eps).judge(tasks, render_judging, interpret_all))
        assert backend.sent == sent and again.stats.cached == len(tasks) and not again.call_keys
        assert [vars(j) for j in again.judgments] == [vars(j) for j in first.judgments]
        assert len(store.judgments()) == len(first.judgments)
        assert repr(again) == f"JudgingOutcome({len(again.judgments)} judgments, 0 newly written)"
