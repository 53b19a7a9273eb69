"""The two phases of an experiment run: generate the missing responses, then judge.

`Runner.generate` asks each generator for an answer to each instance it has not answered yet
(one cached call per pair); `Runner.judge` renders the judge tasks into requests a window at a
time, runs them through the cache and the endpoints (`CallExecutor.run_windows`: the next window
is rendered while the queues still hold calls, so memory does not grow with the plan and the first
call goes out after the first windows, not after the whole plan), and interprets each completion into a `Judgment` only after its
call is committed. Judgments are written in batches with the key of
the call they were read from, on the store writer thread that commits the calls (after them), and
the phase returns once every batch is committed; a call that failed after its retries becomes a ``failed`` judgment
(the interpret function must say so: anything else is refused), never a verdict.

The judging functions are parameters (``render(task, *, model) -> Request`` and
``interpret(task, completion) -> [Judgment, ...]``), so this module knows no protocol. A task is any
object with ``judge`` (an experiment model id) and ``replicate`` attributes. Left out: building
the task list (see `nepotism.runner.experiment_run`) and metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nepotism.backends.base import Completion, Request
from nepotism.records import Instance, Judgment, Response
from nepotism.runner.calls import (
    CallExecutor,
    CallResult,
    Endpoint,
    PlannedCall,
    _pause_gc,
    _resume_gc,
    plan_call,
)
from nepotism.runner.plan_memo import plan_memo
from nepotism.runner.progress import RunStats
from nepotism.store import Store
from nepotism.store.fastread import judged
from nepotism.store.writer import StoreWriter

__all__ = ["GenerationOutcome", "GenerationSpec", "JudgingOutcome", "Runner"]

RenderFn = Callable[..., Request]
InterpretFn = Callable[[Any, Completion], Sequence[Judgment]]


@dataclass(frozen=True)
class GenerationSpec:
    """How one generator answers instances: its experiment model id and sampling parameters."""

    model: str
    max_tokens: int = 512
    temperature: float = 0.0
    seed: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def request(self, instance: Instance) -> Request:
        return Request(model=self.model, messages=instance.messages, max_tokens=self.max_tokens,
                       temperature=self.temperature, seed=self.seed, extra=self.extra)


@dataclass(repr=False)
class GenerationOutcome:
    """Responses made or found by `Runner.generate`, and the (instance, generator, error) misses."""

    responses: list[Response]
    failures: list[tuple[str, str, str]]
    stats: RunStats

    def __repr__(self) -> str:
        return f"GenerationOutcome({len(self.responses)} responses, {len(self.failures)} failures)"


@dataclass(repr=False)
class JudgingOutcome:
    """Judgments read by `Runner.judge` (in task order), the call key of each judgment written
    in this run, and the phase's counters; ``counts`` is the number of judgments read by status
    (also when the judgments themselves were not kept: ``judge(..., keep=False)``)."""

    judgments: list[Judgment]
    call_keys: dict[str, str]
    stats: RunStats
    counts: dict[str, int] = field(default_factory=dict)
    #: the set of this phase's call keys in the store (`Store.open_plan`), for exporting the
    #: judgments of these calls only (``Store.export(..., plan=)``)
    plan: str | None = None
    #: tasks counted from the judge-plan memo (`nepotism.runner.plan_memo`): not rendered or keyed
    memo_hits: int = 0

    def __repr__(self) -> str:
        # short on purpose: Python 3.11's asyncio.run reprs the finished main task, result
        # included (signal.getsignal formats its SIGINT handler), which for a full dataclass
        # repr of 100k judgments cost more than judging them from the cache
        if not self.judgments and self.counts:  # judge(..., keep=False): stored and counted, not returned
            return f"JudgingOutcome({sum(self.counts.values())} judgments read, not kept)"
        return f"JudgingOutcome({len(self.judgments)} judgments, {len(self.call_keys)} newly written)"


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

    def _executor(self, stats: RunStats, writer: StoreWriter | None = None) -> CallExecutor:
        if self.view is not None:
            self.view.track(stats)
        return CallExecutor(self.store, self.endpoints, run_id=self.run_id, stats=stats, seed=self.seed,
                            offline=self.offline, writer=writer)

    # -- generation ---------------------------------------------------------------------------
    def plan_generation(
        self, instances: Sequence[Instance], generators: Sequence[GenerationSpec],
        have: Iterable[Response] = (),
    ) -> list[tuple[PlannedCall, Instance, GenerationSpec]]:
        """The generation calls needed: one per (instance, generator) without a response."""
        answered = {(r.instance_id, r.generator) for r in have}
        planned = []
        for spec in generators:
            endpoint = self.endpoints[spec.model]
            for instance in instances:
                if (instance.id, spec.model) in answered:
                    continue
                planned.append((plan_call(endpoint, spec.request(instance)), instance, spec))
        return planned

    async def generate(
        self, instances: Sequence[Instance], generators: Sequence[GenerationSpec],
        have: Iterable[Response] = (),
    ) -> GenerationOutcome:
        """Make (or replay from the cache) the missing responses and add them to the store.

        A call that failed, or answered with empty text, gives no response; it is listed in
        ``failures`` with its reason, and tasks that need it cannot be judged.
        """
        have = list(have)
        planned = self.plan_generation(instances, generators, have)
        stats = RunStats(phase="generate", total=len(planned))
        by_key = {call.key: (instance, spec) for call, instance, spec in planned}
        made: list[Response] = []
        failures: list[tuple[str, str, str]] = []

        def take(result: CallResult) -> None:
            instance, spec = by_key[result.call.key]
            completion = result.completion
            if not completion.ok:
                failures.append((instance.id, spec.model, completion.error or "failed"))
            elif not (completion.text or "").strip():
                failures.append((instance.id, spec.model, "empty_text"))
            else:
                made.append(Response(instance.id, spec.model, completion.text,
                                     metadata={"call_key": result.call.key}))

        await self._executor(stats).run([call for call, _, _ in planned], take)
        if made:
            self.store.add_responses(made)
        return GenerationOutcome(responses=have + made, failures=failures, stats=stats)

    # -- judging -----------------------------------------------------------------------------
    def plan_judging(self, tasks: Sequence[Any], render: RenderFn) -> list[PlannedCall]:
        """One planned call per task (same order): ``render(task, model=task.judge)``."""
        endpoints = self.endpoints
        paused = _pause_gc()
        try:
            return [
                plan_call(endpoints[task.judge], render(task, model=task.judge), replicate=task.replicate)
                for task in tasks
            ]
        finally:
            _resume_gc(paused)

    async def judge(
        self, tasks: Sequence[Any], render: RenderFn, interpret: InterpretFn,
        planned: Sequence[PlannedCall] | None = None, *, keep: bool = True,
        identify: Callable[[Any], Sequence[str]] | None = None,
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
        window takes the path below, which records its row for the next rerun.

        The tasks are rendered, looked up, replayed and sent a window of `judge_window` at a
        time (`CallExecutor.run_windows`): the first call goes out once the first windows are
        rendered (not the whole plan), the next window is rendered while the queues still hold calls, and a rendered
        request is dropped once its call is delivered, so memory does not grow with the number
        of tasks (``planned``, when given, is used as is).
        """
        total = len(tasks)
        stats = RunStats(phase="judge", total=total)
        plan = self.store.open_plan()
        planned_ids: list[str] = []  # of the judgments read, not yet added to ``plan``

        def in_plan(judgment_ids: Iterable[str], *, last: bool = False) -> None:
            """Add the ids of judgments read to ``plan``, `judgment_batch` at a time (all with ``last``)."""
            planned_ids.extend(judgment_ids)
            if planned_ids and (last or len(planned_ids) >= self.judgment_batch):
                self.store.add_plan_ids(plan, planned_ids)
                planned_ids.clear()
        live: dict[int, int] = {}  # id(call) -> its task's index, for calls not yet delivered
        per_task: list[list[Judgment] | None] = [None] * total if keep else []
        call_keys: dict[str, str] = {}
        counts: dict[str, int] = {}
        buffer: list[Judgment] = []
        ids: list[str] = []  # buffer's judgment ids (hashes, computed once)
        keys: list[str] = []  # and the keys of the calls they were read from
        # judgments read from replayed calls, written if the store lacks them (`check_replayed`)
        replayed: list[tuple[str, Judgment, str]] = []
        # judgments are written on the thread that commits the calls, after them (their rows
        # name the calls)
        writer = StoreWriter(self.store)
        failures: list[BaseException] = []
        window = max(1, self.judge_window)

        def written(error: BaseException | None) -> None:
            if error is not None and not failures:
                failures.append(error)

        def flush() -> None:
            if buffer:
                batch, batch_ids, batch_keys = list(buffer), list(ids), dict(zip(ids, keys, strict=True))
                buffer.clear()
                ids.clear()
                keys.clear()
                if keep:
                    call_keys.update(batch_keys)
                writer.submit(lambda: self.store.add_judgments(batch, source=self.source, call_keys=batch_keys,
                                                               run_id=self.run_id, ids=batch_ids), written)

        def check_replayed() -> None:
            """Queue for writing the replayed judgments the store lacks (one batched read)."""
            if not replayed:
                return
            paused = _pause_gc()
            try:
                stored = judged(self.store, list({key for key, _, _ in replayed}))
                for key, judgment, ident in replayed:
                    if (key, ident) not in stored:
                        buffer.append(judgment)
                        ids.append(ident)
                        keys.append(key)
                replayed.clear()
            finally:
                _resume_gc(paused)
            if len(buffer) >= self.judgment_batch:
                flush()

        def take(result: CallResult) -> None:
            index = live.pop(id(result.call))
            made = list(interpret(tasks[index], result.completion))
            if not result.completion.ok and any(j.status != "failed" for j in made):
                raise RuntimeError(
                    f"interpret read a verdict from a failed call ({result.completion.error}); "
                    "a failure must stay a failure"
                )
            if keep:
                per_task[index] = made
            made_ids = [judgment.id for judgment in made]
            in_plan(made_ids)
            for judgment in made:
                counts[judgment.status] = counts.get(judgment.status, 0) + 1
            key = result.call.key
            if result.cached:
                replayed.extend(zip([key] * len(made), made, made_ids, strict=True))
                return
            ids.extend(made_ids)
            keys.extend([key] * len(made))
            buffer.extend(made)
            if len(buffer) >= self.judgment_batch:
                flush()

        shortcut = identify is not None and not keep

        memo = plan_memo(self, render, identify, keep=keep, planned=planned)

        def windows() -> Iterator[Sequence[PlannedCall]]:
            for start in range(0, total, window):
                chunk = tasks[start:start + window]
                digest = memo.digest(chunk) if memo is not None else None
                if digest is not None and memo_counted(digest, len(chunk)):
                    continue
                calls = planned[start:start + window] if planned is not None else self.plan_judging(chunk, render)
                if shortcut:
                    calls = stored_already(chunk, calls, start, digest)
                else:
                    for i, call in enumerate(calls, start):
                        live[id(call)] = i
                yield calls
                check_replayed()  # (the window's cached calls are delivered by now)

        def memo_counted(digest: str, n: int) -> bool:
            """Count a window from its memo row when everything it names is stored (the judge-plan
            memo: nothing rendered, keyed or identified); False when it must take the normal path."""
            assert memo is not None
            found = memo.counted(digest, n, plan)
            if found is None:
                return False
            for status, k in found.items():
                counts[status] = counts.get(status, 0) + k
            stats.cached += n
            stats.done += n
            stats.refresh()
            return True

        def stored_already(chunk: Sequence[Any], calls: Sequence[PlannedCall], start: int,
                           digest: str | None = None) -> list[PlannedCall]:
            """Count the tasks whose judgments are all stored as read from their call; return
            the calls of the others (to look up, replay or send as usual). With the window's memo
            ``digest``, record its (call key, judgment id) pairs for the next rerun."""
            assert identify is not None
            stored = judged(self.store, [call.key for call in calls])
            rest: list[PlannedCall] = []
            hits = 0
            pairs: list[tuple[str, str]] | None = [] if digest is not None else None
            for i, (task, call) in enumerate(zip(chunk, calls, strict=True), start):
                key = call.key
                wanted = identify(task)
                if pairs is not None:
                    if wanted:
                        pairs.extend([(key, ident) for ident in wanted])
                    else:
                        pairs = None
                found = [stored.get((key, ident)) for ident in wanted]
                if wanted and None not in found:
                    hits += 1
                    in_plan(wanted)
                    for status in found:
                        counts[status] = counts.get(status, 0) + 1  # type: ignore[index]
                else:
                    live[id(call)] = i
                    rest.append(call)
            stats.cached += hits
            stats.done += hits
            stats.refresh()
            if pairs is not None and memo is not None and digest is not None:
                memo_pairs, memo_digest, n = pairs, digest, len(chunk)
                writer.submit(lambda: memo.write(memo_digest, n, memo_pairs), written)
            return rest

        try:
            await self._executor(stats, writer).run_windows(windows(), take, refill_below=2 * window)
            check_replayed()
            in_plan((), last=True)
            flush()
            await writer.drain()
            if failures:
                raise failures[0]
        finally:
            flush()  # what was read before an error or a cancellation is kept too
            writer.close()  # (blocks until the queued writes are done)
        done = [j for made in per_task if made for j in made]
        return JudgingOutcome(judgments=done, call_keys=call_keys, stats=stats, counts=dict(sorted(counts.items())),
                              plan=plan, memo_hits=memo.hits if memo is not None else 0)
