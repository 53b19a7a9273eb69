"""``nepotism leakage audit`` on recorded tables: every judge with a leaderboard is audited, and a table
with nothing to rank says so instead of printing nothing."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from click.testing import CliRunner

from nepotism.cli import main


def _grades(path, models, n=40, seed=0):
    rng = np.random.default_rng(seed)
    rows = [
        {"instance_id": f"q{i}", "judge": "gpt-4", "model": m, "score": float(rng.integers(1, 11))}
        for i in range(n)
        for m in models
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_two_graded_models_are_a_leaderboard(tmp_path):
    """RouteLLM's shape: one judge grading its relative and one unrelated model."""
    table = _grades(tmp_path / "grades.csv", ["gpt-4-1106-preview", "mistralai/Mixtral-8x7B-Instruct-v0.1"])
    result = CliRunner().invoke(main, ["leakage", "audit", str(table), "--bootstrap", "50", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["schema_version"] == 2 and [a["judge"] for a in document["summary"]["audits"]] == ["gpt-4"]
    [bonus] = [r for r in document["results"] if r["metric"] == "leaderboard-leakage-bonus"]
    assert bonus["n_related"] == 1 and bonus["n_resamples"] == 50
    assert len([r for r in document["results"] if r["metric"] == "leaderboard-rank"]) == 2
    text = CliRunner().invoke(main, ["leakage", "audit", str(table), "--bootstrap", "50"])
    assert text.exit_code == 0 and "1 of 2 entries related to the judge" in text.output


def test_nothing_to_rank_is_an_error_not_silence(tmp_path):
    table = _grades(tmp_path / "grades.csv", ["claude-2"])
    result = CliRunner().invoke(main, ["leakage", "audit", str(table)])
    assert result.exit_code == 2
    assert "no judge ranks two or more entries (models graded): nothing to audit" in result.output


def test_an_unregistered_judge_is_refused_as_the_audit_refuses_it(tmp_path):
    """The same registry check as `nepotism metrics`: exit 2 naming the file, line and field; --models admits it."""
    table = tmp_path / "grades.csv"
    pd.DataFrame(
        [{"instance_id": f"q{i}", "judge": "my-judge", "model": m, "score": 5.0} for i in range(5) for m in ("claude-2", "gpt-4")]
    ).to_csv(table, index=False)
    refused = CliRunner().invoke(main, ["leakage", "audit", str(table), "--bootstrap", "0"])
    assert refused.exit_code == 2 and "judge 'my-judge' is not in the model registry" in refused.output
    assert f"{table}" in refused.output and "line 2" in refused.output and "Traceback" not in refused.output
    models = tmp_path / "models.toml"
    models.write_text('[models."my-judge"]\nfamily = "mine"\n')
    done = CliRunner().invoke(main, ["leakage", "audit", str(table), "--models", str(models), "--bootstrap", "0"])
    assert done.exit_code == 0 and "0 of 2 entries related to the judge" in done.output, done.output
