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
    return pd.DataFrame({"judge": "j", "instance_id": [f"i{k}" for k in range(n)], "side": "j", "opponent": "o",
                         "outcome": outcomes, "truth": truth})


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
    judgments = [_j("j", "q1", "j", "o", "A"), _j("j", "q1", "o", "j", "A"),  # orders disagree
                 _j("j", "q2", "j", "o", "A"), _j("j", "q2", "o", "j", "B")]  # both say j
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
        "no truth": 1, "comparable answers": 1, "no usable verdict": 1}
    empty = own_win_rates([np.nan], [1], ["q"], bootstrap=BOOT)
    assert np.isnan(empty["ground truth"].value) and empty["ground truth"].n == 0


def test_baseline_accuracy_records_by_hand():
    from nepotism.mitigations.accuracy import accuracy_records
    from nepotism.mitigations.rows import pair_truth

    correct = {("q1", "j"): True, ("q1", "k"): False, ("q1", "o"): False,
               ("q2", "j"): False, ("q2", "k"): True, ("q2", "o"): False}
    judgments = [
        _j("j", "q1", "j", "k", "A"),  # own right, prefers own: right
        _j("j", "q1", "j", "o", "A"),  # right
        _j("j", "q2", "j", "k", "A"),  # harmful case, prefers own: wrong
        _j("j", "q2", "j", "o", "B"),  # both wrong: not counted
    ] + [Judgment("q1", "j", "pairwise", ("k", "o"), "parsed", verdict="A", condition="third-party"),  # both wrong
         Judgment("q2", "j", "pairwise", ("k", "o"), "parsed", verdict="A", condition="third-party")]  # right
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
