import numpy as np
import pytest

from nepotism.metrics.leakage import pls_from_win_rates, preference_leakage_score
from nepotism.metrics.reference import confusion_matrix, equal_opportunity_bias


def test_table8_pls_from_rates():
    assert pls_from_win_rates(0.551, 0.368, 0.632, 0.449) == pytest.approx(0.184, abs=5e-4)


def test_table8_pls_from_comparisons():
    # 1000 head-to-head comparisons per judge: 551 wins for student i under judge i, 368 under judge j.
    n = 1000
    out_i = np.concatenate([np.r_[np.ones(551), -np.ones(449)], np.r_[np.ones(368), -np.ones(632)]])
    judge = np.repeat([0, 1], n)
    ids = np.tile(np.arange(n), 2)
    est = preference_leakage_score(
        np.r_[out_i, -out_i], np.repeat([0, 1], 2 * n), np.r_[judge, judge], np.r_[ids, ids], n_resamples=2000, seed=1
    )
    assert est.value == pytest.approx(0.1842, abs=5e-4)
    assert est.p_value < 0.001 and est.ci_low > 0


def test_001_confusion_counts():
    # own-vs-other comparisons: human own & judge own 1852, human own & judge other 108,
    # human other & judge own 160, human other & judge other 118.
    human = np.r_[np.ones(1852 + 108), np.zeros(160 + 118)]
    judge = np.r_[np.ones(1852), np.zeros(108), np.ones(160), np.zeros(118)]
    ids = np.arange(human.size)
    matrix = confusion_matrix(judge, human)
    assert matrix == {
        "human_own_judge_own": 1852,
        "human_own_judge_other": 108,
        "human_other_judge_own": 160,
        "human_other_judge_other": 118,
    }
    est = equal_opportunity_bias(
        np.r_[judge, 1 - judge], np.r_[human, 1 - human], np.repeat([True, False], human.size), np.r_[ids, ids], n_resamples=500
    )
    assert est.value == pytest.approx(1852 / 1960 - 118 / 278, abs=1e-12)
    assert round(est.value, 3) == 0.520
