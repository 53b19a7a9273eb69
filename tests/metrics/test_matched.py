"""`nepotism.metrics.matched`: worked values, exclusions, NaN instead of 0, the one-sided p-value."""

import numpy as np
import pytest

from nepotism.metrics import matched
from nepotism.metrics.matched import matched_bias, sensitivity_gap


def test_all_exported():
    for name in matched.__all__:
        assert callable(getattr(matched, name))


def test_worked_example():
    # judge: 1, ½, 0 ; references: ½, ½, ¼  → differences ½, 0, −¼ → mean 1/12
    est = matched_bias(np.array([1.0, 0.5, 0.0]), np.array([0.5, 0.5, 0.25]), np.array(["a", "b", "c"]), n_resamples=200)
    assert est.value == pytest.approx(1 / 12)
    assert est.n == 3 and est.n_clusters == 3 and est.p_value is not None


def test_missing_reference_is_excluded_and_items_counted():
    judge = np.array([1.0, 1.0, 0.0, np.nan])
    ref = np.array([0.5, np.nan, 0.5, 0.5])
    items = np.array(["a", "b", "c", "d"])
    est = matched_bias(judge, ref, items, n_resamples=100)
    assert est.value == pytest.approx(0.0)
    assert est.excluded == {"no reference judge": 1, "no verdict": 1}
    assert est.n_excluded == 2 and "2 item(s)" in est.note


def test_no_reference_at_all_is_nan_with_note():
    est = matched_bias(np.array([1.0, 0.0]), np.array([np.nan, np.nan]), np.array([1, 2]))
    assert np.isnan(est.value) and "reference" in est.note and est.n_excluded == 2


def test_one_sided_p_value_tracks_the_sign():
    rng = np.random.default_rng(0)
    items = np.repeat(np.arange(200), 3)
    ref = rng.random(items.size)
    up = matched_bias(np.clip(ref + 0.1 + rng.normal(0, 0.1, items.size), 0, 1), ref, items, n_resamples=500)
    down = matched_bias(np.clip(ref - 0.1 + rng.normal(0, 0.1, items.size), 0, 1), ref, items, n_resamples=500)
    assert up.p_value < 0.01 and down.p_value > 0.99
    two_sided = matched_bias(ref, ref, items, n_resamples=100, alternative=None)
    assert two_sided.p_value is None and two_sided.value == 0


def test_permutation_and_relabelling_invariance():
    rng = np.random.default_rng(1)
    judge, ref = rng.random(90), rng.random(90)
    items = rng.integers(0, 30, 90)
    base = matched_bias(judge, ref, items, n_resamples=300)
    perm = rng.permutation(90)
    shuffled = matched_bias(judge[perm], ref[perm], items[perm], n_resamples=300)
    assert shuffled.value == pytest.approx(base.value)
    assert (shuffled.ci_low, shuffled.ci_high) == pytest.approx((base.ci_low, base.ci_high))


def test_sensitivity_gap_orients_by_truth_and_drops_unordered_rows():
    judge = np.array([1.0, 0.0, 1.0, 0.5])
    ref = np.array([0.75, 0.25, 0.5, 0.5])
    truth = np.array([1.0, -1.0, 0.0, 1.0])  # x better, x worse, unknown, x better
    est = sensitivity_gap(judge, ref, truth, np.arange(4), n_resamples=100)
    assert est.value == pytest.approx((0.25 + 0.25 + 0.0) / 3)
    assert est.excluded == {"no truth order": 1} and est.p_value is None


def test_unknown_option_is_an_error():
    with pytest.raises(TypeError):
        matched_bias(np.array([1.0]), np.array([0.5]), np.array([0]), resamples=10)


def test_score_differences_are_not_bounded_by_one():
    """On a pointwise table the matched bias is a gap between score differences (1–10 scores: up to
    ±18), so the catalogue's range must not stop at ±1 — a card threshold of 2 is a real one."""
    from nepotism.metrics.catalogue import VALUE_RANGES

    est = matched_bias([9.0, 8.0], [-9.0, -7.0], ["a", "b"], n_resamples=0)
    assert est.value == 16.5
    low, high = VALUE_RANGES["matched-bias"]
    assert (low is None or low <= -est.value) and (high is None or est.value <= high)
