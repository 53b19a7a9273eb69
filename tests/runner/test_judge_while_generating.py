"""Judging while generating (`Runner.generate_and_judge`): an instance's judge calls go out once
its responses are made and stored, while the others are still generated; the calls, judgments
and counts are those of generating everything first, failures are still counted and left out of
the plan, and an error in either phase stops both."""

from __future__ import annotations

import asyncio

import pytest

from nepotism.backends.base import Request
from nepotism.records import Instance, Message
from nepotism.runner import Endpoint, GenerationSpec, Limiter, RetryPolicy, Runner
from nepotism.store import Store
from tests.runner.conftest import ScriptedBackend, Task, interpret

FAST = RetryPolicy(max_attempts=2, base_delay_s=0.0)
GENERATORS = [GenerationSpec("g1", max_tokens=8), GenerationSpec("g2", max_tokens=8)]


def _runner(store, backend, *, concurrency=4, **kw):
    eps = {m: Endpoint(m, backend, "openai", limiter=Limiter(concurrency), retry=FAST) for m in ("g1", "g2", "j1", "j2")}
    return Runner(store, eps, **kw)


def _instances(n, prompt=lambda i: f"question {i}"):
    return [Instance(f"i{i}", prompt(i)) for i in range(n)]


def render(task: Task, *, model: str) -> Request:
    return Request(model=model, messages=(Message("user", f"judge {task.instance}|{task.a}|{task.b}"),), max_tokens=8)


def plan(instances, candidates):
    """Both orders of g1 against g2, for each judge; an instance lacking a response is left out."""
    have = {(r.instance_id, r.generator) for r in candidates}
    return [
        Task(i.id, judge, a, b)
        for i in instances
        if (i.id, "g1") in have and (i.id, "g2") in have
        for judge in ("j1", "j2")
        for a, b in (("g1", "g2"), ("g2", "g1"))
    ]


def _both(store, backend, instances, **kw):
    return asyncio.run(
        _runner(store, backend, **kw).generate_and_judge(instances, GENERATORS, (), plan, render, interpret, keep=True)
    )


def _one_after_the_other(store, backend, instances, **kw):
    async def go():
        runner = _runner(store, backend, **kw)
        made = await runner.generate(instances, GENERATORS)
        return made, await runner.judge(plan(list(instances), made.responses), render, interpret)

    return asyncio.run(go())


def test_judge_calls_go_out_while_generating_with_the_same_calls_and_judgments(store, tmp_path):
    backend = ScriptedBackend(delay=0.002)
    order: list[str] = []
    original = backend.complete

    async def complete(request):
        order.append(request.messages[-1].content)
        return await original(request)

    backend.complete = complete
    instances = _instances(60)
    made, judged = _both(store, backend, instances, ready_chunk=4)
    first_judge = next(n for n, text in enumerate(order) if text.startswith("judge "))
    last_generation = max(n for n, text in enumerate(order) if text.startswith("question "))
    assert first_judge < last_generation  # no drain between the phases
    assert made.stats.sent == 120 and judged.stats.sent == judged.stats.total == 240
    with Store(tmp_path / "other.db") as other:
        made2, judged2 = _one_after_the_other(other, ScriptedBackend(), instances)
        assert sorted(j.id for j in other.judgments()) == sorted(j.id for j in store.judgments())
        keys = "SELECT key FROM calls ORDER BY key"
        assert other._conn().execute(keys).fetchall() == store._conn().execute(keys).fetchall()
    assert sorted(j.id for j in judged.judgments) == sorted(j.id for j in judged2.judgments)
    assert judged.counts == judged2.counts and made.failures == made2.failures == []
    assert {(r.instance_id, r.generator) for r in made.responses} == {(r.instance_id, r.generator) for r in made2.responses}


def test_a_response_is_stored_before_a_judge_call_shows_it(store):
    backend = ScriptedBackend(delay=0.001)
    original = backend.complete
    missing: list[str] = []

    async def complete(request):
        text = request.messages[-1].content
        if text.startswith("judge "):
            instance = text.split()[1].split("|")[0]
            with Store(store.path) as reader:  # another connection: committed rows only
                if {r.generator for r in reader.responses() if r.instance_id == instance} != {"g1", "g2"}:
                    missing.append(instance)
        return await original(request)

    backend.complete = complete
    _both(store, backend, _instances(30), ready_chunk=2)
    assert missing == []


def test_failed_generations_are_counted_and_their_tasks_left_out(store):
    backend = ScriptedBackend({"question 3": ["http_4xx:400"] * 2}, delay=0.001)
    made, judged = _both(store, backend, _instances(10), ready_chunk=3)
    # both generators failed on i3 (one call each, a 4xx is not retried)
    assert sorted(f[:2] for f in made.failures) == [("i3", "g1"), ("i3", "g2")]
    assert made.stats.failed == 2
    assert judged.stats.total == 9 * 4 and "i3" not in {j.instance_id for j in store.judgments()}


def test_instances_sharing_a_prompt_are_all_handed_on(store, tmp_path):
    """Two instances with one prompt share each generation call (one key, sent once): each of them
    gets its own response from it and is judged — it used to go to the last of them only, and the
    others were left out of the plan without a word — whether judging waits or not."""
    instances = _instances(8, prompt=lambda i: f"question {i % 5}")
    backend = ScriptedBackend(delay=0.001)
    made, judged = _both(store, backend, instances, ready_chunk=2)
    assert sum(n for text, n in backend.calls.items() if text.startswith("question ")) == 2 * 5  # paid once
    assert sorted((r.instance_id, r.generator) for r in made.responses) == sorted(
        (i.id, g.model) for i in instances for g in GENERATORS
    )
    assert {j.instance_id for j in judged.judgments} == {i.id for i in instances}
    with Store(tmp_path / "other.db") as other:
        made2, judged2 = _one_after_the_other(other, ScriptedBackend(), instances)
        assert len(made2.responses) == 16 and len({r.id for r in other.responses()}) == 16
    assert sorted(j.id for j in judged.judgments) == sorted(j.id for j in judged2.judgments)
    assert judged.stats.total == judged2.stats.total == 8 * 4
    # the counts add up: 3 instances share another's prompt, so 3 x 2 generation calls are answered
    # by the requests made for the others (this test's judge prompts name the instance: none shared)
    for stats, shared in ((made.stats, 6), (judged.stats, 0)):
        assert (stats.shared, stats.cached) == (shared, 0)
        assert stats.cached + stats.sent + stats.shared == stats.total == stats.done


def test_a_rerun_sends_nothing_and_counts_the_same(store):
    backend = ScriptedBackend(delay=0.001)
    _, first = _both(store, backend, _instances(20), ready_chunk=4)
    sent = sum(backend.calls.values())
    made, again = _both(store, backend, _instances(20), ready_chunk=4)
    assert sum(backend.calls.values()) == sent
    assert made.stats.cached == 40 and again.stats.cached == again.stats.total == 80
    assert again.counts == first.counts


def test_an_error_while_planning_stops_generation(store):
    backend = ScriptedBackend(delay=0.01)

    def bad_plan(instances, candidates):
        raise ValueError("a bad protocol option")

    with pytest.raises(ValueError, match="bad protocol option"):
        asyncio.run(
            _runner(store, backend).generate_and_judge(_instances(200), GENERATORS, (), bad_plan, render, interpret, keep=False)
        )
    assert sum(backend.calls.values()) < 400  # stopped, not generated to the end


def test_an_error_while_judging_stops_generation(store):
    backend = ScriptedBackend(delay=0.01)

    def broken(task, completion):
        raise RuntimeError("interpret bug")

    with pytest.raises(RuntimeError, match="interpret bug"):
        asyncio.run(_runner(store, backend).generate_and_judge(_instances(300), GENERATORS, (), plan, render, broken, keep=False))
    assert sum(v for k, v in backend.calls.items() if k.startswith("question ")) < 600


def test_a_fresh_runs_windows_serve_its_first_rerun_from_the_memo(tmp_path, monkeypatch):
    """The chunks handed on are fixed by dataset order, not by which generations came back first:
    the first cached rerun judges the same windows as the fresh run, so the judge-plan memo the
    fresh run wrote counts every task of it (`nepotism.runner.plan_memo`)."""
    from nepotism.experiment import load_experiment
    from nepotism.runner.experiment_run import run_experiment
    from nepotism.testing.experiments import standin_experiment
    from nepotism.testing.standin import StandinConfig, standin_process

    outcomes = []
    judge, init = Runner.judge, Runner.__init__

    async def spy(self, *args, **kwargs):
        outcomes.append(await judge(self, *args, **kwargs))
        return outcomes[-1]

    def small_chunks(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.ready_chunk = 7

    monkeypatch.setattr(Runner, "judge", spy)
    monkeypatch.setattr(Runner, "__init__", small_chunks)
    with standin_process(StandinConfig(latency_s=0.002)) as url:
        exp = load_experiment(standin_experiment(tmp_path, url, items=40, concurrency=8))
        summaries = []
        for _ in range(2):
            with Store(tmp_path / "memo.db") as store:
                summaries.append(asyncio.run(run_experiment(exp, store)))
    fresh, rerun = outcomes
    assert fresh.stats.sent > 0 and rerun.stats.sent == 0
    assert rerun.memo_hits == rerun.stats.total == fresh.stats.total
    assert summaries[0].judgments == summaries[1].judgments


def test_the_chunks_are_fixed_by_dataset_order_whatever_comes_back_first(store):
    """A slow first instance holds back its own chunk only; the chunks planned (hence the windows
    judged) are the same in a fresh run and in its cached rerun."""
    backend = ScriptedBackend(delay=0.001)
    original = backend.complete

    async def complete(request):
        if request.messages[-1].content == "question 0":
            await asyncio.sleep(0.2)  # the first instance's generations come back last
        return await original(request)

    backend.complete = complete
    seen: list[list[list[str]]] = []

    def recording(instances, candidates):
        seen[-1].append([i.id for i in instances])
        return plan(instances, candidates)

    for _ in range(2):
        seen.append([])
        asyncio.run(
            _runner(store, backend, ready_chunk=4).generate_and_judge(
                _instances(12), GENERATORS, (), recording, render, interpret, keep=False
            )
        )
    fresh, rerun = seen
    fixed = [[f"i{i}" for i in range(k, k + 4)] for k in (0, 4, 8)]
    assert sorted(fresh) == sorted(rerun) == fixed  # (i0's chunk came last in the fresh run)
