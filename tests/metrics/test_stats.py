"""Pearson r across judges with a bootstrap over the judges (paper 004 Figs. 1–4): the value is
numpy's r, the interval is the percentile interval of r over resampled judges computed the slow way
(expand each resample's judges by their draw counts), and degenerate inputs say why."""

import math

import numpy as np
import pytest

from nepotism.metrics.bootstrap import Bootstrap, bootstrap_weights
from nepotism.metrics.stats import pearson, pearson_across


def _planted(n: int = 12, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.4, 0.9, n)
    return x, 0.8 * x + rng.normal(0, 0.05, n)


def test_value_is_pearson_r_and_interval_resamples_the_judges():
    x, y = _planted()
    boot = Bootstrap(n_resamples=400, seed=11)
    est = pearson_across(x, y, bootstrap=boot)
    assert est.value == pytest.approx(np.corrcoef(x, y)[0, 1], abs=1e-12)
    assert est.n == est.n_clusters == 12 and est.method == "percentile"
    # the same resamples, one by one: each judge repeated as often as it was drawn
    weights = bootstrap_weights(12, 400, 11).astype(int)
    rs = []
    for w in weights:
        xs, ys = np.repeat(x, w), np.repeat(y, w)
        if np.std(xs) > 0 and np.std(ys) > 0:
            rs.append(np.corrcoef(xs, ys)[0, 1])
    low, high = np.percentile(rs, [2.5, 97.5])
    # the bootstrap sums resamples in float32 (metrics.bootstrap): equal to ~7 digits
    assert (est.ci_low, est.ci_high) == pytest.approx((low, high), abs=1e-6)
    assert est.ci_low < est.value < est.ci_high


def test_missing_values_are_excluded_and_counted():
    x, y = _planted()
    x[0] = np.nan
    est = pearson_across(x, y, n_resamples=0)
    assert est.n == 11 and dict(est.excluded) == {"missing value": 1}
    assert est.value == pytest.approx(np.corrcoef(x[1:], y[1:])[0, 1])


@pytest.mark.parametrize(
    "x, y, note",
    [
        ([0.5, 0.6], [0.4, 0.7], "fewer than 3 units"),
        ([0.5, 0.5, 0.5, 0.5], [0.4, 0.7, 0.6, 0.9], "constant variable"),
    ],
)
def test_undefined_correlation_says_why(x, y, note):
    est = pearson_across(x, y, n_resamples=50)
    assert math.isnan(est.value) and note in est.note


def test_fisher_interval_of_the_same_r():
    x, y = _planted()
    fisher = pearson(x, y)
    assert fisher["r"] == pytest.approx(pearson_across(x, y, n_resamples=0).value)
    assert fisher["ci_low"] < fisher["r"] < fisher["ci_high"]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="y has 2 entries"):
        pearson_across([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match=r"x\[1\] is inf"):
        pearson_across([1, np.inf, 3], [1, 2, 3])
