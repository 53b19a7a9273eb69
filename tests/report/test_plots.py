"""Figures: one per section when its records exist, none otherwise; names drawn as plain text."""

from __future__ import annotations

import base64

import numpy as np

from nepotism.metrics.reference import perplexity_win_rate
from nepotism.report import plots
from nepotism.analyses.derived import perplexity_records


def _png(plot) -> bytes:
    data = base64.b64decode(plot["png"])
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return data


def test_all_exported():
    for name in plots.__all__:
        assert hasattr(plots, name)


def test_heatmaps_mark_related_cells(records):
    out = plots.heatmaps([r for r in records if r["metric"] in ("score-delta", "win-rate")])
    assert [p["id"] for p in out] == ["heatmap-score-delta", "heatmap-win-rate"]
    for p in out:
        _png(p)


def test_win_rate_heatmap_needs_two_judges_with_the_same_opponents(records):
    one_judge = [r for r in records if r["metric"] == "win-rate" and r["judge"] == "judge-a"]
    assert plots.heatmaps(one_judge) == []
    changed = [dict(r, variant={**r["variant"], "opponents": [r["judge"]]}) for r in records if r["metric"] == "win-rate"]
    assert plots.heatmaps(changed) == []  # every judge met other opponents: nothing comparable


def test_bias_bars_one_figure_per_metric(records):
    out = plots.bias_bars(records)
    ids = {p["id"] for p in out}
    assert {
        "bias-self-preference-ratio",
        "bias-paired-win-rate-gap",
        "bias-equal-opportunity-bias",
        "bias-score-delta",
        "bias-hspp-ratio",
    } <= ids
    assert "bias-preference-leakage-score" not in ids  # drawn in the leakage section instead
    assert plots.bias_bars([r for r in records if r["metric"] == "win-rate"]) == []


def test_perplexity_from_metric_output():
    rng = np.random.default_rng(0)
    n = 400
    diff = rng.normal(size=n)
    judge = (rng.random(n) < 1 / (1 + np.exp(2 * diff))).astype(float)
    human = (rng.random(n) < 0.5).astype(float)
    clusters = np.repeat(np.arange(n // 2), 2)
    records = []
    for split in ("self", "other"):
        bins = perplexity_win_rate(judge, human, diff, clusters, bins=4, n_resamples=50, seed=0)
        records += perplexity_records(bins, "judge-<b>x</b>", "default", split=split)
    assert len(records) == 2 * 4 * 2
    assert {r["variant"]["rater"] for r in records} == {"judge", "human"}
    out = plots.perplexity(records)
    assert len(out) == 1 and "judge-<b>x</b>" in out[0]["title"]
    _png(out[0])


def test_mitigation_plot_needs_two_conditions(records):
    spr = [r for r in records if r["metric"] == "self-preference-ratio"]
    assert plots.mitigation(spr) == []
    treated = [dict(r, condition="impartiality prompt", value=r["value"] and r["value"] * 0.9) for r in spr]
    out = plots.mitigation(spr + treated)
    assert [p["id"] for p in out] == ["conditions-self-preference-ratio"]
    change = [dict(spr[0], metric="matched-bias", variant={"baseline_condition": "default"}, value=-0.02)]
    assert [p["id"] for p in plots.mitigation(change)] == ["conditions-matched-bias"]


def test_names_with_tex_and_long_text_render():
    record = {
        "metric": "self-preference-ratio",
        "judge": "$\\frac{a}{b}$ judge " + "x" * 80,
        "condition": "c",
        "scope": "self",
        "variant": {"opponents": "unrelated"},
        "value": 0.6,
        "ci_low": 0.5,
        "ci_high": 0.7,
        "n": 10,
        "n_clusters": 10,
    }
    out = plots.bias_bars([record])
    assert len(out) == 1
    _png(out[0])


def test_pls_is_drawn_with_paper_000s_tie_rule_when_present():
    """PLS now defaults to ties=loss (Table 1's convention); older results carry only ties=half."""
    from nepotism.report.plots import pls_tie_rule

    def pls(ties):
        return {"metric": "preference-leakage-score", "variant": {"ties": ties}, "value": 0.1}

    assert pls_tie_rule([pls("half"), pls("loss"), pls("exclude")]) == "loss"
    assert pls_tie_rule([pls("half")]) == "half"
    assert pls_tie_rule([]) == "half"


def test_leaderboard_draws_one_figure_per_board_and_only_ranked_generators():
    from nepotism.report.plots import leaderboard

    def rank(generator, board, judges, value):
        return {
            "metric": "leaderboard-rank",
            "generator": generator,
            "value": value,
            "ci_low": value,
            "ci_high": value + 1 if value is not None else None,
            "confidence": 0.95,
            "variant": {"judges": judges, "score": "win rate", "board": board},
        }

    records = [rank(g, "vs base-1", j, v) for g, v in (("m1", 1.0), ("m2", 2.0), ("m3", 3.0)) for j in ("all", "unrelated")]
    records += [rank(g, "vs base-2", j, v) for g, v in (("n1", 1.0), ("n2", 2.0), ("n3", 3.0)) for j in ("all", "unrelated")]
    records += [rank("base-1", None, "all", None)]  # a baseline: a score, no rank, not drawn
    plots = leaderboard(records)
    assert [p["id"] for p in plots] == ["leaderboard-1", "leaderboard-2"]
    assert "(vs base-1)" in plots[0]["title"] and "(vs base-2)" in plots[1]["title"]
    single = leaderboard([r for r in records if r["variant"]["board"] == "vs base-2"])
    assert [p["id"] for p in single] == ["leaderboard"] and "vs base-2" not in single[0]["title"]
