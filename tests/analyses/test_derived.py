"""Leaderboard ranks with bootstrap rank intervals, with and without related judges."""

from __future__ import annotations

import pytest

from nepotism.analyses.comparisons import build_comparisons
from nepotism.analyses import derived
from nepotism.analyses.derived import leaderboard_records


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


def _pointwise_registry(tmp_path):
    from nepotism.models import load_registry

    path = tmp_path / "models.toml"
    path.write_text(
        '[models."judge-a"]\nfamily = "a"\n[models."judge-b"]\nfamily = "b"\n'
        '[models."other"]\nfamily = "o"\n'
        '[models."student-a"]\nfamily = "s"\nteachers = ["judge-a"]\n'
    )
    return load_registry([str(path)])


def _pointwise_frame(n=200, seed=0):
    """judge-a adds 2 points to its own answers; judge-b is fair; only judge-a scored student-a."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    quality = {"judge-a": 6.0, "judge-b": 6.0, "other": 5.0, "student-a": 5.0}
    rows = []
    for i in range(n):
        for judge in ("judge-a", "judge-b"):
            for model, q in quality.items():
                if model == "student-a" and judge == "judge-b":
                    continue
                bonus = 2.0 if model == judge == "judge-a" else 0.0
                rows.append({"instance_id": f"q{i}", "judge": judge, "model": model, "score": q + bonus + rng.normal(scale=0.5)})
    frame = pd.DataFrame(rows)
    frame.loc[2, "score"] = np.nan  # an unparsed grade (of "other", by judge-a): left out
    return frame


def test_pointwise_leaderboard_without_related_judges(tmp_path):
    from nepotism.analyses.derived import pointwise_leaderboard_records

    registry = _pointwise_registry(tmp_path)
    frame = _pointwise_frame()
    records = pointwise_leaderboard_records(frame, registry, n_resamples=200, seed=1)
    board = {(r["variant"]["judges"], r["generator"]): r for r in records}
    assert {r["variant"]["score"] for r in records} == {"mean score (the judges' scores averaged)"}
    # judge-a's own answers: +1 on average with both judges, the fair 6 once judge-a is left out
    own_all, own_unrelated = board[("all", "judge-a")], board[("unrelated", "judge-a")]
    assert own_all["score"] == pytest.approx(7.0, abs=0.1) and own_unrelated["score"] == pytest.approx(6.0, abs=0.1)
    assert own_unrelated["judges_used"] == ["judge-b"] and own_unrelated["n_excluded"] == 200
    assert own_all["value"] == 1 and own_unrelated["ci_low"] <= own_unrelated["value"] <= own_unrelated["ci_high"]
    assert board[("all", "other")]["n"] == 399  # the unparsed grade left out
    # student-a: only its teacher's judge scored it: flagged from lineage alone, never dropped silently
    student = board[("unrelated", "student-a")]
    assert student["value"] is None and student["score"] is None and student["lineage_only"]
    assert student["related_judges"] == {"judge-a": "student"} and student["n_excluded"] == 200
    assert student["note"].startswith(
        "flagged from lineage alone: every judge that scored it is related to it (judge-a: student)"
    )
    assert pointwise_leaderboard_records(frame, registry, n_resamples=200, seed=1) == records


def test_pointwise_report_shows_the_flag(tmp_path):
    from nepotism.report.full import _flag_text, _leaderboard_table
    from nepotism.analyses.derived import pointwise_leaderboard_records

    records = pointwise_leaderboard_records(_pointwise_frame(n=30), _pointwise_registry(tmp_path), n_resamples=20)
    rows = {r["generator"]: r for r in _leaderboard_table(records)}
    assert rows["student-a"]["unrelated"] is None and _flag_text(rows["student-a"]) == "lineage only (judge-a: student)"
    assert all(r["change"] is None for r in rows.values())  # ranks among fewer generators are not compared
    assert rows["judge-b"]["unrelated"] is not None


def test_pairwise_generator_only_related_judges_saw_is_flagged(simulated):
    sim, registry, _ = simulated
    comparisons = build_comparisons(sim.pairwise).frame
    one_judge = comparisons[comparisons["judge"] == "judge-a"]
    records = leaderboard_records(one_judge, registry, n_resamples=0)
    flagged = {r["generator"]: r for r in records if r.get("lineage_only")}
    assert "judge-a" in flagged and flagged["judge-a"]["related_judges"] == {"judge-a": "self"}
    assert flagged["judge-a"]["note"].startswith(
        "flagged from lineage alone: every judge that judged each of its comparisons is related to it or to its opponent"
    )
    unflagged = {r["generator"] for r in records if r["variant"]["judges"] == "unrelated" and r["value"] is not None}
    assert set(sim.spec.generators) == unflagged | set(flagged)


def test_only_generators_that_met_the_same_opponents_share_a_board():
    """AlpacaEval-style: every generator against one baseline is one board; the baseline, which met
    everyone, is on none; a round robin among three is one board."""
    import pandas as pd

    from nepotism.analyses.derived import opponent_boards

    def rows(pairs):
        return pd.DataFrame(
            [{"generator": a, "opponent": b} for a, b in pairs] + [{"generator": b, "opponent": a} for a, b in pairs]
        )

    baseline = rows([("x", "base"), ("y", "base"), ("z", "base")])
    assert opponent_boards(baseline) == {"base": None, "x": "vs base", "y": "vs base", "z": "vs base"}
    two_baselines = rows([("x", "base1"), ("y", "base1"), ("u", "base2"), ("v", "base2")])
    boards = opponent_boards(two_baselines)
    assert boards["x"] == boards["y"] == "vs base1" and boards["u"] == boards["v"] == "vs base2"
    robin = rows([("a", "b"), ("a", "c"), ("b", "c")])
    assert set(opponent_boards(robin).values()) == {"round robin of 3"}


def test_leaderboard_ranks_within_boards_and_says_why_one_is_unranked(simulated):
    """Two AlpacaEval-style boards (x, y against base1; u, v against base2): ranks restart on each
    board, and the baselines, which met everyone on their board, are unranked with a reason."""
    import pandas as pd

    from nepotism.analyses.derived import leaderboard_records

    games = [("x", "base1", 1.0), ("y", "base1", -1.0), ("u", "base2", 1.0), ("v", "base2", 0.0)]
    frame = pd.DataFrame(
        [{"instance_id": f"p{i}", "judge": "j", "model_x": a, "model_y": b, "outcome": o} for a, b, o in games for i in range(10)]
    )
    _, registry, _ = simulated
    records = [r for r in leaderboard_records(frame, registry, n_resamples=50) if r["variant"]["judges"] == "all"]
    by = {r["generator"]: r for r in records}
    assert (by["x"]["value"], by["y"]["value"], by["u"]["value"], by["v"]["value"]) == (1.0, 2.0, 1.0, 2.0)
    assert by["x"]["variant"]["board"] == "vs base1" and by["u"]["variant"]["board"] == "vs base2"
    for base in ("base1", "base2"):
        assert by[base]["value"] is None and by[base]["score"] is not None and "not ranked" in by[base]["note"]
    # none of these names is in the registry: every row is flagged
    assert all(r["flagged_entry"] for r in records)


def test_the_adversarial_null_model_is_flagged_on_the_board(simulated):
    """AlpacaEval's `example` (the registry's null-model: a constant adversarial string) is flagged."""
    import pandas as pd

    from nepotism.models import default_registry
    from nepotism.analyses.derived import leaderboard_records

    frame = pd.DataFrame(
        [
            {"instance_id": f"p{i}", "judge": "gpt4_1106_preview", "model_x": m, "model_y": "gpt4_1106_preview", "outcome": 1.0}
            for m in ("example", "claude-2")
            for i in range(5)
        ]
    )
    rows = {
        r["generator"]: r
        for r in leaderboard_records(frame, default_registry(), n_resamples=0)
        if r["variant"]["judges"] == "all"
    }
    assert rows["example"]["flagged_entry"] and not rows["claude-2"]["flagged_entry"]
