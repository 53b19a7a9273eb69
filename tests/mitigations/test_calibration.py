import numpy as np
import pytest

from nepotism.mitigations import calibration as cal
from nepotism.mitigations.calibration import apply_bias, calibrate, fit_auto, fit_contextual, split_heldout


def _data(seed=0, n=200, shift=1.5):
    rng = np.random.default_rng(seed)
    truth = rng.choice([-1.0, 1.0], size=n)
    scores = truth * 2.0 + shift + rng.normal(0, 1, size=n)  # a judge leaning toward the target by `shift`
    ids = [f"i{k}" for k in range(n)]
    return ids, scores, truth


def test_split_is_seeded_stable_and_complete():
    ids = [f"i{k}" for k in range(100)]
    a, b = split_heldout(ids, 0.3, seed=1), split_heldout(reversed(ids), 0.3, seed=1)
    assert a == b and set(a) == set(ids) and set(a.values()) == {"heldout", "evaluation"}
    assert 15 < sum(v == "heldout" for v in a.values()) < 45
    assert split_heldout(ids, 0.3, seed=2) != a
    with pytest.raises(ValueError):
        split_heldout(ids, 1.0)


def test_auto_calibration_recovers_a_global_shift():
    _, scores, truth = _data()
    assert 1.0 < fit_auto(scores, truth) < 2.0
    assert abs(fit_auto(scores - 1.5, truth)) < 0.5


def test_the_fit_never_sees_evaluation_items(monkeypatch):
    ids, scores, truth = _data()
    split = split_heldout(ids, 0.5, seed=0)
    first = calibrate(ids, scores, truth, split)
    evaluation = np.array([split[i] == "evaluation" for i in ids])
    poisoned_scores, poisoned_truth = scores.copy(), truth.copy()
    poisoned_scores[evaluation] = 1e6
    poisoned_truth[evaluation] = -1.0
    second = calibrate(ids, poisoned_scores, poisoned_truth, split)
    assert second.bias == first.bias and second.n_fit == first.n_fit
    seen = []
    real_fit = cal._fit
    monkeypatch.setattr(cal, "_fit", lambda s, t, c, sd: seen.append(np.asarray(s).copy()) or real_fit(s, t, c, sd))
    calibrate(ids, scores, truth, split, method="contextual", contexts=["x" if k % 2 else "y" for k in range(len(ids))])
    fitted = np.concatenate(seen)
    heldout_scores = set(scores[~evaluation].tolist())
    assert fitted.size and set(fitted.tolist()) <= heldout_scores
    assert first.heldout_ids == {i for i in ids if split[i] == "heldout"}
    assert np.isnan(first.outcome[~evaluation]).all() and not np.isnan(first.outcome[evaluation]).any()


def test_contextual_calibration_fits_each_cluster():
    rng = np.random.default_rng(3)
    truth = rng.choice([-1.0, 1.0], size=400)
    ctx = np.array(["a", "b"] * 200)
    scores = truth * 2.0 + np.where(ctx == "a", 3.0, -1.0) + rng.normal(0, 0.5, size=400)
    overall, per = fit_contextual(scores, truth, ctx)
    assert per["a"] > overall > per["b"] and per["a"] > 2.0 and per["b"] < 0.0


def test_apply_bias_codes():
    out = apply_bias([2.0, -1.0, 0.5, np.nan], 0.5)
    assert out[0] == 1 and out[1] == -1 and out[2] == 0 and np.isnan(out[3])


def test_every_instance_needs_a_role():
    with pytest.raises(ValueError):
        calibrate(["x"], [1.0], [1.0], {})


def test_held_out_rows_the_fit_cannot_use_are_counted_by_reason():
    """A held-out comparison a failed generation prevented (no score, its label in ``reasons``) is
    counted under that label, not dropped from the fit without a word; so are rows without truth,
    with comparable answers or without label probabilities. Evaluation rows are never counted here."""
    ids = ["h1", "h2", "h3", "h4", "h5", "e1"]
    split = {"h1": "heldout", "h2": "heldout", "h3": "heldout", "h4": "heldout", "h5": "heldout", "e1": "evaluation"}
    scores = [1.0, np.nan, 0.5, -0.5, np.nan, np.nan]
    truth = [1.0, np.nan, np.nan, 0.0, -1.0, 1.0]
    reasons = [None, "failed-generation:http-5xx:500", None, None, None, "failed-generation:http-5xx:500"]
    result = calibrate(ids, scores, truth, split, reasons=reasons)
    assert result.n_fit == 1
    assert dict(result.fit_excluded) == {
        "failed-generation:http-5xx:500": 1,
        "no truth": 1,
        "comparable answers": 1,
        "no label probabilities": 1,
    }
    assert result.n_fit + sum(result.fit_excluded.values()) == 5  # every held-out row, once
