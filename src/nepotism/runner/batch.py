"""Running an experiment through batch files (OpenAI's Batch API, vLLM's offline batch runner).

A batch run goes in rounds, because judge prompts hold the generated answers:

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
   not written. A perplexity call goes to ``/v1/completions`` with ``echo`` and ``logprobs`` (the
   raw prompt followed by the response, as the live HTTP backend sends it; ``[perplexity] prompt
   = "chat"`` for a model served over HTTP is refused when the experiment file is read).
3. `read_results` reads the provider's output files (``{"custom_id", "response": {"status_code",
   "body"}, "error"}`` per line) into call records: every ``custom_id`` must be a call of the plan
   and appear once (else an `InputError` naming the file and line, and nothing is stored); a 200
   body is read as the HTTP backend reads it; another status or an ``error`` object is stored as a
   failed call with its reason (``http_5xx:500: ...``, ``batch_error:<code>: <message>``), so a
   later round or a live run retries it. `store_results` stores them in one transaction.
4. When no planned call is missing, `nepotism.runner.experiment_run.run_experiment` with
   ``offline=True`` finishes the run from the store: nothing is sent, stored failures stay
   failures.

Left out: uploading files and polling batch jobs (the provider's CLI or SDK does that).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nepotism._files import atomic_write
from nepotism.backends.base import Completion, failed
from nepotism.errors import InputError
from nepotism.experiment import Experiment
from nepotism.records import Instance, Response
from nepotism.runner.calls import Endpoint, PlannedCall, call_record
from nepotism.runner.engine import Runner
from nepotism.runner.shards import Shard
from nepotism.store import Store
from nepotism.store.fastread import call_statuses

__all__ = ["MAX_FILE_BYTES", "MAX_FILE_REQUESTS", "BatchRound", "plan_round", "read_results", "store_results",
           "write_batch"]

#: OpenAI Batch API limits per input file.
MAX_FILE_REQUESTS = 50_000
MAX_FILE_BYTES = 200 * 1024 * 1024
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class BatchRound:
    """What can be planned now: ``phase`` (``generate`` until every generation call has a stored
    answer, then ``judge``), every planned call of it (``planned``, generation calls included in
    the judge phase), the calls to send (unique keys, not stored ok; failed ones included) and how
    many planned calls have no stored answer at all (``missing``)."""

    phase: str
    planned: list[PlannedCall]
    to_send: list[PlannedCall]
    missing: int
    endpoints: dict[str, Endpoint] = field(repr=False)

    @property
    def complete(self) -> bool:
        """Every call of the whole experiment has a stored answer (a run can finish offline)."""
        return self.phase == "judge" and self.missing == 0


def plan_round(experiment: Experiment, store: Store, *, dataset: tuple[list[Instance], list[Response]] | None = None,
               shard: Shard | None = None, registry: Any = None, judging: Any = None) -> BatchRound:
    """The current round of ``experiment`` against ``store`` (see the module docstring)."""
    from nepotism.models import load_registry
    from nepotism.runner import experiment_run as er

    judging = judging or er._judging()
    registry = registry or load_registry(experiment.registry_files)
    instances, recorded = dataset if dataset is not None else er.load_dataset(experiment, store)
    instances, recorded = er._in_shard(shard, instances, recorded)
    endpoints = er.build_endpoints(experiment, registry, connect=False)
    runner = Runner(store, endpoints)
    have = er._candidates(store, experiment, instances, recorded, endpoints)
    gen_plan = runner.plan_generation(instances, er._generators(experiment), have)
    gen_calls = [call for call, _, _ in gen_plan]
    status = call_statuses(store, [c.key for c in gen_calls])
    missing = sum(1 for c in _unique(gen_calls) if c.key not in status)
    if missing:
        return BatchRound("generate", gen_calls, _to_send(gen_calls, status), missing, endpoints)
    # every generation call is answered: the judge phase can be planned from the stored answers
    texts = store.get_calls([c.key for c in gen_calls if status[c.key] == "ok"])
    made = []
    for call, instance, spec in gen_plan:
        hit = texts.get(call.key)
        if hit is not None and (hit.text or "").strip():
            made.append(Response(instance.id, spec.model, hit.text))
    candidates = er._unique(list(have) + made)
    tasks = er.plan_tasks(experiment, instances, candidates, judging)
    judge_calls = runner.plan_judging(tasks, judging.render)
    if experiment.perplexity is not None:  # the perplexity step scores the same answers: same round
        from nepotism.runner.perplexity import plan_perplexity, planned_calls

        judge_calls += planned_calls(runner, experiment, plan_perplexity(experiment.perplexity, experiment.judges,
                                                                         instances, candidates, tasks))
    status |= call_statuses(store, [c.key for c in judge_calls])
    missing = sum(1 for c in _unique(judge_calls) if c.key not in status)
    planned = gen_calls + judge_calls
    return BatchRound("judge", planned, _to_send(planned, status), missing, endpoints)


def _unique(calls: Sequence[PlannedCall]) -> list[PlannedCall]:
    return list({c.key: c for c in reversed(calls)}.values())[::-1]


def _to_send(calls: Sequence[PlannedCall], status: dict[str, str]) -> list[PlannedCall]:
    return [c for c in _unique(calls) if status.get(c.key) != "ok"]


# -- writing requests ----------------------------------------------------------------------------

def _body(experiment: Experiment, call: PlannedCall) -> tuple[str, dict[str, Any]]:
    from nepotism.backends.openai_http import TOP_LOGPROBS
    from nepotism.backends.openai_wire import build_body

    cfg = experiment.models[call.model]
    if cfg.backend != "openai":
        raise InputError(f"model '{call.model}' runs in-process ({cfg.backend}); batch files are for "
                         "OpenAI-compatible models (run it live, or serve it over HTTP)",
                         path=experiment.path, field=f"models.{call.model}.backend")
    # the arguments `experiment_run._backend` gives the live HTTP backend
    built = build_body(call.request, model=cfg.model, extra=dict(cfg.params), top_logprobs=TOP_LOGPROBS)
    if isinstance(built, Completion):  # a chat continuation: the experiment file refuses it for a model
        # served over HTTP ([perplexity] prompt = "chat"); a plan holding one stops, nothing written
        raise InputError(f"model '{call.model}': {built.error}; a batch file cannot hold this call",
                         path=experiment.path, field="perplexity.prompt")
    return built


def write_batch(experiment: Experiment, round_: BatchRound, out_dir: str | Path, *,
                max_requests: int = MAX_FILE_REQUESTS, max_bytes: int = MAX_FILE_BYTES) -> dict[str, Any]:
    """Write ``round_.to_send`` as Batch-API request files in ``out_dir``; return the manifest
    (also written as ``out_dir/batch.json``). Refuses a folder that already holds ``.jsonl``
    files (the files of another round), and a call the wire format cannot express (`_body`),
    before writing anything."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError("--batch-out must be a folder", path=str(out))
    if out.is_dir() and any(out.glob("*.jsonl")):
        raise InputError("the folder already holds .jsonl files (another round's?); choose a new one",
                         path=str(out))
    groups: dict[tuple[str, str], list[bytes]] = {}
    for call in round_.to_send:
        path, body = _body(experiment, call)
        line = {"custom_id": call.key, "method": "POST", "url": "/v1" + path, "body": body}
        groups.setdefault((call.model, "/v1" + path), []).append(
            (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode())
    files: list[dict[str, Any]] = []
    if groups:
        out.mkdir(parents=True, exist_ok=True)
    for (model, url), lines in sorted(groups.items()):
        parts: list[list[bytes]] = [[]]
        size = 0
        for line in lines:
            if parts[-1] and (len(parts[-1]) >= max_requests or size + len(line) > max_bytes):
                parts.append([])
                size = 0
            if len(line) > max_bytes:
                raise InputError(f"one request of model '{model}' is {len(line):,} bytes, above the "
                                 f"{max_bytes:,} bytes a batch file may hold", path=str(out))
            parts[-1].append(line)
            size += len(line)
        kind = "chat" if url.endswith("/chat/completions") else "completions"
        for n, part in enumerate(parts, 1):
            name = f"{_SLUG.sub('_', model)}.{kind}.{n:04d}.jsonl"
            data = b"".join(part)
            atomic_write(out / name, lambda tmp, data=data: tmp.write_bytes(data))
            files.append({"file": name, "model": model, "served_model": experiment.models[model].model,
                          "url": url, "requests": len(part), "bytes": len(data)})
    manifest = {
        "experiment": experiment.name, "phase": round_.phase, "requests": sum(f["requests"] for f in files),
        "files": files,
        "next": "send each file as a batch (OpenAI Batch API, or vLLM's run_batch), then "
                "nepotism run EXPERIMENT --batch-in OUTPUT.jsonl...",
    }
    if files:
        atomic_write(out / "batch.json",
                     lambda tmp: tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n"))
    return manifest


# -- reading results -----------------------------------------------------------------------------

def _completion(obj: dict[str, Any], call: PlannedCall, where: dict[str, Any]) -> Completion:
    from nepotism.backends.openai_wire import http_failure, read_body

    error = obj.get("error")
    response = obj.get("response")
    if error not in (None, {}):
        if isinstance(error, dict):
            code, message = error.get("code") or "error", error.get("message") or ""
        else:
            code, message = "error", str(error)
        return failed(f"batch_error:{code}: {message}"[:300] if message else f"batch_error:{code}",
                      raw={"error": error})
    if not isinstance(response, dict):
        raise InputError("a result line needs a response object or an error", field="response", **where)
    status, body = response.get("status_code"), response.get("body")
    if isinstance(status, bool) or not isinstance(status, int):
        raise InputError("response.status_code must be an integer", field="response.status_code", **where)
    if status != 200:
        return http_failure(status, json.dumps(body, ensure_ascii=False), 0.0, call.request)
    if not isinstance(body, dict):
        return failed("malformed_body: the body is not a JSON object", raw={"text": str(body)[:2000]})
    try:
        return read_body(body, call.request, 0.0)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        return failed(f"malformed_body: {type(exc).__name__}: {exc}"[:200], raw=body)


def read_results(round_: BatchRound, paths: Sequence[str | Path]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The call records of the result files ``paths`` (see the module docstring), and counts:
    ``ok``, ``failed``, ``already`` (stored ok before: skipped). Validates every line of every
    file before returning; an `InputError` names the file and line of the first problem."""
    planned = {c.key: c for c in round_.planned}
    to_send = {c.key for c in round_.to_send}
    seen: dict[str, tuple[str, int]] = {}
    records: list[dict[str, Any]] = []
    counts = {"ok": 0, "failed": 0, "already": 0}
    for path in map(Path, paths):
        if not path.is_file():
            raise InputError("no results file here", path=str(path))
        with path.open(encoding="utf-8-sig") as handle:
            for line_no, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                where = {"path": str(path), "line": line_no}
                try:
                    obj = json.loads(line)
                except ValueError as err:
                    raise InputError(f"not JSON ({err.msg})", **where) from None
                if not isinstance(obj, dict):
                    raise InputError("each line must be a JSON object", **where)
                key = obj.get("custom_id")
                if not isinstance(key, str):
                    raise InputError("custom_id must be a string", field="custom_id", **where)
                if key in seen:
                    first = seen[key]
                    raise InputError(f"custom_id {key[:16]}… appears twice (first in {first[0]} line {first[1]})",
                                     field="custom_id", **where)
                seen[key] = (str(path), line_no)
                call = planned.get(key)
                if call is None:
                    raise InputError(f"custom_id {key[:16]}… is no call of this experiment's plan (another "
                                     "experiment's or shard's results, or of a round not reached yet?)",
                                     field="custom_id", **where)
                completion = _completion(obj, call, where)
                if key not in to_send:  # stored ok already (results read twice): keep the stored one
                    counts["already"] += 1
                    continue
                errors = [] if completion.ok else [completion.error or "failed"]
                records.append(call_record(round_.endpoints[call.model], call, completion, errors))
                counts["ok" if completion.ok else "failed"] += 1
    return records, counts


def store_results(store: Store, records: Sequence[dict[str, Any]]) -> int:
    """Store the records of `read_results` in one transaction; return the rows written."""
    return store.put_calls(records) if records else 0
