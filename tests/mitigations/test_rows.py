"""`nepotism.mitigations.rows`: the rows a fit can use and the count of those it cannot."""

import numpy as np

from nepotism.mitigations.rows import left_out, usable


def test_every_row_is_either_usable_or_counted_once_by_reason():
    nan = float("nan")
    values = [1.0, -1.0, nan, nan, 1.0, 0.5, nan, nan]
    truth = [1.0, -1.0, 1.0, -1.0, nan, 0.0, nan, 1.0]
    reasons = [None, None, None, "failed-generation:timeout", None, None, None, "failed-generation:timeout"]
    mask = usable(values, truth)
    assert mask.tolist() == [True, True, False, False, False, False, False, False]
    counts = left_out(values, truth, reasons)
    assert counts == {"failed-generation:timeout": 2, "no usable verdict": 1, "no truth": 2, "comparable answers": 1}
    assert int(mask.sum()) + sum(counts.values()) == len(values)


def test_a_row_with_a_value_and_a_decisive_truth_is_never_left_out():
    rng = np.random.default_rng(0)
    values = rng.choice([-1.0, 1.0, np.nan], size=200)
    truth = rng.choice([-1.0, 0.0, 1.0, np.nan], size=200)
    counts = left_out(values, truth)
    assert int(usable(values, truth).sum()) + sum(counts.values()) == 200
