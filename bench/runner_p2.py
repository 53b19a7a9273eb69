"""Benchmark P2: a fully cached rerun of N judge calls (default 100,000), in calls per second.

Usage: ``python bench/runner_p2.py [N] [--keep PATH]``. Builds a synthetic but realistically
sized pairwise experiment (3 generators, 2 judges, each judge's own answer against each other
one in both orders, label verdicts; prompts ~150 characters, answers ~700), fills a fresh store
with one stored call and one judgment per task (not timed: this is what a first run leaves
behind), then times the rerun: planning the tasks with `plan_pairwise`, rendering every request
and its cache key, the batched cache lookup, rebuilding each completion and interpreting it,
and the check that every judgment is already stored. Nothing is sent and nothing is written.
Prints the figure; nothing is asserted (tests never check wall-clock times).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import tempfile
import time
from pathlib import Path

from nepotism.backends.base import Completion
from nepotism.judging import interpret_all, plan_pairwise, render
from nepotism.records import Instance, Response
from nepotism.runner import Endpoint, Limiter, Runner, call_record
from nepotism.store import Store

JUDGES = ("judge-a", "judge-b")
GENERATORS = ("judge-a", "judge-b", "other-c")
OPTIONS = {"mode": "labels", "ways": 2}
_WORDS = ("river", "stone", "policy", "market", "quietly", "seven", "because", "garden", "signal",
          "under", "method", "careful", "winter", "reason", "number", "across", "light", "value")


def _text(rng: random.Random, chars: int) -> str:
    words = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(_WORDS))
    return " ".join(words)


def _dataset(n_tasks: int):
    per_instance = len(JUDGES) * 2 * 2  # two "vs others" pairs per judge, both orders
    rng = random.Random(0)
    instances, by_instance = [], {}
    for i in range(math.ceil(n_tasks / per_instance)):
        inst = Instance(f"item-{i}", _text(rng, 150) + "?")
        instances.append(inst)
        by_instance[inst.id] = [Response(inst.id, g, _text(rng, 700)) for g in GENERATORS]
    return instances, by_instance


def _plan(instances, by_instance, n_tasks):
    tasks = plan_pairwise(instances, by_instance, list(JUDGES), pairs="judge-vs-others", options=OPTIONS)
    return tasks[:n_tasks]


def _answer(rng: random.Random) -> Completion:
    a = -rng.random() * 2
    return Completion(text="A" if a > -0.7 else "B", label_logprobs={"A": a, "B": math.log1p(-math.exp(a)) if a < 0 else -30.0},
                      usage={"prompt_tokens": 420, "completion_tokens": 1}, raw={"object": "chat.completion"},
                      finish_reason="length")


def _fill(store: Store, runner: Runner, tasks) -> None:
    rng = random.Random(1)
    calls = runner.plan_judging(tasks, render)
    records, judgments, keys = [], [], {}
    for task, call in zip(tasks, calls):
        completion = _answer(rng)
        records.append(call_record(runner.endpoints[call.model], call, completion))
        for j in interpret_all(task, completion):
            judgments.append(j)
            keys[j.id] = call.key
    store.put_calls(records)
    store.add_judgments(judgments, call_keys=keys, source="bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, default=None, help="store file to write and keep")
    parser.add_argument("--repeat", type=int, default=3, help="timed reruns (the best is reported)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "p2.db"
        with Store(path) as store:
            endpoints = {j: Endpoint(j, None, "openai", served_model=j, limiter=Limiter(64)) for j in JUDGES}
            instances, by_instance = _dataset(args.n)
            start = time.perf_counter()
            tasks = _plan(instances, by_instance, args.n)
            _fill(store, Runner(store, endpoints), tasks)
            print(f"filled the cache with {len(tasks):,} calls in {time.perf_counter() - start:.1f} s (not timed)")
            rates = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                tasks = _plan(instances, by_instance, args.n)
                runner = Runner(store, endpoints)
                out = asyncio.run(runner.judge(tasks, render, interpret_all))
                elapsed = time.perf_counter() - start
                assert out.stats.cached == len(tasks) and out.stats.sent == 0 and not out.call_keys
                rates.append(len(tasks) / elapsed)
                print(f"cached rerun: {len(tasks):,} judge calls in {elapsed:.2f} s = {rates[-1]:,.0f} calls/s")
            print(f"P2 best: {max(rates):,.0f} calls/s (target >= 20,000)")


if __name__ == "__main__":
    main()
