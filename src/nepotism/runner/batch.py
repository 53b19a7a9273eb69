"""Running an experiment through batch files (OpenAI's Batch API, vLLM's offline batch runner).

A batch run goes in rounds, because judge prompts hold the generated answers. A round is never
held whole: it is planned a chunk of instances at a time whenever it is read (as the dry run
plans), so writing or reading the files of a 10M-call round needs memory for its instances, its
distinct keys (≈ 40 bytes each, `judge_plan.KeySet`) and one chunk's prompts, not for its calls. The price is planning
again: counting a round, writing its files, and checking then storing results each plan it once.

1. `plan_round` plans what can be planned now: the generation calls, and — once every generation
   call has an answer stored (ok or failed) — the judge calls too, with the ``[perplexity]``
   step's continuation calls (`nepotism.runner.perplexity`; they score the same answers). Calls
   whose answer is stored ok are done; the others (never answered, or stored as failed) are to send.
2. `write_batch` writes every call to send as OpenAI Batch-API request lines
   (``{"custom_id", "method": "POST", "url", "body"}``), ``custom_id`` being the call's cache key
   (`nepotism.runner.calls.request_key`) and ``body`` exactly what the HTTP backend would send
   (`nepotism.backends.openai_wire.build_body` with the model's server-side name and parameters).
   One file per model and endpoint (a batch holds one model), split at the provider's limits
   (50,000 requests, 200 MB); ``batch.json`` lists the files. Nothing is called and the store is
   not written. The files are written into a hidden folder beside ``out_dir`` and moved in when
   every request is written, so a round that cannot be written leaves nothing behind. A perplexity call goes to ``/v1/completions`` with ``echo`` and ``logprobs`` (the
   raw prompt followed by the response, as the live HTTP backend sends it; ``[perplexity] prompt
   = "chat"`` for a model served over HTTP is refused when the experiment file is read).
3. `read_results` checks the provider's output files (``{"custom_id", "response": {"status_code",
   "body"}, "error"}`` per line) without keeping their bodies: every line must be such an object,
   every ``custom_id`` a call of the round's plan, once (else an `InputError` naming the file and
   line, and nothing is stored). `store_results` then stores them, a chunk of the plan at a time,
   reading each answer again from its file: a 200 body is read as the HTTP backend reads it;
   another status or an ``error`` object is stored as a failed call with its reason
   (``http_5xx:500: ...``, ``batch_error:<code>: <message>``), so a later round or a live run
   retries it. A call stored ok before is left as it is (``already``). Stopped half-way, the
   same files read again store the rest.
4. When no planned call is missing, `nepotism.runner.experiment_run.run_experiment` with
   ``offline=True`` finishes the run from the store: nothing is sent, stored failures stay
   failures.

Left out: uploading files and polling batch jobs (the provider's CLI or SDK does that).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from nepotism.backends.base import Completion, failed
from nepotism.errors import InputError
from nepotism.experiment import Experiment
from nepotism.records import Instance, Response
from nepotism.runner.calls import Endpoint, PlannedCall, call_record
from nepotism.runner.engine import Runner
from nepotism.runner.judge_plan import CHUNK_CALLS, KeySet, _judging, find_sorted, in_chunks
from nepotism.runner.shards import Shard
from nepotism.store import Store
from nepotism.store.fastread import call_statuses

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_FILE_REQUESTS",
    "BatchResults",
    "BatchRound",
    "RoundCounts",
    "plan_round",
    "read_results",
    "store_results",
    "write_batch",
]

#: OpenAI Batch API limits per input file.
MAX_FILE_REQUESTS = 50_000
MAX_FILE_BYTES = 200 * 1024 * 1024
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
_KEY = re.compile(r"[0-9a-f]{64}")
_STORE_EVERY = 2_000  # calls stored per transaction while storing results


@dataclass(frozen=True)
class RoundCounts:
    """A round's distinct planned calls, those with no stored answer at all (``missing``) and
    those to send (not stored ok: missing or stored as failed)."""

    planned: int
    missing: int
    to_send: int


@dataclass
class BatchRound:
    """What can be planned now: ``phase`` (``generate`` until every generation call has a stored
    answer, then ``judge``, whose plan holds the generation calls too). `chunks` plans it again,
    a chunk of instances at a time; `counts` (one pass, kept) says how much of it is answered."""

    phase: str
    endpoints: dict[str, Endpoint] = field(repr=False)
    store: Store = field(repr=False)
    plan: Callable[[], Iterator[list[PlannedCall]]] = field(repr=False)
    _counts: RoundCounts | None = field(default=None, repr=False)

    def chunks(self) -> Iterator[list[PlannedCall]]:
        """The round's calls a chunk at a time, each key once (a call planned in an earlier chunk
        — instances with the same prompt share calls — is left out: it is sent once)."""
        seen = KeySet()
        for calls in self.plan():
            fresh = seen.add([c.key for c in calls])
            yield [call for call, new in zip(calls, fresh, strict=True) if new]

    def with_status(self) -> Iterator[tuple[list[PlannedCall], dict[str, str]]]:
        """`chunks`, each with the stored status (``ok``/``failed``) of its calls that have one."""
        for calls in self.chunks():
            yield calls, call_statuses(self.store, [c.key for c in calls])

    @property
    def counts(self) -> RoundCounts:
        if self._counts is None:
            planned = missing = to_send = 0
            for calls, status in self.with_status():
                planned += len(calls)
                missing += sum(1 for c in calls if c.key not in status)
                to_send += sum(1 for c in calls if status.get(c.key) != "ok")
            self._counts = RoundCounts(planned, missing, to_send)
        return self._counts

    @property
    def missing(self) -> int:
        return self.counts.missing

    @property
    def to_send(self) -> int:
        return self.counts.to_send

    @property
    def complete(self) -> bool:
        """Every call of the whole experiment has a stored answer (a run can finish offline)."""
        return self.phase == "judge" and self.missing == 0


def plan_round(
    experiment: Experiment,
    store: Store,
    *,
    dataset: tuple[list[Instance], list[Response]] | None = None,
    shard: Shard | None = None,
    registry: Any = None,
    judging: Any = None,
    chunk_calls: int = CHUNK_CALLS,
) -> BatchRound:
    """The current round of ``experiment`` against ``store`` (see the module docstring). The
    generation calls are counted here (they decide the phase); a judge round is counted when
    asked (`BatchRound.counts`), or while its files are written."""
    from nepotism.models import load_registry
    from nepotism.runner import experiment_run as er

    judging = judging or _judging()
    registry = registry or load_registry(experiment.registry_files)
    instances, recorded = dataset if dataset is not None else er.load_dataset(experiment, store)
    instances, recorded = er._in_shard(shard, instances, recorded)
    endpoints = er.build_endpoints(experiment, registry, connect=False)
    runner = Runner(store, endpoints)
    chunks = er._PlanChunks(store, experiment, runner, judging, recorded)

    def generation() -> Iterator[list[PlannedCall]]:
        return in_chunks(instances, lambda part: [call for call, _, _ in chunks.generation(part)[1]], calls=chunk_calls)

    first = BatchRound("generate", endpoints, store, generation)
    if first.missing:
        return first

    def judge() -> Iterator[list[PlannedCall]]:
        # every generation call is answered: the judge calls are planned from the stored answers
        from nepotism.runner.perplexity import planned_calls

        again = chunks.anew()  # (what the chunks show the perplexity scorers: once per reading)

        def plan(part: Sequence[Instance]) -> list[PlannedCall]:
            chunk = again(part)
            return chunk.generation + chunk.judge

        yield from in_chunks(instances, plan, calls=chunk_calls)
        if experiment.perplexity is not None:  # the perplexity step scores the same answers: planned last
            triples = again.perplexity_triples(instances)
            for start in range(0, len(triples), chunk_calls):
                yield planned_calls(runner, experiment, triples[start : start + chunk_calls])

    return BatchRound("judge", endpoints, store, judge)


# -- writing requests ----------------------------------------------------------------------------


def _body(experiment: Experiment, call: PlannedCall) -> tuple[str, dict[str, Any]]:
    from nepotism.backends.openai_http import TOP_LOGPROBS
    from nepotism.backends.openai_wire import build_body

    cfg = experiment.models[call.model]
    if cfg.backend != "openai":
        raise InputError(
            f"model '{call.model}' uses the {cfg.backend} backend; batch files are for "
            "OpenAI-compatible models (backend openai: run it live, or serve it over HTTP)",
            path=experiment.path,
            field=f"models.{call.model}.backend",
        )
    # the arguments `experiment_run._backend` gives the live HTTP backend
    built = build_body(call.request, model=cfg.model, extra=dict(cfg.params), top_logprobs=TOP_LOGPROBS)
    if isinstance(built, Completion):  # a chat continuation: the experiment file refuses it for a model
        # served over HTTP ([perplexity] prompt = "chat"); a plan holding one stops, nothing written
        raise InputError(
            f"model '{call.model}': {built.error}; a batch file cannot hold this call",
            path=experiment.path,
            field="perplexity.prompt",
        )
    return built


class _Files:
    """The request files of one round, written into ``folder``: one series per (model, URL),
    a new file of the series whenever the next line would pass a limit."""

    def __init__(self, experiment: Experiment, folder: Path, max_requests: int, max_bytes: int) -> None:
        self.experiment, self.folder = experiment, folder
        self.max_requests, self.max_bytes = max_requests, max_bytes
        self.open: dict[tuple[str, str], tuple[IO[bytes], dict[str, Any]]] = {}
        self.parts: dict[tuple[str, str], int] = {}
        self.stems: dict[str, str] = {}  # file name stem per model: slugs of two models may collide
        self.done: list[dict[str, Any]] = []

    def add(self, model: str, url: str, line: bytes) -> None:
        if len(line) > self.max_bytes:
            raise InputError(
                f"one request of model '{model}' is {len(line):,} bytes, above the "
                f"{self.max_bytes:,} bytes a batch file may hold",
                path=str(self.folder),
            )
        group = (model, url)
        current = self.open.get(group)
        if current is not None and (
            current[1]["requests"] >= self.max_requests or current[1]["bytes"] + len(line) > self.max_bytes
        ):
            self._close(group)
            current = None
        if current is None:
            current = self._start(group)
        handle, entry = current
        handle.write(line)
        entry["requests"] += 1
        entry["bytes"] += len(line)

    def _start(self, group: tuple[str, str]) -> tuple[IO[bytes], dict[str, Any]]:
        model, url = group
        if model not in self.stems:
            stem = _SLUG.sub("_", model)
            if stem in self.stems.values():
                stem = f"{stem}-{len(self.stems)}"
            self.stems[model] = stem
        n = self.parts[group] = self.parts.get(group, 0) + 1
        kind = "chat" if url.endswith("/chat/completions") else "completions"
        name = f"{self.stems[model]}.{kind}.{n:04d}.jsonl"
        entry = {
            "file": name,
            "model": model,
            "served_model": self.experiment.models[model].model,
            "url": url,
            "requests": 0,
            "bytes": 0,
        }
        self.open[group] = (open(self.folder / name, "wb"), entry)  # noqa: SIM115 (closed by _close)
        return self.open[group]

    def _close(self, group: tuple[str, str]) -> None:
        handle, entry = self.open.pop(group)
        handle.flush()
        os.fsync(handle.fileno())
        handle.close()
        self.done.append(entry)

    def close(self) -> list[dict[str, Any]]:
        for group in list(self.open):
            self._close(group)
        return sorted(self.done, key=lambda f: (f["model"], f["url"], f["file"]))

    def abandon(self) -> None:
        for handle, _ in self.open.values():
            handle.close()


def write_batch(
    experiment: Experiment,
    round_: BatchRound,
    out_dir: str | Path,
    *,
    max_requests: int = MAX_FILE_REQUESTS,
    max_bytes: int = MAX_FILE_BYTES,
) -> dict[str, Any]:
    """Write the round's calls to send as Batch-API request files in ``out_dir``; return the
    manifest (also written as ``out_dir/batch.json``). Refuses a folder that already holds
    ``.jsonl`` files (the files of another round), and a call the wire format cannot express
    (`_body`): then nothing is written. Counts the round as it goes (`BatchRound.counts`)."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError("--batch-out must be a folder", path=str(out))
    if out.is_dir() and any(out.glob("*.jsonl")):
        raise InputError("the folder already holds .jsonl files (another round's?); choose a new one", path=str(out))
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.writing-", dir=out.parent))
    files = _Files(experiment, staging, max_requests, max_bytes)
    planned = missing = 0
    try:
        for calls, status in round_.with_status():
            planned += len(calls)
            for call in calls:
                state = status.get(call.key)
                missing += state is None
                if state == "ok":
                    continue
                path, body = _body(experiment, call)
                line = {"custom_id": call.key, "method": "POST", "url": "/v1" + path, "body": body}
                files.add(call.model, "/v1" + path, (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode())
        written = files.close()
        if written:
            out.mkdir(exist_ok=True)
            for entry in written:
                os.replace(staging / entry["file"], out / entry["file"])
    except BaseException:
        files.abandon()
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    requests = sum(f["requests"] for f in written)
    round_._counts = RoundCounts(planned, missing, requests)
    manifest = {
        "experiment": experiment.name,
        "phase": round_.phase,
        "requests": requests,
        "files": written,
        "next": "send each file as a batch (OpenAI Batch API, or vLLM's run_batch), then "
        "nepotism run EXPERIMENT --batch-in OUTPUT.jsonl...",
    }
    if written:
        from nepotism._files import atomic_write

        atomic_write(out / "batch.json", lambda tmp: tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n"))
    return manifest


# -- reading results -----------------------------------------------------------------------------


def _checked(obj: Any, where: dict[str, Any]) -> str:
    """The ``custom_id`` of a result line, after the checks that need no plan."""
    if not isinstance(obj, dict):
        raise InputError("each line must be a JSON object", **where)
    key = obj.get("custom_id")
    if not isinstance(key, str):
        raise InputError("custom_id must be a string", field="custom_id", **where)
    if obj.get("error") in (None, {}):
        response = obj.get("response")
        if not isinstance(response, dict):
            raise InputError("a result line needs a response object or an error", field="response", **where)
        status = response.get("status_code")
        if isinstance(status, bool) or not isinstance(status, int):
            raise InputError("response.status_code must be an integer", field="response.status_code", **where)
    return key


def _completion(obj: dict[str, Any], call: PlannedCall) -> Completion:
    from nepotism.backends.openai_wire import http_failure, read_body

    error = obj.get("error")
    if error not in (None, {}):
        if isinstance(error, dict):
            code, message = error.get("code") or "error", error.get("message") or ""
        else:
            code, message = "error", str(error)
        return failed(f"batch_error:{code}: {message}"[:300] if message else f"batch_error:{code}", raw={"error": error})
    status, body = obj["response"]["status_code"], obj["response"].get("body")
    if status != 200:
        return http_failure(status, json.dumps(body, ensure_ascii=False), 0.0, call.request)
    if not isinstance(body, dict):
        return failed("malformed_body: the body is not a JSON object", raw={"text": str(body)[:2000]})
    try:
        return read_body(body, call.request, 0.0)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        return failed(f"malformed_body: {type(exc).__name__}: {exc}"[:200], raw=body)


def _lines(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, line) of each non-blank line; a UTF-8 byte order mark skipped."""
    with path.open("rb") as handle:
        offset = 0
        for number, line in enumerate(handle, 1):
            start = offset
            offset += len(line)
            if number == 1 and line.startswith(b"\xef\xbb\xbf"):
                line, start = line[3:], start + 3
            if line.strip():
                yield number, start, line


def _parse(line: bytes, where: dict[str, Any]) -> Any:
    try:
        return json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 (byte {err.start + 1} of the line)", **where) from None
    except ValueError as err:
        raise InputError(f"not JSON ({getattr(err, 'msg', err)})", **where) from None


@dataclass
class BatchResults:
    """Result files checked against a round (`read_results`): where each answer is, not the
    answers (`store_results` reads them again). ``keys`` sorted (32 bytes each); ``files`` and
    ``offsets`` say where the answer of each key starts."""

    round_: BatchRound = field(repr=False)
    paths: list[Path]
    keys: Any = field(repr=False)
    files: Any = field(repr=False)
    offsets: Any = field(repr=False)

    def __len__(self) -> int:
        return len(self.keys)

    def find(self, calls: Sequence[PlannedCall]) -> list[tuple[PlannedCall, int]]:
        """The calls among ``calls`` that have an answer in the files, with its index."""
        import numpy as np

        if not calls or not len(self.keys):
            return []
        at, hit = find_sorted(self.keys, np.array([bytes.fromhex(c.key) for c in calls], dtype="S32"))
        return [(call, int(i)) for call, i, ok in zip(calls, at, hit, strict=True) if ok]

    def key(self, i: int) -> str:
        """Answer ``i``'s custom id (a numpy scalar would drop trailing zero bytes)."""
        raw: bytes = self.keys[i : i + 1].tobytes()
        return raw.hex()

    def first(self, among: Any) -> int:
        """Of the answers ``among`` (indices), the one that comes first in the files."""
        import numpy as np

        return int(among[np.lexsort((self.offsets[among], self.files[among]))[0]])

    def where(self, i: int) -> dict[str, Any]:
        """The file and line of answer ``i`` (the line counted again: only an error needs it)."""
        path, offset, lines = self.paths[int(self.files[i])], int(self.offsets[i]), 1
        with path.open("rb") as handle:
            while offset > 0:
                block = handle.read(min(offset, 1 << 20))
                if not block:
                    break
                lines += block.count(b"\n")
                offset -= len(block)
        return {"path": str(path), "line": lines}


def read_results(round_: BatchRound, paths: Sequence[str | Path]) -> BatchResults:
    """Check the result files ``paths`` against ``round_`` (see the module docstring): every line
    of every file, before anything is stored; an `InputError` names the file and line of a
    problem. Memory: ≈ 45 bytes per result line (≈ 100 while they are sorted) and the round's
    distinct keys."""
    import numpy as np

    files = [Path(p) for p in paths]
    keys, file_of, offset_of = bytearray(), array("I"), array("Q")
    for n, path in enumerate(files):
        if not path.is_file():
            raise InputError("no results file here", path=str(path))
        for number, offset, line in _lines(path):
            where: dict[str, Any] = {"path": str(path), "line": number}
            key = _checked(_parse(line, where), where)
            if not _KEY.fullmatch(key):
                raise InputError(
                    f"custom_id {key[:16]}… is no call of this experiment's plan (the custom ids "
                    "nepotism writes are 64 lowercase hex digits)",
                    field="custom_id",
                    **where,
                )
            keys += bytes.fromhex(key)
            file_of.append(n)
            offset_of.append(offset)
    if not keys:
        return BatchResults(round_, files, np.empty(0, dtype="S32"), np.empty(0, dtype=np.uint32), np.empty(0, dtype=np.uint64))
    flat = np.frombuffer(keys, dtype="S32")
    order = np.argsort(flat, kind="stable")  # equal keys stay in file order
    results = BatchResults(
        round_,
        files,
        flat[order],
        np.frombuffer(file_of, dtype=np.uint32)[order],
        np.frombuffer(offset_of, dtype=np.uint64)[order],
    )
    del flat, order, keys, file_of, offset_of
    twice = np.flatnonzero(results.keys[1:] == results.keys[:-1]) + 1
    if twice.size:
        i = results.first(twice)  # the first line, in file order, that repeats an earlier one
        first = int(np.searchsorted(results.keys, results.keys[i]))
        earlier = results.where(first)
        raise InputError(
            f"custom_id {results.key(i)[:16]}… appears twice (first in {earlier['path']} line {earlier['line']})",
            field="custom_id",
            **results.where(i),
        )
    matched = np.zeros(len(results), dtype=bool)
    for calls in round_.chunks():  # (no status needed: only the keys are checked)
        for _, i in results.find(calls):
            matched[i] = True
    if not matched.all():
        i = results.first(np.flatnonzero(~matched))
        raise InputError(
            f"custom_id {results.key(i)[:16]}… is no call of this experiment's plan (another "
            "experiment's or shard's results, or of a round not reached yet?)",
            field="custom_id",
            **results.where(i),
        )
    return results


def store_results(store: Store, results: BatchResults) -> dict[str, int]:
    """Store the answers of checked result files (`read_results`), a chunk of the round's plan at a
    time; return the counts: ``ok``, ``failed``, ``already`` (stored ok before: left as it was)."""
    counts = {"ok": 0, "failed": 0, "already": 0}
    handles: dict[int, IO[bytes]] = {}
    pending: list[dict[str, Any]] = []
    try:
        for calls, status in results.round_.with_status():
            for call, i in results.find(calls):
                if status.get(call.key) == "ok":
                    counts["already"] += 1
                    continue
                n = int(results.files[i])
                handle = handles.get(n)
                if handle is None:
                    handle = handles[n] = results.paths[n].open("rb")
                handle.seek(int(results.offsets[i]))
                completion = _completion(json.loads(handle.readline().decode("utf-8")), call)
                errors = [] if completion.ok else [completion.error or "failed"]
                pending.append(call_record(results.round_.endpoints[call.model], call, completion, errors))
                counts["ok" if completion.ok else "failed"] += 1
                if len(pending) >= _STORE_EVERY:
                    store.put_calls(pending)
                    pending = []
        if pending:
            store.put_calls(pending)
    finally:
        for handle in handles.values():
            handle.close()
    return counts
