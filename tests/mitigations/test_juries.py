import numpy as np
import pandas as pd
import pytest

from nepotism.mitigations.juries import exclude_related, familiarity_weights, jury_outcomes


def _rows(outcomes, judges=("j1", "j2", "j3")):
    return pd.DataFrame({"instance_id": "i1", "side": "m1", "opponent": "m2", "judge": list(judges), "outcome": outcomes})


def test_majority_needs_a_strict_majority():
    assert jury_outcomes(_rows([1.0, 1.0, -1.0]))["outcome"].iloc[0] == 1.0
    assert np.isnan(jury_outcomes(_rows([1.0, -1.0, 0.0]))["outcome"].iloc[0])
    out = jury_outcomes(_rows([1.0, -1.0, np.nan]))
    assert np.isnan(out["outcome"].iloc[0]) and out["n_votes"].iloc[0] == 2


def test_weighted_vote():
    rows = _rows([1.0, -1.0, -1.0])
    assert jury_outcomes(rows, vote="weighted", weights={"j1": 0.9, "j2": 0.3, "j3": 0.3})["outcome"].iloc[0] == 1.0
    assert jury_outcomes(rows, vote="weighted", weights={"j1": 0.5, "j2": 0.3, "j3": 0.3})["outcome"].iloc[0] == -1.0
    with pytest.raises(ValueError):
        jury_outcomes(rows, vote="weighted")


def test_perplexity_weights_downweight_the_most_familiar_items():
    rows = pd.DataFrame(
        {
            "instance_id": ["a", "b", "c", "a", "b", "c"],
            "side": "m1",
            "opponent": "m2",
            "judge": ["j1"] * 3 + ["j2"] * 3,
            "outcome": 1.0,
        }
    )
    fam = {
        ("j1", "a", "m1"): -0.5,
        ("j1", "b", "m1"): -2.0,
        ("j1", "c", "m1"): -2.2,
        ("j2", "a", "m1"): -3.0,
        ("j2", "b", "m1"): -3.0,
        ("j2", "c", "m1"): -3.0,
    }
    w = familiarity_weights(rows, fam)
    assert w[0] < 1.0 and w[1] == 1.0 and w[2] == 1.0 and np.all(w[3:] == 1.0)
    votes = pd.DataFrame(
        {"instance_id": "a", "side": "m1", "opponent": "m2", "judge": ["j1", "j2", "j3"], "outcome": [1.0, -1.0, 1.0]}
    )
    out = jury_outcomes(votes, vote="perplexity", row_weights=np.array([0.1, 1.0, 0.5]))
    assert out["outcome"].iloc[0] == -1.0


def test_related_judges_are_excluded():
    rows = _rows([1.0, 1.0, -1.0], judges=("m1", "m1-sibling", "other"))
    relation = lambda j, m: "self" if j == m else ("family" if j.startswith(m) else "unrelated")  # noqa: E731
    kept, dropped = exclude_related(rows, relation)
    assert dropped == 2 and list(kept["judge"]) == ["other"]
    assert jury_outcomes(kept)["outcome"].iloc[0] == -1.0
