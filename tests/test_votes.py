"""The one vote (`nepotism.votes`): rules, the split-vote policy, and the callers that use it."""

import doctest
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from nepotism import votes
from nepotism.votes import decide, decide_one


def test_doctests():
    assert doctest.testmod(votes).failed == 0


def test_rules_on_hand_made_counts():
    counts = [[3, 1, 1], [2, 2, 1], [2, 1, 2], [1, 1, 1], [0, 0, 0], [0.6, 0.3, 0.1], [0.5, 0.5, 0]]
    assert decide(counts, rule="plurality").tolist() == [0, -1, -1, -1, -1, 0, -1]
    # a strict majority needs more than half of all votes: 3 of 5 yes, 2 of 5 no
    assert decide(counts, rule="majority").tolist() == [0, -1, -1, -1, -1, 0, -1]
    assert decide([[2, 1, 1]], rule="majority").tolist() == [-1]  # 2 of 4 is not more than half
    assert decide([[2, 1, 1]], rule="plurality").tolist() == [0]


def test_split_tie_policy_names_the_tie_only_where_votes_were_cast():
    out = decide([[2, 2, 0], [0, 0, 0], [3, 0, 0]], split="tie", tie=2)
    assert out.tolist() == [2, -1, 0]


def test_a_majority_winner_is_always_the_plurality_winner_and_relabelling_moves_it():
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 4, size=(500, 3)).astype(float)
    plural, major = decide(counts), decide(counts, rule="majority")
    assert np.all((major < 0) | (major == plural))
    order = np.array([2, 0, 1])
    moved = decide(counts[:, order])
    assert np.array_equal(np.where(moved >= 0, order[np.maximum(moved, 0)], -1), plural)


@pytest.mark.parametrize(
    "bad, message",
    [
        ([[1, -1]], "non-negative"),
        ([[1, np.nan]], "finite"),
        ([1, 2], "2-d"),
    ],
)
def test_bad_counts_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        decide(bad)


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="rule"):
        decide([[1]], rule="unanimous")
    with pytest.raises(ValueError, match="tie="):
        decide([[1, 1]], split="tie")


def test_decide_one_keeps_option_labels_including_false():
    assert decide_one(Counter({False: 2, True: 1})) is False
    assert decide_one(Counter({True: 1, False: 1})) is None
    assert decide_one(Counter()) is None


def test_every_vote_in_the_package_goes_through_the_one_module():
    """Committee, reference jury, mitigation jury and annotation majority agree on a split vote."""
    from nepotism.analyses.suite import committee
    from nepotism.annotate.export import majority
    from nepotism.grading.jury import pairwise_jury
    from nepotism.mitigations.juries import jury_outcomes

    split = pd.DataFrame(
        {
            "instance_id": ["i"] * 2,
            "judge": ["j1", "j2"],
            "model_a": ["a"] * 2,
            "model_b": ["b"] * 2,
            "verdict": ["A", "B"],
            "condition": ["c"] * 2,
            "replicate": [0] * 2,
        }
    )
    assert committee(split, ["j1", "j2"])["verdict"].isna().all()  # undecided, not a tie
    assert pairwise_jury(split).frame["decision"].tolist() == ["vote-tie"]  # a jury reference says so
    assert majority(["model_a", "model_b"]) == "unresolved"
    rows = pd.DataFrame(
        {"instance_id": ["i"] * 2, "side": ["s"] * 2, "opponent": ["o"] * 2, "judge": ["j1", "j2"], "outcome": [1.0, -1.0]}
    )
    assert np.isnan(jury_outcomes(rows)["outcome"].iloc[0])
