"""Agreement statistics against examples worked by hand (and one textbook example)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nepotism.annotate.agreement as agreement
from nepotism.annotate.agreement import (
    category_counts,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    pair_agreement,
    percent_agreement,
)


def test_all_is_exported():
    assert sorted(agreement.__all__) == sorted(
        ["category_counts", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha", "pair_agreement", "percent_agreement"]
    )
    for name in agreement.__all__:
        assert callable(getattr(agreement, name))


def test_cohen_kappa_two_by_two_table():
    # 50 items, two raters, yes (0) / no (1):
    #                 rater 2 yes   rater 2 no
    #   rater 1 yes       20             5        -> rater 1 says yes 25 times
    #   rater 1 no        10            15        -> rater 2 says yes 30 times
    # p_o = (20 + 15) / 50 = 0.7; p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5; kappa = 0.2 / 0.5 = 0.4
    x = [0] * 20 + [0] * 5 + [1] * 10 + [1] * 15
    y = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    estimate = cohen_kappa(x, y, 2, n_resamples=0)
    assert estimate.value == pytest.approx(0.4)
    assert estimate.n == 50
    assert pair_agreement(x, y, n_resamples=0).value == pytest.approx(0.7)


def test_cohen_kappa_three_categories_with_missing():
    # codes a=0, b=1, tie=2; -1 = not labelled (the last two items are left out)
    x = [0, 0, 1, 1, 2, 0, 1, -1, 0]
    y = [0, 1, 1, 1, 2, 2, 0, 0, -1]
    # 7 usable items; agreements at 0, 2, 3, 4 -> p_o = 4/7
    # rater x: a 3, b 3, tie 1; rater y: a 2, b 3, tie 2
    # p_e = (3*2 + 3*3 + 1*2) / 49 = 17/49; kappa = (28/49 - 17/49) / (32/49) = 11/32
    estimate = cohen_kappa(x, y, 3, n_resamples=0)
    assert estimate.value == pytest.approx(11 / 32)
    assert estimate.n == 7 and estimate.n_excluded == 2


def test_fleiss_kappa_hand_example():
    # 4 items, 3 raters, categories (a, b, tie); counts per item:
    #   (3,0,0) P=1; (2,1,0) P=2/6; (1,1,1) P=0; (0,2,1) P=2/6  ->  P_bar = 5/12
    #   shares over 12 labels: a 6/12, b 4/12, tie 2/12 -> P_e = (36+16+4)/144 = 7/18
    #   kappa = (5/12 - 7/18) / (1 - 7/18) = (1/36) / (22/36) = 1/22
    counts = np.array([[3, 0, 0], [2, 1, 0], [1, 1, 1], [0, 2, 1]])
    assert fleiss_kappa(counts, n_resamples=0).value == pytest.approx(1 / 22)
    assert percent_agreement(counts, n_resamples=0).value == pytest.approx(5 / 12)


def test_fleiss_from_a_label_matrix_skips_items_with_one_label():
    labels = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 2], [1, 1, 2], [2, -1, -1]])
    counts = category_counts(labels, 3)
    assert counts.tolist()[-1] == [0, 0, 1]
    estimate = fleiss_kappa(counts, n_resamples=0)
    assert estimate.value == pytest.approx(1 / 22)
    assert estimate.n == 4


def test_krippendorff_alpha_textbook_example_with_missing_values():
    # Krippendorff's reliability-data example: 4 observers, 12 units, values 1-5, gaps missing.
    # Unit 12 has a single value and is not pairable; the nominal alpha is 0.743.
    m = None
    observers = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, m, m, m],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, m, 3],
        [m, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, m],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, m],
    ]
    labels = np.array([[-1 if v is None else v - 1 for v in row] for row in observers]).T
    estimate = krippendorff_alpha(category_counts(labels, 5), n_resamples=0)
    assert estimate.n == 40  # pairable values
    assert round(estimate.value, 3) == 0.743
    # by hand: pairable values per category n_c = (9, 13, 10, 5, 3), n = 40, sum n_c^2 = 384;
    # coincidence diagonal per unit n_uc (n_uc - 1) / (m_u - 1):
    #   3 + 2 + 4 + 4 + 4 + 0 + 4 + 2 + 4 + 3 + 2 = 32
    # alpha = 1 - 39 * (40 - 32) / (1600 - 384) = 1 - 312 / 1216
    assert estimate.value == pytest.approx(1 - 312 / 1216)


def test_krippendorff_alpha_two_raters_by_hand():
    x = [0] * 20 + [0] * 5 + [1] * 10 + [1] * 15
    y = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    counts = category_counts(np.column_stack([x, y]), 2)
    alpha = krippendorff_alpha(counts, n_resamples=0).value
    # 100 pairable values, pooled n_c = (25 + 30, 25 + 20) = (55, 45); each of the 35 agreeing
    # items adds 2 to the diagonal -> 70. alpha = 1 - 99 * (100 - 70) / (100^2 - 55^2 - 45^2)
    assert alpha == pytest.approx(1 - 2970 / 4950)
    # Scott's pi on the same table differs (no small-sample correction): (0.7 - 0.505) / 0.495
    assert alpha != pytest.approx((0.7 - 0.505) / 0.495)


def test_undefined_statistics_are_nan_with_a_note():
    same = [0, 0, 0, 0]
    estimate = cohen_kappa(same, same, 3, n_resamples=0)
    assert math.isnan(estimate.value) and estimate.note
    estimate = krippendorff_alpha(category_counts(np.array([[1, 1], [1, 1]]), 3), n_resamples=0)
    assert math.isnan(estimate.value)
    empty = fleiss_kappa(np.zeros((0, 3)), n_resamples=0)
    assert math.isnan(empty.value) and "two labels" in empty.note


def test_bootstrap_interval_is_seeded_and_brackets_the_value():
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 3, size=200)
    noisy = np.where(rng.random(200) < 0.7, truth, rng.integers(0, 3, size=200))
    clusters = np.repeat(np.arange(100), 2)  # two items per prompt
    first = cohen_kappa(truth, noisy, 3, clusters=clusters, n_resamples=400, seed=5)
    again = cohen_kappa(truth, noisy, 3, clusters=clusters, n_resamples=400, seed=5)
    assert first == again
    assert first.ci_low < first.value < first.ci_high
    assert first.n_clusters == 100 and first.n == 200
    counts = category_counts(np.column_stack([truth, noisy]), 3)
    alpha = krippendorff_alpha(counts, clusters=clusters, n_resamples=400, seed=5)
    assert alpha.ci_low < alpha.value < alpha.ci_high


def test_bad_codes_are_refused():
    with pytest.raises(ValueError):
        category_counts(np.array([[0, 3]]), 3)
    with pytest.raises(ValueError):
        cohen_kappa([0, 1], [0], 2)
