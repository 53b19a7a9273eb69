"""Paper 000 on recorded tables: PLS for family students (§5.2 Table 2, "same family": the data made
by GPT-4o, the judge GPT-4-turbo) and the PLS's spread over repeated runs (App. D.2, Table 9).

Planted: judge fj-turbo (family of the data generator fj-4o) and judge fj-gemini-pro (family of
fj-gemini-flash) compare fj-student-a (trained on fj-4o's answers) with fj-student-b (trained on
fj-gemini-flash's) on 100 prompts, one row per comparison, in three runs (replicates). In run r,
fj-turbo prefers student a on WINS_A[r] prompts, fj-gemini-pro on 45."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nepotism.analyses.suite import SuiteOptions, run_suite
from nepotism.metrics import Bootstrap
from nepotism.metrics.leakage import pls_from_win_rates
from nepotism.models import load_registry

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))
REGISTRY = """
[models."fj-turbo"]
family = "fj-openai"
[models."fj-4o"]
family = "fj-openai"
[models."fj-gemini-pro"]
family = "fj-google"
[models."fj-gemini-flash"]
family = "fj-google"
[models."fj-student-a"]
family = "fj-mistral"
teachers = ["fj-4o"]
[models."fj-student-b"]
family = "fj-mistral"
teachers = ["fj-gemini-flash"]
"""
WINS_A = (60, 55, 65)
PROMPTS = 100


def _rows() -> pd.DataFrame:
    rows = []
    for run, wins in enumerate(WINS_A):
        for judge, a_wins in (("fj-turbo", wins), ("fj-gemini-pro", 45)):
            for k in range(PROMPTS):
                rows.append((f"q{k}", judge, "fj-student-a", "fj-student-b", "A" if k < a_wins else "B", run))
    return pd.DataFrame(rows, columns=["instance_id", "judge", "model_a", "model_b", "verdict", "replicate"])


def _pls(wins_a: float) -> float:
    """PLS from win rates: student a under its family's judge, under the other judge; b likewise."""
    return float(pls_from_win_rates(wins_a, 0.45, 0.55, 1 - wins_a))


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    path = tmp_path_factory.mktemp("registry") / "models.toml"
    path.write_text(REGISTRY)
    return load_registry([str(path)])


def test_family_student_pls_and_its_spread_over_runs(registry):
    assert registry.scope("fj-turbo", "fj-student-a") == "family-student"
    records = run_suite(_rows(), "pairwise", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=200))).records
    pls = [r for r in records if r["metric"] == "preference-leakage-score" and r["variant"] == {"ties": "loss"}]
    (family,) = pls  # no judge here has a student of its own: every PLS is a family-student one
    assert family["scope"] == "family-student" and set(family["pair"]) == {"fj-student-a", "fj-student-b"}
    pooled = np.mean(WINS_A) / PROMPTS
    assert family["value"] == pytest.approx(_pls(pooled)) and family["n"] == 2 * 2 * PROMPTS * len(WINS_A)
    (spread,) = [r for r in records if r["metric"] == "preference-leakage-variance"]
    per_run = [_pls(w / PROMPTS) for w in WINS_A]
    assert list(spread["runs"].values()) == pytest.approx(per_run)
    assert spread["mean"] == pytest.approx(np.mean(per_run))
    assert spread["value"] == pytest.approx(np.var(per_run, ddof=1)) and spread["scope"] == "family-student"
    assert spread["ci_low"] <= spread["value"] <= spread["ci_high"]
    # one run only: the PLS, and no spread to report
    single = run_suite(
        _rows().query("replicate == 0"), "pairwise", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0))
    ).records
    assert not [r for r in single if r["metric"] == "preference-leakage-variance"]


def test_through_the_command_line_and_the_report(registry, tmp_path):
    _rows().to_csv(tmp_path / "pairs.csv", index=False)
    (tmp_path / "models.toml").write_text(REGISTRY)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run(
        [NEPOTISM, "metrics", "pairs.csv", "--models", "models.toml", "--bootstrap", "50", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)["results"]
    (spread,) = [r for r in records if r["metric"] == "preference-leakage-variance"]
    assert spread["value"] == pytest.approx(np.var([_pls(w / PROMPTS) for w in WINS_A], ddof=1))
    done = subprocess.run(
        [NEPOTISM, "report", "pairs.csv", "--models", "models.toml", "--bootstrap", "50", "--out", "rep"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    markdown = (tmp_path / "rep" / "report.md").read_text()
    assert "### Run to run (paper 000 App. D.2)" in markdown and "family students" in markdown
    # the spread belongs to the two judges, as the PLS does: no judge card named "a & b"
    cards = json.loads((tmp_path / "rep" / "results.json").read_text())["summary"]["cards"]["judges"]
    assert set(cards) == {"fj-gemini-pro", "fj-turbo"}
