"""Paper 004's per-evaluatee SPR (Tables 1/3/5) and paper 003's harmful-case judge accuracy (Fig. 5, Table 4),
recomputed from planted verdicts that give the papers' printed cells."""

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
from nepotism.metrics.pairwise import self_preference_ratio
from nepotism.models import load_registry

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))

#: Paper 004 Table 1 (MATH500, 500 problems): SPR (%) per evaluatee and the "Average" column.
EVALUATEES = tuple(
    f"p4-{m}" for m in ("mistral-7b", "phi-3.5", "gpt-3.5-turbo", "gpt-4o", "gemma-2-2b", "llama-3.2-1b", "mistral-small")
)
TABLE1 = {
    "p4-llama-3.2-3b": ((4.2, 5.8, 1.0, 12.0, 11.0, 17.2, 3.8), 7.9),
    "p4-qwen2.5-72b": ((86.4, 50.6, 56.4, 15.8, 72.6, 73.2, 31.2), 55.2),
}
#: Test-only names (the bundled registry holds the real ones with other lineage): families as in the paper.
REGISTRY = (
    "\n".join(
        f'[models."{name}"]\nfamily = "{name.split("-")[1]}-t"'
        for name in (
            "p4-llama-3.2-3b",
            "p4-qwen2.5-72b",
            "p4-mistral-7b",
            "p4-phi-3.5",
            "p4-gpt-3.5-turbo",
            "p4-gpt-4o",
            "p4-gemma-2-2b",
            "p4-llama-3.2-1b",
            "p4-mistral-small",
        )
    )
    + "\n"
)


def _table1_rows(problems: int = 500) -> pd.DataFrame:
    """Both presentation orders of every (judge, evaluatee, problem): the judge's own answer wins on
    the printed share of the 500 problems, loses on the rest."""
    rows = []
    for judge, (cells, _) in TABLE1.items():
        for evaluatee, percent in zip(EVALUATEES, cells):
            wins = round(percent * problems / 100)
            for k in range(problems):
                own_wins = k < wins
                rows.append((f"q{k}", judge, judge, evaluatee, "A" if own_wins else "B"))
                rows.append((f"q{k}", judge, evaluatee, judge, "B" if own_wins else "A"))
    return pd.DataFrame(rows, columns=["instance_id", "judge", "model_a", "model_b", "verdict"])


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    path = tmp_path_factory.mktemp("registry") / "models.toml"
    path.write_text(REGISTRY)
    return load_registry([str(path)])


def _spr(records, judge, opponents, averaging, evaluatee=None):
    hits = [
        r
        for r in records
        if r["metric"] == "self-preference-ratio"
        and r["judge"] == judge
        and r["scope"] == "self"
        and r["variant"].get("opponents") == opponents
        and r["variant"].get("averaging") == averaging
        and r["variant"].get("evaluatee") == evaluatee
    ]
    assert len(hits) == 1, hits
    return hits[0]


def test_table1_cells_and_average_with_every_other_model(registry):
    records = run_suite(_table1_rows(), "pairwise", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=20))).records
    for judge, (cells, average) in TABLE1.items():
        for evaluatee, percent in zip(EVALUATEES, cells):
            cell = _spr(records, judge, "any", "one evaluatee", evaluatee)
            assert round(100 * cell["value"], 1) == percent and cell["n"] == 500 and cell["generator"] == evaluatee
        mean = _spr(records, judge, "any", "per-evaluatee")
        assert round(100 * mean["value"], 1) == average and mean["n"] == 3500
        assert mean["ci_low"] <= mean["value"] <= mean["ci_high"]
    # the unrelated-only variant drops Llama-3.2-1B for the Llama judge: not the paper's Average
    unrelated = _spr(records, "p4-llama-3.2-3b", "unrelated", "per-evaluatee")
    assert round(100 * unrelated["value"], 1) == round((55.0 - 17.2) / 6, 1) != 7.9


def test_the_mean_of_evaluatees_differs_from_the_pooled_share_when_coverage_differs():
    # G1: 3 of 4 won; G2: 0 of 1 won, 3 unparsed: pooled 3/5 = 0.6, per evaluatee (0.75 + 0)/2
    outcome = [1, 1, 1, -1, -1, np.nan, np.nan, np.nan]
    evaluatee = ["G1"] * 4 + ["G2"] * 4
    ids = [f"p{k}" for k in range(8)]
    pooled = self_preference_ratio(outcome, ids, n_resamples=0)
    mean = self_preference_ratio(outcome, ids, evaluatee=evaluatee, averaging="per-evaluatee", n_resamples=0)
    assert pooled.value == pytest.approx(0.6) and mean.value == pytest.approx(0.375)
    assert mean.n == 5 and mean.excluded == {"no verdict": 3}
    with pytest.raises(ValueError, match="needs evaluatee"):
        self_preference_ratio(outcome, ids, averaging="per-evaluatee")


#: Paper 003 Table 4, judge Llama-3.3-70B: judge accuracy (%) on the harmful cases per evaluatee,
#: original code; the fractions that print as those cells (n = harmful cases against that evaluatee).
TABLE4 = {
    "p4-gemma-2-2b": (2, 14, 14.29),
    "p4-gpt-3.5-turbo": (5, 22, 22.73),
    "p4-gpt-4o": (16, 41, 39.02),
    "p4-llama-3.2-1b": (4, 6, 66.67),
    "p4-mistral-7b": (6, 16, 37.50),
    "p4-phi-3.5": (2, 15, 13.33),
}


def test_table4_harmful_accuracy_per_evaluatee(registry):
    """On each harmful case (own answer wrong, the evaluatee's right) the judge picks the right answer
    on the printed share; legitimate cases (own right) are planted all wrong, so any leak of them
    into the harmful numbers would move every cell."""
    rows, truth = [], []
    judge = "p4-qwen2.5-72b"
    for evaluatee, (right, n, _) in TABLE4.items():
        for k in range(n + 5):
            item = f"{evaluatee}-{k}"
            harmful = k < n
            picks_other = k < right if harmful else True  # legitimate cases: the judge wrongly picks the other
            rows.append((item, judge, judge, evaluatee, "B" if picks_other else "A"))
            rows.append((item, judge, evaluatee, judge, "A" if picks_other else "B"))
            truth += [(item, judge, not harmful), (item, evaluatee, harmful)]
    frame = pd.DataFrame(rows, columns=["instance_id", "judge", "model_a", "model_b", "verdict"])
    correctness = pd.DataFrame(truth, columns=["instance_id", "model", "correct"])
    records = run_suite(
        frame,
        "pairwise",
        registry,
        references={"correctness-ref": correctness},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=20), rule="strict"),
    ).records
    harmful = [
        r
        for r in records
        if r["metric"] == "judge-accuracy"
        and r["variant"].get("examples") == "harmful (own wrong, other right)"
        and r["variant"]["opponents"] == "any"
    ]
    cells = {r["generator"]: r for r in harmful if r["variant"]["averaging"] == "one evaluatee"}
    for evaluatee, (_, n, printed) in TABLE4.items():
        assert round(100 * cells[evaluatee]["value"], 2) == printed and cells[evaluatee]["n"] == n
    pooled = next(r for r in harmful if r["variant"]["averaging"] == "pooled")
    assert pooled["value"] == pytest.approx(sum(v[0] for v in TABLE4.values()) / sum(v[1] for v in TABLE4.values()))
    mean = next(r for r in harmful if r["variant"]["averaging"] == "per-evaluatee")
    assert mean["value"] == pytest.approx(np.mean([v[0] / v[1] for v in TABLE4.values()]))
    # the all-examples judge accuracy still counts the legitimate cases (every one wrong here)
    overall = next(
        r
        for r in records
        if r["metric"] == "judge-accuracy"
        and "examples" not in r["variant"]
        and r["variant"] == {"averaging": "pooled", "opponents": "any"}
    )
    assert overall["n"] == sum(n + 5 for _, n, _ in TABLE4.values())


def test_per_evaluatee_spr_through_the_command_line(registry, tmp_path):
    table = tmp_path / "pairwise.csv"
    _table1_rows().query("judge == 'p4-llama-3.2-3b'").to_csv(table, index=False)
    models = tmp_path / "models.toml"
    models.write_text(REGISTRY)
    done = subprocess.run(
        [NEPOTISM, "metrics", str(table), "--models", str(models), "--bootstrap", "0", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
    )
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)["results"]
    assert round(100 * _spr(records, "p4-llama-3.2-3b", "any", "per-evaluatee")["value"], 1) == 7.9
    assert round(100 * _spr(records, "p4-llama-3.2-3b", "any", "one evaluatee", "p4-gpt-4o")["value"], 1) == 12.0
