"""task-accuracy (paper 004 §3): a planted table with hand-computed answers, through the metric, the
suite, `correlate` and the installed ``nepotism metrics --correlate task-accuracy,judge-accuracy``."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nepotism.analyses.suite import SuiteOptions, correlate, run_suite
from nepotism.metrics.task import task_accuracy
from nepotism.models import load_registry
from nepotism.metrics import Bootstrap

JUDGES = ("judge-1", "judge-2", "judge-3")
PROMPTS = ("p1", "p2", "p3", "p4")
#: Which answers are correct. judge-3's answer to p4 has only a score: ungraded.
CORRECT = {"judge-1": {"p1", "p2", "p3", "p4"}, "judge-2": {"p1", "p2"}, "judge-3": {"p1"}}
UNGRADED = ("p4", "judge-3")


def test_task_accuracy_worked_example():
    # 5 answers to 4 prompts (two replicates of p1): 3 correct of 4 graded, one ungraded.
    est = task_accuracy(np.array([1, 1, 0, 1, np.nan]), np.array(["p1", "p1", "p2", "p3", "p4"]), n_resamples=500, seed=0)
    assert est.value == pytest.approx(3 / 4)
    assert est.n == 4 and est.n_clusters == 3 and est.excluded == {"ungraded": 1}
    assert est.ci_low <= 0.75 <= est.ci_high
    empty = task_accuracy(np.array([np.nan]), np.array(["p1"]))
    assert empty.value is None or np.isnan(empty.value)
    assert empty.note == "no graded answer"
    with pytest.raises(ValueError):
        task_accuracy(np.array([0.5]), np.array(["p1"]))


def _verdict(judge, a, b, prompt):
    """judge-1 names the correct answer when exactly one is (else A); judge-2 and judge-3 always
    pick their own answer (shown as A)."""
    if judge == "judge-1":
        ok_a, ok_b = prompt in CORRECT[a], prompt in CORRECT[b]
        return "B" if ok_b and not ok_a else "A"
    return "A"


def _planted(tmp_path):
    rows = [
        {"instance_id": p, "judge": j, "model_a": j, "model_b": o, "verdict": _verdict(j, j, o, p)}
        for p in PROMPTS
        for j in JUDGES
        for o in JUDGES
        if o != j
    ]
    ref = [
        {
            "instance_id": p,
            "model": m,
            "correct": (p in CORRECT[m]) if (p, m) != UNGRADED else None,
            "score": 0.5 if (p, m) == UNGRADED else None,
        }
        for p in PROMPTS
        for m in JUDGES
    ]
    registry = tmp_path / "models.toml"
    registry.write_text("".join(f'[models."{j}"]\nfamily = "{j}"\n\n' for j in JUDGES))
    return pd.DataFrame(rows), pd.DataFrame(ref), registry


# Hand-computed. Task accuracy: judge-1 4/4, judge-2 2/4, judge-3 1/3 (p4 ungraded).
# Judge accuracy (004 Eq. 3, mean over evaluatees of the share of D_diff verdicts naming the correct
# answer): judge-1 names it always → 1; judge-2 is wrong vs judge-1 (p3, p4: 0/2) and right vs
# judge-3 (p2: 1/1) → ½; judge-3 is wrong vs judge-1 (p2, p3) and vs judge-2 (p2) → 0.
TASK = {"judge-1": 1.0, "judge-2": 0.5, "judge-3": 1 / 3}
JUDGE_ACC = {"judge-1": 1.0, "judge-2": 0.5, "judge-3": 0.0}
# Pearson r of (1, ½, ⅓) and (1, ½, 0): Sxy = 1/3, Sxx = 13/54, Syy = ½.
R = (1 / 3) / np.sqrt(13 / 54 * 0.5)


def test_suite_task_accuracy_and_correlation_with_judge_accuracy(tmp_path):
    frame, ref, registry = _planted(tmp_path)
    ref["correct"] = ref["correct"].astype(object)
    records = run_suite(
        frame,
        "pairwise",
        load_registry([str(registry)]),
        references={"correctness-ref": ref},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=200)),
    ).records
    task = [r for r in records if r["metric"] == "task-accuracy"]
    by_generator = {r["generator"]: r for r in task if r["judge"] is None}
    assert {g: r["value"] for g, r in by_generator.items()} == pytest.approx(TASK)
    assert by_generator["judge-3"]["n"] == 3 and by_generator["judge-3"]["excluded"] == {"ungraded": 1}
    assert by_generator["judge-1"]["n_clusters"] == 4
    own = {r["judge"]: r["value"] for r in task if r["judge"] is not None}
    assert own == pytest.approx(TASK)
    result = correlate(records, "task-accuracy", "judge-accuracy")
    assert result["n"] == 3 and result["r"] == pytest.approx(R)
    assert R == pytest.approx(0.96077, abs=1e-5)


def test_cli_correlates_task_accuracy_with_judge_accuracy(tmp_path):
    frame, ref, registry = _planted(tmp_path)
    frame.to_csv(tmp_path / "pairwise.csv", index=False)
    ref.assign(correct=ref["correct"].map({True: "true", False: "false", None: ""})).to_csv(tmp_path / "correct.csv", index=False)
    exe = Path(sys.executable).with_name("nepotism")
    done = subprocess.run(
        [
            str(exe),
            "metrics",
            "pairwise.csv",
            "--reference",
            "correct.csv",
            "--models",
            str(registry),
            "--correlate",
            "task-accuracy,judge-accuracy",
            "--bootstrap",
            "100",
            "--json",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)["results"]
    (corr,) = [r for r in records if r["metric"] == "correlation"]
    assert corr["variant"]["x"] == "task-accuracy" and corr["n"] == 3
    assert corr["value"] == pytest.approx(R)
    # the interval resamples the 3 judges (percentile, --bootstrap 100); Fisher z rides along
    assert corr["variant"]["interval"] == "bootstrap over judges" and corr["n_resamples"] == 100
    # (3 judges: a resample draws them all, giving R up to float32 rounding, or two, giving ±1 or none)
    assert corr["ci_low"] <= R + 1e-6 and R - 1e-6 <= corr["ci_high"] and len(corr["fisher_z_ci"]) == 2
    accuracy = {
        r["judge"]: r["value"]
        for r in records
        if r["metric"] == "judge-accuracy"
        and r["variant"].get("opponents") == "unrelated"
        and r["variant"].get("averaging") == "per-evaluatee"
        and r["variant"].get("preference", "verdict") == "verdict"
        and "examples" not in r["variant"]
    }
    assert accuracy == pytest.approx(JUDGE_ACC)


def test_reasoning_length_all_and_on_harmful_cases(tmp_path):
    """Paper 004 Fig. 5 on a planted table: gpt-4-0613 writes 100 tokens when its own answer is right
    and 400 when it is wrong (the harmful cases: its answer wrong, claude-2's right), two orders per
    prompt, one row without a count. All: (5 × 100 + 4 × 400) / 9; harmful: 400 on 4 rows."""
    from nepotism.metrics.bootstrap import Bootstrap
    from nepotism.models import default_registry

    rows, correct = [], []
    for i in range(5):
        own_right = i < 3
        for first, second in (("gpt-4-0613", "claude-2"), ("claude-2", "gpt-4-0613")):
            rows.append(
                {
                    "instance_id": f"q{i}",
                    "judge": "gpt-4-0613",
                    "model_a": first,
                    "model_b": second,
                    "verdict": "A",
                    "reasoning_tokens": 100 if own_right else 400,
                }
            )
        correct += [
            {"instance_id": f"q{i}", "model": "gpt-4-0613", "correct": own_right},
            {"instance_id": f"q{i}", "model": "claude-2", "correct": not own_right},
        ]
    rows[0]["reasoning_tokens"] = None  # not counted: excluded
    path = tmp_path / "pairs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    from nepotism.tables import read_table

    table = read_table(path)
    records = run_suite(
        table.frame,
        "pairwise",
        default_registry(),
        references={"correctness-ref": pd.DataFrame(correct)},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0)),
    ).records
    got = {r["variant"]["subset"]: r for r in records if r["metric"] == "reasoning-length" and "averaging" not in r["variant"]}
    assert got["all"]["value"] == pytest.approx((5 * 100 + 4 * 400) / 9) and got["all"]["excluded"] == {"not counted": 1}
    assert got["harmful"]["value"] == pytest.approx(400.0) and got["harmful"]["n"] == 4
    bad = tmp_path / "bad.csv"
    pd.DataFrame(rows[1:]).assign(reasoning_tokens=-3).to_csv(bad, index=False)
    from nepotism.errors import ValidationError

    with pytest.raises(ValidationError, match="reasoning_tokens"):
        read_table(bad)


def test_report_draws_paper_004_figs_1_to_4(tmp_path):
    """The report's verifiable section plots each metric against the judges' own task accuracy: Fig. 1
    has the hand-computed r; Fig. 2's SPR is 1 for every judge here (each always picks its own answer
    or its own is always right), so its r is n/a with the reason, never 0."""
    from nepotism.report.full import write_report
    from nepotism.report.section_plots import task_scatter
    from nepotism.report.sections import task_scatter_table

    frame, ref, registry = _planted(tmp_path)
    ref["correct"] = ref["correct"].astype(object)
    records = run_suite(
        frame,
        "pairwise",
        load_registry([str(registry)]),
        references={"correctness-ref": ref},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=50)),
    ).records
    rows = {r["figure"]: r for r in task_scatter_table(records)}
    assert rows["Fig. 1"]["r"] == pytest.approx(R) and rows["Fig. 1"]["n_judges"] == 3
    assert [j for j, _, _ in rows["Fig. 1"]["points"]] == list(JUDGES)
    assert [(x, y) for _, x, y in rows["Fig. 1"]["points"]] == [pytest.approx((TASK[j], JUDGE_ACC[j])) for j in JUDGES]
    assert rows["Fig. 2"]["r"] is None and rows["Fig. 2"]["note"] == "fewer than 3 points or a constant variable"
    assert [p["id"] for p in task_scatter(records)] == ["verifiable-scatter-0"]
    assert task_scatter_table([r for r in records if r["metric"] != "task-accuracy"]) == []
    paths = write_report(records, tmp_path / "report")
    assert 'id="verifiable-scatter-0"' in paths["report.html"].read_text()
    markdown = paths["report.md"].read_text()
    assert "### Against the judges' own task accuracy (paper 004 Figs. 1–4)" in markdown
    assert f"| default | Fig. 1 | judge-accuracy | 3 | {R:+.3f} |" in markdown


def test_reasoning_length_per_evaluatee_and_their_average():
    """Paper 004 Tables 16–18: a cell per evaluatee, and the "Average" column the mean over evaluatees.
    gpt-4-0613 writes 100 tokens against claude-2 on 3 prompts and 400 against llama-2-70b-chat on 1:
    pooled (3 × 100 + 400) / 4 = 175, per evaluatee 100 and 400, their average 250."""
    from nepotism.metrics.bootstrap import Bootstrap
    from nepotism.models import default_registry
    from nepotism.metrics.task import reasoning_length_records
    from nepotism.analyses.suite import scope_table

    rows = [
        {
            "instance_id": f"q{i}",
            "judge": "gpt-4-0613",
            "model_a": "gpt-4-0613",
            "model_b": other,
            "verdict": "A",
            "condition": "default",
            "reasoning_tokens": tokens,
        }
        for i, (other, tokens) in enumerate([("claude-2", 100)] * 3 + [("llama-2-70b-chat", 400)])
    ]
    frame = pd.DataFrame(rows)
    scopes = scope_table(default_registry(), ["gpt-4-0613"], ["gpt-4-0613", "claude-2", "llama-2-70b-chat"])
    records = [
        r
        for r in reasoning_length_records(frame, None, scopes, Bootstrap(n_resamples=50))
        if r["variant"]["subset"] == "self-evaluation"
    ]
    by = {(r["variant"].get("averaging", "pooled"), r["variant"].get("evaluatee")): r for r in records}
    assert by[("pooled", None)]["value"] == pytest.approx(175.0)
    assert by[("per-evaluatee", None)]["value"] == pytest.approx(250.0) and by[("per-evaluatee", None)]["n"] == 4
    assert by[("one evaluatee", "claude-2")]["value"] == pytest.approx(100.0)
    assert by[("one evaluatee", "llama-2-70b-chat")]["generator"] == "llama-2-70b-chat"
    assert by[("one evaluatee", "llama-2-70b-chat")]["value"] == pytest.approx(400.0)
