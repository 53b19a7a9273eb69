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

__all__ = ["CHUNK_CALLS", "GENERATION_FAILED", "in_chunks", "iter_tasks", "plan_tasks", "prevented_by",
           "prevented_tasks"]

#: How the reason of a judgment a failed generation prevented begins; the generation call's
#: error class follows (``generation:timeout``, ``generation:http_5xx:503``,
#: ``generation:empty_text``), counted in exclusions as ``failed-generation:timeout``, ...
GENERATION_FAILED = "generation:"
#: About how many calls (or tasks) a chunk of the plan holds, in whole instances (`in_chunks`).
CHUNK_CALLS = 4096

_Planned = TypeVar("_Planned", bound=Sized)


def in_chunks(instances: Sequence[Instance], plan: Callable[[Sequence[Instance]], _Planned], *,
              calls: int = CHUNK_CALLS) -> Iterator[_Planned]:
    """``plan`` over ``instances`` a few at a time, in order, each chunk about ``calls`` calls: its
    size in instances is set from the calls per instance of the chunk before (``len`` of what
    ``plan`` returned); the first chunk is 8 instances (``calls`` if fewer), none more than 1,024. At 1,520 calls per
    instance a chunk is 2 instances, at 2 calls per instance 1,024: what a chunk holds
    (rendered prompts, tasks) stays about the same size whatever the experiment."""
    start, size = 0, max(1, min(8, calls))
    while start < len(instances):
        part = instances[start:start + size]
        start += len(part)
        planned = plan(part)
        yield planned
        size = max(1, min(1024, calls * len(part) // max(1, len(planned))))


def plan_tasks(experiment: Experiment, instances: Sequence[Instance], responses: Sequence[Response],
               judging: Any = None) -> list[Any]:
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
                tasks += judging.plan_categorise(instances, judges, responses_by_instance=per,
                                                 options=options, **common)
    return tasks


def iter_tasks(experiment: Experiment, instances: Sequence[Instance], responses: Sequence[Response],
               judging: Any = None, *, calls: int = CHUNK_CALLS) -> Iterator[Any]:
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


def prevented_tasks(experiment: Experiment, instances: Sequence[Instance], responses: Sequence[Response],
                    failures: Sequence[tuple[str, str, str]], judging: Any = None, *,
                    calls: int = CHUNK_CALLS) -> Iterator[tuple[Any, str, str]]:
    """The judge tasks the failed generations took out of the experiment's plan (`prevented_by`
    with `iter_tasks`, a chunk at a time), as ``(task, generator, error)``;
    ``responses`` are the candidates that were made."""
    def plan(hit: set[str], shown: list[Response]) -> Iterator[Any]:
        return iter_tasks(experiment, [i for i in instances if i.id in hit], shown, judging, calls=calls)

    return prevented_by(plan, responses, failures)


def prevented_by(plan: Callable[[set[str], list[Response]], Iterable[Any]], responses: Sequence[Response],
                 failures: Sequence[tuple[str, str, str]]) -> Iterator[tuple[Any, str, str]]:
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
    for (instance_id, generator) in failed:
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
    return task.protocol if task.protocol.startswith("recognition") else task.judgment_protocol
