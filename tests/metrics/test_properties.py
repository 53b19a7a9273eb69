"""Property table: every catalogue id has a row; bounds, row-order and relabelling invariance."""

import numpy as np
import pytest

from nepotism.metrics import coverage, leakage, matched, pairwise, recognition, reference, rubric, task
from nepotism.metrics.catalogue import ESTIMATORS, METRICS
from nepotism.metrics.stats import binomial_test, chi_square, paired_t_test, pearson

rng = np.random.default_rng(3)
N = 120
IDS = rng.integers(0, 40, N)
CODES = rng.choice([-1.0, 0.0, 1.0], N)
CODES2 = rng.choice([-1.0, 0.0, 1.0], N)
BIN = rng.integers(0, 2, N).astype(float)
BIN2 = rng.integers(0, 2, N).astype(float)
GEN = rng.choice(np.array(["g0", "g1", "g2", "g3"]), N)
STUDENT = rng.integers(0, 2, N)
JUDGE = rng.integers(0, 2, N)
RUN = rng.integers(0, 3, N)

# id -> (call(rows, ids) -> value, (low, high) bounds)
PROPERTIES = {
    "win-rate": (lambda r, c: pairwise.win_rate(CODES[r], c), (0, 1)),
    "preference-leakage-score": (lambda r, c: leakage.preference_leakage_score(CODES[r], STUDENT[r], JUDGE[r], c), (-1, 1)),
    "preference-leakage-change": (
        lambda r, c: leakage.preference_leakage_change(CODES[r], STUDENT[r], JUDGE[r], BIN[r], c, ties="half"),
        (-2, 2),
    ),
    "preference-leakage-variance": (
        lambda r, c: leakage.preference_leakage_runs(CODES[r], STUDENT[r], JUDGE[r], RUN[r], c)["variance"],
        (0, 4 / 3),
    ),  # PLS in [-1, 1], 3 runs, ddof 1
    "error-bias": (lambda r, c: leakage.error_bias(CODES[r], CODES2[r], c), (-1, 1)),
    "ranking-difference": (lambda r, c: leakage.ranking_difference(BIN[r], BIN2[r], GEN[r], c, target="g1"), (-3, 3)),
    "equal-opportunity-bias": (lambda r, c: reference.equal_opportunity_bias(BIN[r], BIN2[r], STUDENT[r] == 1, c), (-1, 1)),
    "demographic-parity-bias": (lambda r, c: pairwise.demographic_parity_bias(BIN[r], STUDENT[r] == 1, c), (-1, 1)),
    "perplexity-win-rate": (
        lambda r, c: reference.perplexity_win_rate(
            BIN[r], BIN2[r], CODES2[r] + BIN[r] * 0.1, c, bins=np.array([-2, -0.5, 0.5, 2])
        )[1]["judge"],
        (0, 1),
    ),
    "log-perplexity-gap": (lambda r, c: reference.log_perplexity_gap(CODES[r] * 2.0, BIN[r] == 1, c), (-4, 4)),
    "mean-log-perplexity": (lambda r, c: reference.mean_log_perplexity((CODES[r] + 1) * 2.0, c), (0, 4)),
    "overestimation-rate": (lambda r, c: rubric.overestimation_rate(CODES[r], CODES2[r], c), (0, 1)),
    "hspp-ratio": (
        lambda r, c: rubric.hspp_ratio(
            *rubric.overestimation_counts(CODES[r], CODES2[r]), GEN[r], c, numerator=["g0"], denominator=["g2", "g3"]
        ),
        (0, np.inf),
    ),
    "mipa": (lambda r, c: rubric.mipa(CODES[r], CODES2[r], c), (0, 1)),
    "mra": (lambda r, c: rubric.mra(BIN[r], BIN2[r], c), (0, 1)),
    "score-delta": (lambda r, c: rubric.score_delta(BIN[r], BIN2[r], GEN[r], c)["g1"], (-1, 1)),
    "self-preference-ratio": (lambda r, c: pairwise.self_preference_ratio(CODES[r], c), (0, 1)),
    "judge-accuracy": (lambda r, c: reference.judge_accuracy(CODES[r], BIN[r], BIN2[r], GEN[r], c), (0, 1)),
    "legitimate-self-preference-ratio": (
        lambda r, c: reference.legitimate_self_preference_ratio(CODES[r], BIN[r], BIN2[r], GEN[r], c),
        (0, 1),
    ),
    "harmful-self-preference-propensity": (
        lambda r, c: reference.harmful_self_preference_propensity(CODES[r], BIN[r], BIN2[r], GEN[r], c),
        (0, 1),
    ),
    "recognition-accuracy": (lambda r, c: recognition.recognition_accuracy(BIN[r], BIN2[r], c), (0, 1)),
    "recognition-preference-association": (
        lambda r, c: recognition.recognition_preference_association(BIN[r], BIN2[r], c)[0],
        (-1, 1),
    ),
    "position-consistency": (lambda r, c: recognition.position_consistency(CODES[r], CODES2[r], c), (0, 1)),
    "matched-bias": (lambda r, c: matched.matched_bias((CODES[r] + 1) / 2, BIN[r], c), (-1, 1)),
    "reasoning-length": (lambda r, c: task.reasoning_length((CODES[r] + 1) * 100, c), (0, 200)),
    "task-accuracy": (lambda r, c: task.task_accuracy(BIN[r], c), (0, 1)),
    "excluded-verdicts": (lambda r, c: coverage.excluded_share(BIN[r] == 1, c, reasons=np.where(BIN[r] == 1, "x", None)), (0, 1)),
    "exclusion-share-gap": (lambda r, c: coverage.exclusion_share_gap(BIN[r] == 1, BIN2[r] == 1, c), (-1, 1)),
}


def test_every_estimator_has_a_property_row():
    assert set(ESTIMATORS) == set(PROPERTIES)


def test_catalogue_value_ranges_cover_the_property_bounds():
    """VALUE_RANGES (what `nepotism card` checks thresholds against) holds every bound seen here."""
    from nepotism.metrics.catalogue import VALUE_RANGES

    assert set(VALUE_RANGES) == set(METRICS)
    for metric_id, (_, (low, high)) in PROPERTIES.items():
        lo, hi = VALUE_RANGES[metric_id]
        assert (lo is None or lo <= low) and (hi is None or high <= hi), metric_id


@pytest.mark.parametrize("metric_id", sorted(PROPERTIES))
def test_bounds_order_and_relabelling(metric_id):
    call, (low, high) = PROPERTIES[metric_id]
    rows = np.arange(N)
    base = call(rows, IDS)
    assert np.isfinite(base.value)
    assert low <= base.value <= high
    if base.n_resamples:
        assert base.ci_low <= base.ci_high
    perm = rng.permutation(N)
    shuffled = call(perm, IDS[perm])
    assert shuffled.value == pytest.approx(base.value)
    relabelled = call(rows, np.array([f"item-{i * 7 + 3}" for i in IDS]))
    assert relabelled.value == pytest.approx(base.value)


def test_pls_symmetry_under_swapping_sides():
    a = leakage.preference_leakage_score(CODES, STUDENT, JUDGE, IDS, n_resamples=300)
    b = leakage.preference_leakage_score(CODES, 1 - STUDENT, 1 - JUDGE, IDS, n_resamples=300)
    assert a.value == pytest.approx(b.value)
    assert (a.ci_low, a.ci_high) == pytest.approx((b.ci_low, b.ci_high))


def test_zero_division_is_nan_with_note():
    est = pairwise.self_preference_ratio(np.array([np.nan]), np.array([1]))
    assert np.isnan(est.value) and est.note
    est = rubric.overestimation_rate(np.array([1.0]), np.array([1.0]), np.array([0]))
    assert np.isnan(est.value) and est.note


def test_bca_and_one_sided():
    est = pairwise.win_rate(CODES, IDS, method="bca", n_resamples=500)
    assert est.method == "bca" and est.ci_low <= est.value <= est.ci_high
    est = leakage.preference_leakage_score(CODES, STUDENT, JUDGE, IDS, n_resamples=500)
    assert 0 < est.p_value <= 1


def test_classical_tests():
    assert pearson([1, 2, 3, 4, 5], [2, 4, 6, 8, 11])["r"] > 0.99
    assert chi_square([[30, 10], [10, 30]])["p_value"] < 0.001
    assert binomial_test(60, 100)["p_value"] == pytest.approx(0.0569, abs=1e-3)
    assert paired_t_test([1, 2, 3, 4], [0, 1, 2, 4.5])["df"] == 3
