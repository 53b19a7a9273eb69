"""The full report: files, round trip, escaping of model strings, summary choices, sections."""

from __future__ import annotations

import base64
import copy
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from nepotism.report import full
from nepotism.report.card import parse_thresholds
from nepotism.report.full import build_report, format_value, write_report
from nepotism.analyses.verdicts import judge_verdicts
from nepotism.report.inputs import load_results

NEPOTISM = str(Path(sys.executable).parent / "nepotism")
EVIL = "<script>window.__pwned=1</script>&\"'|`*"


def test_all_exported():
    for module in (full,):
        for name in module.__all__:
            assert hasattr(module, name)


@pytest.fixture(scope="module")
def written(tmp_path_factory, records):
    """The report of the simulated study, written once, with a threshold every judge fails."""
    out = tmp_path_factory.mktemp("report")
    thresholds = parse_thresholds({"card": {"max_self_preference_ratio": {"self": 0.01}}})
    return out, write_report(records, out, summary={"source": "simulated"}, title="sim", thresholds=thresholds)


def test_writes_four_files_and_round_trips(written, records):
    out, paths = written
    assert {p.name for p in out.iterdir()} == {"report.html", "report.md", "results.json", "results.csv"}
    again, summary, _ = load_results(paths["results.json"])
    assert again == json.loads(json.dumps(records, default=str))
    assert summary["source"] == "simulated"
    csv = pd.read_csv(paths["results.csv"])
    assert len(csv) == len(records) and set(csv["metric"]) == {r["metric"] for r in records}
    html = paths["report.html"].read_text()
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html
    assert "<script" not in html.lower()  # the page itself runs no script
    assert html.count('src="data:image/png;base64,') >= 5
    for section in ("summary", "heatmaps", "bias", "pls", "confusion", "cards", "results"):
        assert f'id="{section}"' in html
    md = paths["report.md"].read_text()
    assert md.startswith("# sim") and "## Judge cards" in md and "## Preference leakage" in md


def test_model_strings_are_escaped_everywhere(tmp_path, records):
    keep = {"win-rate", "paired-win-rate-gap", "score-delta", "preference-leakage-score"}
    hostile = copy.deepcopy([r for r in records if r["metric"] in keep])
    for r in hostile:
        r["judge"] = r["judge"].replace("judge-a", f"judge-a{EVIL}")
        if r.get("generator"):
            r["generator"] = r["generator"].replace("judge-a", f"judge-a{EVIL}")
        r["condition"] = f"cond{EVIL}"
    paths = write_report(hostile, tmp_path / "x", summary={"source": f"src{EVIL}"}, title=f"title{EVIL}")
    html = paths["report.html"].read_text()
    assert "<script" not in html.lower()
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    md = paths["report.md"].read_text()
    assert "<script" not in md and "&lt;script&gt;" in md
    assert "\\|" in md  # a pipe in a name does not split a table cell
    csv = paths["results.csv"].read_text()
    assert "judge-a<script>" in csv  # CSV keeps the data itself


def test_csv_cells_that_look_like_formulas_are_neutralised(tmp_path, records):
    rows = copy.deepcopy(records[:3])
    rows[0]["generator"] = '=HYPERLINK("x")'
    rows[1]["generator"] = "-3.5"
    path = write_report(rows, tmp_path / "c")["results.csv"]
    frame = pd.read_csv(path)
    assert frame["generator"].iloc[0].startswith("'=")
    assert float(frame["generator"].iloc[1]) == -3.5


def _rec(metric, value, *, scope="self", judge="j", low=None, high=None, **extra):
    return {
        "metric": metric,
        "judge": judge,
        "judge_id": judge,
        "condition": "c",
        "generator": extra.pop("generator", None),
        "pair": extra.pop("pair", None),
        "scope": scope,
        "variant": extra.pop("variant", {}),
        "value": value,
        "ci_low": low,
        "ci_high": high,
        "n": 100,
        "n_clusters": 50,
        "n_excluded": 0,
        "confidence": 0.95,
        **extra,
    }


def _verdicts(recs, scope="self"):
    return [v for v in judge_verdicts(recs) if v.scope == scope]


def test_summary_reads_matched_then_paired_then_reference_then_alone():
    spr = _rec("self-preference-ratio", 0.8, low=0.7, high=0.9, variant={"opponents": "unrelated"})
    eo = _rec("equal-opportunity-bias", 0.05, low=0.01, high=0.09, variant={"judge_tie": "1/2", "opponents": "unrelated"})
    gap = _rec(
        "paired-win-rate-gap",
        0.061,
        low=0.032,
        high=0.09,
        generator="j",
        pair=["j", "o"],
        variant={
            "other_judge": "k",
            "other_judge_relation": "unrelated",
            "texts": "identical",
            "other_judge_relation_to_opponent": "unrelated",
        },
    )
    matched = _rec("matched-bias", 0.061, low=0.032, high=0.090, variant={"subset": "all"}, n_reference_judges=3)

    def pick(recs):
        (verdict,) = _verdicts(recs)
        return verdict

    alone = pick([spr])
    assert alone.rung == "alone" and alone.finding == "cannot-separate"
    assert "80.0%" in alone.sentence and "cannot tell favouritism from better answers" in alone.sentence
    assert pick([spr, eo]).rung == "reference" and pick([spr, eo]).finding == "favours"
    assert pick([spr, eo, gap]).metric == "paired-win-rate-gap"
    verdict = pick([spr, eo, gap, matched])
    assert verdict.rung == "matched" and verdict.metric == "matched-bias"
    assert (
        "favours its own answers: +6.1 points (95% CI +3.2 to +9.0) over what 3 judges unrelated to both candidates give"
    ) in verdict.sentence
    assert [a["metric"] for a in verdict.also] == ["paired-win-rate-gap", "equal-opportunity-bias", "self-preference-ratio"]
    assert {v.scope: v.status for v in judge_verdicts([spr])} == {
        "self": "measured",
        "family": "not-measurable",
        "student": "not-measurable",
        "family-student": "not-measurable",
    }


def test_summary_paired_gap_reads_one_clean_pair_never_a_median():
    def gap(value, opponent, relation="unrelated", prompts=50, texts="identical"):
        return _rec(
            "paired-win-rate-gap",
            value,
            low=value - 0.02,
            high=value + 0.02,
            generator="j",
            pair=["j", opponent],
            n_clusters=prompts,
            variant={
                "other_judge": "k",
                "other_judge_relation": relation,
                "texts": texts,
                "other_judge_relation_to_opponent": "unrelated",
            },
        )

    recs = [
        gap(0.10, "o1"),
        gap(0.30, "o2", prompts=80),
        gap(0.20, "o3"),
        gap(0.95, "o4", relation="self"),
        gap(0.5, "o5", prompts=200, texts="same models, other samples"),
    ]
    (verdict,) = _verdicts(recs)
    assert verdict.value == 0.30 and "2 other clean pairs" in verdict.sentence  # most prompts, not the median
    assert "+30.0 points" in verdict.sentence
    unclean = [a for a in verdict.also if a["why_not"] and a["why_not"].startswith("not a clean")]
    assert unclean and unclean[0]["value"] == 0.5  # shown with why, never read as the verdict


def test_format_value_units():
    assert format_value(_rec("win-rate", 0.5, low=0.4, high=0.6)) == "50.0% (95% CI 40.0 to 60.0)"
    assert format_value(_rec("matched-bias", -0.012, low=-0.03, high=0.01)) == "-1.2 pts (95% CI -3.0 to +1.0)"
    assert format_value(_rec("hspp-ratio", 1.5)) == "1.5"
    assert format_value(_rec("mra", None, note="empty")) == "n/a (empty; n=100)"


def test_build_report_sections_follow_the_records(records):
    few = [r for r in records if r["metric"] in ("equal-opportunity-bias", "preference-leakage-score")]
    context = build_report(few)
    present = {k for k, v in context["plots"].items() if v}
    assert present == {"bias", "confusion", "leakage"}
    assert [p["id"] for p in context["plots"]["leakage"]] == ["leakage-pls"]
    assert context["pls"] and all(r["metric"] == "preference-leakage-score" for r in context["pls"])
    assert context["leakage"]["pls"] and not context["mitigations"]["effects"]
    for plots in context["plots"].values():
        for plot in plots:
            assert base64.b64decode(plot["png"])[:8] == b"\x89PNG\r\n\x1a\n"
            assert plot["alt"] and plot["caption"]


def test_cards_in_report_follow_thresholds(written):
    _, paths = written
    document = json.loads(paths["results.json"].read_text())
    assert document["schema_version"] == 2
    assert document["summary"]["cards"]["status"] == "fail"
    assert {c["status"] for card in document["summary"]["cards"]["judges"].values() for c in card["checks"]} == {"fail"}
    assert "status-fail" in paths["report.html"].read_text()


@pytest.mark.parametrize("bad", [[{"judge": "x", "value": 1}], {"results": "no"}, [{"metric": "m", "judge": "j", "value": "1"}]])
def test_load_results_rejects_malformed(tmp_path, bad):
    from nepotism.errors import InputError

    path = tmp_path / "r.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(InputError):
        load_results(path)


@pytest.mark.parametrize("given", [{"ci_low": 0.5, "ci_high": None}, {"ci_high": 0.7}])
@pytest.mark.parametrize("command", ["report", "card"])
def test_an_interval_with_one_end_is_refused_by_field(tmp_path, given, command):
    """A record holding one end of its interval (valid for `Record`, which types each end alone) is bad
    input for every page and card that draws or checks the interval: exit 2 naming the file and the
    field, no traceback, nothing written (before: report crashed drawing the bias bar, TypeError)."""
    record = {"metric": "self-preference-ratio", "judge": "a", "condition": "default", "scope": "self"}
    record |= {"generator": "a", "value": 0.6, "n": 100, "n_clusters": 50} | given
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema_version": 2, "summary": {}, "findings": [], "results": [record]}))
    out = tmp_path / "out"
    thresholds = tmp_path / "thresholds.toml"
    thresholds.write_text("max_self_preference_ratio = 0.9\n")
    args = ["--out", str(out)] if command == "report" else ["--thresholds", str(thresholds)]
    done = subprocess.run([NEPOTISM, command, str(path), *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    missing = "ci_high" if "ci_low" in given else "ci_low"
    assert f"results[0].{missing}" in done.stderr and str(path) in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert not out.exists()


def test_a_generator_ranked_without_related_judges_only_has_no_change_of_rank(tmp_path):
    """A leaderboard row whose all-judges rank is undefined (not ranked) but whose unrelated-judges rank
    is defined: the change of rank is undefined, the row is drawn with its note (before: the report
    crashed subtracting the missing rank, TypeError, exit 70)."""

    def rank(generator, judges, value, note=None):
        interval = {} if value is None else {"ci_low": value, "ci_high": value + 1}
        return {
            "metric": "leaderboard-rank",
            "judge": f"{judges} judges",
            "condition": "pooled",
            "generator": generator,
            "variant": {"judges": judges, "score": "mean preference"},
            "value": value,
            "n": 10,
            "note": note,
        } | interval

    records = [rank("g1", "all", None, "not ranked"), rank("g1", "unrelated", 2.0)]
    records += [rank("g2", "all", 1.0), rank("g2", "unrelated", 1.0), rank("g3", "all", 3.0), rank("g3", "unrelated", 3.0)]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema_version": 2, "summary": {}, "findings": [], "results": records}))
    done = subprocess.run(
        [NEPOTISM, "report", str(path), "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    rows = {r["generator"]: r for r in build_report(load_results(path)[0])["leaderboard"]}
    assert rows["g1"]["change"] is None and rows["g1"]["unranked"] == "not ranked" and rows["g1"]["unrelated"] == (2.0, 2.0, 3.0)
    assert rows["g2"]["change"] == 0.0 and rows["g3"]["change"] == 0.0
