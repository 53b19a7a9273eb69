"""Post-hoc calibration of a judge's preference for a target (paper 000 §5.8, App. C.4).

Each comparison carries the judge's score for the target side, ``s = log p(target) - log p(other)``
from its label probabilities (averaged over the presentation orders), and — on the items where it
is known — the truth (+1 the target's answer is better, -1 the other's). Calibration estimates a
bias term ``b`` and reads the calibrated verdict as the sign of ``s - b``:

* `fit_auto`: one global ``b``, the intercept of a one-parameter logistic fit of the truth on
  ``s - b`` (with a weak normal prior on ``b`` so that a held-out set won by one side only still
  gives a finite value);
* `fit_contextual`: one ``b`` per context cluster (e.g. the instance category), pooled toward the
  global value (a tighter prior centred on it); clusters without held-out items use the global.

The split is explicit: `split_heldout` assigns each instance to ``heldout`` or ``evaluation`` by a
seeded hash of its id, and `calibrate` fits on the held-out rows only and applies the fit to the
evaluation rows only, so nothing is tuned on the items the result is reported on. The held-out
rows the fit cannot use are counted by reason (`Calibration.fit_excluded`,
`nepotism.mitigations.rows.left_out`): a comparison a failed generation prevented under its label,
e.g. ``failed-generation:timeout``, as the evaluation half's effects count theirs.
Left out: calibrating pointwise scores.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from scipy import optimize

from nepotism.mitigations.rows import left_out, usable

__all__ = ["Calibration", "apply_bias", "calibrate", "fit_auto", "fit_contextual", "split_heldout"]

_GLOBAL_SD = 5.0
_CONTEXT_SD = 1.0


def split_heldout(instance_ids: Iterable[str], fraction: float = 0.5, *, seed: int = 0) -> dict[str, str]:
    """Instance id -> ``"heldout"`` or ``"evaluation"`` (a seeded hash; stable across runs)."""
    if not 0.0 < fraction < 1.0:
        raise ValueError("the held-out fraction must be strictly between 0 and 1")
    out = {}
    for ident in sorted(set(map(str, instance_ids))):
        digest = hashlib.sha256(f"{seed}\x00{ident}".encode()).digest()
        out[ident] = "heldout" if int.from_bytes(digest[:8], "big") / 2**64 < fraction else "evaluation"
    return out


def _fit(scores: npt.NDArray[np.float64], truth: npt.NDArray[np.float64], centre: float, sd: float) -> float:
    keep = usable(scores, truth)
    s, y = scores[keep], truth[keep]
    if s.size == 0:
        return centre

    def loss(b: float) -> float:
        return float(np.sum(np.logaddexp(0.0, -y * (s - b))) + 0.5 * ((b - centre) / sd) ** 2)

    return float(optimize.minimize_scalar(loss, bounds=(-50.0, 50.0), method="bounded").x)


def fit_auto(scores: npt.ArrayLike, truth: npt.ArrayLike) -> float:
    """The global bias term (see the module docstring)."""
    return _fit(np.asarray(scores, dtype=float), np.asarray(truth, dtype=float), 0.0, _GLOBAL_SD)


def fit_contextual(scores: npt.ArrayLike, truth: npt.ArrayLike, contexts: Iterable[object]) -> tuple[float, dict[str, float]]:
    """(global bias, bias per context) with each context pooled toward the global value."""
    scores, truth = np.asarray(scores, dtype=float), np.asarray(truth, dtype=float)
    contexts = np.asarray([str(c) for c in contexts], dtype=object)
    overall = fit_auto(scores, truth)
    per = {str(c): _fit(scores[contexts == c], truth[contexts == c], overall, _CONTEXT_SD) for c in sorted(set(contexts))}
    return overall, per


def apply_bias(scores: npt.ArrayLike, bias: npt.ArrayLike, *, tolerance: float = 1e-9) -> npt.NDArray[np.float64]:
    """Calibrated outcome codes for the target: +1, -1, 0 (``|s - b|`` within tolerance), NaN (no score)."""
    shifted = np.asarray(scores, dtype=float) - np.asarray(bias, dtype=float)
    out: npt.NDArray[np.float64] = np.sign(shifted)
    out[np.abs(shifted) <= tolerance] = 0.0
    return out


@dataclass(frozen=True)
class Calibration:
    """A fitted calibration and the outcomes it gives on the evaluation rows; ``n_fit`` held-out
    rows were fitted on, ``fit_excluded`` counts the other held-out rows by reason."""

    method: str
    bias: float
    context_bias: Mapping[str, float] = field(default_factory=dict)
    heldout_ids: frozenset[str] = frozenset()
    evaluation_mask: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    outcome: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    n_fit: int = 0
    fit_excluded: Mapping[str, int] = field(default_factory=dict)


def calibrate(
    instance_ids: Iterable[object],
    scores: npt.ArrayLike,
    truth: npt.ArrayLike,
    split: Mapping[str, str],
    *,
    method: str = "auto",
    contexts: Iterable[object] | None = None,
    reasons: npt.ArrayLike | None = None,
) -> Calibration:
    """Fit on the rows whose instance is ``heldout`` in ``split``; calibrated outcomes for the
    ``evaluation`` rows (NaN elsewhere). ``method`` is ``"auto"`` or ``"contextual"``;
    ``reasons``: why each row has no verdict (`side_rows`' ``excluded_reason``), the label a
    held-out row without a score is counted under in ``fit_excluded``."""
    ids = np.asarray([str(i) for i in instance_ids], dtype=object)
    scores, truth = np.asarray(scores, dtype=float), np.asarray(truth, dtype=float)
    unknown = {i for i in ids if i not in split}
    if unknown:
        raise ValueError(f"{len(unknown)} instance(s) are in neither split, e.g. {sorted(unknown)[0]!r}")
    role = np.asarray([split[i] for i in ids], dtype=object)
    fit_rows, eval_rows = role == "heldout", role == "evaluation"
    outcome = np.full(len(ids), np.nan)
    per: dict[str, float]
    if method == "auto":
        bias, per = fit_auto(scores[fit_rows], truth[fit_rows]), {}
        outcome[eval_rows] = apply_bias(scores[eval_rows], bias)
    elif method == "contextual":
        if contexts is None:
            raise ValueError("contextual calibration needs a context per row")
        ctx = np.asarray([str(c) for c in contexts], dtype=object)
        bias, per = fit_contextual(scores[fit_rows], truth[fit_rows], ctx[fit_rows])
        row_bias = np.asarray([per.get(c, bias) for c in ctx[eval_rows]], dtype=float)
        outcome[eval_rows] = apply_bias(scores[eval_rows], row_bias)
    else:
        raise ValueError("method must be 'auto' or 'contextual'")
    n_fit = int(np.sum(fit_rows & usable(scores, truth)))
    why = None if reasons is None else np.asarray(reasons, dtype=object)[fit_rows]
    excluded = left_out(scores[fit_rows], truth[fit_rows], why, unusable="no label probabilities")
    return Calibration(method, bias, per, frozenset(ids[fit_rows]), eval_rows, outcome, n_fit, excluded)
