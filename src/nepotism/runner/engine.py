"""The two phases of an experiment run: generate the missing responses, then judge.

`Runner.generate` asks each generator for an answer to each instance it has not answered yet
(one cached call per pair); `Runner.judge` renders the judge tasks into requests a window at a
time, runs them through the cache and the endpoints (`CallExecutor.run_windows`: the next window
is rendered while the queues still hold calls, so memory does not grow with the plan and the first
call goes out after the first windows, not after the whole plan), and interprets each completion into a `Judgment` only after its
call is committed. Judgments are written in batches with the key of
the call they were read from, on the store writer thread that commits the calls (after them), and
the phase returns once every batch is committed; a call that failed after its retries becomes a ``failed`` judgment
(the interpret function must say so: anything else is refused), never a verdict. A judge
phase's state and steps are one `nepotism.runner._judge_windows.JudgeWindows`.
`Runner.generate_and_judge` runs the two phases at once: an instance's judge tasks are planned and
sent as soon as all its responses are made and stored, so the slots do not drain between the
phases (a run of ``nepotism run`` goes this way; the phases one after the other remain for callers
that need every response first).

The judging functions are parameters (``render(task, *, model) -> Request`` and
``interpret(task, completion) -> [Judgment, ...]``), so this module knows no protocol. A task is any
object with ``judge`` (an experiment model id) and ``replicate`` attributes. Left out: building
the task list (see `nepotism.runner.experiment_run`) and metrics.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nepotism.backends.base import Request
from nepotism.records import Instance, Response
from nepotism._gc import freeze as _freeze_gc, pause as _pause_gc, resume as _resume_gc, thaw as _thaw_gc
from nepotism.runner.calls import CallExecutor, CallResult, Endpoint, PlannedCall, plan_call
from nepotism.runner._judge_windows import InterpretFn, JudgeWindows, JudgingOutcome, RenderFn
from nepotism.runner.plan_memo import ChunkPlan
from nepotism.runner.progress import RunStats
from nepotism.store import Store
from nepotism.store.writer import StoreWriter

__all__ = ["GenerationOutcome", "GenerationSpec", "JudgingOutcome", "Runner"]


@dataclass(frozen=True)
class GenerationSpec:
    """How one generator answers instances: its experiment model id and sampling parameters."""

    model: str
    max_tokens: int = 512
    temperature: float = 0.0
    seed: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def request(self, instance: Instance) -> Request:
        return Request(
            model=self.model,
            messages=instance.messages,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            seed=self.seed,
            extra=self.extra,
        )


@dataclass(repr=False)
class GenerationOutcome:
    """Responses made or found by `Runner.generate`, and the (instance, generator, error) misses."""

    responses: list[Response]
    failures: list[tuple[str, str, str]]
    stats: RunStats

    def __repr__(self) -> str:
        return f"GenerationOutcome({len(self.responses)} responses, {len(self.failures)} failures)"


class _Ready:
    """Instances handed from generation to judging (`Runner.generate_and_judge`): chunks of
    (instances, their candidate responses) in the order they were put, then the end, or an
    error; and the store writer both phases share."""

    def __init__(self, writer: StoreWriter) -> None:
        self.writer = writer
        self._queue: asyncio.Queue[tuple[list[Instance], list[Response]] | BaseException | None] = asyncio.Queue()

    def put(self, instances: list[Instance], candidates: list[Response]) -> None:
        self._queue.put_nowait((instances, candidates))

    def end(self) -> None:
        self._queue.put_nowait(None)

    def fail(self, error: BaseException) -> None:
        self._queue.put_nowait(error)

    async def chunks(self) -> AsyncIterator[tuple[list[Instance], list[Response]]]:
        while (item := await self._queue.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item


class Runner:
    """Runs generation and judging calls for one store, one set of endpoints and one run id."""

    def __init__(
        self,
        store: Store,
        endpoints: Mapping[str, Endpoint],
        *,
        run_id: str | None = None,
        view: Any = None,
        seed: int = 0,
        source: str | None = None,
        judgment_batch: int = 2048,
        offline: bool = False,
        judge_window: int = 1024,
        judge_memo: bool = True,
        ready_chunk: int = 128,
    ) -> None:
        self.store = store
        self.endpoints = dict(endpoints)
        self.run_id = run_id
        self.view = view
        self.seed = seed
        self.source = source
        self.judgment_batch = judgment_batch
        #: replay stored calls only, failures included; send nothing (see `CallExecutor.offline`)
        self.offline = offline
        #: judge tasks rendered, looked up and queued at a time (`judge`)
        self.judge_window = judge_window
        #: count fully stored windows through the judge-plan memo (`judge`, `nepotism.runner.plan_memo`)
        self.judge_memo = judge_memo
        #: instances handed from generation to judging at a time (`generate_and_judge`)
        self.ready_chunk = ready_chunk
        #: the counters of every phase this runner ran, in the order they started (a command that
        #: runs several phases says from them how many calls failed)
        self.phases: list[RunStats] = []

    def _executor(self, stats: RunStats, writer: StoreWriter | None = None, *, shared: bool = False) -> CallExecutor:
        """An executor for one phase; ``shared``: it runs beside the other phase on ``writer``
        (`generate_and_judge`, which freezes the collector for both)."""
        if not any(stats is seen for seen in self.phases):
            self.phases.append(stats)
        if self.view is not None:
            self.view.track(stats)
        executor = CallExecutor(
            self.store, self.endpoints, run_id=self.run_id, stats=stats, seed=self.seed, offline=self.offline, writer=writer
        )
        executor.manage_gc = not shared
        return executor

    # -- generation ---------------------------------------------------------------------------
    def plan_generation(
        self,
        instances: Sequence[Instance],
        generators: Sequence[GenerationSpec],
        have: Iterable[Response] = (),
        *,
        planned: Mapping[tuple[str, str], PlannedCall] | None = None,
    ) -> list[tuple[PlannedCall, Instance, GenerationSpec]]:
        """The generation calls needed: one per (instance, generator) without a response.
        ``planned``: calls planned already, by (instance id, generator), used as they are."""
        answered = {(r.instance_id, r.generator) for r in have}
        known = planned or {}
        out = []
        for spec in generators:
            endpoint = self.endpoints[spec.model]
            for instance in instances:
                pair = (instance.id, spec.model)
                if pair in answered:
                    continue
                call = known.get(pair) if known else None
                out.append((plan_call(endpoint, spec.request(instance)) if call is None else call, instance, spec))
        return out

    async def generate(
        self,
        instances: Sequence[Instance],
        generators: Sequence[GenerationSpec],
        have: Iterable[Response] = (),
        *,
        ready: _Ready | None = None,
        planned: Sequence[tuple[PlannedCall, Instance, GenerationSpec]] | None = None,
    ) -> GenerationOutcome:
        """Make (or replay from the cache) the missing responses and add them to the store.

        ``planned``: the calls to make, when the caller planned them already (they must be
        `plan_generation`'s for these arguments; `nepotism.runner.experiment_run` plans them
        once while it checks which stored responses the plan's own calls made).

        A call that failed, or answered with empty text, gives no response; it is listed in
        ``failures`` with its reason, and tasks that need it cannot be judged.

        With ``ready`` (`generate_and_judge`), the instances are handed on as they become
        ready: an instance is ready once every generation call it needs has been delivered (ok
        or failed); each chunk of `ready_chunk` instances (in dataset order) whose instances are
        all ready has the responses made so far written on ``ready``'s store writer and is then
        passed with its candidates (``have`` and the new responses) to ``ready.put``, in that
        order, so a response is stored before any judge call that shows it; ``ready.end``
        follows the last.
        """
        have = list(have)
        planned = self.plan_generation(instances, generators, have) if planned is None else list(planned)
        stats = RunStats(phase="generate", total=len(planned))
        # by the planned call itself, not its key: instances with the same prompt share one call
        # (sent once) and each gets its own response from it
        by_call = {id(call): (instance, spec) for call, instance, spec in planned}
        made: list[Response] = []
        failures: list[tuple[str, str, str]] = []
        hand_on = None if ready is None else self._hand_on(instances, planned, have, ready)

        def take(result: CallResult) -> None:
            instance, spec = by_call[id(result.call)]
            completion = result.completion
            text = completion.text or ""
            response = None
            if not completion.ok:
                failures.append((instance.id, spec.model, completion.error or "failed"))
            elif not text.strip():
                failures.append((instance.id, spec.model, "empty_text"))
            else:
                response = Response(instance.id, spec.model, text, metadata={"call_key": result.call.key})
                made.append(response)
            if hand_on is not None:
                hand_on(instance, spec.model, response)

        executor = self._executor(stats, None if ready is None else ready.writer, shared=ready is not None)
        await executor.run([call for call, _, _ in planned], take)
        if made and ready is None:
            self.store.add_responses(made)
        return GenerationOutcome(responses=have + made, failures=failures, stats=stats)

    def _hand_on(
        self,
        instances: Sequence[Instance],
        planned: Sequence[tuple[PlannedCall, Instance, Any]],
        have: Sequence[Response],
        ready: _Ready,
    ) -> Callable[[Instance, str, Response | None], None]:
        """`generate`'s bookkeeping of ready instances (see there): returns the function that
        takes each delivered generation call's instance, generator and response (None: failed).

        The chunks are fixed in advance, `ready_chunk` instances in dataset order each, and a
        chunk is handed on once all its instances are ready (in whatever order the chunks get
        there): the windows judged are the same in every run of the plan, fresh, resumed or
        cached, so a judge-plan memo written by one run serves the next (`nepotism.runner.plan_memo`)."""
        left: dict[str, set[str]] = {}  # the generators each instance still waits for
        for _, instance, spec in planned:
            left.setdefault(instance.id, set()).add(spec.model)
        candidates: dict[str, list[Response]] = {}
        for r in have:
            candidates.setdefault(r.instance_id, []).append(r)
        size = max(1, self.ready_chunk)
        chunks = [list(instances[k : k + size]) for k in range(0, len(instances), size)]
        chunk_of = {i.id: n for n, chunk in enumerate(chunks) for i in chunk}
        unready = [sum(1 for i in {i.id for i in chunk} if i in left) for chunk in chunks]
        handed: set[str] = set()
        released = [False] * len(chunks)
        new: list[Response] = []
        delivered = 0
        store, writer = self.store, ready.writer

        def release(n: int) -> None:
            """Write the responses made so far, then hand chunk ``n`` on with its candidates."""
            released[n] = True
            chunk = []
            for i in chunks[n]:
                if i.id not in handed:
                    handed.add(i.id)
                    chunk.append(i)
            rows = list(new)
            new.clear()
            given = [r for i in chunk for r in candidates.pop(i.id, ())]

            def written(error: BaseException | None) -> None:
                if error is not None:
                    ready.fail(error)
                elif chunk:
                    ready.put(chunk, given)

            def write() -> None:
                if rows:
                    store.add_responses(rows)

            writer.submit(write, written)

        def release_all() -> None:
            """With the last call every instance is ready (also one whose count a shared key upset)."""
            for n, done in enumerate(released):
                if not done:
                    release(n)
            writer.submit(lambda: None, lambda error: ready.fail(error) if error is not None else ready.end())

        def take(instance: Instance, generator: str, response: Response | None) -> None:
            nonlocal delivered
            delivered += 1
            if response is not None:
                new.append(response)
                candidates.setdefault(instance.id, []).append(response)
            wanted = left[instance.id]
            if wanted:
                wanted.discard(generator)
                if not wanted:
                    n = chunk_of[instance.id]
                    unready[n] -= 1
                    if unready[n] == 0 and not released[n]:
                        release(n)
            if delivered == len(planned):
                release_all()

        for n, count in enumerate(unready):  # the chunks answered already (recorded responses)
            if count == 0:
                release(n)
        if not planned:
            release_all()
        return take

    # -- both at once -------------------------------------------------------------------------
    async def generate_and_judge(
        self,
        instances: Sequence[Instance],
        generators: Sequence[GenerationSpec],
        have: Iterable[Response],
        plan: Callable[[list[Instance], list[Response]], Sequence[Any] | ChunkPlan],
        render: RenderFn,
        interpret: InterpretFn,
        *,
        keep: bool = True,
        identify: Callable[[Any], Sequence[str]] | None = None,
        planned: Sequence[tuple[PlannedCall, Instance, GenerationSpec]] | None = None,
    ) -> tuple[GenerationOutcome, JudgingOutcome]:
        """`generate`, and `judge` the tasks ``plan(instances, candidates)`` of each chunk of
        instances as soon as all its responses are made (and stored), while the others are still
        generated: the endpoints' slots stay busy from the first generation call to the last judge
        call, instead of draining at the end of generation and waiting for the whole judge plan.

        Both phases send through the same endpoints (each endpoint's ``concurrency`` bounds the
        calls of both together) and write on one store writer thread, in order: a chunk's
        responses are committed before its tasks are planned, and each call before it is used.
        The calls, their cache keys and the judgments are those of `generate` then `judge` on
        the whole plan (``plan`` must give, over the chunks, the tasks it gives for all the
        instances at once: the planners are per instance; or a `ChunkPlan` of them, planned by
        the judge phase only when the judge-plan memo does not count the chunk from its inputs);
        only the order in which the tasks
        are judged differs. The outcomes are those of the two phases (``judgments``, with
        ``keep``, in the order judged). An error in either phase stops both. ``planned``: the
        generation calls, when planned already (see `generate`).
        """
        writer = StoreWriter(self.store)
        ready = _Ready(writer)
        frozen = _freeze_gc()  # for both phases (their executors leave the collector alone)

        async def tasks() -> AsyncIterator[Sequence[Any] | ChunkPlan]:
            async for chunk, candidates in ready.chunks():
                yield plan(chunk, candidates)

        def generated_or_failed(done: asyncio.Future[GenerationOutcome]) -> None:
            error = None if done.cancelled() else done.exception()
            if error is not None:
                ready.fail(error)

        generation = asyncio.ensure_future(self.generate(instances, generators, have, ready=ready, planned=planned))
        generation.add_done_callback(generated_or_failed)
        try:
            judged = await self.judge(tasks(), render, interpret, keep=keep, identify=identify, writer=writer)
            made = await generation
        finally:
            if not generation.done() and not self.store.low_space:
                generation.cancel()  # (on a full disk it stops by itself, its answers stored: not cancelled)
            await asyncio.gather(generation, return_exceptions=True)
            writer.close()  # (blocks until the queued writes are done)
            _thaw_gc(frozen)
        return made, judged

    # -- judging -----------------------------------------------------------------------------
    def plan_judging(self, tasks: Sequence[Any], render: RenderFn) -> list[PlannedCall]:
        """One planned call per task (same order): ``render(task, model=task.judge)``."""
        endpoints = self.endpoints
        paused = _pause_gc()
        try:
            return [plan_call(endpoints[task.judge], render(task, model=task.judge), replicate=task.replicate) for task in tasks]
        finally:
            _resume_gc(paused)

    async def judge(
        self,
        tasks: Sequence[Any] | AsyncIterable[Sequence[Any] | ChunkPlan],
        render: RenderFn,
        interpret: InterpretFn,
        planned: Sequence[PlannedCall] | None = None,
        *,
        keep: bool = True,
        identify: Callable[[Any], Sequence[str]] | None = None,
        writer: StoreWriter | None = None,
    ) -> JudgingOutcome:
        """Judge every task; store and return the judgments (in task order).

        ``interpret(task, completion)`` returns the task's judgments (a list: one call may cover
        several rubric items). Judgments read from fresh calls are always written; those read
        from replayed calls only when the store lacks them, by id, as read from that call or
        stored failed (a run killed between committing a call and writing its judgment; an
        experiment edited so that a cached call is read as another judgment), so a fully cached
        rerun writes nothing. The ids of every judgment read go into a set in the store
        (``plan``, `Store.open_plan`), so the run's exports can hold its own judgments only.
        With ``keep`` false the judgments are only stored and counted (``counts``), not returned
        (``judgments`` and ``call_keys`` empty): a large run then holds no judgment after it is
        written. ``identify(task)``, when given with ``keep`` false, returns the ids of the
        judgments ``interpret`` gives for the task whatever the answer (`nepotism.judging.judgment_ids`):
        a task whose judgments are all stored, parsed or unparsed, as read from its call (one
        batched read per window, `nepotism.store.fastread.judged`) is then counted from the store
        (cached, by stored status) without reading or interpreting its call.

        With ``identify`` the package's `nepotism.judging.judgment_ids`, ``render`` its
        `nepotism.judging.render` and ``keep`` false, each window is first looked up in the
        judge-plan memo (`nepotism.runner.plan_memo`; off with ``Runner(judge_memo=False)``): a
        window whose inputs digest to a memo row whose every call and judgment is stored is
        counted from the store in SQL, nothing rendered or keyed (``memo_hits``); any other
        window takes the path below, which records its row for the next rerun. A streamed part
        that is a `ChunkPlan` (`nepotism run`) is one memo unit, digested from its inputs (the
        experiment, the instances, the responses) before any task is planned: counted from its
        row, it is neither planned nor rendered; else its tasks are planned and judged window by
        window and its row recorded. The ids of the judgments counted from memo rows go into
        ``plan`` in one statement at the end of the phase.

        The tasks are rendered, looked up, replayed and sent a window of `judge_window` at a
        time (`CallExecutor.run_windows`): the first call goes out once the first windows are
        rendered (not the whole plan), the next window is rendered while the queues still hold calls, and a rendered
        request is dropped once its call is delivered, so memory does not grow with the number
        of tasks (``planned``, when given, is used as is).

        ``tasks`` may also come as an asynchronous iterable of task lists, each judged as it
        comes (`generate_and_judge`: the tasks of instances whose responses are all made, while
        the others are still generated); the phase's ``total`` then grows with them, and
        ``judgments`` (with ``keep``) are in the order they came. ``writer``: a store writer to
        share (the caller closes it); else the phase has its own.
        """
        windows = JudgeWindows(self, tasks, render, interpret, planned, keep=keep, identify=identify, writer=writer)
        return await windows.run()
