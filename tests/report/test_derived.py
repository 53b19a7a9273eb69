"""Leaderboard ranks with bootstrap rank intervals, with and without related judges."""

from __future__ import annotations

from nepotism.analyses.comparisons import build_comparisons
from nepotism.report import derived
from nepotism.report.derived import leaderboard_records


def test_all_exported():
    for name in derived.__all__:
        assert hasattr(derived, name)


def test_leaderboard_related_judges_left_out(simulated):
    sim, registry, _ = simulated
    comparisons = build_comparisons(sim.pairwise).frame
    records = leaderboard_records(comparisons, registry, n_resamples=200, seed=1)
    board = {(r["variant"]["judges"], r["generator"]): r for r in records}
    generators = set(sim.spec.generators)
    assert {g for v, g in board if v == "all"} == generators
    for r in records:
        assert r["ci_low"] <= r["value"] <= r["ci_high"]
        assert 1 <= r["ci_low"] and r["ci_high"] <= len(generators)
    ranks = sorted(r["value"] for r in records if r["variant"]["judges"] == "all")
    assert sum(ranks) == sum(range(1, len(generators) + 1))
    # judge-a is biased towards itself: its score drops once judge-a (and its relatives' judges) are left out
    a_all, a_unrelated = board[("all", "judge-a")], board[("unrelated", "judge-a")]
    assert a_all["score"] > a_unrelated["score"]
    assert set(a_unrelated["judges_used"]) == {"judge-b", "judge-c"}
    assert a_unrelated["n_excluded"] > 0 and a_unrelated["n"] < a_all["n"]
    # same seed, same numbers
    assert leaderboard_records(comparisons, registry, n_resamples=200, seed=1) == records


def test_leaderboard_without_bootstrap_has_no_intervals(simulated):
    sim, registry, _ = simulated
    records = leaderboard_records(build_comparisons(sim.pairwise).frame, registry, n_resamples=0)
    assert records and all(r["ci_low"] is None and r["value"] >= 1 for r in records)
