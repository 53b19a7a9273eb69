"""Choosing which pairs humans should label, so scarce annotation time goes where it matters.

Strategies (all seeded: the same inputs and seed give the same sample):

* ``uniform``: a simple random sample of the pairs. The only strategy whose labels estimate
  population quantities without reweighting.
* ``disagreement``: pairs on which the judges disagree. Each judge's parsed verdicts on the pair
  (both orders, all replicates) become shares of model_a / model_b / tie; the pair's score is one
  minus the largest outcome share averaged over judges (0 = all judges agree; needs at least two
  judges with a parsed verdict). Highest scores first.
* ``self-preference``: pairs where a judge compared its own response (same registered model, or
  the same name without its ``@tag`` when the registry does not know it) and picked it. Score:
  the share of the self-judge's verdicts that chose its own response, plus, as a tie-breaker,
  the share of the other judges' verdicts that chose the other response.

Ties in score are broken at random. When fewer pairs qualify (score > 0) than asked for, only
those are returned unless ``fill`` is set, which tops the sample up with a uniform draw from the
rest (marked ``sample_reason = "fill"``). Each chosen item records ``sample_strategy``,
``sample_score``, ``sample_reason`` and ``sample_seed`` in its metadata.

What this leaves out: inclusion probabilities for reweighting a targeted sample (labels from a
``disagreement`` or ``self-preference`` sample describe the hard cases, not the population).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from nepotism.errors import InputError
from nepotism.store.annotations import AnnotationItem

if TYPE_CHECKING:
    from nepotism.models import Registry

__all__ = ["STRATEGIES", "SampleSummary", "pair_outcomes", "sample_items"]

STRATEGIES = ("uniform", "disagreement", "self-preference")
_OUTCOMES = ("model_a", "model_b", "tie")


@dataclass(frozen=True)
class SampleSummary:
    """What a sample drew: candidates, how many qualified, how many were chosen or filled."""

    strategy: str
    seed: int
    n_candidates: int
    n_qualified: int
    n_selected: int
    n_filled: int
    n_unmatched_judgments: int
    n_unparsed_judgments: int

    def as_dict(self) -> dict[str, str | int]:
        return dict(self.__dict__)


def _base(name: str) -> str:
    return name.split("@", 1)[0].strip().casefold()


def pair_outcomes(items: Sequence[AnnotationItem], judgments: pd.DataFrame) -> tuple[dict[str, dict[str, list[str]]], int, int]:
    """Each item's parsed judge verdicts in canonical terms: ``{item_id: {judge: [outcome, ...]}}``.

    Returns also the number of judgment rows that match no item and of rows with no verdict.
    """
    index = {(i.instance_id, i.model_a, i.model_b): (i.item_id, False) for i in items}
    index.update({(i.instance_id, i.model_b, i.model_a): (i.item_id, True) for i in items})
    outcomes: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    unmatched = unparsed = 0
    for inst, judge, a, b, verdict in zip(
        judgments["instance_id"],
        judgments["judge"],
        judgments["model_a"],
        judgments["model_b"],
        judgments["verdict"],
        strict=True,
    ):
        found = index.get((inst, a, b))
        if found is None:
            unmatched += 1
            continue
        if verdict is None or (isinstance(verdict, float) and np.isnan(verdict)):
            unparsed += 1
            continue
        item_id, swapped = found
        if verdict == "tie":
            outcome = "tie"
        elif (verdict == "A") != swapped:
            outcome = "model_a"
        else:
            outcome = "model_b"
        outcomes[item_id][judge].append(outcome)
    return outcomes, unmatched, unparsed


def _shares(verdicts: list[str]) -> np.ndarray:
    return np.array([verdicts.count(o) for o in _OUTCOMES], dtype=float) / len(verdicts)


def _disagreement(per_judge: dict[str, list[str]]) -> float:
    if len(per_judge) < 2:
        return 0.0
    mean = np.mean([_shares(v) for v in per_judge.values()], axis=0)
    return float(1.0 - mean.max())


def _own(registry: Registry | None, judge: str, model: str) -> bool:
    if registry is not None and registry.knows(judge) and registry.knows(model):
        return registry.resolve(judge) == registry.resolve(model)
    return _base(judge) == _base(model)


def _self_preference(item: AnnotationItem, per_judge: dict[str, list[str]], registry: Registry | None) -> float:
    own_wins, own_total, other_against, other_total = 0, 0, 0, 0
    selves: list[str] = []
    for judge, verdicts in per_judge.items():
        side = "model_a" if _own(registry, judge, item.model_a) else "model_b" if _own(registry, judge, item.model_b) else None
        if side is not None:
            selves.append(side)
            own_wins += sum(v == side for v in verdicts)
            own_total += len(verdicts)
    if not own_total or own_wins == 0:
        return 0.0
    # the other judges: how often they chose the response the self-judges did not write
    for judge, verdicts in per_judge.items():
        if _own(registry, judge, item.model_a) or _own(registry, judge, item.model_b):
            continue
        for v in verdicts:
            other_total += 1
            other_against += v != "tie" and v not in selves
    score = own_wins / own_total
    return score + (0.5 * other_against / other_total if other_total else 0.0)


def sample_items(
    items: Sequence[AnnotationItem],
    n: int,
    *,
    strategy: str = "uniform",
    seed: int = 0,
    judgments: pd.DataFrame | None = None,
    registry: Registry | None = None,
    fill: bool = False,
) -> tuple[list[AnnotationItem], SampleSummary]:
    """Draw up to ``n`` items by ``strategy``; returns them (in sampled order) and a summary."""
    if strategy not in STRATEGIES:
        raise InputError(f"unknown strategy {strategy!r}; use one of {STRATEGIES}", field="by")
    if n < 1:
        raise InputError("the sample size must be at least 1", field="n")
    items = list(items)
    rng = np.random.default_rng(seed)
    tiebreak = rng.permutation(len(items))
    unmatched = unparsed = 0
    if strategy == "uniform":
        scores = np.ones(len(items))
        reasons = ["uniform"] * len(items)
    else:
        if judgments is None:
            raise InputError(f"sampling by {strategy} needs the judges' verdicts", field="judgments")
        outcomes, unmatched, unparsed = pair_outcomes(items, judgments)
        if strategy == "disagreement":
            scores = np.array([_disagreement(outcomes.get(i.item_id, {})) for i in items])
        else:
            scores = np.array([_self_preference(i, outcomes.get(i.item_id, {}), registry) for i in items])
        reasons = [strategy] * len(items)
    order = sorted(range(len(items)), key=lambda k: (-scores[k], tiebreak[k]))
    qualified = [k for k in order if scores[k] > 0]
    chosen = qualified[:n]
    filled: list[int] = []
    if fill and len(chosen) < n:
        rest = [k for k in range(len(items)) if scores[k] <= 0]
        picks = rng.permutation(len(rest))[: n - len(chosen)]
        filled = [rest[p] for p in picks]
    out = []
    picked = set(chosen)
    for k in chosen + filled:
        reason = reasons[k] if k in picked else "fill"
        meta = dict(items[k].metadata) | {
            "sample_strategy": strategy,
            "sample_score": round(float(scores[k]), 6) if k in picked else 0.0,
            "sample_reason": reason,
            "sample_seed": seed,
        }
        out.append(replace(items[k], metadata=meta))
    summary = SampleSummary(strategy, seed, len(items), len(qualified), len(chosen), len(filled), unmatched, unparsed)
    return out, summary
