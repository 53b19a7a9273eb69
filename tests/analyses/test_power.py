"""The budget planner: its formula, and its promise checked on the simulator (planted effect of the
planned size, planned number of prompts: detected at the stated power)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq

from nepotism.analyses.comparisons import build_comparisons
from nepotism.analyses.power import Costs, pilot_estimates, plan_audit, prompts_needed
from nepotism.metrics import Bootstrap
from nepotism.metrics.pairwise import demographic_parity_bias
from nepotism.models import load_registry
from nepotism.simulate import SimulationSpec, simulate

GENERATORS = ("judge", "u1", "u2", "u3", "u4")
EFFECT = 0.06


def _spec(self_bias: float, n: int) -> SimulationSpec:
    return SimulationSpec(
        judges=("judge",),
        generators=GENERATORS,
        families={g: g for g in GENERATORS},
        students={},
        n_instances=n,
        self_bias=self_bias,
        tie_rate=0.1,
    )


def _world(tmp_path):
    """A self-bias whose population win-rate bonus is exactly EFFECT, and the registry of the world."""

    def bonus(b):
        spec = _spec(b, 1)
        return np.mean([spec.truth_win_score("judge", "judge", u) for u in GENERATORS[1:]]) - 0.5 - EFFECT

    self_bias = brentq(bonus, 0.0, 3.0, xtol=1e-10)
    path = tmp_path / "registry.toml"
    path.write_text(_spec(self_bias, 1).registry_toml())
    return self_bias, load_registry([path])


def _self_scores(frame):
    comp = build_comparisons(frame).frame
    own_x = comp["model_x"] == "judge"
    outcome = np.where(own_x, comp["outcome"], -comp["outcome"])
    mine = (own_x | (comp["model_y"] == "judge")).to_numpy()
    return (outcome[mine] + 1.0) / 2.0, comp["instance_id"].to_numpy()[mine]


def test_formula_worked_example_and_design_effect():
    # (1.959964·√0.25 + 0.841621·√(0.55·0.45))² / 0.05² = 782.7 comparisons; one per prompt, independent
    assert prompts_needed(0.05, per_prompt=1) == (783, 783, pytest.approx(0.2475), 1.0)
    prompts, n, variance, design_effect = prompts_needed(0.05, per_prompt=4, icc=0.25, tie_rate=0.2)
    assert design_effect == pytest.approx(1.75) and variance == pytest.approx(0.2475 - 0.05)
    z = 1.959964 * np.sqrt(0.25 - 0.05) + 0.841621 * np.sqrt(0.2475 - 0.05)
    assert n == int(np.ceil(z**2 * 1.75 / 0.0025)) == 1095 and prompts == 274
    for bad in (dict(alpha=0.0), dict(power=1.0), dict(icc=1.5), dict(per_prompt=0), dict(baseline=0.97)):
        with pytest.raises(ValueError):
            prompts_needed(0.05, **{"per_prompt": 1, **bad})


def test_planned_prompts_detect_the_planted_effect_at_the_stated_power(tmp_path):
    """Plan from a pilot of the world, then run 300 audits of that many prompts with the effect
    planted: the share whose 95% interval of the demographic-parity bias excludes 0 is the stated
    power ± 5 points (Monte-Carlo standard error ≈ 2.3 points). The pilot is large (2,000 prompts)
    so that the noise of its within-prompt correlation (standard error ≈ 0.02 here; ≈ 0.045 from
    300 prompts) moves the power by about a point, not three."""
    self_bias, registry = _world(tmp_path)
    pilot = build_comparisons(simulate(_spec(self_bias, 2000), seed=10_000, kinds=("pairwise",)).pairwise).frame
    plan = plan_audit(["judge"], GENERATORS, registry, effects={"self": EFFECT}, power=0.8, pilot=pilot)
    (scope,) = plan.scopes
    assert scope.source == "pilot (2000 prompts)" and scope.per_prompt == 4 and 0.02 < scope.icc < 0.6
    assert 50 < plan.prompts < 2000
    detected = 0
    runs = 300
    for seed in range(runs):
        scores, clusters = _self_scores(simulate(_spec(self_bias, plan.prompts), seed=seed, kinds=("pairwise",)).pairwise)
        related = np.repeat([True, False], scores.size)
        estimate = demographic_parity_bias(
            np.concatenate([scores, 1.0 - scores]),
            related,
            np.concatenate([clusters, clusters]),
            bootstrap=Bootstrap(n_resamples=400, seed=seed),
        )
        detected += not (estimate.ci_low <= 0.0 <= estimate.ci_high)
    assert abs(detected / runs - 0.8) <= 0.05, (detected, runs, plan.prompts, scope)


def test_pilot_without_the_effect_and_the_calls_and_costs(tmp_path):
    _, registry = _world(tmp_path)
    pilot = build_comparisons(simulate(_spec(0.0, 200), seed=3, kinds=("pairwise",)).pairwise).frame
    ties, icc, prompts = pilot_estimates(pilot, "judge", ["judge"], ["u1", "u2", "u3", "u4"])
    assert prompts == 200 and 0.0 < ties < 0.5 and 0.0 <= icc <= 1.0
    assert pilot_estimates(pilot, "judge", ["nobody"], ["u1"]) is None
    costs = Costs(price_input_per_mtok=1.0, price_output_per_mtok=2.0)
    plan = plan_audit(["judge"], GENERATORS, registry, effects={"self": 0.05}, costs=costs, orders=2)
    assert plan.judge_calls == plan.prompts * 1 * 10 * 2 and plan.generation_calls == plan.prompts * 5
    judge_in = 250 + 200 + 2 * 400
    assert plan.input_tokens == plan.judge_calls * judge_in + plan.generation_calls * 200
    assert plan.output_tokens == plan.judge_calls * 100 + plan.generation_calls * 400
    # the simulated world's registry prices nothing: every model at the given USD per million tokens
    assert plan.cost == pytest.approx((plan.input_tokens * 1.0 + plan.output_tokens * 2.0) / 1e6)
    assert plan.unpriced == () and set(plan.model_costs) == set(GENERATORS)
    unpriced = plan_audit(["judge"], GENERATORS, registry, effects={"self": 0.05})
    assert unpriced.cost is None and unpriced.unpriced == GENERATORS
    with pytest.raises(ValueError, match="no judge has a related candidate"):
        plan_audit(["judge"], GENERATORS, registry, effects={"family": 0.05})
    with pytest.raises(ValueError, match="unknown scope"):
        plan_audit(["judge"], GENERATORS, registry, effects={"kin": 0.05})


def _nepotism() -> str:
    return shutil.which("nepotism") or str(Path(sys.executable).with_name("nepotism"))


def test_plan_command(tmp_path):
    _, registry = _world(tmp_path)
    table = tmp_path / "pilot.csv"
    simulate(_spec(0.0, 40), seed=1, kinds=("pairwise",)).pairwise.to_csv(table, index=False)
    args = [
        _nepotism(),
        "plan",
        "--judges",
        "judge",
        "--generators",
        ",".join(GENERATORS),
        "--models",
        str(tmp_path / "registry.toml"),
        "--effect",
        "self=0.05",
        "--price-input-per-mtok",
        "0.5",
    ]
    result = subprocess.run([*args, "--json"], capture_output=True, text=True, check=True)
    plan = json.loads(result.stdout)
    expected = plan_audit(["judge"], GENERATORS, registry, costs=Costs(price_input_per_mtok=0.5))
    assert plan["prompts"] == expected.prompts and plan["cost"] == pytest.approx(expected.cost)
    assert plan["scopes"][0]["source"] == "assumed"
    piloted = json.loads(
        subprocess.run([*args, "--json", "--pilot", str(table)], capture_output=True, text=True, check=True).stdout
    )
    assert piloted["scopes"][0]["source"] == "pilot (40 prompts)"
    text = subprocess.run([*args, "--format", "plain"], capture_output=True, text=True, check=True).stdout
    assert f"prompts: {expected.prompts:,}" in text and "judge calls:" in text and "estimated cost:" in text
    bad = subprocess.run([*args, "--effect", "kin=0.1"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown scope 'kin'" in bad.stderr and not bad.stdout
    none = subprocess.run([*args[:-4], "--effect", "family=0.05"], capture_output=True, text=True)
    assert none.returncode == 2 and "no judge has a related candidate" in none.stderr


def test_a_plan_no_one_can_run_is_printed_with_a_warning(tmp_path):
    """``--effect self=1e-7`` planned 10^14 prompts and trillions of dollars without a word."""
    _world(tmp_path)
    args = [
        _nepotism(),
        "plan",
        "--judges",
        "judge",
        "--generators",
        ",".join(GENERATORS),
        "--models",
        str(tmp_path / "registry.toml"),
    ]
    tiny = subprocess.run([*args, "--effect", "self=1e-7", "--json"], capture_output=True, text=True)
    assert tiny.returncode == 0, tiny.stderr
    plan = json.loads(tiny.stdout)
    assert plan["prompts"] > 10**12 and len(plan["warnings"]) == 2
    assert "warning: --effect self=1e-07 is a win-rate shift of 1e-05 points" in tiny.stderr
    assert f"{plan['prompts']:,} prompts is more than any benchmark holds" in tiny.stderr
    usual = subprocess.run([*args, "--effect", "self=0.05", "--json"], capture_output=True, text=True)
    assert usual.returncode == 0 and "warnings" not in json.loads(usual.stdout) and "warning" not in usual.stderr


def test_the_registry_prices_each_model_as_a_dry_run_does():
    """Judge calls at the judge's prices, answers at each generator's, in USD per million tokens
    from the registry (the built-in one prices these API models); the flags price only the
    models it does not."""
    registry = load_registry([])
    gens = ["gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18", "claude-3-5-sonnet-20240620", "mistral-large-2407"]
    plan = plan_audit(["gpt-4o-2024-08-06"], gens, registry, effects={"self": 0.05})
    calls = plan.prompts * 6 * 2  # 6 pairs, both orders
    judge_in, judge_out = calls * (250 + 200 + 800), calls * 100
    price = {m: (registry.get(m).price_input_per_mtok, registry.get(m).price_output_per_mtok) for m in gens}
    expected = {m: plan.prompts * (200 * price[m][0] + 400 * price[m][1]) / 1e6 for m in gens}
    expected["gpt-4o-2024-08-06"] += (judge_in * 2.5 + judge_out * 10.0) / 1e6
    assert plan.model_costs == pytest.approx(expected) and plan.cost == pytest.approx(sum(expected.values()))
    mixed = plan_audit(["gpt-4o-2024-08-06"], [*gens[:2], "my-model"], registry, effects={"self": 0.05})
    assert mixed.cost is None and mixed.unpriced == ("my-model",)
    assert mixed.model_costs["gpt-4o-2024-08-06"] is not None
    fallback = plan_audit(
        ["gpt-4o-2024-08-06"], [*gens[:2], "my-model"], registry, effects={"self": 0.05}, costs=Costs(price_input_per_mtok=1.0)
    )
    assert fallback.model_costs["my-model"] == pytest.approx(fallback.prompts * 200 / 1e6)
    assert fallback.model_costs["gpt-4o-2024-08-06"] == mixed.model_costs["gpt-4o-2024-08-06"]


def test_the_documented_plan_commands_run(tmp_path):
    """docs/planning.md's examples, as printed, through the installed executable."""
    doc = (Path(__file__).parents[2] / "docs" / "planning.md").read_text(encoding="utf-8")
    block = doc.split("```bash\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    commands = [line.split() for line in block.splitlines() if line.startswith("nepotism plan")]
    assert len(commands) == 2
    (tmp_path / "mine.toml").write_text("".join(f'[models."{m}"]\nfamily = "{m}"\n' for m in ("my-judge", "a", "b", "c")))
    pilot = simulate(
        SimulationSpec(
            judges=("my-judge",),
            generators=("my-judge", "a", "b", "c"),
            families={g: g for g in ("my-judge", "a", "b", "c")},
            students={},
            n_instances=30,
            self_bias=0.5,
        ),
        seed=2,
        kinds=("pairwise",),
    ).pairwise
    pilot.to_csv(tmp_path / "pilot.csv", index=False)
    first = subprocess.run([_nepotism(), *commands[0][1:]], capture_output=True, text=True, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "estimated cost: USD " in first.stdout and "gpt-4o-2024-08-06" in first.stdout
    second = subprocess.run([_nepotism(), *commands[1][1:]], capture_output=True, text=True, cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    plan = json.loads(second.stdout)
    assert plan["cost"] is not None and plan["unpriced"] == [] and plan["scopes"][0]["source"].startswith("pilot")
