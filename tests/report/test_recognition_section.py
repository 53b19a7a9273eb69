"""The self-recognition section: one row per judge and condition, perturbed rows after the judge's
unperturbed ones, undefined values as "n/a", in the HTML and Markdown report."""

from nepotism.report.full import build_report, write_report
from nepotism.report.recognition import recognition_table, stage


def _rec(metric, judge, condition, value, n, **variant):
    return {
        "metric": metric,
        "judge": judge,
        "condition": condition,
        "generator": None,
        "pair": None,
        "scope": "self",
        "variant": variant,
        "value": value,
        "ci_low": None if value is None else value - 0.1,
        "ci_high": None if value is None else min(1.0, value + 0.1),
        "confidence": 0.95,
        "n": n,
        "n_clusters": n,
        "n_excluded": 0,
        "excluded": {},
        "note": None if value is not None else "fewer than 3 items",
    }


RECORDS = [
    _rec("recognition-accuracy", "judge-a", "synonyms:judge-a", 0.55, 40, mode="pairwise", answers="all"),
    _rec("recognition-accuracy", "judge-a", "default", 0.8, 40, mode="pairwise", answers="all"),
    _rec(
        "recognition-preference-association",
        "judge-a",
        "default",
        0.6,
        40,
        subset="all own-vs-other comparisons",
        recognition="recognition-pairwise",
    ),
    _rec(
        "recognition-preference-association",
        "judge-a",
        "synonyms:judge-a",
        None,
        0,
        subset="all own-vs-other comparisons",
        recognition="recognition-pairwise",
    ),
    _rec("win-rate", "judge-a", "default", 0.5, 10),
]


def test_stage_reads_mitigate_condition_names():
    assert stage("judge-a", "synonyms:judge-a") == ("after", "synonyms")
    assert stage("judge-a", "default") == ("before", None)
    assert stage("judge-a", "x:judge-b") == ("before", None)  # another judge's perturbation is not this one's


def test_rows_before_then_after_with_both_metrics():
    table = recognition_table(RECORDS)
    assert table["columns"] == ["accuracy pairwise", "r all"]
    rows = table["rows"]
    assert [(r["condition"], r["stage"]) for r in rows] == [
        ("default", "texts as generated"),
        ("synonyms", "perturbed: synonyms"),
    ]
    assert rows[0]["cells"]["accuracy pairwise"]["text"].startswith("80.0%")
    assert rows[1]["cells"]["accuracy pairwise"]["text"].startswith("55.0%")
    assert rows[1]["cells"]["r all"]["text"].startswith("n/a") and not rows[1]["cells"]["r all"]["defined"]
    assert recognition_table(RECORDS[-1:]) == {"columns": [], "rows": [], "evaluatees": []}


def test_report_shows_the_section(tmp_path):
    context = build_report(RECORDS)
    assert context["shown"]["recognition"]
    assert not build_report(RECORDS[-1:])["shown"]["recognition"]
    paths = write_report(RECORDS, tmp_path)
    md = paths["report.md"].read_text()
    assert "## Self-recognition (paper 003)" in md and "perturbed: synonyms" in md
    html = paths["report.html"].read_text()
    assert 'id="recognition-table"' in html and "perturbed: synonyms" in html
