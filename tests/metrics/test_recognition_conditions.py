"""Recognition under perturbation conditions (paper 003 Figs. 7/11/14): answers and verdicts are
matched within a condition, so the association before and after a perturbation is each its own."""

import numpy as np
import pandas as pd
import pytest

from nepotism.analyses.suite import SuiteOptions, run_suite
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.models import load_registry

REGISTRY = '[models."judge-a"]\nfamily = "a"\n[models."other-b"]\nfamily = "b"\n'
PERTURBED = "synonyms:judge-a"


def _planted(n: int = 40):
    """Per condition: which items the judge recognises (pairwise question) and prefers its own answer.

    default: items 0..23 recognised (24/40 = 0.6), preferred exactly when recognised (r = +1).
    synonyms: items 0..19 recognised (20/40 = 0.5), preferred exactly when *not* recognised (r = -1).
    """
    recog, verdicts = [], []
    for condition, recognised_upto, same in (("default", 24, True), (PERTURBED, 20, False)):
        for i in range(n):
            own_first = i % 2 == 0
            a, b = ("judge-a", "other-b") if own_first else ("other-b", "judge-a")
            own_slot, other_slot = ("A", "B") if own_first else ("B", "A")
            recognised = i < recognised_upto
            preferred = recognised if same else not recognised
            recog.append(
                {
                    "instance_id": f"x{i}",
                    "judge": "judge-a",
                    "model_a": a,
                    "model_b": b,
                    "choice": own_slot if recognised else other_slot,
                    "condition": condition,
                }
            )
            verdicts.append(
                {
                    "instance_id": f"x{i}",
                    "judge": "judge-a",
                    "model_a": a,
                    "model_b": b,
                    "verdict": own_slot if preferred else other_slot,
                    "condition": condition,
                }
            )
    return pd.DataFrame(recog), pd.DataFrame(verdicts)


def test_recognition_and_association_per_condition(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text(REGISTRY)
    registry = load_registry([str(path)])
    recog, pairwise = _planted()
    records = run_suite(
        recog,
        "recognition-pairwise",
        registry,
        references={"pairwise": pairwise},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=50)),
    ).records
    accuracy = {r["condition"]: r for r in records if r["metric"] == "recognition-accuracy"}
    assert accuracy["default"]["value"] == pytest.approx(24 / 40) and accuracy["default"]["n"] == 40
    assert accuracy[PERTURBED]["value"] == pytest.approx(20 / 40) and accuracy[PERTURBED]["n"] == 40
    assoc = {r["condition"]: r for r in records if r["metric"] == "recognition-preference-association"}
    assert assoc["default"]["value"] == pytest.approx(1.0)
    assert assoc[PERTURBED]["value"] == pytest.approx(-1.0)
    # the 2x2 tables (rows: recognised 0/1, columns: preferred 0/1), counted by hand
    assert assoc["default"]["table"] == [[16, 0], [0, 24]]
    assert assoc[PERTURBED]["table"] == [[0, 20], [20, 0]]
    assert np.isfinite(assoc[PERTURBED]["chi2"])


def test_a_condition_without_recognition_answers_has_no_association(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text(REGISTRY)
    registry = load_registry([str(path)])
    recog, pairwise = _planted()
    recog = recog[recog["condition"] == "default"]
    records = run_suite(
        recog,
        "recognition-pairwise",
        registry,
        references={"pairwise": pairwise},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0)),
    ).records
    assoc = {r["condition"]: r for r in records if r["metric"] == "recognition-preference-association"}
    assert assoc["default"]["value"] == pytest.approx(1.0)
    # the perturbed verdicts have no answers to pair with: undefined, never borrowed from "default"
    assert assoc[PERTURBED]["value"] is None and assoc[PERTURBED]["n"] == 0


#: Paper 003 Table 5, judge Llama-3.1-70B: self-recognition accuracy (%) on the harmful cases per
#: evaluatee, original and restyled code, as (right, harmful pairs) fractions that print as the cells.
#: (Test-only model names: the bundled registry holds the real ones.)
TABLE5 = {
    "t5-gemma-2": ((15, 22), (15, 22)),
    "t5-gpt-3.5": ((15, 35), (11, 34)),
    "t5-gpt-4o": ((11, 43), (7, 41)),
    "t5-llama-3.2": ((7, 15), (6, 14)),
    "t5-mistral-7b": ((3, 9), (5, 9)),
    "t5-phi-3.5": ((11, 28), (7, 27)),
}
PRINTED5 = {
    "t5-gemma-2": (68.18, 68.18),
    "t5-gpt-3.5": (42.86, 32.35),
    "t5-gpt-4o": (25.58, 17.07),
    "t5-llama-3.2": (46.67, 42.86),
    "t5-mistral-7b": (33.33, 55.56),
    "t5-phi-3.5": (39.29, 25.93),
}
RESTYLED = "restyle:judge-l"


def _table5(tmp_path):
    """Recognition answers ("which did you write?") on harmful pairs (the judge's code wrong, the
    evaluatee's right) recognised on the printed share, plus 4 legitimate pairs per evaluatee (own
    right) always recognised: were they counted as harmful, every cell would move."""
    registry = tmp_path / "r.toml"
    registry.write_text('[models."judge-l"]\nfamily = "l"\n' + "".join(f'[models."{m}"]\nfamily = "f-{m}"\n' for m in TABLE5))
    recog, truth = [], []
    for evaluatee, cells in TABLE5.items():
        n0 = cells[0][1]  # the restyled condition asks about fewer harmful pairs (the others discarded)
        for condition, (right, n) in zip(("default", RESTYLED), cells):
            for k in [*range(n), *range(n0, n0 + 4)]:
                item, harmful = f"{evaluatee}-{k}", k < n0
                recognised = k < right if harmful else True
                recog.append(
                    {
                        "instance_id": item,
                        "judge": "judge-l",
                        "model_a": "judge-l",
                        "model_b": evaluatee,
                        "choice": "A" if recognised else "B",
                        "condition": condition,
                    }
                )
        truth += [
            (f"{evaluatee}-{k}", m, ok)
            for k in range(cells[0][1] + 4)
            for m, ok in (("judge-l", k >= cells[0][1]), (evaluatee, k < cells[0][1]))
        ]
    return load_registry([str(registry)]), pd.DataFrame(recog), pd.DataFrame(truth, columns=["instance_id", "model", "correct"])


def test_table5_recognition_on_harmful_cases_per_evaluatee(tmp_path):
    registry, recog, correctness = _table5(tmp_path)
    records = run_suite(
        recog,
        "recognition-pairwise",
        registry,
        references={"correctness-ref": correctness},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=20)),
    ).records
    harmful = [
        r
        for r in records
        if r["metric"] == "recognition-accuracy" and r["variant"].get("subset") == "harmful (own wrong, other right)"
    ]
    for evaluatee, printed in PRINTED5.items():
        for condition, cell in zip(("default", RESTYLED), printed):
            (rec,) = [r for r in harmful if r["condition"] == condition and r["generator"] == evaluatee]
            assert round(100 * rec["value"], 2) == cell
    for condition, column in (("default", 0), (RESTYLED, 1)):
        (overall,) = [r for r in harmful if r["condition"] == condition and "evaluatee" not in r["variant"]]
        right, n = (sum(c[column][i] for c in TABLE5.values()) for i in (0, 1))
        assert overall["value"] == pytest.approx(right / n) and overall["n"] == n
        # all pairs: the 4 legitimate pairs per evaluatee are recognised too
        (every,) = [
            r
            for r in records
            if r["metric"] == "recognition-accuracy"
            and r["condition"] == condition
            and r["variant"] == {"mode": "pairwise", "answers": "all"}
        ]
        assert every["value"] == pytest.approx((right + 4 * len(TABLE5)) / (n + 4 * len(TABLE5)))


def test_a_pair_without_grades_is_counted_not_taken_as_harmless(tmp_path):
    registry, recog, correctness = _table5(tmp_path)
    correctness = correctness[~((correctness["instance_id"] == "t5-gemma-2-0") & (correctness["model"] == "judge-l"))]
    records = run_suite(
        recog[recog["condition"] == "default"],
        "recognition-pairwise",
        registry,
        references={"correctness-ref": correctness},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0)),
    ).records
    (gemma,) = [
        r
        for r in records
        if r["metric"] == "recognition-accuracy" and r["generator"] == "t5-gemma-2" and r["variant"].get("subset")
    ]
    assert gemma["n"] == 21 and gemma["excluded"] == {"own or other answer ungraded": 1}
    # no correctness reference: no harmful subset at all, never an empty one
    plain = run_suite(recog, "recognition-pairwise", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0))).records
    assert not [r for r in plain if r["variant"].get("subset")]


def test_table5_through_the_command_line_and_the_report(tmp_path):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    registry, recog, correctness = _table5(tmp_path)
    recog.to_csv(tmp_path / "recognition.csv", index=False)
    correctness.to_csv(tmp_path / "correct.csv", index=False)
    exe = str(Path(sys.executable).with_name("nepotism"))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run(
        [exe, "metrics", "recognition.csv", "--reference", "correct.csv", "--models", "r.toml", "--bootstrap", "50", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    (cell,) = [
        r
        for r in json.loads(done.stdout)["results"]
        if r["metric"] == "recognition-accuracy"
        and r["condition"] == RESTYLED
        and r["generator"] == "t5-gpt-4o"
        and r["variant"].get("subset")
    ]
    assert round(100 * cell["value"], 2) == 17.07
    done = subprocess.run(
        [
            exe,
            "report",
            "recognition.csv",
            "--reference",
            "correct.csv",
            "--models",
            "r.toml",
            "--bootstrap",
            "50",
            "--out",
            "rep",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    markdown = (tmp_path / "rep" / "report.md").read_text()
    assert "### Per evaluatee (paper 003 Tables 4–5)" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| judge-l | t5-gpt-4o | restyle |"))
    assert "17.1%" in row and "perturbed: restyle" in row
    assert 'id="recognition-evaluatee-table"' in (tmp_path / "rep" / "report.html").read_text()
