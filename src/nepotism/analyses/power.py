"""Budget planner: how many prompts a pairwise audit needs to detect a self-preference, and what it costs.

The design planned is the package's pairwise audit: every judge compares every pair of generators
on every prompt (in both presentation orders by default), and the headline test for a judge and a
*scope* (``self``, ``family``, ``student``, ``family-student``: membership by the one scope
rule, `nepotism.models.Registry.scope`) is whether the judge's win rate for its related
candidates against unrelated opponents (ties count ½, both orders combined) differs from
``baseline`` (½: no preference; equivalently a demographic-parity bias of 0).

Formula (the standard two-sided test of a proportion from clustered data, with Kish's design
effect; e.g. Donner & Klar, *Design and Analysis of Cluster Randomization Trials in Health
Research*, 2000, ch. 5; Kish, *Survey Sampling*, 1965, §5.4):

- each prompt gives the judge m comparisons in the scope: m = (related candidates) × (unrelated
  opponents) among the planned generators;
- a comparison's score s ∈ {0, ½, 1} has variance σ² = p(1 − p) − t/4 at win rate p and tie
  share t (E[s²] = p − t/4): σ₀² under the null (p = baseline), σ₁² under the alternative
  (p = baseline + δ);
- comparisons of one prompt are correlated (the same answers, the same question): the design
  effect is DE = 1 + (m − 1)·ρ with ρ the intra-prompt correlation of scores;
- comparisons needed n = (z₁₋α/₂·σ₀ + z_power·σ₁)² · DE / δ² (the one-sample test of a
  proportion, e.g. Chow, Shao & Wang, *Sample Size Calculations in Clinical Research*, 2008, §4.1,
  inflated by the design effect), prompts = ⌈n / m⌉.

The audit needs the largest of these over the judges and scopes asked for. ρ and t are assumptions
(``icc``, ``tie_rate``) unless pilot judgments are given: then, per judge and scope, t is the pilot's
share of ties and ρ comes from the pilot's design effect (the cluster-robust variance of its win
rate over the variance of independent comparisons; ρ = (DE − 1)/(m̄ − 1), clipped to [0, 1]).
Calls: prompts × judges × pairs × orders judge calls, plus prompts × generators answers unless they
exist already. Cost: per model, its tokens (judge call: template + prompt + two answers in, a
verdict out; answer: prompt in, answer out) × its prices in USD per million tokens — the
registry's (`nepotism.models.ModelInfo`, as `nepotism run --dry-run` prices), else the prices of
`Costs` for the models the registry does not price; the total only when every model with calls
has a price (else None, and ``unpriced`` names the others). What this module leaves out: other
metrics' power (paired gaps, matched bias) and rate limits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from nepotism.metrics.definitions import win_score
from nepotism.models import AUDITED_SCOPES, Registry, related_scope

__all__ = ["BudgetPlan", "Costs", "ScopePlan", "pilot_estimates", "plan_audit", "prompts_needed"]


@dataclass(frozen=True)
class Costs:
    """Token estimates per call, and the prices (USD per million tokens, as in the registry) of
    the models the registry does not price (both 0: those models are not priced)."""

    prompt_tokens: int = 200
    answer_tokens: int = 400
    verdict_tokens: int = 100
    template_tokens: int = 250
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a non-negative number, not {value!r}")


@dataclass(frozen=True)
class ScopePlan:
    """The prompts one judge needs to detect ``effect`` in one scope (None when not measurable)."""

    judge: str
    scope: str
    effect: float
    related: tuple[str, ...]
    opponents: tuple[str, ...]
    per_prompt: int
    variance: float | None
    tie_rate: float
    icc: float
    design_effect: float | None
    source: str  # "assumed" or "pilot (N prompts)"
    comparisons: int | None
    prompts: int | None
    note: str | None = None


@dataclass(frozen=True)
class BudgetPlan:
    """Prompts, calls, tokens and cost of the audit; ``scopes`` says which judge and scope needs what.
    ``model_costs``: USD per model with calls (None: no price for it, in ``unpriced``); ``cost``
    their sum, or None while a model is unpriced."""

    scopes: tuple[ScopePlan, ...]
    prompts: int
    judge_calls: int
    generation_calls: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    settings: dict[str, Any] = field(default_factory=dict)
    model_costs: dict[str, float | None] = field(default_factory=dict)
    unpriced: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["scopes"] = [asdict(s) for s in self.scopes]
        for s in out["scopes"]:
            s["related"], s["opponents"] = list(s["related"]), list(s["opponents"])
        out["unpriced"] = list(self.unpriced)
        return out


def prompts_needed(
    effect: float,
    *,
    per_prompt: int,
    alpha: float = 0.05,
    power: float = 0.8,
    baseline: float = 0.5,
    icc: float = 0.0,
    tie_rate: float = 0.0,
) -> tuple[int, int, float, float]:
    """(prompts, comparisons, σ₁², DE) to detect a win-rate shift ``effect`` from ``baseline`` (module docstring).

    >>> prompts_needed(0.05, per_prompt=1)[:2]   # (1.96·0.5 + 0.8416·0.4975)² / 0.05² = 782.7 → 783
    (783, 783)
    """
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError("alpha and power must be in (0, 1)")
    if not 0.0 <= icc <= 1.0 or not 0.0 <= tie_rate < 1.0:
        raise ValueError("icc must be in [0, 1] and tie_rate in [0, 1)")
    if per_prompt < 1:
        raise ValueError("per_prompt must be at least 1")
    target = baseline + effect
    if effect == 0 or not 0.0 < target < 1.0:
        raise ValueError(f"effect must be non-zero and keep the win rate inside (0, 1): {baseline} + {effect}")
    null = baseline * (1.0 - baseline) - tie_rate / 4.0
    variance = target * (1.0 - target) - tie_rate / 4.0
    if min(null, variance) <= 0:
        raise ValueError(f"tie_rate {tie_rate} is impossible at win rate {min(baseline, target, key=lambda p: p * (1 - p))}")
    design_effect = 1.0 + (per_prompt - 1) * icc
    z = stats.norm.ppf(1.0 - alpha / 2.0) * math.sqrt(null) + stats.norm.ppf(power) * math.sqrt(variance)
    comparisons = math.ceil(round(z * z * design_effect / effect**2, 9))
    return math.ceil(comparisons / per_prompt), comparisons, float(variance), float(design_effect)


def _scope_rows(comparisons: pd.DataFrame, judge: str, related: set[str], opponents: set[str]) -> pd.DataFrame:
    """A judge's comparisons of a related candidate with an unrelated opponent: score from the related side."""
    mine = comparisons[comparisons["judge"] == judge]
    x_side = mine["model_x"].isin(related) & mine["model_y"].isin(opponents)
    y_side = mine["model_y"].isin(related) & mine["model_x"].isin(opponents)
    outcome = np.where(x_side, mine["outcome"], np.where(y_side, -mine["outcome"], np.nan))
    rows = pd.DataFrame({"instance_id": mine["instance_id"].to_numpy(), "score": win_score(outcome)})
    return rows[(x_side | y_side).to_numpy() & ~np.isnan(outcome)]


def pilot_estimates(
    comparisons: pd.DataFrame, judge: str, related: Sequence[str], opponents: Sequence[str]
) -> tuple[float, float, int] | None:
    """(tie share, intra-prompt correlation ρ, prompts) from a pilot's comparisons (a
    `nepotism.analyses.comparisons.Comparisons` frame) of ``judge``'s ``related`` candidates with
    ``opponents``; None when the pilot has fewer than two such prompts."""
    rows = _scope_rows(comparisons, judge, set(related), set(opponents))
    by_prompt = rows.groupby("instance_id")["score"].agg(["sum", "count"])
    clusters = len(by_prompt)
    if clusters < 2:
        return None
    scores = rows["score"].to_numpy()
    n = scores.size
    mean = scores.mean()
    tie_rate = float(np.mean(scores == 0.5))
    variance = float(np.mean((scores - mean) ** 2))
    if variance <= 0 or n <= clusters:
        return tie_rate, 0.0, clusters
    robust = clusters / (clusters - 1) * float(np.sum((by_prompt["sum"] - mean * by_prompt["count"]) ** 2)) / n**2
    design_effect = robust / (variance / n)
    icc = (design_effect - 1.0) / (n / clusters - 1.0)
    return tie_rate, float(min(max(icc, 0.0), 1.0)), clusters


def plan_audit(
    judges: Sequence[str],
    generators: Sequence[str],
    registry: Registry,
    *,
    effects: Mapping[str, float] | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    baseline: float = 0.5,
    icc: float = 0.1,
    tie_rate: float = 0.0,
    orders: int = 2,
    generate: bool = True,
    costs: Costs | None = None,
    pilot: pd.DataFrame | None = None,
) -> BudgetPlan:
    """The prompts, calls and cost for ``judges`` × all pairs of ``generators`` (module docstring).

    ``effects``: {scope: win-rate shift to detect} (default ``{"self": 0.05}``). ``pilot``: a
    comparisons frame (`nepotism.analyses.comparisons.build_comparisons(...).frame`) whose tie share
    and intra-prompt correlation replace ``tie_rate`` and ``icc`` where it has at least two prompts.
    Raises ValueError when no judge can be measured in any scope asked for.
    """
    effects = dict(effects or {"self": 0.05})
    unknown = set(effects) - set(AUDITED_SCOPES)
    if unknown:
        raise ValueError(f"unknown scope(s) {', '.join(sorted(unknown))}; scopes are {', '.join(AUDITED_SCOPES)}")
    judges, generators = list(dict.fromkeys(judges)), list(dict.fromkeys(generators))
    if not judges or len(generators) < 2:
        raise ValueError("a plan needs at least one judge and two generators")
    if orders not in (1, 2):
        raise ValueError("orders must be 1 or 2")
    costs = costs or Costs()
    plans = []
    for judge in judges:
        scope_of = {g: registry.scope(judge, g) for g in generators}
        opponents = tuple(g for g in generators if not related_scope(scope_of[g]))
        for scope, effect in effects.items():
            related = tuple(g for g in generators if scope_of[g] == scope)
            m = len(related) * len(opponents)
            plan = partial(
                ScopePlan, judge=judge, scope=scope, effect=float(effect), related=related, opponents=opponents, per_prompt=m
            )
            if m == 0:
                what = "candidate" if not related else "unrelated opponent"
                unlisted = "" if registry.knows(judge) else f" ({judge} is not in the registry: add it with --models)"
                plans.append(
                    plan(
                        variance=None,
                        tie_rate=tie_rate,
                        icc=icc,
                        design_effect=None,
                        source="assumed",
                        comparisons=None,
                        prompts=None,
                        note=f"not measurable: no {scope} {what} among the generators{unlisted}",
                    )
                )
                continue
            ties, rho, source = tie_rate, icc, "assumed"
            found = pilot_estimates(pilot, judge, related, opponents) if pilot is not None else None
            if found is not None:
                ties, rho, source = found[0], found[1], f"pilot ({found[2]} prompts)"
            prompts, n, variance, design_effect = prompts_needed(
                effect, per_prompt=m, alpha=alpha, power=power, baseline=baseline, icc=rho, tie_rate=ties
            )
            plans.append(
                plan(
                    variance=variance,
                    tie_rate=ties,
                    icc=rho,
                    design_effect=design_effect,
                    source=source,
                    comparisons=n,
                    prompts=prompts,
                )
            )
    needed = [p.prompts for p in plans if p.prompts is not None]
    if not needed:
        raise ValueError(
            "no judge has a related candidate and an unrelated opponent in the scope(s) asked for: "
            + "; ".join(f"{p.judge} {p.scope}: {p.note}" for p in plans)
        )
    prompts = max(needed)
    pairs = len(generators) * (len(generators) - 1) // 2
    judge_calls = prompts * len(judges) * pairs * orders
    generation_calls = prompts * len(generators) if generate else 0
    judge_in = costs.template_tokens + costs.prompt_tokens + 2 * costs.answer_tokens
    input_tokens = judge_calls * judge_in + generation_calls * costs.prompt_tokens
    output_tokens = judge_calls * costs.verdict_tokens + generation_calls * costs.answer_tokens
    tokens: dict[str, list[int]] = {}  # model -> [input, output]
    for judge in judges:
        calls = prompts * pairs * orders
        tokens.setdefault(judge, [0, 0])
        tokens[judge][0] += calls * judge_in
        tokens[judge][1] += calls * costs.verdict_tokens
    for generator in generators if generate else ():
        tokens.setdefault(generator, [0, 0])
        tokens[generator][0] += prompts * costs.prompt_tokens
        tokens[generator][1] += prompts * costs.answer_tokens
    model_costs = {model: _priced(registry, model, costs, used[0], used[1]) for model, used in tokens.items()}
    unpriced = tuple(model for model, cost in model_costs.items() if cost is None)
    cost = None if unpriced else round(sum(c for c in model_costs.values() if c is not None), 6)
    settings = {
        "alpha": alpha,
        "power": power,
        "baseline": baseline,
        "orders": orders,
        "generate": generate,
        "judges": judges,
        "generators": generators,
        "effects": effects,
        **asdict(costs),
        "pilot": pilot is not None,
    }
    return BudgetPlan(
        tuple(plans), prompts, judge_calls, generation_calls, input_tokens, output_tokens, cost, settings, model_costs, unpriced
    )


def _priced(registry: Registry, model: str, costs: Costs, input_tokens: int, output_tokens: int) -> float | None:
    """USD for ``model``'s tokens at the registry's prices, else at those of ``costs``; None when
    neither prices it. A registry entry with one price counts the other as 0 (as a run does)."""
    info = registry.get(model) if registry.knows(model) else None
    prices = (info.price_input_per_mtok, info.price_output_per_mtok) if info is not None else (None, None)
    if prices == (None, None):
        prices = (costs.price_input_per_mtok, costs.price_output_per_mtok)
        if not any(prices):
            return None
    return round((input_tokens * (prices[0] or 0.0) + output_tokens * (prices[1] or 0.0)) / 1e6, 6)
