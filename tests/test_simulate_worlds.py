"""`matched-bias` over many simulated worlds: nominal false alarms for clean judges (also the clean
strong one), power for planted self/family/student effects, and 001's equal-opportunity bias
accusing the clean strong judge (the motivating failure). Plus the simulator's new features.

Worlds are independent replicate studies from one `panel_spec`: one simulation with W·N items is
cut into W worlds of N items (items are independent, so this is the same as W separate draws),
which keeps the recorded-table pipeline (build_comparisons → matched_rows) to one pass per setting.
"""

import os

import numpy as np
import pandas as pd
import pytest

from nepotism.analyses.matched import pair_values, matched_rows, run_matched, truth_codes
from nepotism.metrics.matched import matched_bias
from nepotism.metrics.reference import equal_opportunity_bias
from nepotism.models import load_registry
from nepotism.simulate import SimulationSpec, panel_spec, simulate, write_tables
from nepotism.tables import read_table

WORLDS = 100
ITEMS = 150
ALPHA = 0.05
PLANTED = {"self": 0.5, "family": 0.5, "student": 0.5}  # moderate: 0.5 on the logit scale
SIDES = ("judge-a", "cousin-a", "student-a", "judge-b", "cousin-b", "student-b")
OTHERS = ("other-1", "other-2", "other-3")
PAIRS = tuple((g, o) for g in SIDES for o in OTHERS) + (("other-1", "other-2"), ("other-1", "other-3"), ("other-2", "other-3"))


def _registry(spec, tmp_path):
    path = os.path.join(tmp_path, "registry.toml")
    with open(path, "w") as handle:
        handle.write(spec.registry_toml())
    return load_registry([path])


def _rows(spec, tmp_path, seed):
    sim = simulate(spec, seed=seed, kinds=("pairwise",))
    values, centre = pair_values(sim.pairwise, "pairwise")
    matched = matched_rows(
        values, _registry(spec, tmp_path), centre=centre, truth=truth_codes({"preference-ref": sim.preference_ref})
    )
    rows = matched.frame
    rows["world"] = rows["instance_id"].str[1:].astype(int) // ITEMS
    return rows[rows["scope"] != "neutral"]


def _flag_rates(rows):
    rates = {}
    for (judge, scope), group in rows.groupby(["judge", "scope"]):
        flags = []
        for _, world in group.groupby("world"):
            est = matched_bias(
                world["judge_value"].to_numpy(),
                world["reference_value"].to_numpy(),
                world["instance_id"].to_numpy(),
                n_resamples=500,
                seed=0,
            )
            flags.append(est.p_value < ALPHA)
        assert len(flags) == WORLDS
        rates[(judge, scope)] = float(np.mean(flags))
    return rates


def _eob_flag_rate(rows, judge):
    own = rows[(rows["judge"] == judge) & (rows["scope"] == "self")]
    flags = []
    for _, world in own.groupby("world"):
        pref = world["judge_value"].to_numpy()
        human = (world["truth"].to_numpy() + 1) / 2
        ids = world["instance_id"].to_numpy()
        est = equal_opportunity_bias(
            np.r_[pref, 1 - pref],
            np.r_[human, 1 - human],
            np.repeat([True, False], len(pref)),
            np.r_[ids, ids],
            n_resamples=500,
            seed=0,
            alternative="greater",
        )
        flags.append(est.p_value < ALPHA)
    return float(np.mean(flags))


@pytest.mark.slow
def test_clean_worlds_flag_nobody_and_eob_accuses_the_strong_judge(tmp_path):
    spec = panel_spec(n_instances=WORLDS * ITEMS, pairs=PAIRS)
    rows = _rows(spec, tmp_path, seed=101)
    rates = _flag_rates(rows)
    print("clean worlds, matched-bias flag rates:", rates)
    assert set(rates) == {
        ("judge-a", "self"),
        ("judge-a", "family"),
        ("judge-a", "student"),
        ("judge-b", "self"),
        ("judge-b", "family"),
        ("judge-b", "student"),
        ("judge-e", "teacher"),
    }
    assert max(rates.values()) <= 0.10
    eob = _eob_flag_rate(rows, "judge-a")
    print("clean strong judge, 001 equal-opportunity bias flag rate:", eob)
    assert eob >= 0.5 and eob >= 4 * rates[("judge-a", "self")]


@pytest.mark.slow
def test_planted_effects_are_found_and_clean_judges_are_not(tmp_path):
    spec = panel_spec(n_instances=WORLDS * ITEMS, pairs=PAIRS, planted=PLANTED)
    rows = _rows(spec, tmp_path, seed=202)
    rates = _flag_rates(rows)
    print("planted worlds, matched-bias flag rates:", rates)
    for scope in ("self", "family", "student"):
        assert rates[("judge-b", scope)] >= 0.80
    clean = {k: v for k, v in rates.items() if k[0] != "judge-b"}
    assert clean and max(clean.values()) <= 0.10
    # the estimate is centred on the population value of the estimand
    b_self = rows[(rows["judge"] == "judge-b") & (rows["scope"] == "self")]
    truth = np.mean([spec.truth_matched_bias("judge-b", "judge-b", o, ["judge-c", "judge-d"]) for o in OTHERS])
    estimate = float(np.mean(b_self["judge_value"] - b_self["reference_value"]))
    assert estimate == pytest.approx(truth, abs=0.015)


def test_a_more_sensitive_judge_breaks_the_assumption_visibly(tmp_path):
    """Equal sensitivity is an assumption: a sharper clean judge with strong relatives is pushed up
    on legitimate comparisons, down on harmful ones, and the sensitivity check shows it."""
    spec = panel_spec(n_instances=600, sensitivity={"judge-a": 2.0}, pairs=PAIRS)
    sim = simulate(spec, seed=7, kinds=("pairwise",))
    records = run_matched(sim.pairwise, "pairwise", _registry(spec, tmp_path), references={"preference-ref": sim.preference_ref})
    frame = pd.DataFrame(records)
    mine = frame[(frame.judge == "judge-a")]
    by = {(r.scope, r.variant.get("subset", r.variant.get("check"))): r for r in mine.itertuples()}
    assert by[("self", "legitimate")].value > 0 and by[("self", "legitimate")].p_value < 0.05
    assert by[("self", "harmful")].value < 0
    assert by[("neutral", "sensitivity")].ci_low > 0
    others = frame[(frame.judge == "judge-c") & (frame.scope == "neutral")].iloc[0]
    assert others.ci_low <= 0.02  # the references themselves look ordinary


def test_per_judge_bias_sensitivity_and_teacher_relation():
    spec = panel_spec(planted={"self": 0.7})
    assert spec.bias("judge-b", "judge-b") == 0.7
    assert spec.bias("judge-a", "judge-a") == 0.0
    assert spec.relation("judge-e", "other-1") == "teacher"
    assert spec.relation("judge-a", "student-a") == "student"
    assert spec.relation("judge-a", "cousin-a") == "family"
    sharp = SimulationSpec(sensitivity={"judge-a": 2.0})
    assert sharp.slope("judge-a") == 2.0 and sharp.slope("judge-b") == 1.0
    assert sharp.truth_win_score("judge-a", "judge-a", "other-1", given="x-better") > sharp.truth_win_score(
        "judge-b", "judge-a", "other-1", given="x-better"
    )


def test_pointwise_scores_follow_the_spec():
    spec = SimulationSpec(
        n_instances=4000, judges=("judge-a", "judge-b"), leniency={"judge-b": 2.0}, self_bias=0.5, score_noise=0.5
    )
    sim = simulate(spec, seed=3, kinds=("pointwise",))
    frame = sim.pointwise
    assert len(frame) == 2 * len(spec.generators) * spec.n_instances
    mean = frame.groupby(["judge", "model"])["score"].mean()
    assert mean["judge-b", "other-1"] - mean["judge-a", "other-1"] == pytest.approx(2.0, abs=0.1)
    assert mean["judge-a", "judge-a"] - mean["judge-b", "judge-a"] == pytest.approx(0.5 - 2.0, abs=0.1)
    assert sim.pairwise.empty and sim.rubric.empty


def test_same_seed_same_world_and_pairs_option():
    spec = panel_spec(n_instances=20, pairs=(("judge-a", "other-1"),))
    one, two = simulate(spec, seed=5), simulate(spec, seed=5)
    pd.testing.assert_frame_equal(one.pairwise, two.pairwise)
    assert set(zip(one.pairwise.model_a, one.pairwise.model_b)) == {("judge-a", "other-1"), ("other-1", "judge-a")}
    with pytest.raises(ValueError):
        simulate(spec, kinds=("essay",))


def test_write_tables_round_trips_through_the_readers(tmp_path):
    spec = panel_spec(n_instances=10, pairs=(("judge-a", "other-1"), ("judge-b", "other-2")))
    sim = simulate(spec, seed=1, kinds=("pairwise", "pointwise"))
    written = write_tables(sim, tmp_path / "study")
    assert {"pairwise", "pointwise", "preference-ref", "correctness-ref", "registry"} <= set(written)
    table = read_table(written["pairwise"])
    assert table.kind == "pairwise" and len(table) == len(sim.pairwise)
    assert read_table(written["pointwise"]).kind == "pointwise"
    registry = load_registry([written["registry"]])
    assert registry.relation("judge-e", "other-1").name == "TEACHER"
    assert not any(name.startswith(".") or name.endswith(".tmp") for name in os.listdir(tmp_path / "study"))
