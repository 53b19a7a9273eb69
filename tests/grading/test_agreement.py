"""Agreement of our grading with a recorded correctness reference."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from nepotism.cli import main
from nepotism.grading import agreement
from nepotism.grading.agreement import correctness_agreement

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "grading"


def _frame(rows):
    return pd.DataFrame(rows, columns=["instance_id", "model", "correct"])


def test_all_is_exported():
    assert agreement.__all__ == ["correctness_agreement"]


def test_counts_and_rate_by_hand():
    ours = _frame([("p1", "a", True), ("p1", "b", False), ("p2", "a", True), ("p2", "b", True), ("p3", "a", False)])
    theirs = _frame([("p1", "a", True), ("p1", "b", True), ("p2", "a", True), ("p2", "b", True), ("p4", "a", True)])
    result = correctness_agreement(ours, theirs, n_resamples=200)
    assert result["counts"] == {
        "both_correct": 3,
        "both_incorrect": 0,
        "ours_correct_recorded_incorrect": 0,
        "ours_incorrect_recorded_correct": 1,
        "only_ours": 1,
        "only_recorded": 1,
    }
    assert result["value"] == pytest.approx(3 / 4)
    assert result["n"] == 4 and result["n_clusters"] == 2 and result["n_excluded"] == 2
    assert result["ci_low"] <= 0.75 <= result["ci_high"]


def test_planted_disagreement_rate_is_recovered_with_an_honest_interval():
    rng = np.random.default_rng(3)
    n = 4000
    truth = rng.random(n) < 0.6
    flip = rng.random(n) < 0.15  # our grader disagrees on 15% of responses
    ids = [f"p{i // 2}" for i in range(n)]
    ours = _frame(list(zip(ids, ["a", "b"] * (n // 2), truth ^ flip)))
    theirs = _frame(list(zip(ids, ["a", "b"] * (n // 2), truth)))
    result = correctness_agreement(ours, theirs, seed=1)
    assert result["ci_low"] <= 0.85 <= result["ci_high"]
    assert result["ci_high"] - result["ci_low"] < 0.03


def test_nothing_in_common_is_undefined_not_zero():
    result = correctness_agreement(_frame([("p1", "a", True)]), _frame([("p2", "a", True)]), n_resamples=50)
    assert np.isnan(result["value"]) and result["n"] == 0 and result["n_excluded"] == 2


@pytest.mark.slow
def test_cli_against_a_recorded_reference(tmp_path):
    recorded = tmp_path / "recorded.csv"
    _frame([("c1", "gpt-4o", True), ("c1", "llama-3", True), ("c2", "gpt-4o", True)]).to_csv(recorded, index=False)
    result = CliRunner().invoke(
        main,
        [
            "grade",
            str(FIX / "code_responses.jsonl"),
            "--task",
            "code",
            "--out",
            str(tmp_path / "ours.csv"),
            "--against",
            str(recorded),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "agreement with" in result.output and "0.667" in result.output and "the reverse: 1" in result.output


def test_cli_against_is_not_for_ifeval(tmp_path):
    result = CliRunner().invoke(
        main,
        [
            "grade",
            str(FIX / "ifeval_responses.jsonl"),
            "--task",
            "ifeval",
            "--out",
            str(tmp_path / "r.csv"),
            "--against",
            str(tmp_path / "x.csv"),
        ],
    )
    assert result.exit_code == 2 and "--against" in result.output
