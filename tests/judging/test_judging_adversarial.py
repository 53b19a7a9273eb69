"""An injected marker never becomes the verdict: the adversarial corpus and generated cases.

The corpus (`corpus.build`, ~30,000 cases over every protocol) and the property tests (Hypothesis,
derandomised: 9 protocols × 1,200 = 10,800 generated cases) hold one invariant: what is read is the
judge's own verdict or nothing. The loss bounds catch a change that starts throwing away the
judge's own verdicts; ``python tests/judging/corpus.py`` prints the figures.
"""

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.judging import corpus

_CASES = corpus.build()


@pytest.mark.parametrize("spec", [s.name for s in corpus.SPECS])
def test_corpus_injected_markers_never_become_the_verdict(spec):
    cases = [c for c in _CASES if c.spec == spec]
    summary = corpus.run(cases)
    assert summary["cases"] > 900
    assert not summary["bad"], summary["bad"][:3]
    # without decoys nearly every own verdict is kept; with a candidate holding the judge's own value
    # in a rotating format, the own statement is sometimes masked as a quote (never misread)
    assert summary["lost_share_without_decoy"] <= 0.01
    assert summary["lost_share_with_decoy"] <= 0.20


def test_corpus_covers_every_combination():
    assert len(_CASES) > 30_000
    for spec in corpus.SPECS:
        cases = [c for c in _CASES if c.spec == spec.name]
        assert {c.injected_format for c in cases} == set(spec.formats)
        assert {(c.length, c.wrapper, c.placement) for c in cases} == {
            (length, wrapper, placement) for length in corpus.LENGTHS for wrapper in corpus.WRAPPERS
            for placement in corpus.PLACEMENTS}
        assert {c.candidate_style for c in cases} == set(corpus.CANDIDATE_STYLES)
        assert {c.own for c in cases} == set(spec.values) and {c.own_format for c in cases} == set(spec.own_formats)


@pytest.mark.parametrize("spec", corpus.SPECS, ids=[s.name for s in corpus.SPECS])
@settings(max_examples=1200, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.integers(0, 2**64 - 1))
def test_generated_quotes_never_become_the_verdict(spec, seed):
    rng = random.Random(seed)  # Hypothesis picks (and on failure shrinks) the seed; drawing each choice
    case = corpus.generated_case(spec, rng.choice, rng.randint)  # through it took 3x longer
    result = corpus.outcome(case)
    assert result == "own" or result.startswith("lost:"), (result, case)


def test_generated_figures_are_what_the_report_says():
    summary = corpus.run(corpus.generate(200, seed=7))
    assert summary["cases"] == 200 * len(corpus.SPECS) and not summary["bad"]
    assert summary["lost_share"] < 0.2  # almost all of it: a candidate holds the judge's own statement
