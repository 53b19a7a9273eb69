"""Executing model calls through the store's cache: lookup, bounded concurrency, retries, commit.

A `PlannedCall` is one request to one experiment model with its replicate index and cache key
(`plan_call`). `CallExecutor.run` looks every key up in one batched read; stored ok
calls are delivered straight from the cache, and the others (missing, or stored as failed by an
earlier run) are sent through their model's `Endpoint`: ``concurrency`` workers, the endpoint's
rate limits, and retries of transient failures with exponential backoff and jitter. Each call is
committed to the store (ok, or failed with its last error, its attempt count and every attempt's
error) *before* it is handed to the caller's ``on_result`` callback, so a crash between the two
loses nothing used: the next run finds the call in the cache. The commits run on a store writer
thread (`nepotism.store.writer.StoreWriter`): a worker hands its answered call over and sends
the next one, and the call is delivered when its transaction is reported committed. Cancellation
leaves only whole rows, and the calls answered before it are still committed (never delivered).
Before sending, a worker claims the call in the store (`Store.claim_calls`, a renewed lease, for
the next calls of its queue at once): a
call another process is sending is not sent again but waited for and then read from the store,
so two processes running the same experiment on one store never pay for one call twice.
`CallExecutor.run_windows` takes the calls a window at a time (the judging phase renders each
window only when it is asked for): a window is looked up and its cached calls delivered, its other
calls queued, and the next window taken as soon as fewer than ``refill_below`` calls wait, so the
queues never drain between windows; a key already queued or in flight is joined, not sent again,
and a key that failed earlier in the run is delivered as that failure.

What a SIGKILL can cost is bounded by the slots: a call holds its endpoint's concurrency slot
(`Limiter`) from being sent until its answer is committed, not only while it is sent, so the calls
answered and not yet stored, with those being answered, are never more than the endpoints'
concurrency summed (an endpoint without a limiter: one slot, per executor) — a killed run re-pays
at most those (docs/scale.md, "What a kill or a full disk can cost").

Sending costs little CPU besides the HTTP client, and the event loop never waits for SQLite:
claims are taken for the next calls of a queue in one transaction (`Store.claim_calls`) on the
store writer's thread, half a chunk ahead of the workers (`_claim`); answered calls are
committed a group at a time in one transaction that also ends their claims, the calls answered
while one group commits going together as the next (group commit, `_commit`, on the writer
thread; a group is at most the slots, and the workers wait when the writer is
`StoreWriter.max_pending` writes behind),
and while calls are in flight the objects made before (the plan) are frozen out of the garbage
collector's scans (`_freeze_gc`).

Cache hits are replayed synchronously in one loop (no task per call): the rows come from one
batched read of only the columns a completion needs (`nepotism.store.fastread`), and each
`Completion` is assembled from those already-validated values and checked by its own
``__post_init__`` rather than rebuilt field by field.

Left out: judging (callers interpret completions) and generation bookkeeping (see
`nepotism.runner.engine`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import random
import socket
import uuid
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from nepotism._gc import freeze as _freeze_gc, pause as _pause_gc, resume as _resume_gc, thaw as _thaw_gc
from nepotism.backends.base import Backend, Completion, Request, failed
from nepotism.credentials import is_secret_name, redact_text
from nepotism.runner._replay import _LazyJSON, _replayed
from nepotism.runner.limits import Limiter, estimate_tokens
from nepotism.runner.progress import RunStats
from nepotism.runner.retry import RetryPolicy, asked_wait, is_retryable
from nepotism.store import CLAIM_LEASE_S, CachedCall, Store, StoreFullError, StoreWriteError
from nepotism.store.fastread import call_rows
from nepotism.store.writer import StoreWriter

__all__ = [
    "CLAIM_CHUNK",
    "CallExecutor",
    "CallResult",
    "Endpoint",
    "PlannedCall",
    "call_record",
    "completion_from_cached",
    "plan_call",
    "request_key",
]

_log = logging.getLogger("nepotism.runner")
#: calls claimed ahead in one store transaction (`CallExecutor._claim`): enough for the workers of
#: a model at C = 128 to go on for a few transactions of the writer while the next chunk's claim
#: waits its turn there (at 64, a call waited 6 ms for its claim on average at 2,000 calls/s)
CLAIM_CHUNK = 256
_KEY_PREFIX = b"nepotism-runner-call-v1\x00"
# memo of the JSON of a request's parameters (few distinct ones per run), by their values
_HEADS: dict[tuple[object, ...], bytes] = {}
_SCALARS = (str, int, float, bool, type(None))
# memo of the JSON of a tuple of message roles, by the tuple
_ROLES: dict[tuple[str, ...], str] = {}


@dataclass
class Endpoint:
    """One experiment model as the runner sees it: its backend, limits, retry policy and prices.

    ``kind`` (``openai``, ``gguf``, ...) and ``served_model`` (the server-side name) go into cache
    keys; the base URL and credentials do not, so moving a model to another server of the same
    kind keeps the cache.
    """

    model: str
    backend: Backend | None
    kind: str
    served_model: str | None = None
    limiter: Limiter | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None

    def cost(self, usage: Mapping[str, Any] | None) -> float:
        """US dollars for a call's token ``usage`` (0 when the registry has no price)."""
        if not usage:
            return 0.0
        cost = 0.0
        if self.price_input_per_mtok:
            cost += float(usage.get("prompt_tokens", 0) or 0) * self.price_input_per_mtok / 1e6
        if self.price_output_per_mtok:
            cost += float(usage.get("completion_tokens", 0) or 0) * self.price_output_per_mtok / 1e6
        return cost


@dataclass(frozen=True, slots=True)
class PlannedCall:
    """One call the experiment needs: which model, what request, which replicate, its cache key."""

    key: str
    model: str
    request: Request
    replicate: int = 0


@dataclass(frozen=True, slots=True)
class CallResult:
    """A call's outcome: its completion, whether it came from the cache, and how many attempts
    this run made (0 for a cache hit)."""

    call: PlannedCall
    completion: Completion
    cached: bool
    attempts: int


def _request_record(endpoint: Endpoint, request: Request, replicate: int) -> dict[str, Any]:
    material = request.key_material()
    material["backend"] = endpoint.kind
    material["model"] = endpoint.model
    material["served_model"] = endpoint.served_model
    material["replicate"] = replicate
    return material


def request_key(endpoint: Endpoint, request: Request, replicate: int = 0) -> str:
    """The 64-hex-digit cache key of sending ``request`` to ``endpoint`` as replicate ``replicate``.

    SHA-256 over a canonical JSON header (backend kind, experiment model id, server-side model
    name, every request parameter except credentials and except the texts), the message roles,
    text lengths and replicate index, then the message texts (or the prompt) as UTF-8. Hashing
    the texts raw rather than inside JSON keeps long prompts cheap; the lengths make the framing
    unambiguous. Replicates are separate calls (real re-samples);
    the base URL and credentials are left out, so moving a model to another server keeps the
    cache.
    """
    if type(replicate) is not int or replicate < 0:
        raise ValueError(f"replicate must be a non-negative integer, not {replicate!r}")
    if request.messages is not None:
        roles: tuple[str, ...] | None = tuple(m.role for m in request.messages)
        texts = [m.content for m in request.messages]
    else:
        roles, texts = None, [request.prompt or ""]
    extra = request.extra
    static: tuple[object, ...] | None = None
    head = None
    if not extra or all(type(v) in _SCALARS for v in extra.values()):  # memo only when 1 vs 1.0 cannot clash
        static = (
            endpoint.kind,
            endpoint.model,
            endpoint.served_model,
            request.max_tokens,
            float(request.temperature),
            request.seed,
            request.labels,
            request.continuation,
            request.labels_after,
            tuple(sorted((k, type(v).__name__, v) for k, v in extra.items())) if extra else (),
        )
        head = _HEADS.get(static)
    if head is None:
        head = json.dumps(
            {
                "backend": endpoint.kind,
                "model": endpoint.model,
                "served_model": endpoint.served_model,
                "max_tokens": request.max_tokens,
                "temperature": float(request.temperature),
                "seed": request.seed,
                "labels": None if request.labels is None else list(request.labels),
                "continuation": request.continuation,
                "extra": {k: extra[k] for k in sorted(extra) if not is_secret_name(k)},
                # only when set, so that every other call keeps its key
                **({} if request.labels_after is None else {"labels_after": request.labels_after}),
            },
            sort_keys=True,
            separators=(",", ":"),
            default=str,
        ).encode()
        if static is not None and len(_HEADS) < 4096:
            _HEADS[static] = head
    digest = hashlib.sha256(_KEY_PREFIX)
    digest.update(head)
    digest.update(b"\x00")
    digest.update(_shape(roles, texts, replicate))
    for text in texts:
        digest.update(b"\x00")
        digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _shape(roles: tuple[str, ...] | None, texts: list[str], replicate: int) -> bytes:
    """``json.dumps([roles, [len(t) for t in texts], replicate], separators=(",", ":"))`` as
    bytes, with the roles' JSON memoised (a test holds the two equal)."""
    if roles is None:
        head = "null"
    elif all(type(r) is str for r in roles):
        memo = _ROLES.get(roles)
        if memo is None:
            memo = json.dumps(list(roles), separators=(",", ":"))
            if len(_ROLES) < 1024:
                _ROLES[roles] = memo
        head = memo
    else:  # not what a Message should hold, but hashed as it always was
        head = json.dumps(list(roles), separators=(",", ":"))
    lengths = ",".join([str(len(t)) for t in texts])
    return f"[{head},[{lengths}],{replicate}]".encode()


def plan_call(endpoint: Endpoint, request: Request, *, replicate: int = 0) -> PlannedCall:
    """The `PlannedCall` (with its `request_key`) for sending ``request`` to ``endpoint``."""
    return PlannedCall(request_key(endpoint, request, replicate), endpoint.model, request, replicate)


def _read_record(completion: Completion) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if completion.label_logprobs is not None:
        out["labels"] = dict(completion.label_logprobs)
    if completion.continuation_logprobs is not None:
        out["continuation"] = list(completion.continuation_logprobs)
    if completion.finish_reason is not None:
        out["finish_reason"] = completion.finish_reason
    if completion.warnings:
        out["warnings"] = list(completion.warnings)
    return out


def call_record(
    endpoint: Endpoint,
    call: PlannedCall,
    completion: Completion,
    errors: Sequence[str] = (),
    run_id: str | None = None,
) -> dict[str, Any]:
    """The `Store.put_call` keyword arguments (plus ``key``) that store ``completion`` for
    ``call``; ``errors`` are the errors of the attempts before the last (the last one too, for a
    failed call)."""
    return {"key": call.key, **_store_kwargs(endpoint, call, completion, list(errors), run_id)}


def _store_kwargs(
    endpoint: Endpoint, call: PlannedCall, completion: Completion, errors: list[str], run_id: str | None
) -> dict[str, Any]:
    response = {
        "body": dict(completion.raw),
        "attempts": len(errors) + (1 if completion.ok else 0),
        "errors": list(errors),
    }
    return {
        "request": _request_record(endpoint, call.request, call.replicate),
        "response": response,
        "text": completion.text,
        "logprobs": _read_record(completion),
        "usage": dict(completion.usage),
        "latency_s": completion.latency_s,
        "status": completion.status,
        "error": completion.error,
        "run_id": run_id,
    }


def completion_from_cached(cached: CachedCall) -> Completion:
    """Rebuild the `Completion` a stored call was made from.

    The stored columns: ``text``; ``logprobs`` = ``{labels, continuation, finish_reason,
    warnings}`` (each only when present); ``usage``; ``response`` = ``{body, attempts, errors}``
    where ``body`` is the server's raw answer. ``raw`` and ``usage`` are decoded on first use.
    """
    read = json.loads(cached.logprobs_json) if cached.logprobs_json else {}
    labels = read.get("labels")
    continuation = read.get("continuation")
    ok = cached.status == "ok"
    return Completion(
        text=cached.text,
        label_logprobs=labels,
        continuation_logprobs=None if continuation is None else tuple(continuation),
        usage=_LazyJSON(cached.usage_json),
        latency_s=cached.latency_s or 0.0,
        raw=_LazyJSON(cached.response_json, "body"),
        status="ok" if ok else "failed",
        error=None if ok else cached.error,
        finish_reason=read.get("finish_reason"),
        warnings=tuple(read.get("warnings") or ()),
    )


def _retrieved(future: asyncio.Future[None]) -> None:
    """Mark a claim's error as seen (it is raised to the workers that wait for that claim; a
    claim made ahead that nobody waited for would otherwise be logged as never retrieved)."""
    if not future.cancelled():
        future.exception()


def _raise_if_cancelled(task: asyncio.Task[Any] | None = None) -> None:
    """Re-raise a cancellation (Ctrl-C) that a backend's client library turned into an ordinary
    failure: aiohttp and ``asyncio.timeout`` can report a cancelled request as a timeout or a
    dropped connection, which would otherwise be retried and the interrupt lost. ``task`` is the
    current task when the caller knows it (a worker looks it up once, not once per call)."""
    if task is None:
        task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class _NotSent(Exception):
    """A call not sent because the store's disk filled up while it waited for a slot."""


class CallExecutor:
    """Run planned calls through the cache and the endpoints, committing each before use."""

    def __init__(
        self,
        store: Store,
        endpoints: Mapping[str, Endpoint],
        *,
        run_id: str | None = None,
        stats: RunStats | None = None,
        seed: int = 0,
        offline: bool = False,
        writer: StoreWriter | None = None,
    ) -> None:
        self.store = store
        self.endpoints = dict(endpoints)
        self.run_id = run_id
        self.stats = stats or RunStats()
        self._rng = random.Random(seed)
        # claims on calls in the store: another process running the same calls waits instead of
        # sending them again (see Store.claim_call)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.claim_lease_s = CLAIM_LEASE_S
        self.claim_poll_s = 0.25
        #: calls claimed in one store transaction (see `_claim`)
        self.claim_chunk = CLAIM_CHUNK
        self._states: dict[str, str] = {}
        #: keys whose claim is on its way (on the writer thread), to the future of that claim
        self._claiming: dict[str, asyncio.Future[None]] = {}
        #: the store writes of the live calls run here, off the event loop (see `_commit`); a
        #: caller may share its own (the judging phase writes its judgments there too)
        self.writer = writer
        self._writing: StoreWriter | None = None
        self._batch: list[dict[str, Any]] = []
        self._waiting: list[tuple[Endpoint, list[PlannedCall], Completion, int]] = []
        self._flush_due = False
        #: groups of calls submitted to the writer and not committed yet (one at a time, see `_commit`)
        self._committing = 0
        #: each model's concurrency slots, held by a call from sending to its commit: the
        #: endpoint's limiter, or one slot for an endpoint without
        self._slots = {model: ep.limiter or Limiter(1) for model, ep in self.endpoints.items()}
        #: slots held by answered calls not yet reported committed, per model, and the round of
        #: `run_windows` they belong to (a report arriving after its round ended gives back nothing:
        #: the round's end gave its slots back)
        self._held: dict[str, int] = {}
        self._round = 0
        self._on_result: Callable[[CallResult], None] | None = None
        self._delivering = False
        self._error: BaseException | None = None
        self._workers: list[asyncio.Task[None]] = []
        self._deferred: dict[str, list[list[PlannedCall]]] = {}
        # the windows of one `run_windows`: calls waiting per model, how many, keys queued or in
        # flight (a later call with the key joins them), keys failed in this run
        self._queues: dict[str, deque[list[PlannedCall]]] = {}
        self._queued = 0
        self._refill_below = 0
        self._live: dict[str, list[PlannedCall]] = {}
        self._failed_here: dict[str, Completion] = {}
        self._producing = False
        self._want = asyncio.Event()
        self._wake = asyncio.Event()
        self._failed = asyncio.Event()  # set by `_fail`
        #: send nothing: calls stored as failed are delivered as those failures, and a call not
        #: stored at all is an error (a run finished from batch results, `nepotism.runner.batch`)
        self.offline = offline
        #: freeze the collector while calls are in flight (`_freeze_gc`); off when the caller
        #: does it for several executors at once (`Runner.generate_and_judge`)
        self.manage_gc = True

    def lookup(self, calls: Iterable[PlannedCall]) -> dict[str, CachedCall]:
        """The stored calls among ``calls`` (ok and failed), by key, in one batched query."""
        return self.store.get_calls([c.key for c in calls])

    async def run(self, calls: Sequence[PlannedCall], on_result: Callable[[CallResult], None]) -> None:
        """Deliver a `CallResult` for every call to ``on_result`` (cached ones first).

        Calls sharing a key are sent once and delivered to each of them. Calls whose model has
        no endpoint raise `KeyError` before anything is sent.
        """
        await self.run_windows([calls], on_result)

    async def run_windows(
        self,
        windows: Iterable[Sequence[PlannedCall]] | AsyncIterable[Sequence[PlannedCall]],
        on_result: Callable[[CallResult], None],
        *,
        refill_below: int = 2048,
    ) -> None:
        """`run` over calls that come a window at a time (``windows`` may be a generator that
        renders each window when asked for it), so the calls never all exist at once.
        ``windows`` may also be an asynchronous iterable whose windows come as they become
        ready (judging while the responses it needs are still generated,
        `Runner.generate_and_judge`): the calls already queued go on meanwhile, and a failure
        of theirs stops the run without waiting for the next window.

        Each window is looked up in the cache in one batched read, its cached calls delivered at
        once and the others queued; the next window is taken as soon as fewer than
        ``refill_below`` calls wait to be sent, so the queues are refilled before they drain and
        every slot stays busy across windows. A key queued or in flight is not sent again for a
        later window: the later call joins it and is delivered with it; a key answered earlier in
        the run is read back from the store (a failure of this run is delivered as that failure,
        not sent again).
        """
        self._on_result, self._delivering, self._error = on_result, True, None
        self._queues, self._live, self._failed_here, self._queued = {}, {}, {}, 0
        self._refill_below = refill_below
        self._producing = True
        self._want = asyncio.Event()  # set when the queues run low (or the run fails)
        self._failed = asyncio.Event()  # set when the run fails (`_fail`)
        self._wake = asyncio.Event()  # replaced after each refill: idle workers wait on it
        self._workers = workers = []
        per_model: dict[str, int] = {}
        writer: StoreWriter | None = None
        own_writer = self.writer is None
        renewer: asyncio.Task[None] | None = None
        frozen = None
        each = self._each(windows)
        try:
            async for window in each:
                pending = self._take_window(window, on_result)
                if not pending:
                    continue
                if self.offline:
                    self._replay_failures(pending, on_result)
                    continue
                if writer is None:  # the first call to send: start the sending machinery
                    self._writing = writer = StoreWriter(self.store) if own_writer else self.writer
                    renewer = asyncio.create_task(self._renew_claims())
                    frozen = _freeze_gc() if self.manage_gc else None
                for key, group in pending.items():
                    self._live[key] = group
                    self._queues.setdefault(group[0].model, deque()).append(group)
                self._queued += len(pending)
                for model, queue in self._queues.items():
                    n = self._slots[model].concurrency
                    have = per_model.get(model, 0)
                    for _ in range(min(n, have + len(queue)) - have):
                        worker = asyncio.create_task(self._worker(self.endpoints[model], queue))
                        worker.add_done_callback(self._worker_done)
                        workers.append(worker)
                    per_model[model] = max(have, min(n, have + len(queue)))
                self._wake.set()
                self._wake = asyncio.Event()
                await asyncio.sleep(0)  # let the workers send what is queued before the next window
                while (
                    self._queued >= refill_below
                    and self._error is None
                    and not self.store.low_space
                    and not all(w.done() for w in workers)
                ):
                    self._want.clear()
                    await self._want.wait()
                if self._error is not None:
                    raise self._error
                if self.store.low_space:
                    break  # (a full disk: the workers send nothing more; raised below)
            self._producing = False
            self._wake.set()
            if not workers:
                return
            await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
            for worker in workers:
                error = worker.exception() if worker.done() and not worker.cancelled() else None
                if error is not None:
                    raise error
            if self._error is not None:
                raise self._error
            self._flush()
            assert writer is not None
            await writer.drain()  # every answered call committed and delivered
            if self._error is not None:
                raise self._error
        finally:
            await each.aclose()  # (a window source left unfinished by an error is closed)
            self._producing = False
            self._delivering = False  # from here on calls are still committed, never used
            _thaw_gc(frozen)
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            if writer is not None:
                self._flush(now=True)
                if own_writer:
                    writer.close()  # runs the writes still queued: an answered call is kept
            self._end_round()
            if renewer is not None:
                renewer.cancel()
                await asyncio.gather(renewer, return_exceptions=True)
                try:
                    self.store.release_claims(self.owner)
                except StoreWriteError:
                    pass  # (a full disk: the claims expire on their own)
        if self.store.low_space:
            raise self.store.full_disk_error()

    def _end_round(self) -> None:
        """Give back the slots of answered calls whose commit was not reported (a run stopped by
        an error or a cancellation: their writes are queued or done, their reports may never
        run): the endpoints' limiters are shared with the run's other phases."""
        for model, held in self._held.items():
            for _ in range(held):
                self._slots[model].release()
        self._held = {}
        self._round += 1

    async def _each(
        self, windows: Iterable[Sequence[PlannedCall]] | AsyncIterable[Sequence[PlannedCall]]
    ) -> AsyncGenerator[Sequence[PlannedCall], None]:
        """The windows of `run_windows`, one at a time. An asynchronous iterable's next window
        is awaited together with the run's failure (`_fail`): a worker that raises while the
        windows are still to come stops the run at once."""
        if not isinstance(windows, AsyncIterable):
            for window in windows:
                yield window
            return
        source = aiter(windows)
        try:
            while True:
                if self._error is not None:
                    raise self._error
                upcoming = asyncio.ensure_future(anext(source))
                failure = asyncio.ensure_future(self._failed.wait())
                try:
                    await asyncio.wait((upcoming, failure), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    failure.cancel()
                    if not upcoming.done():
                        upcoming.cancel()
                        await asyncio.gather(upcoming, return_exceptions=True)
                if upcoming.cancelled():
                    assert self._error is not None
                    raise self._error
                try:
                    window = upcoming.result()
                except StopAsyncIteration:
                    return
                yield window
        finally:
            close = getattr(source, "aclose", None)
            if close is not None:
                await close()

    def _take_window(self, calls: Sequence[PlannedCall], on_result: Callable[[CallResult], None]) -> dict[str, list[PlannedCall]]:
        """Look ``calls`` up in one batched read and deliver the stored ok ones; return the
        others grouped by key, leaving out those that join a call queued or in flight (`_live`)
        or that failed earlier in this run (delivered that failure)."""
        missing = {c.model for c in calls} - set(self.endpoints)
        if missing:
            raise KeyError(f"no endpoint for model(s) {sorted(missing)}")
        pending: dict[str, list[PlannedCall]] = {}
        hits = 0
        live, failed_here = self._live, self._failed_here
        # reading and replaying the cache allocates much and frees little: no cycle scans meanwhile
        paused = _pause_gc()
        try:
            rows = call_rows(self.store, [c.key for c in calls])
            for call in calls:
                key = call.key
                row = rows.get(key)
                if row is not None and row[5] == "ok":
                    hits += 1
                    on_result(CallResult(call, _replayed(row), True, 0))
                elif key in live:
                    live[key].append(call)
                elif key in failed_here:
                    self._deliver_copy(call, failed_here[key], on_result)
                else:
                    pending.setdefault(key, []).append(call)
        finally:
            _resume_gc(paused)
            self.stats.cached += hits
            self.stats.done += hits
        self.stats.refresh()
        return pending

    def _deliver_copy(self, call: PlannedCall, completion: Completion, on_result: Callable[[CallResult], None]) -> None:
        """Deliver a call that failed earlier in this run to a later call with its key (not sent again)."""
        self.stats.failure_delivered(completion, shared=True)
        on_result(CallResult(call, completion, False, 0))

    def _worker_done(self, worker: asyncio.Task[None]) -> None:
        """A worker that raised stops the run (`_fail`), also while windows are still coming."""
        error = None if worker.cancelled() else worker.exception()
        if error is not None:
            self._fail(error)
        self._want.set()  # (the windows wait on the workers: let them look again)

    def _replay_failures(self, pending: Mapping[str, list[PlannedCall]], on_result: Callable[[CallResult], None]) -> None:
        """Offline: deliver each stored failure as it was stored (counted as failed, not sent)."""
        stored = self.store.get_calls(list(pending))
        missing = [key for key in pending if key not in stored]
        if missing and self.store.readonly:  # (a run served from a read-only store)
            raise self.store.cannot_write(len(missing), "calls (to send, then store)")
        if missing:
            raise RuntimeError(
                f"{len(missing)} calls have no stored answer (first {missing[0][:12]}…); an offline run needs every call stored"
            )
        for key, group in pending.items():
            completion = completion_from_cached(stored[key])
            self.stats.failure_delivered(completion, copies=len(group))
            for same in group:
                on_result(CallResult(same, completion, True, 0))
        self.stats.refresh()

    async def _renew_claims(self) -> None:
        """Keep this executor's claims alive while it runs (a third of the lease apart), on the
        writer thread (see `_claim`); a renewal that fails is left to the next one."""
        assert self._writing is not None
        store, owner, writer = self.store, self.owner, self._writing
        while True:
            await asyncio.sleep(self.claim_lease_s / 3)
            writer.submit(lambda: store.renew_claims(owner, lease_s=self.claim_lease_s), lambda error: None)

    def _commit(self, record: dict[str, Any], delivery: tuple[Endpoint, list[PlannedCall], Completion, int]) -> None:
        """Store one answered call, then (once committed) deliver it; returns at once.

        Group commit: the calls are stored a group at a time in one transaction
        (`Store.put_calls`, which also ends this executor's claims on them) on the store writer's
        thread (`nepotism.store.writer.StoreWriter`), so the loop goes on sending meanwhile, and
        one group at a time: the calls answered while a group commits wait in `_batch` and go
        together as the next group once it has committed (`_committed`). So the writer commits
        as often as it can and no more — at 2,000 calls/s a transaction per turn of the loop was
        several hundred small transactions a second, each writing the same index pages to the
        WAL again, and the claims and judgments queued behind them waited. Only when its
        transaction has committed are a group's calls counted and handed to ``on_result``
        (`_committed`): none is used before it is stored. A failed commit (a full disk) stops the
        run with that error. Each call holds its endpoint's slot until then (`_committed` gives it
        back): a group is never more calls than the slots."""
        self._batch.append(record)
        self._waiting.append(delivery)
        if not self._flush_due and not self._committing:
            self._flush_due = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self, *, now: bool = False) -> None:
        """Submit `_batch` as the next group, unless a group is committing (then it goes once
        that one has, from `_committed`); ``now``: submit it anyway (the run is ending)."""
        self._flush_due = False
        if not self._batch or (self._committing and not now):
            return
        batch, waiting = self._batch, self._waiting
        self._batch, self._waiting = [], []
        store, owner = self.store, self.owner
        assert self._writing is not None
        self._committing += 1
        round_ = self._round

        def done(error: BaseException | None) -> None:
            self._committed(waiting, error, round_)

        self._writing.submit(lambda: store.put_calls(batch, release_owner=owner), done)

    def _committed(
        self, waiting: list[tuple[Endpoint, list[PlannedCall], Completion, int]], error: BaseException | None, round_: int
    ) -> None:
        """On the loop, once a group of calls is committed (or failed to be): give back their
        slots, submit the calls answered meanwhile as the next group, then count and deliver this
        group's, unless the run is ending; any error stops the run (`_fail`)."""
        self._committing -= 1
        if round_ == self._round:
            slots, held = self._slots, self._held
            for endpoint, *_ in waiting:
                slots[endpoint.model].release()
                held[endpoint.model] -= 1
        if error is None and self._writing is not None and not self._writing.closed:
            self._flush()
        if error is not None:
            if isinstance(error, StoreFullError):  # (no room was set aside: `Store.reserve_space`)
                self.store.lost += len(waiting)
                error = self.store.full_disk_error()
            self._fail(error)
            return
        if not self._delivering:
            return
        on_result = self._on_result
        assert on_result is not None
        try:
            for endpoint, group, completion, attempts in waiting:
                key = group[0].key
                self._live.pop(key, None)
                if not completion.ok:
                    self._failed_here[key] = completion
                self.stats.record(completion, endpoint.cost(completion.usage), copies=len(group))
                for same in group:
                    on_result(CallResult(same, completion, False, attempts))
        except BaseException as exc:  # raised by run(), as if the worker had raised it
            self._fail(exc)

    def _fail(self, error: BaseException) -> None:
        """Stop the run: keep the first error (`run` raises it) and cancel the workers."""
        if self._error is None:
            self._error = error
        self._delivering = False
        self._want.set()
        self._failed.set()
        for worker in self._workers:
            worker.cancel()

    async def _claim(self, group: list[PlannedCall], queue: deque[list[PlannedCall]]) -> str:
        """The claim state of ``group``'s call: claimed ahead together with the next calls in
        ``queue`` (up to `claim_chunk` in one store transaction, `Store.claim_calls`), so a run
        does not pay one transaction per call; another process running the same calls still
        gets the ones this one has not reached.

        The claims run on the store writer's thread, in order with the calls' writes: on the
        event loop a claim waited for SQLite's write lock whenever the writer held it (the busy
        handler sleeping 1, 2, 5, 10... ms), and nothing was sent or read meanwhile. A call whose
        claim is on its way waits for that claim, not for one of its own; when fewer than half
        a chunk of claimed calls is left ahead in ``queue``, the next chunk is claimed at once."""
        key = group[0].key
        while (state := self._states.pop(key, None)) is None:
            waiting = self._claiming.get(key)
            if waiting is None:
                waiting = self._claim_ahead([key] + [g[0].key for g in islice(queue, self.claim_chunk - 1)])
            await asyncio.shield(waiting)
        if len(queue) > self.claim_chunk // 2:  # claim the next chunk before the workers reach it
            ahead = queue[self.claim_chunk // 2][0].key
            if ahead not in self._states and ahead not in self._claiming:
                keys = []
                for g in queue:
                    k = g[0].key
                    if k not in self._states and k not in self._claiming:
                        keys.append(k)
                        if len(keys) == self.claim_chunk:
                            break
                self._claim_ahead(keys)
        return state

    def _claim_ahead(self, keys: list[str]) -> asyncio.Future[None]:
        """Claim ``keys`` on the writer thread; the future is done once their states are known
        (in `_states`), or carries the store's error."""
        assert self._writing is not None
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.add_done_callback(_retrieved)
        found: dict[str, str] = {}
        store, owner, lease = self.store, self.owner, self.claim_lease_s
        for k in keys:
            self._claiming[k] = done

        def reported(error: BaseException | None) -> None:
            for k in keys:
                self._claiming.pop(k, None)
            if error is not None:
                if not done.done():
                    done.set_exception(error)
                return
            self._states.update(found)
            if not done.done():
                done.set_result(None)

        self._writing.submit(lambda: found.update(store.claim_calls(keys, owner, lease_s=lease)), reported)
        return done

    async def _worker(self, endpoint: Endpoint, queue: deque[list[PlannedCall]]) -> None:
        on_result = self._on_result
        assert on_result is not None and self._writing is not None
        writer = self._writing
        me = asyncio.current_task()
        deferred = self._deferred.setdefault(endpoint.model, [])
        while not self.store.low_space:  # a full disk: send nothing more, keep what is answered
            if queue:
                group = queue.popleft()
                self._queued -= 1
                if self._queued < self._refill_below:
                    self._want.set()  # the next window, before the queues drain
                call = group[0]
                state = await self._claim(group, queue)
            elif deferred:
                # calls another process is sending: ask again after a pause
                group = deferred.pop(0)
                await asyncio.sleep(self.claim_poll_s)
                call = group[0]
                state = self.store.claim_call(call.key, self.owner, lease_s=self.claim_lease_s)
            elif self._producing:  # more windows are coming
                self._want.set()
                await self._wake.wait()
                continue
            else:
                return
            if state == "busy":
                deferred.append(group)
                continue
            if state == "done":  # another process stored it meanwhile
                cached = self.store.get_call(call.key)
                if cached is not None and cached.ok:
                    self._live.pop(call.key, None)
                    self._deliver_cached(group, completion_from_cached(cached), on_result)
                    continue
            try:
                completion, errors = await self._attempts(endpoint, call, me)  # (holding a slot)
            except _NotSent:  # the disk filled meanwhile
                return
            self._held[endpoint.model] = self._held.get(endpoint.model, 0) + 1
            # committed first, used after (in `_committed`, which gives the slot back): a crash in
            # between loses nothing used, and no more answers than the slots
            attempts = len(errors) + (1 if completion.ok else 0)
            self._commit(
                {"key": call.key, **_store_kwargs(endpoint, call, completion, errors, self.run_id)},
                (endpoint, group, completion, attempts),
            )
            if writer.pending >= writer.max_pending:
                await writer.room()  # the writer is behind: send no more until it catches up

    def _deliver_cached(self, group: list[PlannedCall], completion: Completion, on_result: Callable[[CallResult], None]) -> None:
        self.stats.cached += len(group)
        self.stats.done += len(group)
        self.stats.refresh()
        for same in group:
            on_result(CallResult(same, completion, True, 0))

    async def _attempts(
        self, endpoint: Endpoint, call: PlannedCall, task: asyncio.Task[Any] | None = None
    ) -> tuple[Completion, list[str]]:
        """Send ``call`` until it succeeds or its failure is final; returns holding the slot of its
        last attempt (for the caller to give back once the call is stored), never between
        attempts."""
        errors: list[str] = []
        slots = self._slots[endpoint.model]
        # the estimate only matters to a tokens-per-minute limit
        tokens = estimate_tokens(call.request) if slots.counts_tokens else 1
        policy = endpoint.retry
        while True:
            completion = await self._send(endpoint, call.request, tokens, task)
            if completion.ok:
                return completion, errors
            errors.append(completion.error or "unknown")
            if not is_retryable(completion.error) or len(errors) >= policy.max_attempts:
                return completion, errors
            slots.release()  # (no slot held while waiting to try again)
            delay = policy.delay(len(errors), self._rng)
            asked = asked_wait(completion)
            if asked is not None:
                if asked > policy.max_retry_after_s:
                    return completion, errors
                # never earlier than the server asked; the endpoint's other sends wait too
                delay = max(delay, asked)
                slots.hold(asked)
                self.stats.server_waits += 1
                self.stats.waited_s += asked
            self.stats.retries += 1
            self.stats.refresh()
            await asyncio.sleep(delay)

    async def _send(self, endpoint: Endpoint, request: Request, tokens: int, task: asyncio.Task[Any] | None = None) -> Completion:
        """One attempt, in one of the endpoint's slots, which it returns holding (given back by
        the caller); a cancellation gives it back."""
        slots = self._slots[endpoint.model]
        await slots.acquire(tokens)
        if self.store.low_space:  # the disk filled while this call waited: send nothing more
            slots.release()
            raise _NotSent
        try:
            try:
                if endpoint.backend is None:
                    completion = failed("no_backend: the model has no backend configured")
                else:
                    completion = await endpoint.backend.complete(request)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a backend bug must not take the whole run down
                _log.warning("backend %s raised %s", endpoint.model, type(exc).__name__)
                completion = failed(f"exception:{type(exc).__name__}: {redact_text(str(exc))[:200]}")
            _raise_if_cancelled(task)
        except BaseException:
            slots.release()
            raise
        return completion
