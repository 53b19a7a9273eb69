"""The report's figures say what they draw, and draw nothing that misleads (issue 36, item 6).

Each test reads the figure objects the plot functions make (recorded as each is saved: its texts,
size, axes and legends), never pixels: labels wrapped whole instead of cut with "…", heatmap
columns of a model against samples of itself left out and said so, judges without a comparable
column named, legends listing only what is drawn, no leaderboard of fewer than three models and
a rank axis spanning every rank, one colour per relation named in words, and the
self-preference ratio's line captioned as equal preference.
"""

from __future__ import annotations

import re

import matplotlib.figure
from matplotlib.backends.backend_agg import FigureCanvasAgg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nepotism.report import plots
from nepotism.report.plots import _wrap

JUDGE = "gpt4_1106_preview"
CONDITIONS = ("alpaca_eval_cot_gpt4_turbo_fn", "weighted_alpaca_eval_gpt4_turbo")
TRUNCATED = re.compile(r"\w…")  # an id cut short: a character of it right before an ellipsis


@pytest.fixture
def drawn(monkeypatch):
    """Every figure the plot functions save, in order."""
    figures = []
    save = matplotlib.figure.Figure.savefig

    def recording(fig, *args, **kwargs):
        figures.append(fig)
        return save(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", recording)
    return figures


def _texts(fig) -> list[str]:
    from matplotlib.text import Text

    return [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def _legend(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]


def _flat(text: str) -> str:
    return "".join(text.split())


def _record(metric, judge, condition, scope, value, **extra):
    return {
        "metric": metric,
        "judge": judge,
        "condition": condition,
        "scope": scope,
        "value": value,
        "ci_low": value - 0.05,
        "ci_high": value + 0.05,
        "n": 100,
        "n_clusters": 50,
        "confidence": 0.95,
        "variant": {},
        "generator": None,
        "pair": None,
    } | extra


def _win(judge, condition, generator, opponents, value, relation="unrelated"):
    return _record(
        "win-rate",
        judge,
        condition,
        None,
        value,
        generator=generator,
        relation=relation,
        variant={"opponents": list(opponents), "ties": "half"},
    )


def _rank(generator, board, judges, value, **extra):
    return {
        "metric": "leaderboard-rank",
        "judge": f"{judges} judges",
        "condition": "pooled",
        "generator": generator,
        "value": value,
        "ci_low": None if value is None else value - 0.5,
        "ci_high": None if value is None else value + 0.5,
        "confidence": 0.95,
        "variant": {"judges": judges, "score": "mean preference", "board": board},
    } | extra


# ------------------------------------------------------------------------------------ labels
@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab9._-/@ "), max_size=120), st.integers(min_value=8, max_value=60))
def test_wrap_keeps_every_character_and_breaks_only_between_words_or_after_separators(text, width):
    wrapped, words = _wrap(text, width), " ".join(text.split())
    if len(text) <= width:
        assert wrapped == text
        return
    at = 0
    for k, c in enumerate(wrapped):  # each line break stands for a space, or follows a separator
        if c == "\n":
            if words[at] == " ":
                at += 1
            else:
                assert wrapped[k - 1] in "_-/@"
        else:
            assert c == words[at]
            at += 1
    assert at == len(words)
    for line in wrapped.split("\n"):  # a line longer than the width is one run no break was allowed in
        assert len(line) <= width or (" " not in line and not re.search(r"[_/@-][^_/@-]", line))


def test_wrap_breaks_between_words_before_breaking_an_id_at_its_separators():
    assert _wrap("Mixtral-8x7B-Instruct-v0.1 (vs gpt4_1106_preview)", 36) == "Mixtral-8x7B-Instruct-v0.1 (vs\ngpt4_1106_preview)"
    assert (
        _wrap("gpt4_1106_preview / weighted_alpaca_eval_gpt4_turbo", 36) == "gpt4_1106_preview /\nweighted_alpaca_eval_gpt4_turbo"
    )
    assert _wrap("x" * 70, 30) == "x" * 70  # never cut


def test_judge_and_condition_labels_are_whole_in_every_generic_plot(drawn):
    records = []
    for condition, value in zip(CONDITIONS, (0.8, 0.7)):
        records.append(_record("self-preference-ratio", JUDGE, condition, "self", value, variant={"opponents": "unrelated"}))
        for generator, v in (("claude-2.1", 0.4), ("gpt-3.5-turbo-0301", 0.5 + value / 10), ("cohere", 0.3)):
            records.append(_win(JUDGE, condition, generator, ["Mixtral-8x7B-Instruct-v0.1-concise"], v))
    records.append(
        _record(
            "self-preference-ratio",
            JUDGE,
            CONDITIONS[0],
            "self",
            0.6,
            variant={"opponents": "unrelated", "baseline_condition": CONDITIONS[1]},
        )
    )
    out = plots.bias_bars(records) + plots.heatmaps(records) + plots.mitigation(records)
    assert [p["id"] for p in out] == ["bias-self-preference-ratio", "heatmap-win-rate", "conditions-self-preference-ratio"]
    assert len(drawn) == len(out)
    for plot, fig in zip(out, drawn):
        texts = _texts(fig)
        assert not [t for t in texts if TRUNCATED.search(t)], plot["id"]
        whole = _flat(" ".join(texts))
        for condition in CONDITIONS:
            assert condition in whole, (plot["id"], condition)
        assert plot["labels"] == list(dict.fromkeys(texts))  # what the page exposes is what was drawn
    heatmap_columns = [t.get_text() for t in drawn[1].axes[0].get_xticklabels()]
    assert any("Mixtral-8x7B-Instruct-v0.1-concise" in _flat(c) for c in heatmap_columns)


def test_rows_of_a_paired_gap_name_the_other_judges_condition(drawn):
    """Two rows that differ only in the other judge's condition are told apart by their labels."""
    records = [
        _record(
            "paired-win-rate-gap",
            judge,
            condition,
            "self",
            -0.5,
            pair=[judge, other],
            variant={"other_judge": other, "other_condition": other_condition},
        )
        for judge, other in (("alpha", "beta"), ("beta", "alpha"))
        for condition in ("default", "impartial")
        for other_condition in ("default", "impartial")
    ]
    plots.bias_bars(records)
    labels = [t.get_text() for t in drawn[0].axes[0].get_yticklabels()]
    assert len(set(labels)) == len(labels) == 8
    assert "other judge beta / impartial" in " ".join(" ".join(label.split()) for label in labels)


def test_rows_are_as_tall_as_their_wrapped_labels(drawn):
    """Wrapped labels of neighbouring rows never overlap: the figure grows with the lines they take
    (fails when the row height ignores them, as before labels were wrapped)."""
    judge = "judge " + " ".join(["a-long-condition-name"] * 12)
    records = [_record("matched-bias", judge, "c", scope, 0.1) for scope in ("self", "family", "student")]
    records += [
        _rank(f"{g}-" + "-".join(["generator"] * 20), "vs base", "all", v) for g, v in (("m1", 1.0), ("m2", 2.0), ("m3", 3.0))
    ]
    plots.bias_bars(records)
    plots.leaderboard(records)
    for fig in drawn:
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        renderer = canvas.get_renderer()
        labels = fig.axes[0].get_yticklabels()
        assert min(t.get_text().count("\n") for t in labels) >= 3
        boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.y0)
        assert all(low.y1 <= high.y0 for low, high in zip(boxes, boxes[1:]))


# ------------------------------------------------------------------------------------ heatmap
def _panel_win_rates():
    """Two judges and one condition each, AlpacaEval-style: generators against the judge's model,
    its two samples against each other, and a third judge whose generators no one else judged."""
    records = []
    for judge, shift in (("judge-a", 0.0), ("judge-b", 0.05)):
        records += [_win(judge, "default", g, [JUDGE], v + shift) for g, v in (("m1", 0.3), ("m2", 0.4), ("m3", 0.2))]
        records += [
            _win(judge, "default", f"{JUDGE}@output_1", [f"{JUDGE}@output_2"], 0.5, "self"),
            _win(judge, "default", f"{JUDGE}@output_2", [f"{JUDGE}@output_1"], 0.5, "self"),
        ]
    records += [_win("judge-c", "default", "m9", ["text_davinci_003"], 0.6)]
    return records


def test_heatmap_leaves_out_a_model_against_samples_of_itself_and_says_so(drawn):
    (plot,) = plots.heatmaps(_panel_win_rates())
    columns = [_flat(t.get_text()) for t in drawn[0].axes[0].get_xticklabels()]
    assert columns == [f"m{k}(vs{JUDGE})" for k in (1, 2, 3)]
    assert "samples of itself" in plot["caption"] and f"{JUDGE}@output_1" in plot["caption"]


def test_heatmap_names_the_judges_it_cannot_show_and_why(drawn):
    (plot,) = plots.heatmaps(_panel_win_rates())
    rows = [t.get_text() for t in drawn[0].axes[0].get_yticklabels()]
    assert rows == ["judge-a", "judge-b"]
    assert re.search(r"Not shown: judge-c — no generator they judged was judged by another judge", plot["caption"])


def test_heatmap_legend_lists_only_the_outlines_drawn(drawn):
    records = _panel_win_rates()
    plots.heatmaps(records)
    assert _legend(drawn[-1]) == []  # no generator is related to these judges
    records[0]["relation"] = "same_series"
    plots.heatmaps(records)
    assert _legend(drawn[-1]) == ["of its family, series or lineage"]


# ------------------------------------------------------------------------------------ leaderboard
def test_leaderboard_legend_lists_only_what_is_drawn(drawn):
    records = [_rank(g, "vs base", "all", v) for g, v in (("m1", 1.0), ("m2", 2.0), ("m3", 3.0))]
    records += [_rank(g, None, "unrelated", None, lineage_only=True) for g in ("m1", "m2", "m3")]
    (plot,) = plots.leaderboard(records)
    assert _legend(drawn[0]) == ["all judges"]
    assert "related judges left out" not in " ".join(_texts(drawn[0]))
    assert "No rank without related judges is drawn" in plot["caption"]
    both = records[:3] + [_rank(g, "vs base", "unrelated", v) for g, v in (("m1", 2.0), ("m2", 1.0), ("m3", 3.0))]
    plots.leaderboard(both)
    assert _legend(drawn[1]) == ["all judges", "related judges left out"]


def test_no_leaderboard_of_samples_of_one_model_or_of_fewer_than_three_models(drawn):
    records = [_rank(g, "vs base", "all", v) for g, v in (("m1", 1.0), ("m2", 2.0), ("m3", 3.0))]
    records += [_rank(f"{JUDGE}@output_{k}", "round robin of 2", "all", 1.5) for k in (1, 2)]
    records += [_rank(g, "vs other", "all", v) for g, v in (("n1@a", 1.0), ("n1@b", 2.0), ("n2", 3.0))]
    out = plots.leaderboard(records)
    assert [p["id"] for p in out] == ["leaderboard", "leaderboard-left-out"]
    assert len(drawn) == 1 and "(vs base)" in out[0]["title"]
    note = out[1]["note"]
    assert f"“round robin of 2”: its 2 generators are samples of one model, {JUDGE}" in note
    assert "“vs other”: it ranks 2 models (n1, n2)" in note


def test_rank_axis_spans_every_rank_so_equal_ranks_look_equal(drawn):
    plots.leaderboard([_rank(g, "vs base", "all", 2.0) for g in ("m1", "m2", "m3")])
    ax = drawn[0].axes[0]
    assert ax.get_xlim() == (0.5, 3.5)
    assert all(float(t).is_integer() for t in ax.get_xticks())


# ------------------------------------------------------------------------------------ colours, captions
def test_each_relation_has_its_own_colour_named_in_words(drawn):
    records = [
        _record("paired-win-rate-gap", "j", "c", scope, 0.1 * k)
        for k, scope in enumerate(("same_family", "same_series", "lineage", "self", "neutral"))
    ]
    plots.bias_bars(records)
    ax = drawn[0].axes[0]
    dots = {line.get_ydata()[0]: line.get_color() for line in ax.lines if line.get_marker() == "o"}
    assert len(set(dots.values())) == 5
    assert _legend(drawn[0]) == [
        "the judge itself",
        "of its lineage",
        "of its series",
        "of its family",
        "neither answer related to it (check)",
    ]
    legend = ax.get_legend()
    assert {h.get_color() for h in legend.legend_handles} == set(dots.values())  # every colour drawn is named


def test_self_preference_ratio_line_is_equal_preference_not_no_bias():
    (plot,) = plots.bias_bars([_record("self-preference-ratio", "j", "c", "self", 0.7)])
    caption = plot["caption"]
    assert "equal preference (50%" in caption and "dashed line is no bias" not in caption
    assert "cannot tell favouritism from better answers" in caption
    (matched,) = plots.bias_bars([_record("matched-bias", "j", "c", "self", 0.1)])
    assert "the dashed line is no bias (0)" in matched["caption"]
