"""Pairwise rows → comparisons: order aggregation, single orders, unparsed verdicts."""

import numpy as np
import pandas as pd
import pytest

from nepotism.analyses.comparisons import build_comparisons


def frame(rows):
    df = pd.DataFrame(rows, columns=["instance_id", "judge", "model_a", "model_b", "verdict"])
    df["condition"] = "default"
    df["replicate"] = 0
    return df


# (verdict when x shown first, verdict when y shown first) -> aggregated outcome for x
CASES = [
    ("A", "B", 1.0),  # both orders pick x
    ("B", "A", -1.0),  # both pick y
    ("A", "tie", 1.0),  # decisive + tie -> decisive
    ("tie", "A", -1.0),  # tie + y decisive
    ("tie", "tie", 0.0),
    ("A", "A", 0.0),  # position bias: first slot twice -> disagreement -> tie
    ("B", "B", 0.0),
]


@pytest.mark.parametrize("first, second, expected", CASES)
def test_consistent_rule_table(first, second, expected):
    result = build_comparisons(frame([("1", "j", "x", "y", first), ("1", "j", "y", "x", second)]))
    assert len(result.frame) == 1
    assert result.frame["outcome"].iloc[0] == expected
    assert result.frame["n_orders"].iloc[0] == 2


@pytest.mark.parametrize("first, second, expected", CASES)
def test_strict_rule_marks_disagreement_ambiguous(first, second, expected):
    result = build_comparisons(frame([("1", "j", "x", "y", first), ("1", "j", "y", "x", second)]), rule="strict")
    agree = {("A", "B"): 1.0, ("B", "A"): -1.0, ("tie", "tie"): 0.0}
    outcome = result.frame["outcome"].iloc[0]
    if (first, second) in agree:
        assert outcome == agree[(first, second)]
    else:
        assert np.isnan(outcome)
        assert result.frame["excluded_reason"].iloc[0].startswith("ambiguous")


def test_single_order_used_as_is_and_counted():
    result = build_comparisons(frame([("1", "j", "y", "x", "A")]))
    assert result.frame["outcome"].iloc[0] == -1.0  # y shown first and picked: x lost
    assert result.frame["n_orders"].iloc[0] == 1


def test_unparsed_order_excludes_the_comparison_never_a_tie():
    result = build_comparisons(frame([("1", "j", "x", "y", "A"), ("1", "j", "y", "x", None)]))
    assert np.isnan(result.frame["outcome"].iloc[0])
    assert result.excluded_for("j", "default") == {"unparsed": 1}  # no reason recorded


def test_exclusions_are_counted_by_status_and_reason():
    df = frame(
        [
            ("1", "j", "x", "y", "A"),
            ("1", "j", "y", "x", None),
            ("2", "j", "x", "y", None),
            ("2", "j", "y", "x", None),
            ("3", "j", "x", "y", None),
            ("3", "j", "y", "x", "A"),
        ]
    )
    df["status"] = ["parsed", "unparsed", "failed", "unparsed", "unparsed", "parsed"]
    df["reason"] = [None, "conflicting", "timeout", "low_label_mass", "low_label_mass", None]
    result = build_comparisons(df)
    assert result.excluded_for("j", "default") == {"unparsed-conflicting": 1, "failed-timeout": 1, "unparsed-low-label-mass": 1}
    assert list(result.frame["excluded_reason"]) == ["unparsed-conflicting", "failed-timeout", "unparsed-low-label-mass"]


def test_a_pair_with_an_order_without_probabilities_has_no_probability():
    df = frame(
        [
            ("1", "j", "x", "y", "A"),
            ("1", "j", "y", "x", None),
            ("2", "j", "x", "y", "A"),
            ("2", "j", "y", "x", "B"),
            ("3", "j", "x", "y", "B"),
        ]
    )
    df["status"] = ["parsed", "unparsed", "parsed", "parsed", "parsed"]
    df["reason"] = [None, "low_label_mass", None, None, None]
    df["prob_a"] = [0.9, np.nan, 0.6, np.nan, 0.3]
    df["prob_b"] = [0.1, np.nan, 0.4, np.nan, 0.7]
    result = build_comparisons(df).frame
    assert np.isnan(result["prob_x"]).tolist() == [True, True, False]  # never a one-order average
    assert list(result["prob_excluded_reason"]) == ["unparsed-low-label-mass", "no label probabilities", None]
    assert result["prob_x"].iloc[2] == pytest.approx(0.3)  # a single-order comparison uses its order


def test_with_reasons_splits_the_generic_count():
    from nepotism.analyses.comparisons import with_reasons
    from nepotism.metrics._estimate import Estimate

    est = Estimate(0.5, 0.4, 0.6, 10, 5, n_excluded=3, excluded={"no verdict": 2, "tie": 1})
    out = with_reasons(est, [None, "unparsed-conflicting", "failed-timeout", None])
    assert out.excluded == {"failed-timeout": 1, "unparsed-conflicting": 1, "tie": 1} and out.n_excluded == 3
    assert with_reasons(est, ["unparsed-conflicting"]) is est  # the counts do not match: left alone


def test_probabilities_average_over_orders():
    df = frame([("1", "j", "x", "y", "A"), ("1", "j", "y", "x", "B")])
    df["prob_a"] = [0.8, 0.3]
    df["prob_b"] = [0.2, 0.7]
    result = build_comparisons(df)
    # x's share: 0.8 in order 1, 0.7 in order 2
    assert result.frame["prob_x"].iloc[0] == pytest.approx(0.75)


def test_row_order_does_not_matter():
    rows = [("1", "j", "x", "y", "A"), ("1", "j", "y", "x", "tie"), ("2", "j", "x", "z", "B"), ("2", "k", "z", "x", "A")]
    a = build_comparisons(frame(rows)).frame.sort_values(["instance_id", "judge"]).reset_index(drop=True)
    b = build_comparisons(frame(rows[::-1])).frame.sort_values(["instance_id", "judge"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
