"""Plan judge calls: expand instances, responses and judges into `JudgeTask` lists.

Responses are keyed by generator: each instance may have at most one response per generator
(`ValueError` otherwise). Plans are deterministic — instances in the given order, then judges,
then candidates (generators sorted by name unless the caller gave pairs), then presentation order,
then replicates — so the same inputs always give the same list. A comparison that needs a
response an instance lacks (a failed generation, a judge that generated nothing) is left out of
the plan rather than failing it; callers compare plan sizes with what they expected.
Nothing here calls a model.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import combinations
from typing import Any, Literal

from nepotism._gc import pause, resume
from nepotism.judging.tasks import JudgeTask, _shared_options
from nepotism.records import Instance, Response

__all__ = ["Pairs", "plan_categorise", "plan_pairwise", "plan_pointwise", "plan_recognition", "plan_rubric"]

Pairs = Literal["all", "judge-vs-others"] | Sequence[tuple[str, str]]


def _by_generator(instance: Instance, responses: Sequence[Response]) -> dict[str, Response]:
    out: dict[str, Response] = {}
    for r in responses:
        if r.instance_id != instance.id:
            raise ValueError(f"response of {r.generator!r} answers {r.instance_id!r}, not {instance.id!r}")
        if r.generator in out:
            raise ValueError(f"instance {instance.id!r} has two responses from {r.generator!r}")
        out[r.generator] = r
    return out


def _responses(instance: Instance, responses_by_instance: Mapping[str, Sequence[Response]]) -> dict[str, Response]:
    return _by_generator(instance, responses_by_instance.get(instance.id, ()))


def _pairs_for(judge: str, generators: Sequence[str], pairs: Pairs) -> list[tuple[str, str]]:
    present = set(generators)
    if pairs == "all":
        return list(combinations(sorted(present), 2))
    if pairs == "judge-vs-others":
        if judge not in present:
            return []
        return [(judge, other) for other in sorted(present) if other != judge]
    if isinstance(pairs, str):
        raise ValueError(f"pairs must be 'all', 'judge-vs-others' or a list of generator pairs, not {pairs!r}")
    out = []
    for pair in pairs:
        a, b = pair
        if a == b:
            raise ValueError(f"a pair needs two different generators, got {pair!r}")
        if a in present and b in present:
            out.append((a, b))
    return out


@contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a plan is built: the plan is thousands of
    long-lived objects without cycles, and every collection meanwhile would rescan them all
    (`nepotism._gc`: afterwards the new objects go straight to the oldest generation unless
    objects are frozen)."""
    was = pause()
    try:
        yield
    finally:
        resume(was)


def _checked_once(protocol: str, options: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The options checked and completed once, to be shared read-only by every task of a plan;
    invalid options are passed on as given, so the first task raises as it always has."""
    try:
        return _shared_options(protocol, options)
    except ValueError:
        return dict(options or {})


def _replicated(replicates: int, make: Any) -> list[JudgeTask]:
    if not isinstance(replicates, int) or replicates < 1:
        raise ValueError("replicates must be a positive integer")
    return [make(rep) for rep in range(replicates)]


def _two_candidate(
    protocol: str,
    instances: Iterable[Instance],
    responses_by_instance: Mapping[str, Sequence[Response]],
    judges: Sequence[str],
    *,
    pairs: Pairs,
    both_orders: bool,
    condition: str,
    replicates: int,
    options: Mapping[str, Any] | None,
) -> list[JudgeTask]:
    tasks: list[JudgeTask] = []
    opts = _checked_once(protocol, options)
    with _no_gc():
        for inst in instances:
            by_gen = _responses(inst, responses_by_instance)
            for judge in judges:
                for a, b in _pairs_for(judge, list(by_gen), pairs):
                    orders = [(a, b), (b, a)] if both_orders else [(a, b)]
                    for first, second in orders:
                        cands = (by_gen[first], by_gen[second])
                        tasks += _replicated(
                            replicates,
                            lambda rep, c=cands, j=judge, i=inst: JudgeTask(
                                protocol, j, i, c, condition=condition, replicate=rep, options=opts
                            ),
                        )
    return tasks


def plan_pairwise(
    instances: Iterable[Instance],
    responses_by_instance: Mapping[str, Sequence[Response]],
    judges: Sequence[str],
    *,
    pairs: Pairs = "all",
    both_orders: bool = True,
    condition: str = "default",
    replicates: int = 1,
    options: Mapping[str, Any] | None = None,
) -> list[JudgeTask]:
    """Pairwise comparisons.

    ``pairs="all"``: every unordered pair of generators on each instance, for every judge;
    ``"judge-vs-others"``: the judge's own response (generator name equal to the judge id) against
    each other generator's, first-shown own; or explicit ``(generator, generator)`` pairs, first
    shown as given. ``both_orders`` adds the swapped presentation right after each pair.
    """
    return _two_candidate(
        "pairwise",
        instances,
        responses_by_instance,
        judges,
        pairs=pairs,
        both_orders=both_orders,
        condition=condition,
        replicates=replicates,
        options=options,
    )


def _single(
    protocol: str,
    instances: Iterable[Instance],
    responses_by_instance: Mapping[str, Sequence[Response]],
    judges: Sequence[str],
    *,
    generators: Sequence[str] | None,
    condition: str,
    replicates: int,
    options: Mapping[str, Any] | None,
    per_item: bool = False,
) -> list[JudgeTask]:
    tasks: list[JudgeTask] = []
    opts = _checked_once(protocol, options)
    with _no_gc():
        for inst in instances:
            by_gen = _responses(inst, responses_by_instance)
            chosen = sorted(by_gen) if generators is None else [g for g in generators if g in by_gen]
            for judge in judges:
                for gen in chosen:
                    items = inst.rubric if per_item else (None,)
                    for item in items:
                        tasks += _replicated(
                            replicates,
                            lambda rep, g=gen, j=judge, i=inst, it=item: JudgeTask(
                                protocol, j, i, (by_gen[g],), rubric_item=it, condition=condition, replicate=rep, options=opts
                            ),
                        )
    return tasks


def plan_pointwise(
    instances: Iterable[Instance],
    responses_by_instance: Mapping[str, Sequence[Response]],
    judges: Sequence[str],
    *,
    generators: Sequence[str] | None = None,
    condition: str = "default",
    replicates: int = 1,
    options: Mapping[str, Any] | None = None,
) -> list[JudgeTask]:
    """One direct-assessment call per judge and response (``generators`` limits whose).

    With ``options={"kind": "fraction"}`` instances without a rubric are skipped.
    """
    insts = list(instances)
    if (options or {}).get("kind") == "fraction":
        insts = [i for i in insts if i.rubric]
    return _single(
        "pointwise",
        insts,
        responses_by_instance,
        judges,
        generators=generators,
        condition=condition,
        replicates=replicates,
        options=options,
    )


def plan_rubric(
    instances: Iterable[Instance],
    responses_by_instance: Mapping[str, Sequence[Response]],
    judges: Sequence[str],
    *,
    all_rubrics: bool = False,
    generators: Sequence[str] | None = None,
    condition: str = "default",
    replicates: int = 1,
    options: Mapping[str, Any] | None = None,
) -> list[JudgeTask]:
    """Rubric calls: one per judge, response and rubric item (single-rubric), or one per judge and
    response covering all items (``all_rubrics=True``). Instances without a rubric are skipped."""
    insts = [i for i in instances if i.rubric]
    if all_rubrics:
        return _single(
            "rubric-all",
            insts,
            responses_by_instance,
            judges,
            generators=generators,
            condition=condition,
            replicates=replicates,
            options=options,
        )
    return _single(
        "rubric",
        insts,
        responses_by_instance,
        judges,
        generators=generators,
        condition=condition,
        replicates=replicates,
        options=options,
        per_item=True,
    )


def plan_recognition(
    instances: Iterable[Instance],
    responses_by_instance: Mapping[str, Sequence[Response]],
    judges: Sequence[str],
    *,
    pairwise: bool = False,
    pairs: Pairs = "judge-vs-others",
    both_orders: bool = True,
    generators: Sequence[str] | None = None,
    condition: str = "default",
    replicates: int = 1,
    options: Mapping[str, Any] | None = None,
) -> list[JudgeTask]:
    """Self-recognition: pointwise ("did you write this?", every judge on every response, own and
    others') or pairwise ("which did you write?", pairs as in `plan_pairwise`, by default the
    judge's own response against each other one, in both orders)."""
    if pairwise:
        return _two_candidate(
            "recognition-pairwise",
            instances,
            responses_by_instance,
            judges,
            pairs=pairs,
            both_orders=both_orders,
            condition=condition,
            replicates=replicates,
            options=options,
        )
    return _single(
        "recognition",
        instances,
        responses_by_instance,
        judges,
        generators=generators,
        condition=condition,
        replicates=replicates,
        options=options,
    )


def plan_categorise(
    instances: Iterable[Instance],
    judges: Sequence[str],
    *,
    responses_by_instance: Mapping[str, Sequence[Response]] | None = None,
    condition: str = "default",
    replicates: int = 1,
    options: Mapping[str, Any],
) -> list[JudgeTask]:
    """Categorisation: each instance's request (no responses given) or each response's text (with
    ``responses_by_instance``; sets ``target="response"``). ``options`` must name ``categories``."""
    opts = dict(options)
    tasks: list[JudgeTask] = []
    if responses_by_instance is None:
        opts.setdefault("target", "instance")
        for inst in instances:
            for judge in judges:
                tasks += _replicated(
                    replicates,
                    lambda rep, j=judge, i=inst: JudgeTask(
                        "categorise", j, i, (), condition=condition, replicate=rep, options=opts
                    ),
                )
        return tasks
    opts["target"] = "response"
    return _single(
        "categorise",
        instances,
        responses_by_instance,
        judges,
        generators=None,
        condition=condition,
        replicates=replicates,
        options=opts,
    )
