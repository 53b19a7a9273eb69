import numpy as np
import pandas as pd

from nepotism.mitigations.effects import BASE_METRICS, change_ratio, diff_in_diff, paired_effect
from nepotism.metrics import Bootstrap

BOOT = Bootstrap(n_resamples=400, seed=0)


def _frame(outcomes, truth, judge="j", prob=None):
    n = len(outcomes)
    frame = pd.DataFrame(
        {
            "judge": judge,
            "instance_id": [f"i{k}" for k in range(n)],
            "side": "j",
            "opponent": "o",
            "outcome": outcomes,
            "truth": truth,
        }
    )
    return frame if prob is None else frame.assign(prob=prob)


def test_probability_preference_moves_when_verdicts_tie():
    base = _frame([0.0, 0.0], [np.nan, np.nan], prob=[0.8, 0.6])
    mit = _frame([0.0, 0.0], [np.nan, np.nan], prob=[0.6, 0.5])
    est, b, m = paired_effect(base, mit, "self-preference-probability", bootstrap=BOOT)
    assert round(b, 6) == 0.7 and round(m, 6) == 0.55 and round(est.value, 6) == -0.15
    assert paired_effect(base, mit, "self-preference", bootstrap=BOOT)[0].value == 0.0
    est, _, _ = paired_effect(base, _frame([0.0, 0.0], [np.nan, np.nan]), "self-preference-probability", bootstrap=BOOT)
    assert est.n == 0 and est.excluded == {"no usable verdict in one condition": 2}


def test_paired_effect_is_the_difference_on_matched_pairs():
    base = _frame([1.0, 1.0, 1.0, -1.0], [-1.0, -1.0, 1.0, 1.0])
    mit = _frame([-1.0, 1.0, 1.0, -1.0], [-1.0, -1.0, 1.0, 1.0])
    est, b, m = paired_effect(base, mit, "self-preference", bootstrap=BOOT)
    assert (b, m) == (0.75, 0.5) and est.value == -0.25 and est.ci_low <= -0.25 <= est.ci_high
    est, b, m = paired_effect(base, mit, "judge-accuracy", bootstrap=BOOT)
    assert (b, m) == (0.25, 0.5) and est.value == 0.25
    est, b, m = paired_effect(base, mit, "error-bias", bootstrap=BOOT)
    assert b == 1.0 - 0.5 and m == 0.5 - 0.5
    est, b, m = paired_effect(base, mit, "harmful-self-preference", bootstrap=BOOT)
    assert (b, m) == (1.0, 0.5)


def test_unusable_and_unmatched_pairs_are_counted():
    base = _frame([1.0, np.nan, 1.0], [1.0, 1.0, np.nan])
    mit = _frame([1.0, 1.0], [1.0, 1.0])
    est, _, _ = paired_effect(base, mit, "judge-accuracy", bootstrap=BOOT)
    assert est.n == 1 and est.n_excluded == 2
    assert est.excluded == {"no mitigated comparison": 1, "no usable verdict in one condition": 1}
    est, _, _ = paired_effect(base, _frame([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]), "judge-accuracy", bootstrap=BOOT)
    assert est.excluded == {"no usable verdict in one condition": 1, "no truth": 1}
    est, _, _ = paired_effect(base, _frame([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]), "self-preference", bootstrap=BOOT)
    assert est.n == 2 and est.excluded == {"no usable verdict in one condition": 1}


def test_no_common_pair_gives_an_undefined_effect():
    est, b, m = paired_effect(_frame([1.0], [1.0]), _frame([1.0], [1.0], judge="other"), "self-preference", bootstrap=BOOT)
    assert np.isnan(est.value) and est.n == 0 and est.n_excluded == 2


def test_diff_in_diff():
    sb, sm = _frame([1.0, 1.0], [0.0, 0.0]), _frame([-1.0, -1.0], [0.0, 0.0])
    cb, cm = _frame([1.0, 1.0], [0.0, 0.0], judge="t"), _frame([1.0, 0.0], [0.0, 0.0], judge="t")
    est = diff_in_diff(sb, sm, cb, cm, bootstrap=BOOT)
    assert est.value == (0.0 - 1.0) - (0.75 - 1.0)


def test_change_ratio_is_paper_003_fig15():
    """Self-evaluation: win rate 1 → 0 (change −1); third party on the same pairs: 1 → 0.75 (−0.25):
    the perturbation moves the judge's own preference 4 times as much. A flat control: no ratio."""
    sb, sm = _frame([1.0, 1.0], [0.0, 0.0]), _frame([-1.0, -1.0], [0.0, 0.0])
    cb, cm = _frame([1.0, 1.0], [0.0, 0.0], judge="t"), _frame([1.0, 0.0], [0.0, 0.0], judge="t")
    est = change_ratio(sb, sm, cb, cm, bootstrap=BOOT)
    assert est.value == 4.0 and est.n == 4 and est.n_excluded == 0
    assert est.ci_low <= 4.0 <= est.ci_high
    # the ratio of magnitudes: a control moving the other way gives the same ratio
    est = change_ratio(
        sb, sm, _frame([0.0, 0.0], [0.0, 0.0], judge="t"), _frame([1.0, 0.0], [0.0, 0.0], judge="t"), bootstrap=BOOT
    )
    assert est.value == 4.0
    flat = change_ratio(sb, sm, cb, cb, bootstrap=BOOT)
    assert np.isnan(flat.value) and flat.note == "the third-party change is 0: no ratio"


def test_base_metrics_listed():
    assert set(BASE_METRICS) == {
        "self-preference",
        "self-preference-probability",
        "self-preference-ratio",
        "demographic-parity-bias",
        "harmful-self-preference",
        "judge-accuracy",
        "harmful-judge-accuracy",
        "error-bias",
    }


def test_audit_metrics_match_their_definitions():
    base = _frame([1.0, 0.0, -1.0, 1.0], [np.nan] * 4)
    mit = _frame([0.0, 0.0, -1.0, 1.0], [np.nan] * 4)
    est, b, m = paired_effect(base, mit, "self-preference-ratio", bootstrap=BOOT)
    assert (b, m) == (0.5, 0.25)
    est, b, m = paired_effect(base, mit, "demographic-parity-bias", bootstrap=BOOT)
    assert b == 2 * 0.625 - 1 and m == 2 * 0.5 - 1 and est.value == m - b


def test_a_pair_without_a_usable_verdict_is_counted_under_its_rows_reason():
    """Rows from `side_rows` say why a verdict is missing (`excluded_reason`, metrics' labels): the
    baseline's reason where the baseline has none, else the mitigated row's; none: the generic count."""
    why = "failed-generation:timeout"
    base = _frame([np.nan, 1.0, np.nan, 1.0], [1.0] * 4).assign(excluded_reason=[why, None, "unparsed-conflicting", None])
    mit = _frame([np.nan, np.nan, 1.0, 1.0], [1.0] * 4).assign(excluded_reason=[why, "failed-timeout", None, None])
    est, _, _ = paired_effect(base, mit, "self-preference", bootstrap=BOOT)
    assert est.n == 1 and est.excluded == {why: 1, "failed-timeout": 1, "unparsed-conflicting": 1}
    est = diff_in_diff(base, mit, base, mit, bootstrap=BOOT)
    assert est.excluded["self: " + why] == 1 and est.excluded["control: failed-timeout"] == 1
