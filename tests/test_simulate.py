"""Simulator-based tests: metrics recover planted effects; 95% intervals cover the truth 93–97%."""

import os

import numpy as np
import pytest
from scipy.special import expit, logit

from nepotism.analyses.suite import SuiteOptions, run_suite
from nepotism.metrics.leakage import pls_from_win_rates, preference_leakage_score
from nepotism.metrics.pairwise import self_preference_ratio
from nepotism.metrics.reference import equal_opportunity_bias
from nepotism.metrics.rubric import hspp_ratio
from nepotism.models import load_registry
from nepotism.simulate import SimulationSpec, simulate
from nepotism.metrics import Bootstrap

N_SIMS = 1000
N_ITEMS = 400
RESAMPLES = 400


def _registry(spec, tmp_path):
    path = os.path.join(tmp_path, "registry.toml")
    with open(path, "w") as handle:
        handle.write(spec.registry_toml())
    return load_registry([path])


def _aggregated(rng, d, bias, spec):
    """Vectorised draw of 004-Eq.-1 aggregated outcomes (+1/0/-1 for X) with the spec's model."""
    t = spec.tie_rate

    def order(position):
        p = expit(spec.beta * d + bias + position)
        u = rng.random(d.shape)
        return np.where(u < t, 0.0, np.where(u < t + (1 - t) * p, 1.0, -1.0))

    a, b = order(spec.position_bias), order(-spec.position_bias)
    return np.where(a == b, a, np.where(a == 0, b, np.where(b == 0, a, 0.0)))


def _coverage(estimates, truth):
    low = np.array([e.ci_low for e in estimates])
    high = np.array([e.ci_high for e in estimates])
    return float(np.mean((low <= truth) & (truth <= high)))


SPEC = SimulationSpec(self_bias=0.8, student_bias=0.6, tie_rate=0.1, position_bias=0.3)


def test_suite_recovers_planted_rubric_effects(tmp_path):
    spec = SimulationSpec(
        self_bias=1.0,
        family_bias=0.5,
        n_instances=600,
        n_rubrics=8,
        generators=("judge-a", "judge-b", "cousin-a", "other-1", "other-2"),
        families={"judge-a": "fa", "cousin-a": "fa", "judge-b": "fb", "other-1": "o1", "other-2": "o2"},
        students={},
    )
    sim = simulate(spec, seed=4, kinds=("rubric",))
    result = run_suite(
        sim.rubric,
        "rubric",
        _registry(spec, tmp_path),
        references={"rubric-ref": sim.rubric_ref},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=300)),
    )
    frame = result.frame()
    rows = frame[(frame.metric == "hspp-ratio") & (frame.judge == "judge-a")]
    by = {(r.scope, r.variant["level"], r.variant.get("family_set")): r for r in rows.itertuples()}
    unrelated = spec.truth_rubric_overestimation("judge-a", "other-1")
    self_truth = spec.truth_rubric_overestimation("judge-a", "judge-a") / unrelated
    fam_truth = spec.truth_rubric_overestimation("judge-a", "cousin-a") / unrelated
    assert by[("self", "rubric", None)].value == pytest.approx(self_truth, rel=0.12)
    assert by[("family", "rubric", "exclude judge")].value == pytest.approx(fam_truth, rel=0.12)
    assert by[("self", "instance", None)].value > 1.2
    others = frame[
        (frame.metric == "overestimation-rate")
        & (frame.judge == "judge-a")
        & (frame.generator == "other-1")
        & (frame.variant.map(lambda v: v.get("level")) == "rubric")
    ].iloc[0]
    assert others.ci_low <= unrelated <= others.ci_high


def test_suite_recovers_planted_pairwise_effects(tmp_path):
    spec = SimulationSpec(self_bias=1.0, student_bias=0.8, n_instances=800)
    sim = simulate(spec, seed=5, kinds=("pairwise",))
    result = run_suite(
        sim.pairwise,
        "pairwise",
        _registry(spec, tmp_path),
        references={"preference-ref": sim.preference_ref, "correctness-ref": sim.correctness_ref},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=300)),
    )
    frame = result.frame()
    spr = frame[(frame.metric == "self-preference-ratio") & (frame.judge == "judge-a") & (frame.scope == "self")].iloc[0]
    truth = np.mean([spec.truth_win_probability("judge-a", "judge-a", o) for o in ("other-1", "other-2", "judge-b", "student-b")])
    assert spr.value == pytest.approx(truth, abs=0.04)
    pls = frame[(frame.metric == "preference-leakage-score") & (frame.variant.map(lambda v: v.get("ties")) == "half")].iloc[0]
    wr_ii = spec.truth_win_score("judge-a", "student-a", "student-b")
    wr_ij = spec.truth_win_score("judge-b", "student-a", "student-b")
    assert pls.value == pytest.approx(pls_from_win_rates(wr_ii, wr_ij, 1 - wr_ij, 1 - wr_ii), abs=0.06)
    assert pls.p_value < 0.01
    eob = frame[(frame.metric == "equal-opportunity-bias") & (frame.judge == "judge-a") & (frame.scope == "self")].iloc[0]
    assert eob.ci_low > 0
    hspp = frame[(frame.metric == "harmful-self-preference-propensity") & (frame.judge == "judge-a")].iloc[0]
    assert 0 < hspp.value < 1


@pytest.mark.slow
def test_coverage_self_preference_ratio():
    rng = np.random.default_rng(11)
    d = rng.normal(0, np.sqrt(2), (N_SIMS, N_ITEMS))
    out = _aggregated(rng, d, SPEC.self_bias, SPEC)
    ids = np.arange(N_ITEMS)
    estimates = [self_preference_ratio(o, ids, n_resamples=RESAMPLES, seed=s) for s, o in enumerate(out)]
    truth = SPEC.truth_win_probability("judge-a", "judge-a", "other-1")
    assert np.mean([e.value for e in estimates]) == pytest.approx(truth, abs=0.005)
    assert 0.93 <= _coverage(estimates, truth) <= 0.97


@pytest.mark.slow
def test_coverage_equal_opportunity_bias():
    rng = np.random.default_rng(12)
    d = rng.normal(0, np.sqrt(2), (N_SIMS, N_ITEMS))
    out = _aggregated(rng, d, SPEC.self_bias, SPEC)
    human = (d > 0).astype(float)
    ids = np.arange(N_ITEMS)
    estimates = []
    for s in range(N_SIMS):
        own = (out[s] + 1) / 2
        estimates.append(
            equal_opportunity_bias(
                np.r_[own, 1 - own],
                np.r_[human[s], 1 - human[s]],
                np.repeat([True, False], N_ITEMS),
                np.r_[ids, ids],
                n_resamples=RESAMPLES,
                seed=s,
            )
        )
    truth = SPEC.truth_win_score("judge-a", "judge-a", "other-1", given="x-better") - (
        1 - SPEC.truth_win_score("judge-a", "judge-a", "other-1", given="y-better")
    )
    assert np.mean([e.value for e in estimates]) == pytest.approx(truth, abs=0.01)
    assert 0.93 <= _coverage(estimates, truth) <= 0.97


@pytest.mark.slow
def test_coverage_preference_leakage_score():
    rng = np.random.default_rng(13)
    d = rng.normal(0, np.sqrt(2), (N_SIMS, N_ITEMS))  # student i minus student j, shared by both judges
    under_i = _aggregated(rng, d, SPEC.student_bias, SPEC)  # judge i favours student i
    under_j = _aggregated(rng, d, -SPEC.student_bias, SPEC)  # judge j favours student j
    ids = np.arange(N_ITEMS)
    student = np.repeat([0, 1], 2 * N_ITEMS)
    judge = np.tile(np.repeat([0, 1], N_ITEMS), 2)
    clusters = np.tile(ids, 4)
    estimates = []
    for s in range(N_SIMS):
        out_i = np.r_[under_i[s], under_j[s]]
        estimates.append(
            preference_leakage_score(np.r_[out_i, -out_i], student, judge, clusters, ties="half", n_resamples=RESAMPLES, seed=s)
        )  # truth_win_score counts ½
    spec = SimulationSpec(student_bias=SPEC.student_bias, tie_rate=SPEC.tie_rate, position_bias=SPEC.position_bias)
    wr_ii = spec.truth_win_score("judge-a", "student-a", "student-b")
    wr_ij = spec.truth_win_score("judge-b", "student-a", "student-b")
    truth = float(pls_from_win_rates(wr_ii, wr_ij, 1 - wr_ij, 1 - wr_ii))
    assert np.mean([e.value for e in estimates]) == pytest.approx(truth, abs=0.01)
    assert 0.93 <= _coverage(estimates, truth) <= 0.97


@pytest.mark.slow
def test_coverage_hspp_ratio():
    rng = np.random.default_rng(14)
    n_gen, k = 4, 5  # generator 0 = the judge, 1–3 unrelated
    fp = np.array([expit(logit(0.2) + 0.8), 0.2, 0.2, 0.2])
    unmet = rng.random((N_SIMS, n_gen, N_ITEMS, k)) < 0.5
    passed = rng.random((N_SIMS, n_gen, N_ITEMS, k)) < fp[None, :, None, None]
    over = (unmet & passed).sum(-1).astype(float)  # (S, G, I) counts per (generator, instance)
    risk = unmet.sum(-1).astype(float)
    gens = np.repeat(np.array(["j", "u1", "u2", "u3"]), N_ITEMS)
    ids = np.tile(np.arange(N_ITEMS), n_gen)
    estimates = [
        hspp_ratio(
            over[s].ravel(),
            risk[s].ravel(),
            gens,
            ids,
            numerator=["j"],
            denominator=["u1", "u2", "u3"],
            n_resamples=RESAMPLES,
            seed=s,
        )
        for s in range(N_SIMS)
    ]
    truth = fp[0] / 0.2
    assert np.median([e.value for e in estimates]) == pytest.approx(truth, rel=0.02)
    assert 0.93 <= _coverage(estimates, truth) <= 0.97
