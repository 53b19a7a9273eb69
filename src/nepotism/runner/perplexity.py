"""The perplexity step of a run (``[perplexity]``): each scorer's perplexity of each response.

Paper 001 §5 computes "the perplexities of responses conditioned on the prompt" under each LLM
evaluator and relates the evaluator's verdicts to them (Figs. 3–5). Here one scorer (by default
every judge) scores one response with one continuation call (`nepotism.backends.base.Request`
with ``continuation`` = the response text): the backend returns the log-probability of each of
the response's tokens given the prompt and the tokens before it, and

    perplexity = exp(−(1/T) Σ_t log p(token_t | prompt, token_<t)),   T = number of response tokens,

so ``log_perplexity`` is the mean negative log-likelihood per token (nats). The conditioning is
the instance's prompt as the scorer sees a user turn: ``chat`` renders the instance's messages
with the model's own chat template (generation prompt added, as when it answers), ``raw`` sends
the prompt text followed by a blank line (the only form an OpenAI-compatible server can score,
through ``/completions`` with ``echo``); ``auto`` (default) picks chat for in-process models and
raw over HTTP. Paper 001 does not print its prompt format for this step.

The calls go through the same `Runner` executor and store as every other call, so they are cached
by `nepotism.runner.calls.request_key` (a rerun sends nothing) and claimed against concurrent runs.
A failed call, a completion without log-probabilities or with a non-finite one is a
`PerplexityScore` with ``status="failed"`` and its ``reason`` — never a perplexity of 1 or 0.

`export_perplexity` writes the per-response table (kind ``perplexity``: ``instance_id, scorer,
model, perplexity, log_perplexity, tokens, status, reason``) and adds ``perplexity_a`` /
``perplexity_b`` (the *judge's* perplexity of the response in each slot) to the run's exported
pairwise table. Left out: the metrics (`nepotism.metrics.reference`, read from those tables).
`nepotism mitigate`'s perplexity-weighted jury (``vote = "perplexity"``) scores through
`score_perplexity` too, so its calls are the ones a run's ``[perplexity]`` step would send.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nepotism.backends.base import Request
from nepotism.errors import InputError
from nepotism.experiment import Experiment, PerplexityConfig
from nepotism.records import Instance, Response
from nepotism.runner.calls import CallResult, PlannedCall, plan_call
from nepotism.runner.progress import RunStats

__all__ = [
    "COLUMNS",
    "PerplexityOutcome",
    "PerplexityScore",
    "Shown",
    "export_perplexity",
    "perplexity_of",
    "perplexity_request",
    "perplexity_triples",
    "plan_perplexity",
    "planned_calls",
    "score_perplexity",
    "shown_to_scorers",
]

#: The per-response table's columns, in order.
COLUMNS = ("instance_id", "scorer", "model", "perplexity", "log_perplexity", "tokens", "status", "reason")


@dataclass(frozen=True)
class PerplexityScore:
    """One scorer's perplexity of one response (``status`` ok), or why there is none (failed)."""

    scorer: str
    instance_id: str
    model: str
    perplexity: float | None
    log_perplexity: float | None
    tokens: int
    status: str
    reason: str | None = None
    call_key: str | None = None

    def row(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "scorer": self.scorer,
            "model": self.model,
            "perplexity": self.perplexity,
            "log_perplexity": self.log_perplexity,
            "tokens": self.tokens,
            "status": self.status,
            "reason": self.reason,
        }


@dataclass(repr=False)
class PerplexityOutcome:
    """The scores of `score_perplexity` (in plan order) and the phase's counters."""

    scores: list[PerplexityScore]
    stats: RunStats

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.scores:
            out[s.status] = out.get(s.status, 0) + 1
        return out

    def __repr__(self) -> str:
        return f"PerplexityOutcome({len(self.scores)} scores)"


def perplexity_of(logprobs: Sequence[float] | None) -> tuple[float, float, int] | str:
    """``(perplexity, log_perplexity, tokens)`` from per-token log-probabilities (module formula),
    or the reason there is none (``no_logprobs``, ``non_finite_logprob``, ``positive_logprob``,
    ``perplexity_overflow``)."""
    if not logprobs:
        return "no_logprobs"
    values = [float(v) for v in logprobs]
    if not all(math.isfinite(v) for v in values):
        return "non_finite_logprob"
    if any(v > 1e-6 for v in values):
        return "positive_logprob"
    log_ppl = max(0.0, -sum(values) / len(values))
    if log_ppl >= 700:  # exp overflows a float: no real model is this surprised per token
        return "perplexity_overflow"
    return math.exp(log_ppl), log_ppl, len(values)


def _raw_prompt(instance: Instance) -> str:
    prompt = instance.prompt
    text = prompt if isinstance(prompt, str) else "\n\n".join(m.content for m in prompt)
    return text + "\n\n"


def perplexity_request(scorer: str, kind: str, instance: Instance, response: Response, prompt: str = "auto") -> Request:
    """The continuation call scoring ``response`` under ``scorer`` (an endpoint of ``kind``, a
    backend's name): ``auto`` is raw text for a backend whose server scores raw continuations
    (`nepotism.backends.registry.takes_raw_prompts`: the OpenAI-compatible one), chat messages otherwise."""
    from nepotism.backends.registry import takes_raw_prompts

    chat = prompt == "chat" or (prompt == "auto" and not takes_raw_prompts(kind))
    if chat:
        return Request(model=scorer, messages=instance.messages, continuation=response.text, max_tokens=1)
    return Request(model=scorer, prompt=_raw_prompt(instance), continuation=response.text, max_tokens=1)


def plan_perplexity(
    config: PerplexityConfig,
    judges: Sequence[str],
    instances: Sequence[Instance],
    responses: Sequence[Response],
    tasks: Iterable[Any],
) -> list[tuple[str, Instance, Response]]:
    """The (scorer, instance, response) triples to score, each once, in a stable order.

    ``responses="judged"``: a scorer scores the candidates of the tasks it judges (a scorer that
    judges nothing: the candidates of every task); ``"all"``: every candidate response. Empty
    texts are skipped (nothing to score); ``generators`` keeps only those generators' responses.
    ``tasks`` is read once (a generator planning a chunk at a time will do); `shown_to_scorers`
    and `perplexity_triples` are the two halves, for a plan seen chunk by chunk.
    """
    return perplexity_triples(config, judges, instances, responses, shown_to_scorers(tasks))


#: Per judge, the candidate responses of the tasks it judges; and every task's candidates. Both
#: keyed by (instance id, generator).
Shown = tuple[dict[str, dict[tuple[str, str], Response]], dict[tuple[str, str], Response]]


def shown_to_scorers(tasks: Iterable[Any], into: Shown | None = None) -> Shown:
    """What ``tasks`` show to whom (`Shown`), added to ``into`` when given (the same result
    whatever the chunks and their order: a key names one response of a plan)."""
    judged, shown = into if into is not None else ({}, {})
    for task in tasks:
        for r in getattr(task, "candidates", ()):
            judged.setdefault(task.judge, {})[(r.instance_id, r.generator)] = r
            shown[(r.instance_id, r.generator)] = r
    return judged, shown


def perplexity_triples(
    config: PerplexityConfig, judges: Sequence[str], instances: Sequence[Instance], responses: Sequence[Response], seen: Shown
) -> list[tuple[str, Instance, Response]]:
    """`plan_perplexity`'s triples from what the whole plan showed (`shown_to_scorers`)."""
    scorers = list(config.scorers or judges)
    keep = set(config.generators)
    by_id = {i.id: i for i in instances}
    every = {(r.instance_id, r.generator): r for r in responses}
    judged, shown = seen
    out = []
    for scorer in scorers:
        pool = every if config.responses == "all" else judged.get(scorer, shown)
        for key in sorted(pool):
            r = pool[key]
            if (keep and r.generator not in keep) or r.instance_id not in by_id or not r.text:
                continue
            out.append((scorer, by_id[r.instance_id], r))
    return out


def _score(scorer: str, response: Response, result: CallResult) -> PerplexityScore:
    completion = result.completion
    base = {"scorer": scorer, "instance_id": response.instance_id, "model": response.generator, "call_key": result.call.key}
    if not completion.ok:
        return PerplexityScore(
            **base, perplexity=None, log_perplexity=None, tokens=0, status="failed", reason=completion.error or "failed"
        )
    value = perplexity_of(completion.continuation_logprobs)
    if isinstance(value, str):
        return PerplexityScore(**base, perplexity=None, log_perplexity=None, tokens=0, status="failed", reason=value)
    ppl, log_ppl, tokens = value
    return PerplexityScore(**base, perplexity=ppl, log_perplexity=log_ppl, tokens=tokens, status="ok")


def planned_calls(
    runner: Any, experiment: Experiment, plan: Sequence[tuple[str, Instance, Response]], prompt: str | None = None
) -> list[PlannedCall]:
    """One planned call per triple of ``plan`` (same order); ``prompt`` (auto, chat, raw) defaults
    to the experiment's ``[perplexity] prompt``."""
    if prompt is None:
        prompt = experiment.perplexity.prompt if experiment.perplexity else "auto"
    return [
        plan_call(runner.endpoints[scorer], perplexity_request(scorer, runner.endpoints[scorer].kind, instance, response, prompt))
        for scorer, instance, response in plan
    ]


async def score_perplexity(
    runner: Any,
    experiment: Experiment,
    instances: Sequence[Instance],
    responses: Sequence[Response],
    tasks: Iterable[Any],
    config: PerplexityConfig | None = None,
) -> PerplexityOutcome:
    """Score every planned (scorer, response) through ``runner``'s executor (cache first);
    ``config`` defaults to the experiment's ``[perplexity]`` table."""
    config = config or experiment.perplexity or PerplexityConfig()
    plan = plan_perplexity(config, experiment.judges, instances, responses, tasks)
    calls = planned_calls(runner, experiment, plan, config.prompt)
    stats = RunStats(phase="perplexity", total=len(calls))
    slots = {id(call): i for i, call in enumerate(calls)}
    scores: list[PerplexityScore | None] = [None] * len(calls)

    def take(result: CallResult) -> None:
        index = slots[id(result.call)]
        scorer, _, response = plan[index]
        scores[index] = _score(scorer, response, result)

    await runner._executor(stats).run(calls, take)
    return PerplexityOutcome(scores=[s for s in scores if s is not None], stats=stats)


# -- export -----------------------------------------------------------------------------------------


def export_perplexity(experiment: Experiment, scores: Sequence[PerplexityScore], tables: Mapping[str, str]) -> dict[str, str]:
    """Write ``perplexity.<format>`` and add ``perplexity_a/_b`` to the exported pairwise table.

    Returns ``{"perplexity": path}`` for the run manifest (empty without an output folder).
    """
    if experiment.output_dir is None:
        return {}
    import pandas as pd

    from nepotism.tables import write_table

    target = Path(experiment.output_dir) / f"perplexity.{experiment.output_format}"
    frame = pd.DataFrame([s.row() for s in scores], columns=list(COLUMNS))
    frame["tokens"] = frame["tokens"].astype("int64")
    try:
        write_table(frame, target)
        if "pairwise" in tables:
            _add_slot_columns(Path(tables["pairwise"]), experiment.output_format, scores)
    except OSError as err:
        raise InputError(
            f"cannot write the output ({err.strerror or err}); the calls are in the store (rerun to export)", path=str(target)
        ) from None
    return {"perplexity": str(target)}


def _add_slot_columns(path: Path, fmt: str, scores: Sequence[PerplexityScore]) -> None:
    """``perplexity_a`` / ``perplexity_b`` of each exported pairwise row: the judge's own score of
    the slot's response, empty where the judge scored none (not a scorer, or the call failed)."""
    import pandas as pd

    from nepotism._files import atomic_write_bytes
    from nepotism.tables import write_table

    ppl = {(s.scorer, s.instance_id, s.model): s.perplexity for s in scores if s.status == "ok"}

    def slot(judge: Any, instance: Any, model: Any) -> float | None:
        return ppl.get((str(judge), str(instance), str(model)))

    if fmt == "jsonl":
        lines = []
        for text in path.read_text(encoding="utf-8").splitlines():
            if not text.strip():
                continue
            row = json.loads(text)
            row["perplexity_a"] = slot(row.get("judge"), row.get("instance_id"), row.get("model_a"))
            row["perplexity_b"] = slot(row.get("judge"), row.get("instance_id"), row.get("model_b"))
            lines.append(json.dumps(row, ensure_ascii=False, allow_nan=False))
        atomic_write_bytes(path, ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8"))
        return
    if fmt == "csv":
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    else:
        frame = pd.read_parquet(path)
    for side in ("a", "b"):
        values = [slot(j, i, m) for j, i, m in zip(frame["judge"], frame["instance_id"], frame[f"model_{side}"])]
        column = pd.Series([math.nan if v is None else v for v in values], index=frame.index, dtype=float)
        frame[f"perplexity_{side}"] = column.map(repr).where(column.notna(), "") if fmt == "csv" else column
    write_table(frame, path)
