"""An experiment's judge plan: the judge tasks of its instances and responses, and their tables.

`plan_tasks` is every judge task of an experiment (each protocol under each condition, through
the planners of `nepotism.judging`); `_table_kind` names the exported table a task's judgments
go to. A run plans its tasks a chunk of instances at a time (`nepotism.runner.experiment_run`),
through a `nepotism.runner.plan_memo.ChunkPlan` that the judge-plan memo can count without
planning; the dry run, the batch files and the mitigations plan the whole experiment at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nepotism.experiment import Experiment
from nepotism.records import Instance, Response

__all__ = ["plan_tasks"]


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


def _judging() -> Any:
    import nepotism.judging as judging

    return judging


def _table_kind(task: Any) -> str:
    """The exported table a task's judgments go to: recognition questions of both shapes share a
    stored protocol but are two table kinds."""
    return task.protocol if task.protocol.startswith("recognition") else task.judgment_protocol
