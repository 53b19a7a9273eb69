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
    rows = [{"instance_id": f"q{i}", "judge": "gpt-4", "model": m, "score": float(rng.integers(1, 11))}
            for i in range(n) for m in models]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_two_graded_models_are_a_leaderboard(tmp_path):
    """RouteLLM's shape: one judge grading its relative and one unrelated model."""
    table = _grades(tmp_path / "grades.csv", ["gpt-4-1106-preview", "mistralai/Mixtral-8x7B-Instruct-v0.1"])
    result = CliRunner().invoke(main, ["leakage", "audit", str(table), "--resamples", "50", "--json"])
    assert result.exit_code == 0, result.output
    [audit] = json.loads(result.output)
    assert audit["judge"] == "gpt-4" and audit["bonus"]["n_related"] == 1 and len(audit["leaderboard"]) == 2
    text = CliRunner().invoke(main, ["leakage", "audit", str(table), "--resamples", "50"])
    assert text.exit_code == 0 and "1 of 2 entries related to the judge" in text.output


def test_nothing_to_rank_is_an_error_not_silence(tmp_path):
    table = _grades(tmp_path / "grades.csv", ["claude-2"])
    result = CliRunner().invoke(main, ["leakage", "audit", str(table)])
    assert result.exit_code == 2
    assert "no judge ranks two or more entries (models graded): nothing to audit" in result.output
