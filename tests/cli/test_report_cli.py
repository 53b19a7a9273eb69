"""``nepotism report``: from results JSON, from judgment tables (with references), errors as exit 2."""

from __future__ import annotations

import json

from click.testing import CliRunner

from nepotism.cli import main
from nepotism.simulate import SimulationSpec, simulate


def _files(tmp_path):
    spec = SimulationSpec(n_instances=40, self_bias=1.0, student_bias=0.5)
    sim = simulate(spec, seed=3)
    sim.pairwise.to_csv(tmp_path / "pairwise.csv", index=False)
    sim.preference_ref.to_csv(tmp_path / "pref.csv", index=False)
    (tmp_path / "models.toml").write_text(spec.registry_toml())
    return tmp_path / "pairwise.csv", tmp_path / "pref.csv", tmp_path / "models.toml"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_report_from_judgments_then_from_its_results(tmp_path):
    judgments, pref, models = _files(tmp_path)
    out = tmp_path / "out"
    result = invoke("report", judgments, "--reference", pref, "--models", models, "--out", out, "--bootstrap", "50", "--json")
    assert result.exit_code == 0, result.output
    status = json.loads(result.output)
    assert status["card_status"] == "no thresholds" and set(status["files"]) == {
        "report.html",
        "report.md",
        "results.json",
        "results.csv",
    }
    document = json.loads((out / "results.json").read_text())
    metrics = {r["metric"] for r in document["results"]}
    assert {
        "self-preference-ratio",
        "paired-win-rate-gap",
        "equal-opportunity-bias",
        "leaderboard-rank",
        "preference-leakage-score",
    } <= metrics
    html = (out / "report.html").read_text()
    assert 'id="leaderboard-table"' in html and 'id="pls-table"' in html and "judge-a" in html
    # the written results render again, leaderboard included, without the judgments
    again = invoke("report", out / "results.json", "--out", tmp_path / "again")
    assert again.exit_code == 0, again.output
    assert 'id="leaderboard-table"' in (tmp_path / "again" / "report.html").read_text()


def test_report_from_metrics_json_list(tmp_path):
    judgments, _, models = _files(tmp_path)
    metrics = invoke("metrics", judgments, "--models", models, "--json", "--bootstrap", "0")
    assert metrics.exit_code == 0, metrics.output
    (tmp_path / "m.json").write_text(metrics.output)
    thresholds = tmp_path / "t.toml"
    thresholds.write_text("max_self_preference_ratio = { self = 0.0 }\n")
    result = invoke("report", tmp_path / "m.json", "--out", tmp_path / "r", "--thresholds", thresholds)
    assert result.exit_code == 0, result.output
    assert "judge cards: fail" in result.output


def test_bad_inputs_exit_2_and_write_nothing(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = invoke("report", bad, "--out", tmp_path / "o")
    assert result.exit_code == 2 and "not a JSON results file" in result.output
    assert not (tmp_path / "o").exists()
    result = invoke("report", tmp_path / "missing.csv", "--out", tmp_path / "o")
    assert result.exit_code == 2 and not (tmp_path / "o").exists()


def test_report_on_a_folder_of_results(tmp_path):
    """``nepotism report nepotism-demo --out X``: a folder of results (results.json and results.csv, as
    demo and report write them) is reported from its results.json; before, its results.csv was read as a
    judgment table ("cannot tell the table kind from its columns")."""
    judgments, _, models = _files(tmp_path)
    first = tmp_path / "first"
    assert invoke("report", judgments, "--models", models, "--out", first, "--bootstrap", "0").exit_code == 0
    result = invoke("report", first, "--out", tmp_path / "again", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["results"] == len(json.loads((first / "results.json").read_text())["results"])
    (first / "results.json").unlink()  # records without their JSON: the hint, exit 2
    result = invoke("report", first, "--out", tmp_path / "third")
    assert result.exit_code == 2 and "results.csv" in result.output and "not judgments" in result.output
    assert not (tmp_path / "third").exists()
