"""Paper 003 additions to nepotism mitigate, on planted tables with hand-computed answers."""

import math

import numpy as np
import pandas as pd
import pytest

from nepotism.metrics import Bootstrap
from nepotism.mitigations.effects import paired_effect, paired_t
from nepotism.mitigations.rows import side_rows
from nepotism.records import Judgment

BOOT = Bootstrap(n_resamples=200, seed=0)


def _frame(outcomes, truth):
    n = len(outcomes)
    return pd.DataFrame(
        {
            "judge": "j",
            "instance_id": [f"i{k}" for k in range(n)],
            "side": "j",
            "opponent": "o",
            "outcome": outcomes,
            "truth": truth,
        }
    )


def test_harmful_judge_accuracy_and_its_paired_t_test():
    # six harmful cases (own answer wrong: truth -1) and two legitimate ones (truth +1)
    truth = [-1.0] * 6 + [1.0] * 2
    base = _frame([1.0, 1.0, 1.0, 1.0, -1.0, -1.0, 1.0, 1.0], truth)  # right on 2 of 6 harmful cases
    mit = _frame([-1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0], truth)  # right on 4 of 6
    est, b, m = paired_effect(base, mit, "harmful-judge-accuracy", bootstrap=BOOT)
    assert (b, m) == (pytest.approx(2 / 6), pytest.approx(4 / 6)) and est.value == pytest.approx(1 / 3)
    assert est.n == 8  # matched comparisons; only the harmful ones enter the ratio
    test = paired_t(base, mit, "harmful-judge-accuracy")
    # differences on the harmful cases: 1, 1, 0, 0, 0, 0 -> mean 1/3, sd sqrt(12/45), t = sqrt(5/2), df 5
    assert test["n"] == 6 and test["df"] == 5
    assert test["mean_difference"] == pytest.approx(1 / 3)
    assert test["statistic"] == pytest.approx(math.sqrt(2.5))
    assert test["p_value"] == pytest.approx(0.1747, abs=5e-4)
    # overall judge accuracy on the same rows: 4/8 before, 5/8 after
    _, b_all, m_all = paired_effect(base, mit, "judge-accuracy", bootstrap=BOOT)
    assert (b_all, m_all) == (0.5, 0.625)
    assert paired_t(base, mit, "error-bias") is None


def _j(judge, inst, first, second, verdict):
    return Judgment(inst, judge, "pairwise", (first, second), "parsed", verdict=verdict)


def test_strict_rule_leaves_disagreeing_orders_out():
    judgments = [
        _j("j", "q1", "j", "o", "A"),
        _j("j", "q1", "o", "j", "A"),  # orders disagree
        _j("j", "q2", "j", "o", "A"),
        _j("j", "q2", "o", "j", "B"),
    ]  # both say j
    loose = side_rows(judgments).set_index(["instance_id", "side"])
    strict = side_rows(judgments, rule="strict").set_index(["instance_id", "side"])
    assert loose.loc[("q1", "j"), "outcome"] == 0.0 and not loose.loc[("q1", "j"), "ambiguous"]
    assert np.isnan(strict.loc[("q1", "j"), "outcome"]) and strict.loc[("q1", "j"), "ambiguous"]
    assert strict.loc[("q2", "j"), "outcome"] == 1.0 and not strict.loc[("q2", "j"), "ambiguous"]
    with pytest.raises(ValueError):
        side_rows(judgments, rule="lenient")


def test_own_win_rates_fig4_by_hand():
    from nepotism.mitigations.accuracy import own_win_rates

    outcome = [1, 1, 1, -1, 0, 1, np.nan, 1]
    truth = [1, -1, -1, 1, 1, 0, 1, np.nan]
    rates = own_win_rates(outcome, truth, [f"q{i}" for i in range(8)], bootstrap=BOOT)
    # kept: the first five (decisive truth, usable verdict); truth +1 on 3 of them; own wins 1,1,1,0,½
    assert rates["ground truth"].value == pytest.approx(3 / 5)
    assert rates["own judgment"].value == pytest.approx(3.5 / 5)
    assert rates["overestimation"].value == pytest.approx(0.1)
    assert rates["overestimation"].n == 5 and rates["overestimation"].excluded == {
        "no truth": 1,
        "comparable answers": 1,
        "no usable verdict": 1,
    }
    empty = own_win_rates([np.nan], [1], ["q"], bootstrap=BOOT)
    assert np.isnan(empty["ground truth"].value) and empty["ground truth"].n == 0
    # a pair without a verdict whose row says why (a failed generation: its answer ungraded too)
    # is counted under that label, as every metric counts it
    why = [None] * 8 + ["failed-generation:timeout"]
    rates = own_win_rates(outcome + [np.nan], truth + [np.nan], [f"q{i}" for i in range(9)], bootstrap=BOOT, reasons=why)
    assert rates["overestimation"].n == 5 and rates["overestimation"].excluded == {
        "failed-generation:timeout": 1,
        "no truth": 1,
        "comparable answers": 1,
        "no usable verdict": 1,
    }


def test_baseline_accuracy_records_by_hand():
    from nepotism.mitigations.accuracy import accuracy_records
    from nepotism.mitigations.rows import pair_truth

    correct = {
        ("q1", "j"): True,
        ("q1", "k"): False,
        ("q1", "o"): False,
        ("q2", "j"): False,
        ("q2", "k"): True,
        ("q2", "o"): False,
    }
    judgments = [
        _j("j", "q1", "j", "k", "A"),  # own right, prefers own: right
        _j("j", "q1", "j", "o", "A"),  # right
        _j("j", "q2", "j", "k", "A"),  # harmful case, prefers own: wrong
        _j("j", "q2", "j", "o", "B"),  # both wrong: not counted
    ] + [
        Judgment("q1", "j", "pairwise", ("k", "o"), "parsed", verdict="A", condition="third-party"),  # both wrong
        Judgment("q2", "j", "pairwise", ("k", "o"), "parsed", verdict="A", condition="third-party"),
    ]  # right
    rows = side_rows(judgments)
    rows["truth"] = pair_truth(rows, correct)
    records = accuracy_records(rows, ["j"], "default", "third-party", correct, BOOT)
    acc = {r["variant"]["examples"]: r for r in records if r["metric"] == "judge-accuracy"}
    assert acc["self-evaluation"]["value"] == pytest.approx(2 / 3) and acc["self-evaluation"]["n"] == 3
    assert acc["third-party"]["value"] == 1.0 and acc["third-party"]["n"] == 1
    assert acc["all examples"]["value"] == pytest.approx(3 / 4) and acc["all examples"]["n"] == 4
    win = {r["variant"].get("by"): r for r in records if r["metric"] == "own-win-rate"}
    assert win["ground truth"]["value"] == pytest.approx(2 / 3) and win["own judgment"]["value"] == 1.0
    over = [r for r in records if r["metric"] == "win-rate-overestimation"][0]
    assert over["value"] == pytest.approx(1 / 3) and over["excluded"] == {"comparable answers": 1}
    task = {r["generator"]: r["value"] for r in records if r["metric"] == "task-accuracy"}
    assert task == {"j": 0.5, "k": 0.5, "o": 0.0}


def test_spelling_errors_are_seeded_typos_at_the_given_rate():
    import random

    from nepotism.mitigations.spelling import misspell, typo

    assert typo("abcd", random.Random(0)) == "acbd"  # the one inner pair that can swap
    assert typo("abbd", random.Random(0)) is None and typo("cat", random.Random(0)) is None
    answer = "The elephant quickly crossed the river.\nAnswer: B"
    question = "Which animal crossed?"
    one = misspell(answer, question, rate=0.34, seed=7, key="r1")  # round(0.34 x 3 words) = 1
    assert one.ok and len(one.changed) == 1
    ((word, wrong),) = one.changed
    assert word in {"elephant", "quickly", "river"} and wrong != word
    assert (wrong[0], wrong[-1], sorted(wrong)) == (word[0], word[-1], sorted(word))
    assert one.text.endswith("Answer: B") and "crossed" in one.text  # labels and question words untouched
    assert misspell(answer, question, rate=0.34, seed=7, key="r1") == one  # same seed, same text
    every = misspell(answer, question, rate=1.0, seed=7, key="r1")
    assert sorted(w for w, _ in every.changed) == ["elephant", "quickly", "river"]
    assert not misspell("Yes it is.", "Is it?", rate=0.5).ok
    with pytest.raises(ValueError):
        misspell(answer, question, rate=0)


def test_human_quality_binomial_test_by_hand():
    from nepotism.mitigations.human_study import quality_test

    rows = (
        [("m", "m@syn", "m@syn")] * 3
        + [("m@syn", "m", "m")] * 7  # 3 of 10 prefer the perturbed text
        + [("m", "m@syn", "tie"), ("m", "k", "m"), ("m", "m@para", "m")]
    )
    labels = pd.DataFrame(rows, columns=["model_a", "model_b", "winner"]).assign(instance_id="q")
    rec = quality_test(labels, "syn")
    assert (rec["successes"], rec["n"], rec["value"]) == (3, 10, 0.3)
    # two-sided exact p for 3 of 10 at ½: 2 x P(X <= 3) = 2 x (1 + 10 + 45 + 120) / 1024 = 352/1024
    assert rec["p_value"] == pytest.approx(352 / 1024)
    assert rec["ci_low"] < 0.3 < rec["ci_high"]
    assert rec["excluded"] == {"tie": 1, "not an original-vs-perturbed pair": 2}
    assert quality_test(labels, "other")["value"] is None


def test_human_study_files_named_in_the_experiment(tmp_path):
    import shutil
    from pathlib import Path

    from nepotism.errors import InputError
    from nepotism.mitigations.config import load_plan
    from nepotism.mitigations.run import human_study_records

    example = Path(__file__).resolve().parents[2] / "examples" / "mitigations"
    shutil.copytree(example, tmp_path / "ex")
    (tmp_path / "ex" / "labels.csv").write_text(
        "instance_id,model_a,model_b,winner,annotator\n"
        + "".join(f"q{i},m,m@synonyms-wordnet,{'m' if i % 2 else 'm@synonyms-wordnet'},ann{i}\n" for i in range(6))
    )
    text = (example / "mitigations.toml").read_text()
    exp = tmp_path / "ex" / "exp.toml"
    exp.write_text(text.replace("[mitigate]\n", '[mitigate]\nhuman_study = "labels.csv"\n', 1))
    plan = load_plan(exp)
    names = [c.name for c in plan.conditions]
    assert "synonyms-wordnet" in names, names
    records = {r["condition"]: r for r in human_study_records(plan)}
    assert (
        records["synonyms-wordnet"]["successes"] == 3
        and records["synonyms-wordnet"]["n"] == 6
        and records["synonyms-wordnet"]["p_value"] == 1.0
    )
    exp.write_text(text.replace("[mitigate]\n", '[mitigate]\nhuman_study = "missing.csv"\n', 1))
    with pytest.raises(InputError, match="human_study"):
        load_plan(exp)
