"""An experiment's judge plan: the judge tasks of its instances and responses, and their tables.

`plan_tasks` is every judge task of an experiment (each protocol under each condition, through
the planners of `nepotism.judging`), `iter_tasks` the same tasks a chunk of instances at a time
(the perplexity step reads the plan this way); `_table_kind` names the exported table a task's judgments
go to. `in_chunks` is how a plan is cut into chunks of instances when its calls are read: about
`CHUNK_CALLS` calls a chunk, whatever the calls per instance (`iter_tasks`, the dry run and the
batch rounds of `nepotism.runner.batch` plan this way). A run plans its tasks a chunk of instances
at a time too (`nepotism.runner.experiment_run`), through a `nepotism.runner.plan_memo.ChunkPlan`
that the judge-plan memo can count without planning (its chunks are fixed by the run's
``ready_chunk``, as its memo is keyed by them); the mitigations plan the whole experiment at once.
`KeySet` is what a plan read in chunks keeps of the calls it planned: their keys, ≈ 40 bytes each.
`prevented_tasks` is the part of the plan a failed generation took away: the tasks that would
show a response that could not be made, each with that failure's reason, so that a run records
them as failed judgments (`GENERATION_FAILED`) instead of leaving them out; `prevented_by` does
it for any planner (the mitigations' and the leakage run's plans).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from typing import Any, TypeVar

from nepotism.experiment import Experiment
from nepotism.records import Instance, Response

__all__ = [
    "CHUNK_CALLS",
    "GENERATION_FAILED",
    "KeySet",
    "find_sorted",
    "in_chunks",
    "iter_tasks",
    "plan_tasks",
    "prevented_by",
    "prevented_tasks",
]

#: How the reason of a judgment a failed generation prevented begins; the generation call's
#: error class follows (``generation:timeout``, ``generation:http_5xx:503``,
#: ``generation:empty_text``), counted in exclusions as ``failed-generation:timeout``, ...
GENERATION_FAILED = "generation:"
#: About how many calls (or tasks) a chunk of the plan holds, in whole instances (`in_chunks`).
CHUNK_CALLS = 4096

_Planned = TypeVar("_Planned", bound=Sized)


def in_chunks(
    instances: Sequence[Instance], plan: Callable[[Sequence[Instance]], _Planned], *, calls: int = CHUNK_CALLS
) -> Iterator[_Planned]:
    """``plan`` over ``instances`` a few at a time, in order, each chunk about ``calls`` calls: its
    size in instances is set from the calls per instance of the chunk before (``len`` of what
    ``plan`` returned); the first chunk is 8 instances (``calls`` if fewer), none more than 1,024. At 1,520 calls per
    instance a chunk is 2 instances, at 2 calls per instance 1,024: what a chunk holds
    (rendered prompts, tasks) stays about the same size whatever the experiment."""
    start, size = 0, max(1, min(8, calls))
    while start < len(instances):
        part = instances[start : start + size]
        start += len(part)
        planned = plan(part)
        yield planned
        size = max(1, min(1024, calls * len(part) // max(1, len(planned))))


def find_sorted(keys: Any, wanted: Any, prefix: Any = None) -> tuple[Any, Any]:
    """Where each of the 32-byte keys ``wanted`` (a numpy ``S32`` array) is in the sorted ``keys``
    (``S32``), and whether it is there: two arrays, the positions and a mask. ``prefix``: the
    first 8 bytes of ``keys`` as integers (`_prefix`), to search those instead (≈ 3× faster than
    comparing the 32-byte strings; the keys that share a prefix are searched again whole)."""
    import numpy as np

    if prefix is None:
        at = np.searchsorted(keys, wanted)
    else:
        heads = _prefix(wanted)
        at = np.searchsorted(prefix, heads)  # the first key with that prefix
    at = np.minimum(at, len(keys) - 1)
    hit = keys[at] == wanted
    if prefix is not None:
        again = ~hit & (prefix[at] == heads)  # another key with the same first 8 bytes came first
        if again.any():
            at[again] = np.minimum(np.searchsorted(keys, wanted[again]), len(keys) - 1)
            hit[again] = keys[at[again]] == wanted[again]
    return at, hit


def _prefix(keys: Any) -> Any:
    """The first 8 bytes of each 32-byte key as an unsigned integer (big-endian: ordered as the keys)."""
    import numpy as np

    return keys.view(">u8")[::4].astype(np.uint64)


class KeySet:
    """The distinct call keys of a plan read a chunk at a time (the batch rounds, the dry run), at
    ≈ 40 bytes a key where a Python set of them took ≈ 100 (≈ 1 GB at 10M planned calls): sorted
    runs of the keys' 32 bytes (numpy ``S32``, searched as `nepotism.runner.batch.BatchResults` is), each with its keys'
    first 8 bytes as integers to search (`find_sorted`). Each chunk's new keys are a run; runs of
    about the same size merge, and the small ones merge into the largest once they hold an eighth
    of it, in place (its memory grown, not copied), so that memory at the peak stays near the
    keys' own size."""

    _SMALL = 1 << 16  # keys the small runs may hold before they merge into the largest

    def __init__(self) -> None:
        self._runs: list[tuple[Any, Any]] = []  # (sorted keys, their prefixes); the largest first

    def __len__(self) -> int:
        return sum(len(keys) for keys, _ in self._runs)

    def add(self, keys: Sequence[str]) -> Any:
        """Add ``keys`` (64 hex digits each); return which of them are new (a numpy mask): in no
        earlier `add`, and the first of their value in ``keys``."""
        import numpy as np

        fresh = np.zeros(len(keys), dtype=bool)
        if not keys:
            return fresh
        flat = bytes.fromhex("".join(keys))
        if len(flat) != 32 * len(keys):
            raise ValueError("a call key is 64 hex digits")
        distinct, first = np.unique(np.frombuffer(flat, dtype="S32"), return_index=True)  # first: earliest
        new = np.ones(len(distinct), dtype=bool)
        for run, prefix in self._runs:
            new &= ~find_sorted(run, distinct, prefix)[1]
        fresh[first[new]] = True
        if new.any():
            self._add(distinct[new])  # (a copy: owns its memory, so it can grow in place)
        return fresh

    def _add(self, run: Any) -> None:
        import numpy as np

        self._runs.append((run, _prefix(run)))
        while len(self._runs) > 2 and len(self._runs[-2][0]) <= 2 * len(self._runs[-1][0]):
            (a, _), (b, _) = self._runs.pop(-2), self._runs.pop()
            merged = np.concatenate([a, b])
            del a, b
            merged.sort(kind="stable")  # (two sorted runs: merged in one pass)
            self._runs.append((merged, _prefix(merged)))
        small = sum(len(keys) for keys, _ in self._runs[1:])
        if small > max(self._SMALL, len(self._runs[0][0]) // 8):
            largest, rest = self._runs[0][0], [keys for keys, _ in self._runs[1:]]
            self._runs = []
            start = len(largest)
            largest.resize(start + small, refcheck=False)  # no view of it is kept
            for keys in rest:
                largest[start : start + len(keys)] = keys
                start += len(keys)
            del rest
            largest.sort(kind="stable")
            self._runs = [(largest, _prefix(largest))]


def plan_tasks(
    experiment: Experiment, instances: Sequence[Instance], responses: Sequence[Response], judging: Any = None
) -> list[Any]:
    """Every judge task of the experiment: each protocol under each condition, in file order."""
    judging = judging or _judging()
    by_instance: dict[str, list[Response]] = {}
    for r in responses:
        by_instance.setdefault(r.instance_id, []).append(r)
    tasks: list[Any] = []
    for proto in experiment.protocols:
        for cond in experiment.conditions:
            options = dict(proto.options) | dict(cond.options)
            common = {"condition": cond.name, "replicates": proto.replicates}
            args = dict(proto.args)
            judges = list(experiment.judges)
            if proto.protocol == "pairwise":
                tasks += judging.plan_pairwise(instances, by_instance, judges, options=options, **common, **args)
            elif proto.protocol == "pointwise":
                tasks += judging.plan_pointwise(instances, by_instance, judges, options=options, **common, **args)
            elif proto.protocol == "rubric":
                tasks += judging.plan_rubric(instances, by_instance, judges, options=options, **common, **args)
            elif proto.protocol == "recognition":
                tasks += judging.plan_recognition(instances, by_instance, judges, options=options, **common, **args)
            else:
                target = args.pop("target", "instance")
                per = by_instance if target == "response" else None
                tasks += judging.plan_categorise(instances, judges, responses_by_instance=per, options=options, **common)
    return tasks


def iter_tasks(
    experiment: Experiment,
    instances: Sequence[Instance],
    responses: Sequence[Response],
    judging: Any = None,
    *,
    calls: int = CHUNK_CALLS,
) -> Iterator[Any]:
    """`plan_tasks` a chunk of instances at a time (`in_chunks`, about ``calls`` tasks a chunk):
    the same tasks (each instance's tasks depend on it and its responses alone), grouped by
    chunk, and never all in memory at once."""
    by_instance: dict[str, list[Response]] = {}
    for r in responses:
        by_instance.setdefault(r.instance_id, []).append(r)

    def plan(part: Sequence[Instance]) -> list[Any]:
        return plan_tasks(experiment, part, [r for i in part for r in by_instance.get(i.id, ())], judging)

    for tasks in in_chunks(instances, plan, calls=calls):
        yield from tasks


def prevented_tasks(
    experiment: Experiment,
    instances: Sequence[Instance],
    responses: Sequence[Response],
    failures: Sequence[tuple[str, str, str]],
    judging: Any = None,
    *,
    calls: int = CHUNK_CALLS,
) -> Iterator[tuple[Any, str, str]]:
    """The judge tasks the failed generations took out of the experiment's plan (`prevented_by`
    with `iter_tasks`, a chunk at a time), as ``(task, generator, error)``;
    ``responses`` are the candidates that were made."""

    def plan(hit: set[str], shown: list[Response]) -> Iterator[Any]:
        return iter_tasks(experiment, [i for i in instances if i.id in hit], shown, judging, calls=calls)

    return prevented_by(plan, responses, failures)


def prevented_by(
    plan: Callable[[set[str], list[Response]], Iterable[Any]],
    responses: Sequence[Response],
    failures: Sequence[tuple[str, str, str]],
) -> Iterator[tuple[Any, str, str]]:
    """The tasks of a plan that the failed generations took away, as ``(task, generator, error)``:
    ``plan(instance ids, responses)`` is asked for the tasks of the instances with a failure as if
    each failed (instance id, generator, error) of ``failures`` had answered (an empty stand-in
    response beside the ``responses`` that were made), and the tasks that show one of those
    stand-ins are given. A task showing several is owed to the first of their generators by name
    (both presentation orders of a pair get the same reason). Any planner: the experiment's
    (`prevented_tasks`), the mitigations', the leakage run's students'."""
    failed: dict[tuple[str, str], str] = {}
    for instance_id, generator, error in failures:
        failed.setdefault((instance_id, generator), error)
    hit = {instance_id for instance_id, _ in failed}
    by_instance: dict[str, list[Response]] = {}
    for r in responses:
        if r.instance_id in hit:
            by_instance.setdefault(r.instance_id, []).append(r)
    for instance_id, generator in failed:
        by_instance.setdefault(instance_id, []).append(Response(instance_id, generator, ""))
    shown = [r for rs in by_instance.values() for r in rs]
    for task in plan(hit, shown):
        missing = sorted(r.generator for r in task.candidates if (r.instance_id, r.generator) in failed)
        if missing:
            yield task, missing[0], failed[task.instance.id, missing[0]]


def _judging() -> Any:
    import nepotism.judging as judging

    return judging


def _table_kind(task: Any) -> str:
    """The exported table a task's judgments go to: recognition questions of both shapes share a
    stored protocol but are two table kinds."""
    kind: str = task.protocol if task.protocol.startswith("recognition") else task.judgment_protocol
    return kind
