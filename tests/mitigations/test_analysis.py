import math

import pandas as pd

from nepotism.metrics import Bootstrap
from nepotism.mitigations.analysis import jury_records
from nepotism.mitigations.config import MitigationConfig

FAILED = "failed-generation:http-5xx:500"


def _pair(judge, instance, outcome, truth, reason=None):
    """The two mirrored rows `side_rows` makes of one comparison of "a" with "b", and their truth."""
    back = -outcome if outcome == outcome else math.nan
    return [
        {
            "judge": judge,
            "condition": "default",
            "instance_id": instance,
            "side": "a",
            "opponent": "b",
            "outcome": outcome,
            "truth": truth,
            "excluded_reason": reason,
        },
        {
            "judge": judge,
            "condition": "default",
            "instance_id": instance,
            "side": "b",
            "opponent": "a",
            "outcome": back,
            "truth": -truth if truth == truth else math.nan,
            "excluded_reason": reason,
        },
    ]


def test_weighted_jury_counts_the_held_out_comparisons_its_weights_could_not_use():
    """The weights are each juror's accuracy on its held-out comparisons. One that a failed
    generation prevented, one without truth, one with comparable answers and one without a verdict
    are counted per juror by reason (each comparison once, not once per mirrored row), beside how
    many the weight was fitted on; an evaluation item is never counted there. A juror with no usable
    comparison has no weight and still shows its counts."""
    rows = pd.DataFrame(
        _pair("j1", "h1", 1.0, 1.0)
        + _pair("j1", "h2", -1.0, 1.0)
        + _pair("j1", "h3", math.nan, 1.0, FAILED)
        + _pair("j1", "h4", 1.0, math.nan)
        + _pair("j1", "h5", 1.0, 0.0)
        + _pair("j1", "h6", math.nan, -1.0)
        + _pair("j1", "e1", math.nan, 1.0, FAILED)
        + _pair("j2", "h1", math.nan, 1.0, FAILED)
        + _pair("j2", "h4", 1.0, math.nan)
        + _pair("j2", "e1", 1.0, 1.0)
    )
    split = {**{f"h{k}": "heldout" for k in range(1, 7)}, "e1": "evaluation"}
    cfg = MitigationConfig("w", "jury", {"vote": "weighted"})
    records, info = jury_records(
        rows, cfg, ["j1", "j2"], "default", Bootstrap(n_resamples=0), relation=lambda judge, model: "unrelated", split=split
    )
    assert info["weights"] == {"j1": 0.5}
    assert info["n_fit"] == {"j1": 2, "j2": 0}
    assert info["fit_excluded"] == {
        "j1": {FAILED: 1, "no truth": 1, "comparable answers": 1, "no usable verdict": 1},
        "j2": {FAILED: 1, "no truth": 1},
    }


def test_a_jury_counts_each_comparison_it_could_not_decide_once():
    """Two jurors vote on three comparisons, each given as its two mirrored rows: they agree on h1,
    split on h2 (no strict majority) and only j1 has a verdict on h3. The jury decides h1 and h3;
    h2 is counted once (before, once per mirrored row: 2), out of 3 comparisons (not 6 rows)."""
    rows = pd.DataFrame(
        _pair("j1", "h1", 1.0, 1.0)
        + _pair("j2", "h1", 1.0, 1.0)
        + _pair("j1", "h2", 1.0, 1.0)
        + _pair("j2", "h2", -1.0, 1.0)
        + _pair("j1", "h3", -1.0, 1.0)
        + _pair("j2", "h3", math.nan, 1.0, FAILED)
    )
    cfg = MitigationConfig("m", "jury", {"vote": "majority"})
    _, info = jury_records(
        rows, cfg, ["j1", "j2"], "default", Bootstrap(n_resamples=0), relation=lambda judge, model: "unrelated"
    )
    assert info["jury_comparisons"] == 3
    assert info["comparisons_without_jury_verdict"] == 1
    assert "items_without_jury_verdict" not in info


def test_a_weighted_jury_says_which_jurors_had_no_say_and_why():
    """j2 has no usable held-out comparison (one prevented by a failed generation, one without
    truth) and j3 got every one of its 2 wrong: the vote gives both weight 0. Every effect record of
    the jury names them with why, instead of a silent 0; j1, weighted 1.0, is not listed."""
    rows = pd.DataFrame(
        _pair("j1", "h1", 1.0, 1.0)
        + _pair("j2", "h1", math.nan, 1.0, FAILED)
        + _pair("j3", "h1", -1.0, 1.0)
        + _pair("j2", "h2", 1.0, math.nan)
        + _pair("j3", "h2", 0.0, 1.0)
        + _pair("j1", "e1", 1.0, 1.0)
        + _pair("j2", "e1", -1.0, 1.0)
        + _pair("j3", "e1", -1.0, 1.0)
    )
    split = {"h1": "heldout", "h2": "heldout", "e1": "evaluation"}
    cfg = MitigationConfig("w", "jury", {"vote": "weighted"})
    records, info = jury_records(
        rows, cfg, ["j1", "j2", "j3"], "default", Bootstrap(n_resamples=0), relation=lambda judge, model: "unrelated", split=split
    )
    assert info["weights"] == {"j1": 1.0, "j3": 0.0}
    expected = {
        "j2": {"reason": "no usable held-out comparison", "n_fit": 0, "fit_excluded": {FAILED: 1, "no truth": 1}},
        "j3": {"reason": "accuracy 0 on its 2 held-out comparisons", "n_fit": 2, "fit_excluded": {}},
    }
    assert info["jurors_without_weight"] == expected
    assert records and all(r["jurors_without_weight"] == expected for r in records)
