"""``nepotism card``: cards from results, --check exit statuses, experiment files, --out files."""

from __future__ import annotations

import json

from click.testing import CliRunner

from nepotism.cli import main


def _results(tmp_path):
    records = [
        {
            "metric": "self-preference-ratio",
            "judge": "judge-a",
            "condition": "c",
            "scope": "self",
            "variant": {"opponents": "unrelated"},
            "value": 0.72,
            "ci_low": 0.65,
            "ci_high": 0.79,
            "n": 300,
            "n_clusters": 100,
        },
        {
            "metric": "paired-win-rate-gap",
            "judge": "judge-b",
            "condition": "c",
            "scope": "self",
            "pair": ["judge-b", "x"],
            "variant": {"other_judge": "judge-a"},
            "value": 0.01,
            "ci_low": -0.03,
            "ci_high": 0.05,
            "n": 200,
            "n_clusters": 100,
        },
    ]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema_version": 2, "summary": {"source": "unit"}, "results": records}))
    return path


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_check_fails_with_status_1(tmp_path):
    thresholds = tmp_path / "t.toml"
    thresholds.write_text("max_self_preference_ratio = 0.6\nmax_paired_win_rate_gap = 0.05\n")
    result = invoke("card", _results(tmp_path), "--thresholds", thresholds, "--check")
    assert result.exit_code == 1
    assert "[fail] metric=self-preference-ratio" in result.output and "[pass] metric=paired-win-rate-gap" in result.output
    assert "card check failed: judge-a: 1 failed" in result.output
    # without --check the same cards print and the status is 0
    assert invoke("card", _results(tmp_path), "--thresholds", thresholds).exit_code == 0


def test_check_passes_with_experiment_file_and_writes_files(tmp_path):
    experiment = tmp_path / "experiment.toml"
    experiment.write_text('[run]\nname = "x"\n\n[card]\nstatistic = "ci_low"\nmax_self_preference_ratio = 0.7\n')
    result = invoke("card", _results(tmp_path), "--thresholds", experiment, "--check", "--out", tmp_path / "o", "--json")
    assert result.exit_code == 0, result.output
    cards = json.loads(result.output)
    assert cards["status"] == "pass" and cards["judges"]["judge-a"]["checks"][0]["observed"] == 0.65
    assert json.loads((tmp_path / "o" / "card.json").read_text()) == cards
    assert "PASS" in (tmp_path / "o" / "card.md").read_text()


def test_rule_measured_for_no_judge_fails_the_check(tmp_path):
    thresholds = tmp_path / "t.toml"
    thresholds.write_text("max_matched_bias = 0.05\n")
    result = invoke("card", _results(tmp_path), "--thresholds", thresholds, "--check")
    assert result.exit_code == 1 and "measured for no judge" in result.output
    thresholds.write_text('on_missing = "ignore"\nmax_matched_bias = 0.05\n')
    assert invoke("card", _results(tmp_path), "--thresholds", thresholds, "--check").exit_code == 0


def test_bad_thresholds_and_unknown_judge_exit_2(tmp_path):
    thresholds = tmp_path / "t.toml"
    thresholds.write_text("max_self_preferance_ratio = 0.6\n")
    result = invoke("card", _results(tmp_path), "--thresholds", thresholds, "--check")
    assert result.exit_code == 2 and "unknown metric" in result.output
    thresholds.write_text("max_self_preference_ratio = 0.6\n")
    result = invoke("card", _results(tmp_path), "--thresholds", thresholds, "--judge", "nobody")
    assert result.exit_code == 2 and "nobody" in result.output
    result = invoke("card", _results(tmp_path), "--thresholds", thresholds, "--judge", "judge-b", "--check")
    assert result.exit_code == 1 and "judge-a —" not in result.output  # the rule measured nothing for judge-b
    thresholds.write_text("max_paired_win_rate_gap = 0.05\n")
    result = invoke("card", _results(tmp_path), "--thresholds", thresholds, "--judge", "judge-b", "--check")
    assert result.exit_code == 0 and "judge-a —" not in result.output  # no card of judge-a (its name may be a variant)


def test_a_scope_typo_is_bad_input_not_a_failed_check(tmp_path):
    """``{ slef = 0.6 }`` matched no record and failed the card (exit 1) as if the judge were biased."""
    thresholds = tmp_path / "t.toml"
    thresholds.write_text("max_self_preference_ratio = { slef = 0.6 }\n")
    result = invoke("card", _results(tmp_path), "--thresholds", thresholds, "--check")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "field 'max_self_preference_ratio.slef'" in result.output and "unknown scope 'slef'" in result.output
    thresholds.write_text('[[rule]]\nmetric = "paired-win-rate-gap"\nscope = "famly"\nmax = 0.05\n')
    result = invoke("card", _results(tmp_path), "--thresholds", thresholds)
    assert result.exit_code == 2 and "field 'rule[0].scope'" in result.output


def test_check_lines_name_the_variant(tmp_path):
    thresholds = tmp_path / "t.toml"
    thresholds.write_text("max_self_preference_ratio = { self = 0.6 }\n")
    result = invoke("card", _results(tmp_path), "--thresholds", thresholds)
    line = next(x for x in result.output.splitlines() if x.strip().startswith("[fail]"))
    assert "opponents=unrelated" in line and "value = 0.72" in line
