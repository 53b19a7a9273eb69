"""Verdicts left out, by reason, as a user sees them: import → metrics → report, and bad status input.

Runs the installed ``nepotism`` executable. The JudgeBench journey reads the real Claude-3-Haiku
arena-hard file beside the repository (skipped when absent); the table journey a small file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

NEPOTISM = str(Path(sys.executable).parent / "nepotism")
HAIKU = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "data"
    / "judgebench"
    / "dataset=judgebench,response_model=claude-3-5-sonnet-20240620,judge_name=arena_hard,"
    "judge_model=claude-3-haiku-20240307.jsonl.gz"
)


def nepotism(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([NEPOTISM, *map(str, args)], capture_output=True, text=True, timeout=600)


def test_judgebench_import_metrics_report_count_exclusions_by_reason(tmp_path):
    if not HAIKU.exists():
        pytest.skip("JudgeBench outputs not found beside the repository")
    table, ref = tmp_path / "judgments.csv", tmp_path / "ref.csv"
    done = nepotism("import", HAIKU, "--format", "judgebench", "--out", table, "--reference-out", ref)
    assert done.returncode == 0, done.stderr
    text = nepotism("metrics", table, "--reference", ref, "--bootstrap", "50")
    assert text.returncode == 0, text.stderr
    assert "claude-3-haiku-20240307 (arena_hard, pairwise): 13 of 540 — unparsed-conflicting 13" in text.stdout
    records = json.loads(nepotism("metrics", table, "--reference", ref, "--bootstrap", "50", "--json").stdout)["results"]
    (excluded,) = [r for r in records if r["metric"] == "excluded-verdicts"]
    assert excluded["n"] == 540 and excluded["n_excluded"] == 13
    assert excluded["excluded"] == {"unparsed-conflicting": 13}
    # the comparisons those 13 games spoil are counted under the same reason in every metric
    spoiled = [r for r in records if r["n_excluded"] and r["metric"] in ("win-rate", "position-consistency")]
    assert spoiled and all(r["excluded"].get("unparsed-conflicting") == 13 for r in spoiled)
    out = tmp_path / "report"
    done = nepotism("report", table, "--reference", ref, "--out", out)
    assert done.returncode == 0, done.stderr
    page = (out / "report.md").read_text(encoding="utf-8")
    assert "## Verdicts left out" in page and "| 540 | 13 |" in page and "unparsed-conflicting: 13" in page
    assert 'id="exclusions-table"' in (out / "report.html").read_text(encoding="utf-8")


def test_status_and_reason_columns_journey(tmp_path):
    table = tmp_path / "pairwise.csv"
    table.write_text(
        "instance_id,judge,model_a,model_b,verdict,status,reason,label_mass\n"
        "q1,gpt-4o,gpt-4o,claude-3-opus,A,parsed,,0.97\n"
        "q1,gpt-4o,claude-3-opus,gpt-4o,,unparsed,low_label_mass,0.003\n"
        "q2,gpt-4o,gpt-4o,claude-3-opus,,failed,timeout,\n"
        "q2,gpt-4o,claude-3-opus,gpt-4o,B,,,\n"
        "q3,gpt-4o,gpt-4o,claude-3-opus,A,,,\n"
        "q3,gpt-4o,claude-3-opus,gpt-4o,B,,,\n",
        encoding="utf-8",
    )
    done = nepotism("metrics", table, "--bootstrap", "50")
    assert done.returncode == 0, done.stderr
    assert "gpt-4o (default, pairwise): 2 of 6 — failed-timeout 1, unparsed-low-label-mass 1" in done.stdout
    records = json.loads(nepotism("metrics", table, "--bootstrap", "50", "--json").stdout)["results"]
    (spr,) = [
        r
        for r in records
        if r["metric"] == "self-preference-ratio"
        and r["scope"] == "self"
        and r["variant"]["opponents"] == "unrelated"
        and "averaging" not in r["variant"]
    ]
    assert spr["n"] == 1 and spr["excluded"] == {"failed-timeout": 1, "unparsed-low-label-mass": 1}


def test_verdicts_read_from_little_label_mass_are_kept_and_counted(tmp_path):
    """Papers 001 and 004 read the most probable label whatever its mass: such verdicts count, and
    each excluded-verdicts record says how many rest on labels holding < 1/2 of the probability."""
    table = tmp_path / "pairwise.csv"
    table.write_text(
        "instance_id,judge,model_a,model_b,verdict,status,reason,label_mass\n"
        "q1,gpt-4o,gpt-4o,claude-3-opus,A,parsed,,0.97\n"
        "q1,gpt-4o,claude-3-opus,gpt-4o,B,parsed,,0.12\n"
        "q2,gpt-4o,gpt-4o,claude-3-opus,A,parsed,,0.30\n"
        "q2,gpt-4o,claude-3-opus,gpt-4o,,unparsed,low_label_mass,0.003\n",
        encoding="utf-8",
    )
    done = nepotism("metrics", table, "--bootstrap", "0")
    assert done.returncode == 0, done.stderr
    assert (
        "gpt-4o (default, pairwise): 1 of 4 — unparsed-low-label-mass 1; kept 2 read from labels holding < 1/2 of the probability"
    ) in done.stdout
    records = json.loads(nepotism("metrics", table, "--bootstrap", "0", "--json").stdout)["results"]
    (excluded,) = [r for r in records if r["metric"] == "excluded-verdicts"]
    assert excluded["label_mass_below_half"] == 2 and excluded["n_excluded"] == 1
    out = tmp_path / "report"
    assert nepotism("report", table, "--out", out, "--bootstrap", "0").returncode == 0
    assert "kept: 2 read from labels holding under ½ of the probability" in (out / "report.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "row, field, message",
    [
        ("q1,j,a,b,A,unparsed,,", "status", "status 'unparsed' but the verdict is given"),
        ("q1,j,a,b,,parsed,,", "status", "status 'parsed' but the verdict is empty"),
        ("q1,j,a,b,,lost,,", "status", "unknown status 'lost'"),
        ("q1,j,a,b,A,,conflicting,", "reason", "a parsed row has no reason"),
        ("q1,j,a,b,,unparsed,low_label_mass,1.5", "label_mass", "outside [0.0, 1.0]"),
    ],
)
def test_bad_status_input_names_file_line_and_field(tmp_path, row, field, message):
    table = tmp_path / "bad.csv"
    table.write_text("instance_id,judge,model_a,model_b,verdict,status,reason,label_mass\n" + row + "\n", encoding="utf-8")
    done = nepotism("metrics", table)
    assert done.returncode == 2
    assert f"{table}" in done.stderr and "line 2" in done.stderr and field in done.stderr and message in done.stderr


def test_probability_metrics_leave_out_low_mass_verdicts_and_say_how_many(tmp_path):
    # paper 001's probability reading (demographic parity from P(own answer)) and paper 004's
    # D_diff metrics by probability: a pair with a low-mass order has no probability, counted
    table, ref = tmp_path / "pairwise.csv", tmp_path / "ref.csv"
    rows = ["instance_id,judge,model_a,model_b,verdict,status,reason,prob_a,prob_b,label_mass"]
    for i in range(6):
        low = i < 2  # the second order of q0 and q1 was read with too little label mass
        rows.append(f"q{i},gpt-4o,gpt-4o,claude-3-opus,A,parsed,,0.7,0.3,0.95")
        rows.append(
            f"q{i},gpt-4o,claude-3-opus,gpt-4o,,unparsed,low_label_mass,,,0.01"
            if low
            else f"q{i},gpt-4o,claude-3-opus,gpt-4o,B,parsed,,0.4,0.6,0.9"
        )
    table.write_text("\n".join(rows) + "\n", encoding="utf-8")
    ref.write_text(
        "instance_id,model,correct\n"
        + "".join(f"q{i},gpt-4o,{str(i % 2 == 0).lower()}\nq{i},claude-3-opus,{str(i % 2 == 1).lower()}\n" for i in range(6)),
        encoding="utf-8",
    )
    done = nepotism("metrics", table, "--reference", ref, "--bootstrap", "30", "--json")
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)["results"]
    (dp,) = [
        r
        for r in records
        if r["metric"] == "demographic-parity-bias"
        and r["scope"] == "self"
        and r["variant"].get("preference") == "probability"
        and r["variant"]["opponents"] == "unrelated"
    ]
    assert dp["n"] == 8 and dp["excluded"] == {"unparsed-low-label-mass": 4}  # 2 pairs, both sides
    accuracy = [r for r in records if r["metric"] == "judge-accuracy" and r["variant"].get("preference") == "probability"]
    assert accuracy and all(r["excluded"].get("unparsed-low-label-mass") == 2 for r in accuracy)


def _gaming_table(path: Path, *, gamer: str | None) -> None:
    """gpt-4o judges five generators pairwise on 60 prompts; the judgments showing ``gamer`` are
    left out (unparsed, quoted_only) 45% of the time, the others 3% (seeded)."""
    import itertools
    import random

    rng = random.Random(11)
    models = ("llama-3-70b", "qwen2-72b", "mistral-large-2407", "gemma-2-9b", "llama-3.1-8b")
    lines = ["instance_id,judge,model_a,model_b,verdict,status,reason"]
    for i in range(60):
        for x, y in itertools.combinations(models, 2):
            for a, b in ((x, y), (y, x)):
                if rng.random() < (0.45 if gamer in (a, b) else 0.03):
                    lines.append(f"q{i},gpt-4o,{a},{b},,unparsed,quoted_only")
                else:
                    lines.append(f"q{i},gpt-4o,{a},{b},{rng.choice('AB')},parsed,")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_generator_left_out_far_more_often_is_flagged_in_metrics_and_report(tmp_path):
    """Issue 39's gaming signal as a user meets it: `nepotism metrics` names the flagged generator
    (and only when one is flagged), --json holds a record per generator, the report's exclusions
    section lists it."""
    table = tmp_path / "judgments.csv"
    _gaming_table(table, gamer="gemma-2-9b")
    done = nepotism("metrics", table, "--bootstrap", "400")
    assert done.returncode == 0, done.stderr
    assert "Generators left without a verdict far more often than the judge's others" in done.stdout
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("  gpt-4o (default): gemma-2-9b ")]
    assert "mostly unparsed-quoted-only" in line
    flagged = [x for x in done.stdout.splitlines() if x.startswith("  gpt-4o (default): ")]
    assert len(flagged) == 1  # the answer names the flagged generator only
    records = json.loads(nepotism("metrics", table, "--bootstrap", "400", "--json").stdout)["results"]
    gaps = {r["generator"]: r for r in records if r["metric"] == "exclusion-share-gap"}
    assert len(gaps) == 5 and [g for g, r in gaps.items() if r["flagged"]] == ["gemma-2-9b"]
    out = tmp_path / "report"
    done = nepotism("report", table, "--bootstrap", "400", "--out", out)
    assert done.returncode == 0, done.stderr
    page = (out / "report.md").read_text(encoding="utf-8")
    assert "### Generators left out far more often than the others" in page
    assert "| gpt-4o | default | pairwise | gemma-2-9b |" in page
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="exclusions-flagged-table"' in html and "gemma-2-9b" in html
    summary = json.loads((out / "results.json").read_text(encoding="utf-8"))["summary"]
    assert [f["generator"] for f in summary["flagged_candidates"]] == ["gemma-2-9b"]


def test_nothing_flagged_nothing_said(tmp_path):
    table = tmp_path / "judgments.csv"
    _gaming_table(table, gamer=None)
    done = nepotism("metrics", table, "--bootstrap", "400")
    assert done.returncode == 0, done.stderr
    assert "far more often" not in done.stdout
    assert not [x for x in done.stdout.splitlines() if x.startswith("exclusion-share-gap")]
    out = tmp_path / "report"
    assert nepotism("report", table, "--bootstrap", "400", "--out", out).returncode == 0
    assert "far more often" not in (out / "report.md").read_text(encoding="utf-8")
    assert 'id="exclusions-flagged-table"' not in (out / "report.html").read_text(encoding="utf-8")
