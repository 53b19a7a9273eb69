"""Paper 002's rubric jury from the command line: a HealthBench-style file -> import -> nepotism grade
--jury (every juror voting, paper 002's default; relatives excluded as the variant) -> the reference
and each judge's precision / recall / F1 against it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nepotism.errors import InputError
from nepotism.importers.healthbench import import_healthbench
from nepotism.metrics.meta_eval import rubric_verdict_scores

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "healthbench_sample.jsonl"
NEPOTISM = str(Path(sys.executable).with_name("nepotism"))
JURY = "gpt-4o,claude-3-opus-20240229,gemini-pro"


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


def test_precision_recall_f1_by_hand():
    judged = [1, 1, 1, 0, 0, 1, np.nan, 1]
    reference = [1, 0, 1, 1, 0, 1, 1, np.nan]
    scores = rubric_verdict_scores(judged, reference, list("aabbccdd"), n_resamples=50)
    # kept rows 0-5: TP = 3 (rows 0, 2, 5), FP = 1 (row 1), FN = 1 (row 3)
    assert scores["precision"].value == pytest.approx(3 / 4) and scores["recall"].value == pytest.approx(3 / 4)
    assert scores["f1"].value == pytest.approx(6 / 8) and scores["f1"].n == 6
    assert scores["f1"].excluded == {"no judge verdict": 1, "no reference verdict": 1}
    none = rubric_verdict_scores([0, 0], [1, 0], ["a", "b"], n_resamples=0)
    assert np.isnan(none["precision"].value) and none["precision"].note == "the judge says no item is met"


def test_importer_reads_items_points_and_verdicts():
    imported = import_healthbench(SAMPLE)
    rubric, items = imported.tables["rubric"], imported.tables["rubric-items"]
    assert imported.counts == {"completions": 4, "verdicts": 32, "unparsed": 1}
    assert len(items) == 4 and items.set_index(["instance_id", "rubric_id"]).loc[("hb1", "r2"), "points"] == -8
    assert items.set_index(["instance_id", "rubric_id"]).loc[("hb1", "r1"), "category"] == "completeness"
    unparsed = rubric[rubric["met"].isna()]
    assert len(unparsed) == 1 and unparsed.iloc[0]["reason"] == "no_verdict"


def test_importer_names_line_and_field_of_bad_input(tmp_path):
    lines = SAMPLE.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        lines[0] + "\n" + lines[1].replace('"grades": {"gpt-4o": [false, false]', '"grades": {"gpt-4o": [false]') + "\n"
    )
    with pytest.raises(InputError) as err:
        import_healthbench(bad)
    assert err.value.line == 2 and err.value.field == "grades.gpt-4o"


def test_jury_reference_and_meta_evaluation_from_the_cli(tmp_path):
    nep(
        "import",
        str(SAMPLE),
        "--format",
        "healthbench",
        "--out",
        "rubric.csv",
        "--reference-out",
        "rubric-items=items.csv",
        cwd=tmp_path,
    )
    done = nep(
        "grade",
        "rubric.csv",
        "--jury",
        JURY,
        "--exclude-related",
        "--rubrics",
        "items.csv",
        "--out",
        "ref.csv",
        "--bootstrap",
        "50",
        "--json",
        cwd=tmp_path,
    )
    result = json.loads(done.stdout)
    # hand count: gpt-4o (related: itself) does not vote on gpt-4o's answers, claude on claude's;
    # 8 items: 4 decided by the majority, 4 even votes (one for, one against) left out
    assert result["counts"]["excluded_verdicts"] == 8 and result["counts"]["majority"] == 4
    assert result["counts"]["vote-tie"] == 4 and result["rows"] == 4
    ref = (tmp_path / "ref.csv").read_text().splitlines()
    assert ref[0] == "instance_id,model,rubric_id,met,jurors" and len(ref) == 5
    records = {(r["judge"], r["variant"]["polarity"], r["metric"]): r for r in result["records"]}
    # gpt-4o against the 4 decided items: TP 2, FP 1, FN 0
    assert records[("gpt-4o", "all", "rubric-precision")]["value"] == pytest.approx(2 / 3)
    assert records[("gpt-4o", "all", "rubric-recall")]["value"] == 1.0
    assert records[("gpt-4o", "all", "rubric-f1")]["value"] == pytest.approx(0.8)
    assert records[("gpt-4o", "all", "rubric-f1")]["in_jury"] and not records[("gpt-4o-mini", "all", "rubric-f1")]["in_jury"]
    # negative items: the reference says one (hb1 claude r2) is not met and gpt-4o agrees: no positive at all
    negative = records[("gpt-4o", "negative", "rubric-precision")]
    assert negative["value"] is None and negative["n"] == 1
    assert result["exclude_related"] is True
    kept = nep(
        "grade", "rubric.csv", "--jury", JURY, "--out", "ref2.csv", "--bootstrap", "0", "--json", cwd=tmp_path
    )  # the default: paper 002's plain majority of every juror
    assert json.loads(kept.stdout)["counts"].get("excluded_verdicts", 0) == 0
    assert json.loads(kept.stdout)["exclude_related"] is False
    plain = nep("grade", "rubric.csv", "--jury", JURY, "--out", "ref3.csv", "--bootstrap", "0", cwd=tmp_path)
    assert "every juror votes on every answer" in plain.stdout
    variant = nep(
        "grade", "rubric.csv", "--jury", JURY, "--exclude-related", "--out", "ref4.csv", "--bootstrap", "0", cwd=tmp_path
    )
    assert "a juror does not vote on answers of models related to it" in variant.stdout
    assert any(line.startswith("gpt-4o ") and "rubric-f1" in line for line in plain.stdout.splitlines())


def test_jury_input_errors_exit_2(tmp_path):
    nep("import", str(SAMPLE), "--format", "healthbench", "--out", "rubric.csv", cwd=tmp_path)
    one = nep("grade", "rubric.csv", "--jury", "gpt-4o", "--out", "r.csv", cwd=tmp_path, expect=2)
    assert "--jury" in one.stderr
    absent = nep("grade", "rubric.csv", "--jury", "gpt-4o,gpt-4-0613", "--out", "r.csv", cwd=tmp_path, expect=2)
    assert "gpt-4-0613" in absent.stderr
    both = nep("grade", "rubric.csv", "--jury", JURY, "--task", "mc", "--out", "r.csv", cwd=tmp_path, expect=2)
    assert "not with --task" in both.stderr
    neither = nep("grade", "rubric.csv", "--out", "r.csv", cwd=tmp_path, expect=2)
    assert "--task" in neither.stderr
    assert not (tmp_path / "r.csv").exists()


@pytest.mark.parametrize("seed", range(10))
def test_one_verdict_is_the_majority_per_key_as_a_plain_group_by_reads_it(seed):
    """`one_verdict` sorts and sums on integer codes: the same rows (sorted by the keys' text), the
    same majority (ties and no parsed verdict: NaN) as a group-by of the keys as text."""
    from nepotism.grading.rubric_reference import one_verdict
    from nepotism.votes import decide

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    frame = pd.DataFrame(
        {
            "judge": rng.choice(["zed", "alpha", "m10", "m9"], size=n),
            "instance_id": rng.choice(["q2", "q10", "q1"], size=n),
            "model": rng.choice(["b", "a", "é"], size=n),
            "rubric_id": rng.choice(["r1", "r2"], size=n),
            "met": pd.Series(rng.choice(np.array([True, False, None], dtype=object), size=n), dtype=object),
        }
    )
    keys = ["judge", "instance_id", "model", "rubric_id"]
    valid = frame["met"].notna().to_numpy()
    yes = np.where(valid, frame["met"].fillna(False).astype(bool).to_numpy(), False).astype(int)
    plain = frame[keys].astype(str).assign(no=valid.astype(int) - yes, yes=yes).groupby(keys, sort=True)[["no", "yes"]].sum()
    choice = decide(plain.to_numpy())
    expected = plain.index.to_frame(index=False).astype(object).assign(met=np.where(choice < 0, np.nan, choice.astype(float)))
    pd.testing.assert_frame_equal(one_verdict(frame, keys), expected)
