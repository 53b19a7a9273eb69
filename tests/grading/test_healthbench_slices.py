"""Paper 002 on HealthBench from the command line: HSPP per axis and theme (Fig. 6 bottom) after
`nepotism import --format healthbench`, and App. C's balanced F1 of each judge against people's labels.

A planted world: 3 answering models that also judge, 8 prompts × 4 positive rubric items (two on the
axis "communication", two on "accuracy"; items r1/r3 truly met, r2/r4 not). Claude and Gemini copy the
truth. GPT-4o says "met" on every unmet communication item of its own answers (overestimation 8/8)
and on 2 of 8 unmet items everywhere else: its HSPP ratio is 1 / 0.25 = 4 on the communication
slice and 0.25 / 0.25 = 1 on accuracy. Three annotators label every item: two give the truth, the
third the opposite, so a judge copying the truth has TP 2P, TN 2N, FP P, FN N with P = N: balanced
F1 = ½(4/6 + 4/6) = ⅔."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nepotism.errors import InputError
from nepotism.importers.healthbench import import_healthbench

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))
MODELS = ("gpt-4o", "claude-3-opus-20240229", "gemini-pro")
PROMPTS = [f"p{k}" for k in range(8)]
AXES = ("communication", "communication", "accuracy", "accuracy")  # r1..r4
THEMES = {p: "emergency_referrals" if k < 4 else "hedging" for k, p in enumerate(PROMPTS)}


def _truth(k: int) -> bool:
    return k in (0, 2)  # r1 and r3 met, r2 and r4 not


def _verdict(judge: str, model: str, prompt: str, k: int) -> bool:
    if _truth(k) or judge != "gpt-4o":
        return _truth(k)
    if model == "gpt-4o" and AXES[k] == "communication":
        return True  # every unmet communication item of its own answers
    return prompt in ("p0", "p1")  # 2 of 8 unmet items of each kind elsewhere


def _lines() -> list[str]:
    rubrics = [
        {"criterion": f"criterion {k + 1}", "points": 5, "tags": [f"axis:{axis}", "level:example"]} for k, axis in enumerate(AXES)
    ]
    out = []
    for prompt in PROMPTS:
        for model in MODELS:
            out.append(
                json.dumps(
                    {
                        "prompt_id": prompt,
                        "prompt": f"question {prompt}",
                        "model": model,
                        "rubrics": rubrics,
                        "example_tags": [f"theme:{THEMES[prompt]}", "physician_agreed_category:x"],
                        "grades": {judge: [_verdict(judge, model, prompt, k) for k in range(4)] for judge in MODELS},
                        "labels": {
                            "doc-1": [_truth(k) for k in range(4)],
                            "doc-2": [_truth(k) for k in range(4)],
                            "doc-3": [not _truth(k) for k in range(4)],
                        },
                    }
                )
            )
    return out


def nep(*args, cwd, expect=0):
    done = subprocess.run(
        [NEPOTISM, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
    )
    assert done.returncode == expect, f"{args} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def test_importer_keeps_axis_theme_and_labels(tmp_path):
    source = tmp_path / "hb.jsonl"
    source.write_text("\n".join(_lines()) + "\n")
    imported = import_healthbench(source)
    rubric, labels = imported.tables["rubric"], imported.tables["rubric-labels"]
    assert set(rubric["category"]) == {"communication", "accuracy"} and set(rubric["theme"]) == set(THEMES.values())
    assert len(labels) == 8 * 3 * 4 * 3 and set(labels["annotator"]) == {"doc-1", "doc-2", "doc-3"}
    assert imported.counts["labels"] == 288 and imported.counts["annotators"] == 3
    bad = tmp_path / "bad.jsonl"
    line = _lines()[0]
    assert '"doc-3": [false, true, false, true]' in line
    bad.write_text(line.replace('"doc-3": [false, true, false, true]', '"doc-3": [false, true]') + "\n")
    with pytest.raises(InputError) as err:
        import_healthbench(bad)
    assert err.value.line == 1 and err.value.field == "labels.doc-3"


def _hspp(records, judge, label):
    """The judge's rubric-level HSPP ratio (self scope, 002's default set) in one slice."""
    hits = [
        r
        for r in records
        if r["metric"] == "hspp-ratio"
        and r["judge"] == judge
        and r["scope"] == "self"
        and r["variant"].get("level") == "rubric"
        and r["variant"].get("slice") == label
        and r["variant"].get("family_set", "exclude judge") == "exclude judge"
        and r["variant"].get("denominator", "not-family") == "not-family"
    ]
    assert len(hits) == 1, hits
    return hits[0]


def test_axis_and_theme_slices_and_balanced_f1_through_the_cli(tmp_path):
    (tmp_path / "hb.jsonl").write_text("\n".join(_lines()) + "\n")
    nep(
        "import",
        "hb.jsonl",
        "--format",
        "healthbench",
        "--out",
        "rubric.csv",
        "--reference-out",
        "rubric-items=items.csv",
        "--reference-out",
        "rubric-labels=labels.csv",
        cwd=tmp_path,
    )
    nep(
        "grade",
        "rubric.csv",
        "--jury",
        ",".join(MODELS),
        "--rubrics",
        "items.csv",
        "--out",
        "ref.csv",
        "--bootstrap",
        "0",
        cwd=tmp_path,
    )
    done = nep(
        "metrics",
        "rubric.csv",
        "--reference",
        "ref.csv",
        "--reference",
        "items.csv",
        "--reference",
        "labels.csv",
        "--slice",
        "category",
        "--slice",
        "theme",
        "--bootstrap",
        "100",
        "--json",
        cwd=tmp_path,
    )
    records = json.loads(done.stdout)["results"]
    communication = _hspp(records, "gpt-4o", {"category": "communication"})
    accuracy = _hspp(records, "gpt-4o", {"category": "accuracy"})
    assert communication["value"] == pytest.approx(4.0) and accuracy["value"] == pytest.approx(1.0)
    assert communication["ci_low"] is not None
    # per theme (every axis of the prompts of that theme): emergency referrals (p0-p3) hold the
    # planted bonus and the 2-of-8 overestimations; "hedging" (p4-p7) only the bonus: no unrelated
    # overestimation to divide by, so undefined — never 0 or infinite
    emergency = _hspp(records, "gpt-4o", {"theme": "emergency_referrals"})
    assert emergency["value"] == pytest.approx(((4 + 2) / 8) / ((2 + 2) / 8))
    hedging = _hspp(records, "gpt-4o", {"theme": "hedging"})
    assert hedging["value"] is None and hedging["note"]
    balanced = {
        r["judge"]: r
        for r in records
        if r["metric"] == "rubric-balanced-f1" and "slice" not in r["variant"] and r["variant"]["polarity"] == "all"
    }
    assert balanced["claude-3-opus-20240229"]["value"] == pytest.approx(2 / 3)
    assert balanced["claude-3-opus-20240229"]["n"] == 8 * 3 * 4 * 3 and balanced["claude-3-opus-20240229"]["annotators"] == 3
    assert balanced["gpt-4o"]["value"] < 2 / 3
    # the report shows balanced F1 in the meta-evaluation table
    nep(
        "report",
        "rubric.csv",
        "--reference",
        "ref.csv",
        "--reference",
        "items.csv",
        "--reference",
        "labels.csv",
        "--bootstrap",
        "50",
        "--out",
        "rep",
        cwd=tmp_path,
    )
    markdown = (tmp_path / "rep" / "report.md").read_text()
    row = next(
        line for line in markdown.splitlines() if line.startswith("| claude-3-opus-20240229 | default | human labels | all |")
    )
    assert "66.7%" in row


def test_balanced_f1_by_hand():
    from nepotism.metrics.meta_eval import balanced_f1
    import numpy as np

    # TP 3, FP 1, FN 2, TN 4, one row without a label: ½(6/9 + 8/11)
    judged = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1]
    labels = [1, 1, 1, 0, 1, 1, 0, 0, 0, 0, np.nan]
    est = balanced_f1(judged, labels, [f"p{k}" for k in range(11)], n_resamples=100)
    assert est.value == pytest.approx((6 / 9 + 8 / 11) / 2) and est.n == 10 and est.excluded == {"no label": 1}
    assert est.ci_low <= est.value <= est.ci_high
    only_met = balanced_f1([1, 1], [1, 1], ["a", "b"], n_resamples=0)
    assert np.isnan(only_met.value) and only_met.note == "one class is absent from both the verdicts and the labels"
