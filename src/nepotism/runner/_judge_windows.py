"""The state of one judge phase (`Runner.judge`), a window of tasks at a time.

`JudgeWindows` renders, keys and looks up the windows of a judge phase's tasks (a list, or a
stream of task lists and `nepotism.runner.plan_memo.ChunkPlan` s), hands their calls to the
executor (`CallExecutor.run_windows`), counts the tasks whose judgments are all stored and those
the judge-plan memo counts, interprets each delivered call and writes the judgments on the store
writer after the calls they were read from; `JudgingOutcome` is what the phase returns.
`Runner.judge` documents the behaviour; this module holds its bookkeeping as named methods and
fields instead of closures over shared cells.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from nepotism.backends.base import Completion, Request
from nepotism.records import Judgment
from nepotism._gc import pause as _pause_gc, resume as _resume_gc
from nepotism.runner.calls import CallResult, PlannedCall
from nepotism.runner.plan_memo import ChunkPlan, plan_memo
from nepotism.runner.progress import RunStats
from nepotism.store.fastread import judged
from nepotism.store.writer import StoreWriter

__all__ = ["InterpretFn", "JudgeWindows", "JudgingOutcome", "RenderFn"]

RenderFn = Callable[..., Request]
InterpretFn = Callable[[Any, Completion], Sequence[Judgment]]


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


class _MemoUnit:
    """A memo unit being judged window by window (a chunk plan that missed the memo): its
    digest and the (call key, judgment id) pairs of its windows so far; ``pairs`` is None once a
    task names no judgment (the unit then gets no row)."""

    __slots__ = ("digest", "pairs")

    def __init__(self, digest: str) -> None:
        self.digest = digest
        self.pairs: list[tuple[str, str]] | None = []


class JudgeWindows:
    """One judge phase: what `Runner.judge` holds while its windows are judged (see there);
    ``runner`` is the `nepotism.runner.engine.Runner` whose store, endpoints and settings it uses."""

    def __init__(
        self,
        runner: Any,
        tasks: Sequence[Any] | AsyncIterable[Sequence[Any] | ChunkPlan],
        render: RenderFn,
        interpret: InterpretFn,
        planned: Sequence[PlannedCall] | None,
        *,
        keep: bool,
        identify: Callable[[Any], Sequence[str]] | None,
        writer: StoreWriter | None,
    ) -> None:
        #: the stream of task lists and chunk plans, or None for a task list (``listed``)
        self.stream = tasks if isinstance(tasks, AsyncIterable) else None
        self.listed: Sequence[Any] = () if isinstance(tasks, AsyncIterable) else tasks
        self.streamed = self.stream is not None
        if self.streamed and planned is not None:
            raise ValueError("planned calls need the task list, not a stream of tasks")
        self.runner = runner
        self.store = runner.store
        self.render = render
        self.interpret = interpret
        self.planned = planned
        self.keep = keep
        self.identify = identify
        self.total = len(self.listed)
        self.stats = RunStats(phase="judge", total=self.total)
        self.plan = self.store.open_plan()
        self.planned_ids: list[str] = []  # of the judgments read, not yet added to ``plan``
        #: id(call) -> its task's index, the task and the ids ``identify`` gave it (None when not
        #: identified), for the calls not yet delivered
        self.live: dict[int, tuple[int, Any, Sequence[str] | None]] = {}
        self.per_task: list[list[Judgment] | None] = [None] * self.total if keep else []
        self.call_keys: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        self.buffer: list[Judgment] = []
        self.ids: list[str] = []  # buffer's judgment ids (hashes, computed once)
        self.keys: list[str] = []  # and the keys of the calls they were read from
        # judgments read from replayed calls, written if the store lacks them (`check_replayed`)
        self.replayed: list[tuple[str, Judgment, str]] = []
        # judgments are written on the thread that commits the calls, after them (their rows
        # name the calls)
        self.own_writer = writer is None
        self.writer = StoreWriter(self.store) if writer is None else writer
        self.failures: list[BaseException] = []
        self.window = max(1, runner.judge_window)
        self.batch = runner.judgment_batch
        #: count a task whose judgments are all stored without reading its call (`stored_already`)
        self.shortcut = identify is not None and not keep
        self.memo = plan_memo(runner, render, identify, keep=keep, planned=planned)

    # -- writing ----------------------------------------------------------------------------------
    def written(self, error: BaseException | None) -> None:
        """The writer's report on a submitted write: the first error is raised by `run`."""
        if error is not None and not self.failures:
            self.failures.append(error)

    def in_plan(self, judgment_ids: Iterable[str], *, last: bool = False) -> None:
        """Add the ids of judgments read to ``plan``, `judgment_batch` at a time (all with ``last``)."""
        planned_ids = self.planned_ids
        planned_ids.extend(judgment_ids)
        if planned_ids and (last or len(planned_ids) >= self.batch):
            self.store.add_plan_ids(self.plan, planned_ids)
            planned_ids.clear()

    def flush(self) -> None:
        """Submit the buffered judgments for writing (after the calls they were read from)."""
        buffer, ids, keys = self.buffer, self.ids, self.keys
        if buffer:
            batch, batch_ids, batch_keys = list(buffer), list(ids), dict(zip(ids, keys, strict=True))
            buffer.clear()
            ids.clear()
            keys.clear()
            if self.keep:
                self.call_keys.update(batch_keys)
            runner = self.runner
            self.writer.submit(
                partial(
                    self.store.add_judgments,
                    batch,
                    source=runner.source,
                    call_keys=batch_keys,
                    run_id=runner.run_id,
                    ids=batch_ids,
                ),
                self.written,
            )

    def check_replayed(self) -> None:
        """Queue for writing the replayed judgments the store lacks (one batched read)."""
        replayed = self.replayed
        if not replayed:
            return
        buffer, ids, keys = self.buffer, self.ids, self.keys
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
        if len(buffer) >= self.batch:
            self.flush()

    # -- delivered calls ----------------------------------------------------------------------------
    def take(self, result: CallResult) -> None:
        """Interpret a delivered call into its task's judgments, count them and buffer the new ones."""
        index, task, identified = self.live.pop(id(result.call))
        made = list(self.interpret(task, result.completion))
        if not result.completion.ok and any(j.status != "failed" for j in made):
            raise RuntimeError(
                f"interpret read a verdict from a failed call ({result.completion.error}); a failure must stay a failure"
            )
        if self.keep:
            self.per_task[index] = made
        # the ids `identify` gave the task are those of what interpret made (its contract, and a
        # test for the package's pair): not hashed twice
        made_ids = (
            list(identified) if identified is not None and len(identified) == len(made) else [judgment.id for judgment in made]
        )
        self.in_plan(made_ids)
        counts = self.counts
        for judgment in made:
            counts[judgment.status] = counts.get(judgment.status, 0) + 1
        key = result.call.key
        if result.cached:
            self.replayed.extend(zip([key] * len(made), made, made_ids, strict=True))
            return
        buffer = self.buffer
        self.ids.extend(made_ids)
        self.keys.extend([key] * len(made))
        buffer.extend(made)
        if len(buffer) >= self.batch:
            self.flush()

    # -- windows ------------------------------------------------------------------------------------
    def window_calls(self, chunk: Sequence[Any], start: int, unit: _MemoUnit | None = None) -> Sequence[PlannedCall]:
        """The calls of the window of tasks ``chunk`` (from task ``start`` on), rendered; none
        when the judge-plan memo counted the window (`memo_counted`). ``unit``: the window is
        part of a memo unit (a chunk plan) whose pairs it adds to."""
        memo = self.memo
        digest = memo.digest(chunk) if memo is not None and unit is None else None
        if digest is not None and self.memo_counted(digest, len(chunk)):
            return []
        planned = self.planned
        calls = planned[start : start + len(chunk)] if planned is not None else self.runner.plan_judging(chunk, self.render)
        if self.shortcut:
            return self.stored_already(chunk, calls, start, digest, unit)
        live = self.live
        for i, task, call in zip(range(start, start + len(chunk)), chunk, calls, strict=True):
            live[id(call)] = (i, task, None)
        return calls

    def windows(self) -> Iterator[Sequence[PlannedCall]]:
        """The windows of a task list."""
        assert not self.streamed
        tasks, window = self.listed, self.window
        for start in range(0, self.total, window):
            yield self.window_calls(tasks[start : start + window], start)
            self.check_replayed()  # (the window's cached calls are delivered by now)

    async def streamed_windows(self) -> AsyncIterator[Sequence[PlannedCall]]:
        """The windows of a stream of task lists and chunk plans, each part judged as it comes."""
        memo, stats, window = self.memo, self.stats, self.window
        start = 0
        assert self.stream is not None
        async for part in self.stream:
            # a chunk plan (`nepotism run`) is first looked up in the memo by its inputs: counted
            # from there, nothing is planned; else its tasks are planned and its pairs recorded
            digest = memo.unit(part) if memo is not None else None
            if digest is not None and self.memo_counted(digest, None, part):
                continue
            kinds = None
            if isinstance(part, ChunkPlan):
                chunk_plan, part = part, part.tasks()
                kinds = chunk_plan.kinds
            part = list(part)
            stats.total += len(part)
            if self.keep:
                self.per_task.extend([None] * len(part))
            unit = _MemoUnit(digest) if digest is not None else None
            for first in range(0, len(part), window):
                chunk = part[first : first + window]
                yield self.window_calls(chunk, start, unit)
                start += len(chunk)
                self.check_replayed()
            if unit is not None and unit.pairs and memo is not None:
                # (bound now: the next part replaces these values before the write runs)
                self.writer.submit(partial(memo.write, unit.digest, len(part), unit.pairs, kinds or ()), self.written)
            stats.refresh()

    # -- counted without reading a call ------------------------------------------------------------
    def memo_counted(self, digest: str, n: int | None, part: Any = None) -> bool:
        """Count a unit (a window of ``n`` tasks, or a chunk plan ``part``) from its memo row
        when everything it names is stored (the judge-plan memo: nothing planned, rendered,
        keyed or identified); False when it must take the normal path."""
        assert self.memo is not None
        found = self.memo.counted(digest, n)
        if found is None:
            return False
        n, by_status, tags = found
        counts, stats = self.counts, self.stats
        for status, k in by_status.items():
            counts[status] = counts.get(status, 0) + k
        if part is not None:
            stats.total += n
            part.kinds = tags
        stats.cached += n
        stats.done += n
        stats.refresh()
        return True

    def stored_already(
        self,
        chunk: Sequence[Any],
        calls: Sequence[PlannedCall],
        start: int,
        digest: str | None = None,
        unit: _MemoUnit | None = None,
    ) -> list[PlannedCall]:
        """Count the tasks whose judgments are all stored as read from their call; return
        the calls of the others (to look up, replay or send as usual). With the window's memo
        ``digest``, record its (call key, judgment id) pairs for the next rerun; with a memo
        ``unit``, add them to its pairs (None once a task names no judgment)."""
        identify = self.identify
        assert identify is not None
        stored = judged(self.store, [call.key for call in calls])
        live, counts, in_plan = self.live, self.counts, self.in_plan
        rest: list[PlannedCall] = []
        hits = 0
        pairs: list[tuple[str, str]] | None = [] if digest is not None else unit.pairs if unit is not None else None
        for i, (task, call) in enumerate(zip(chunk, calls, strict=True), start):
            key = call.key
            wanted = identify(task)
            if pairs is not None:
                if wanted:
                    pairs.extend([(key, ident) for ident in wanted])
                else:
                    pairs = None
            found = [stored.get((key, ident)) for ident in wanted]
            statuses = [status for status in found if status is not None]
            if wanted and len(statuses) == len(found):
                hits += 1
                in_plan(wanted)
                for status in statuses:
                    counts[status] = counts.get(status, 0) + 1
            else:
                live[id(call)] = (i, task, wanted)
                rest.append(call)
        stats = self.stats
        stats.cached += hits
        stats.done += hits
        stats.refresh()
        if unit is not None:
            unit.pairs = pairs
        elif pairs is not None and self.memo is not None and digest is not None:
            self.writer.submit(partial(self.memo.write, digest, len(chunk), pairs), self.written)
        return rest

    # -- the phase ----------------------------------------------------------------------------------
    async def run(self) -> JudgingOutcome:
        """Judge every window through the runner's executor; the phase's outcome."""
        runner, writer, memo = self.runner, self.writer, self.memo
        try:
            await runner._executor(self.stats, writer, shared=not self.own_writer).run_windows(
                self.streamed_windows() if self.streamed else self.windows(), self.take, refill_below=2 * self.window
            )
            self.check_replayed()
            self.in_plan((), last=True)
            if memo is not None:
                memo.resolve(self.plan)  # the judgment ids of the units counted from the memo
            self.flush()
            await writer.drain()
            if self.failures:
                raise self.failures[0]
        finally:
            self.flush()  # what was read before an error or a cancellation is kept too
            if self.own_writer:
                writer.close()  # (blocks until the queued writes are done)
        done = [j for made in self.per_task if made for j in made]
        return JudgingOutcome(
            judgments=done,
            call_keys=self.call_keys,
            stats=self.stats,
            counts=dict(sorted(self.counts.items())),
            plan=self.plan,
            memo_hits=memo.hits if memo is not None else 0,
        )
