"""Paper 002 Fig. 2 as a report panel: accuracy vs self-preference across judges, per paradigm."""

import math

from nepotism.report.full import write_report
from nepotism.report.paradigms import accuracy_bias_table


def _rec(metric, judge, value, **variant):
    return {
        "metric": metric,
        "judge": judge,
        "condition": "default",
        "generator": None,
        "pair": None,
        "scope": "self" if metric == "hspp-ratio" else None,
        "variant": variant,
        "value": value,
        "ci_low": None,
        "ci_high": None,
        "n": 10,
        "n_clusters": 10,
        "n_excluded": 0,
        "excluded": {},
    }


POINTS = {"a": (0.9, 1.5), "b": (0.8, 1.2), "c": (0.7, 1.0), "d": (0.6, 0.9)}
RECORDS = (
    [_rec("mipa", j, acc, paradigm="SR") for j, (acc, _) in POINTS.items()]
    + [_rec("hspp-ratio", j, bias, level="instance", paradigm="SR") for j, (_, bias) in POINTS.items()]
    + [_rec("mipa", j, 0.5, paradigm="PWC") for j in ("a", "b")]
    + [_rec("hspp-ratio", j, 2.0, level="instance", paradigm="PWC") for j in ("a", "b")]
)


def test_pearson_across_judges_by_hand():
    rows = {(r["paradigm"], r["level"]): r for r in accuracy_bias_table(RECORDS)}
    sr = rows[("SR", "instance")]
    # dx = .15, .05, -.05, -.15; dy = .35, .05, -.15, -.25: r = 0.1 / sqrt(0.05 x 0.21)
    assert sr["n_judges"] == 4 and sr["r"].startswith(f"{0.1 / math.sqrt(0.05 * 0.21):+.2f}")
    assert sr["accuracy"] == "MIPA" and sr["bias"] == "HSPP-instance" and "a: 0.90, 1.50" in sr["points"]
    pwc = rows[("PWC", "instance")]
    assert pwc["n_judges"] == 2 and pwc["r"].startswith("n/a") and pwc["p_value"] == "n/a"
    assert ("SR", "rubric") not in rows  # no MRA / HSPP-rubric records
    assert accuracy_bias_table([_rec("win-rate", "a", 0.5)]) == []


def test_the_panel_is_in_the_report(tmp_path):
    paths = write_report(RECORDS, tmp_path)
    assert 'id="paradigms-table"' in paths["report.html"].read_text()
    md = paths["report.md"].read_text()
    assert "### Accuracy against self-preference across paradigms (paper 002 Fig. 2)" in md
    assert "| default | SR | instance | MIPA | HSPP-instance | 4 |" in md


def test_the_figure_is_drawn_per_condition_in_the_rubric_section(tmp_path):
    from nepotism.report.paradigms import accuracy_bias_plots

    other = [dict(r, condition="impartial") for r in RECORDS]
    plots = accuracy_bias_plots(RECORDS + other)
    assert [p["id"] for p in plots] == ["paradigms-0", "paradigms-1"]
    assert [p["title"] for p in plots] == [
        "Accuracy against self-preference (default)",
        "Accuracy against self-preference (impartial)",
    ]
    assert all(len(p["png"]) > 1000 for p in plots)
    assert accuracy_bias_plots([_rec("win-rate", "a", 0.5)]) == []
    html = write_report(RECORDS, tmp_path)["report.html"].read_text()
    rubric = html.split('<h2 id="rubric">')[1].split("<h2 ")[0]
    assert "paradigms-0" in rubric
