"""`Bootstrap`: the one settings object; validated when built, the same numbers however it is given."""

import doctest

import numpy as np
import pytest

from nepotism.analyses.audit import AuditOptions
from nepotism.analyses.matched import MatchedOptions
from nepotism.analyses.suite import SuiteOptions
from nepotism.metrics import Bootstrap, Estimate, cluster_bootstrap, cluster_sums
from nepotism.metrics import bootstrap as bootstrap_module
from nepotism.metrics.pairwise import win_rate


@pytest.mark.parametrize(
    "fields, error",
    [
        ({"n_resamples": -1}, ValueError),
        ({"n_resamples": 10.5}, TypeError),
        ({"n_resamples": True}, TypeError),
        ({"confidence_level": 0.0}, ValueError),
        ({"confidence_level": 1.0}, ValueError),
        ({"confidence_level": 95}, ValueError),
        ({"confidence_level": "0.9"}, TypeError),
        ({"method": "BCa"}, ValueError),
        ({"method": "basic"}, ValueError),
        ({"seed": -3}, ValueError),
        ({"seed": None}, TypeError),
    ],
)
def test_invalid_settings_are_refused_when_built(fields, error):
    with pytest.raises(error):
        Bootstrap(**fields)


def test_settings_are_frozen_and_hashable_with_scipy_names():
    boot = Bootstrap(n_resamples=np.int64(200), confidence_level=0.9, method="bca", seed=3)
    assert (boot.n_resamples, boot.confidence_level, boot.method, boot.seed) == (200, 0.9, "bca", 3)
    assert type(boot.n_resamples) is int
    with pytest.raises(AttributeError):
        boot.seed = 4  # type: ignore[misc]
    assert {boot: 1}[Bootstrap(n_resamples=200, confidence_level=0.9, method="bca", seed=3)] == 1
    assert boot.as_dict() == {"n_resamples": 200, "seed": 3, "confidence": 0.9, "method": "bca"}


def test_a_metric_gives_the_same_estimate_from_the_object_or_its_fields():
    rng = np.random.default_rng(1)
    outcome = rng.choice([-1.0, 0.0, 1.0], 300)
    clusters = rng.integers(0, 60, 300)
    a = win_rate(outcome, clusters, bootstrap=Bootstrap(n_resamples=250, seed=9, confidence_level=0.9))
    b = win_rate(outcome, clusters, n_resamples=250, seed=9, confidence_level=0.9)
    assert a == b and a.confidence == 0.9 and a.n_resamples == 250
    assert win_rate(outcome, clusters, bootstrap=Bootstrap(seed=10)) != win_rate(outcome, clusters)


def test_a_metric_refuses_mixed_or_unknown_settings():
    with pytest.raises(TypeError, match="not both"):
        win_rate([1.0], ["p"], bootstrap=Bootstrap(), seed=1)
    with pytest.raises(TypeError, match="unexpected options: confidence"):
        win_rate([1.0], ["p"], confidence=0.9)
    with pytest.raises(TypeError, match="must be a Bootstrap"):
        win_rate([1.0], ["p"], bootstrap={"n_resamples": 10})


def test_options_classes_carry_one_bootstrap_field():
    boot = Bootstrap(n_resamples=10, seed=2)
    for options in (SuiteOptions, AuditOptions, MatchedOptions):
        assert options(bootstrap=boot).bootstrap is boot
        assert options().bootstrap == Bootstrap()
        assert not {"n_resamples", "seed", "confidence", "method"} & set(options.__dataclass_fields__)


def test_a_user_metric_built_on_the_public_bootstrap():
    clusters = np.repeat(np.arange(40), 3)
    correct = (np.arange(120) % 4 != 0).astype(float)
    _, sums = cluster_sums(clusters, np.column_stack([correct, np.ones_like(correct)]))
    estimate = cluster_bootstrap(sums, lambda t: t[..., 0] / t[..., 1], n=120, bootstrap=Bootstrap(n_resamples=500))
    assert isinstance(estimate, Estimate)
    assert estimate.value == pytest.approx(0.75) and estimate.ci_low < 0.75 < estimate.ci_high
    assert (estimate.n, estimate.n_clusters, estimate.n_resamples) == (120, 40, 500)


def test_module_examples_run():
    result = doctest.testmod(bootstrap_module)
    assert result.attempted >= 3 and result.failed == 0
