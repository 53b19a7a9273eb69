"""Metric functions refuse what is not a verdict code (scikit-learn style: ValueError naming the
argument and position) instead of returning a number; their docstring examples run."""

import doctest

import numpy as np
import pytest

from nepotism.metrics import pairwise
from nepotism.metrics.pairwise import demographic_parity_bias, self_preference_ratio, win_rate

IDS = ["p1", "p2", "p3"]


@pytest.mark.parametrize("call, message", [
    (lambda: win_rate([2, 1, 5], IDS), r"outcome\[0\] is 2.0"),
    (lambda: win_rate([1, -1, -1.5], IDS), r"outcome\[2\] is -1.5"),
    (lambda: win_rate([1, np.inf, 0], IDS), r"outcome\[1\] is inf"),
    (lambda: win_rate(["A", "B", "A"], IDS), "must hold numbers"),
    (lambda: win_rate([[1, 0, 1]], IDS), "one-dimensional"),
    (lambda: win_rate([1, 0, 1], ["p1", "p2"]), "one label per row"),
    (lambda: self_preference_ratio([1, 3, 0], IDS), r"outcome\[1\] is 3.0"),
    (lambda: demographic_parity_bias([0.5, 1.2, 0], [True, False, True], IDS), r"preference\[1\] is 1.2"),
    (lambda: demographic_parity_bias([0.5, 1, 0], [True, False], IDS), "related has 2 entries"),
    (lambda: demographic_parity_bias([0.5, 1, 0], [1, 0, 0.5], IDS), "related must hold booleans"),
])
def test_out_of_range_input_is_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_valid_codes_nan_and_fractions_are_accepted():
    est = win_rate([1, 0, np.nan, 0.5], ["p1", "p1", "p2", "p3"], n_resamples=0)
    assert est.value == pytest.approx((1 + 0.5 + 0.75) / 3) and est.excluded == {"no verdict": 1}


def test_docstring_examples_run():
    result = doctest.testmod(pairwise)
    assert result.attempted >= 4 and result.failed == 0
