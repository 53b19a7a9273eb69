"""Mitigation-effect records from side rows: perturbations, judge options, juries, calibration.

Every record has the standard shape ``{metric: "mitigation-effect", judge, condition, variant:
{mitigation, base_metric, scope}, value, ci_low, ci_high, n, n_excluded, excluded, ...}`` plus
``value_baseline`` and ``value_mitigated``. ``value`` is mitigated minus baseline on the same
comparisons (same instances, same judge), with a paired cluster-bootstrap interval. Scopes: the
relation measured, ``[mitigate] target`` — ``self`` (the judge's verdicts on its own answer against
each competitor), ``family`` or ``student`` (its verdicts on that relative's answer) —,
``third-party-control`` (the same pairs and the same perturbation judged by the other judges, paper
003 Fig. 9; for ``self`` only) and ``self-minus-control`` (the difference of the two changes); beside
them a ``self-third-party-change-ratio`` record (scope ``self-over-control``) holds the ratio of the two
changes' magnitudes, paper 003 Fig. 15.
``judge = "all"`` pools the judges. Target-scope records of perturbations and judge options also
carry ``t_test``: the paired t-test of
the per-comparison values (`nepotism.mitigations.effects.paired_t`, paper 003 Fig. 8).
A weighted jury (``vote = "weighted"``) weighs each juror by its accuracy on the held-out half
(`nepotism.mitigations.calibration.split_heldout`) and reports, per juror, its ``weights``, the
held-out comparisons each was fitted on (``n_fit``) and the others by reason (``fit_excluded``,
`nepotism.mitigations.rows.left_out`: e.g. ``failed-generation:timeout``, ``no truth``), as
calibration reports its fit. A juror without a weight, or with weight 0, votes with weight 0; its
summary and every effect record of the jury name it under ``jurors_without_weight`` with why. Every jury also reports how many comparisons it voted on
(``jury_comparisons``) and how many it left undecided (``comparisons_without_jury_verdict``), each
comparison once (`nepotism.mitigations.rows.one_side`).
Left out: making the rows (`nepotism.mitigations.rows`) and running models (`.run`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from nepotism.metrics import Bootstrap, Estimate
from nepotism.mitigations.calibration import calibrate
from nepotism.mitigations.config import MitigationConfig
from nepotism.mitigations.effects import BASE_METRICS, change_ratio, diff_in_diff, paired_effect, paired_t
from nepotism.mitigations.juries import exclude_related, familiarity_weights, jury_outcomes
from nepotism.mitigations.rows import left_out, one_side, usable

__all__ = [
    "SELF_CONTROL_RATIO",
    "THIRD_PARTY",
    "calibration_records",
    "effect_record",
    "jury_records",
    "option_records",
    "perturbation_records",
]

THIRD_PARTY = "third-party"
#: The metric id of paper 003 Fig. 15's ratio: |self-evaluation change| / |third-party change|.
SELF_CONTROL_RATIO = "self-third-party-change-ratio"


def effect_record(
    judge: str,
    cfg: MitigationConfig,
    scope: str,
    base_metric: str,
    estimate: Estimate,
    base_value: float,
    mit_value: float,
    **extra: Any,
) -> dict[str, Any]:
    """A ``mitigation-effect`` record of ``judge`` under ``cfg``: its variant (mitigation, base metric,
    scope), the condition's params, the ``estimate``, the base metric's value in the baseline and
    under the mitigation (None for NaN), then ``extra`` (the one builder of these records: the
    rubric filter's too)."""
    rec: dict[str, Any] = {
        "metric": "mitigation-effect",
        "judge": judge,
        "condition": cfg.name,
        "variant": {"mitigation": cfg.kind, "base_metric": base_metric, "scope": scope},
        "params": {k: v for k, v in dict(cfg.params).items()},
    }
    rec.update(estimate.as_dict())
    rec["value_baseline"] = None if base_value != base_value else base_value
    rec["value_mitigated"] = None if mit_value != mit_value else mit_value
    rec.update(extra)
    return rec


def _self(rows: pd.DataFrame, condition_of: Callable[[str], str], judges: Sequence[str]) -> pd.DataFrame:
    """The rows from the side of the answer the judge may favour: its own (``side == judge``), or the
    relative ``[mitigate] target`` names (the ``own`` column the run adds)."""
    own = rows["own"].astype(bool) if "own" in rows else rows["judge"] == rows["side"]
    mask = own & rows["judge"].isin(judges)
    mask &= rows["condition"] == rows["judge"].map(condition_of)
    return rows[mask]


def _third_party(rows: pd.DataFrame, condition_of: Callable[[str], str]) -> pd.DataFrame:
    mask = (rows["judge"] != rows["side"]) & (rows["judge"] != rows["opponent"])
    mask &= rows["condition"] == rows["side"].map(condition_of)
    return rows[mask]


def _scoped(judges: Sequence[str]) -> list[tuple[str, list[str]]]:
    return [(j, [j]) for j in judges] + ([("all", list(judges))] if len(judges) > 1 else [])


def perturbation_records(
    rows: pd.DataFrame,
    cfg: MitigationConfig,
    judges: Sequence[str],
    baseline: str,
    boot: Bootstrap,
    *,
    control: bool = True,
    target: str = "self",
) -> list[dict[str, Any]]:
    """Effects of a perturbation stored under conditions ``"<name>:<judge>"``; ``target`` is the
    scope of the judged side's records (``[mitigate] target``)."""
    out: list[dict[str, Any]] = []

    def mitigated(judge: str) -> str:
        return f"{cfg.name}:{judge}"

    for label, members in _scoped(judges):
        sb = _self(rows, lambda j: baseline, members)
        sm = _self(rows, mitigated, members)
        for metric in BASE_METRICS:
            est, b, m = paired_effect(sb, sm, metric, bootstrap=boot)
            out.append(effect_record(label, cfg, target, metric, est, b, m, t_test=paired_t(sb, sm, metric)))
        if not control:
            continue
        cb = _third_party(rows, lambda s: THIRD_PARTY)
        cm = _third_party(rows, mitigated)
        cb, cm = cb[cb["side"].isin(members)], cm[cm["side"].isin(members)]
        for metric in ("self-preference", "judge-accuracy"):
            est, b, m = paired_effect(cb, cm, metric, bootstrap=boot)
            out.append(effect_record(label, cfg, "third-party-control", metric, est, b, m))
        est = diff_in_diff(sb, sm, cb, cm, "self-preference", bootstrap=boot)
        out.append(effect_record(label, cfg, "self-minus-control", "self-preference", est, float("nan"), float("nan")))
        est = change_ratio(sb, sm, cb, cm, "self-preference", bootstrap=boot)  # 003 Fig. 15
        ratio = effect_record(label, cfg, "self-over-control", "self-preference", est, float("nan"), float("nan"))
        out.append({**ratio, "metric": SELF_CONTROL_RATIO})
    return out


def option_records(
    rows: pd.DataFrame, cfg: MitigationConfig, judges: Sequence[str], baseline: str, boot: Bootstrap, *, target: str = "self"
) -> list[dict[str, Any]]:
    """Effects of a judge-side option (condition ``<name>``) on the judges' verdicts on ``target``."""
    out: list[dict[str, Any]] = []
    for label, members in _scoped(judges):
        sb, sm = _self(rows, lambda j: baseline, members), _self(rows, lambda j: cfg.name, members)
        for metric in BASE_METRICS:
            est, b, m = paired_effect(sb, sm, metric, bootstrap=boot)
            out.append(effect_record(label, cfg, target, metric, est, b, m, t_test=paired_t(sb, sm, metric)))
    return out


@dataclass(frozen=True)
class _JurorWeights:
    """Each juror's weight (its accuracy on the held-out comparisons it could be scored on), how
    many comparisons that was (``n_fit``) and its other held-out comparisons by reason
    (``fit_excluded``, `nepotism.mitigations.rows.left_out`). A juror without a usable comparison
    has no weight (so no say in the vote) and is still listed in both counts."""

    weights: dict[str, float]
    n_fit: dict[str, int]
    fit_excluded: dict[str, dict[str, int]]


def _accuracy_weights(members: pd.DataFrame, heldout: set[str]) -> _JurorWeights:
    held = one_side(members[members["instance_id"].isin(heldout)])  # each comparison once
    weights: dict[str, float] = {}
    n_fit: dict[str, int] = {}
    fit_excluded: dict[str, dict[str, int]] = {}
    for judge, group in held.groupby("judge", sort=True):
        outcome, truth = group["outcome"].to_numpy(dtype=float), group["truth"].to_numpy(dtype=float)
        fit = usable(outcome, truth)
        n_fit[judge] = int(fit.sum())
        fit_excluded[judge] = left_out(outcome, truth, group["excluded_reason"])
        if fit.any():
            weights[judge] = float(np.mean(outcome[fit] == truth[fit]))
    return _JurorWeights(weights, n_fit, fit_excluded)


@dataclass(frozen=True)
class _NoSay:
    """Why a juror of a weighted jury has no say in its vote: no held-out comparison its weight could
    be fitted on (``n_fit`` 0; ``fit_excluded`` says why), or an accuracy of 0 on those it had."""

    reason: str
    n_fit: int
    fit_excluded: dict[str, int]


def _jurors_without_say(jurors: Sequence[str], fitted: _JurorWeights) -> dict[str, dict[str, Any]]:
    """Each juror whose weight is missing or 0, with why (`_NoSay`): the vote treats both as weight 0."""
    out: dict[str, dict[str, Any]] = {}
    for juror in sorted(jurors):
        n, excluded = fitted.n_fit.get(juror, 0), dict(fitted.fit_excluded.get(juror, {}))
        if juror not in fitted.weights:
            out[juror] = asdict(_NoSay("no usable held-out comparison", n, excluded))
        elif fitted.weights[juror] == 0.0:
            out[juror] = asdict(_NoSay(f"accuracy 0 on its {n} held-out comparisons", n, excluded))
    return out


def jury_records(
    rows: pd.DataFrame,
    cfg: MitigationConfig,
    judges: Sequence[str],
    baseline: str,
    boot: Bootstrap,
    *,
    relation: Callable[[str, str], str],
    familiarity: Mapping[tuple[str, str, str], float] | None = None,
    split: Mapping[str, str] | None = None,
    target: str = "self",
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each judge's self-evaluation verdicts replaced by a jury's (``jury`` / ``exclude-relatives``)."""
    members = rows[rows["condition"].isin([baseline, THIRD_PARTY])]
    vote = cfg.params.get("vote", "majority")
    exclude = cfg.kind == "exclude-relatives" or cfg.params.get("exclude_related", False)
    info: dict[str, Any] = {}
    if exclude:
        members, dropped = exclude_related(members, relation)
        info["votes_dropped_as_related"] = dropped
    weights: dict[str, float] | None = None
    row_weights: npt.NDArray[np.float64] | None = None
    evaluation: set[str] | None = None
    extra: dict[str, Any] = {}
    if vote == "weighted":
        heldout = {i for i, role in (split or {}).items() if role == "heldout"}
        fitted = _accuracy_weights(members, heldout)
        weights = fitted.weights
        evaluation = {i for i, role in (split or {}).items() if role == "evaluation"}
        # the held-out comparisons each juror's weight could not use, by reason (counted, not dropped)
        info.update(weights=weights, n_fit=fitted.n_fit, fit_excluded=fitted.fit_excluded)
        # a juror without a weight (or with weight 0) votes with weight 0: each effect says which and why
        extra["jurors_without_weight"] = _jurors_without_say(sorted(set(members["judge"])), fitted)
        info["jurors_without_weight"] = extra["jurors_without_weight"]
    elif vote == "perplexity":
        row_weights = familiarity_weights(members, familiarity or {})
    jury = jury_outcomes(members, vote=vote, weights=weights, row_weights=row_weights)
    out: list[dict[str, Any]] = []
    for label, group in _scoped(judges):
        sb = _self(rows, lambda j: baseline, group)
        if evaluation is not None:
            sb = sb[sb["instance_id"].isin(evaluation)]
        sm = sb[["judge", "instance_id", "side", "opponent", "truth"]].merge(
            jury[["instance_id", "side", "opponent", "outcome"]], on=["instance_id", "side", "opponent"], how="left"
        )
        for metric in BASE_METRICS:
            est, b, m = paired_effect(sb, sm, metric, bootstrap=boot)
            out.append(effect_record(label, cfg, target, metric, est, b, m, **extra))
    # the jury's outcome comes per side, like the rows: each comparison is counted once
    decided = one_side(jury)
    info.update(jury_comparisons=len(decided), comparisons_without_jury_verdict=int(decided["outcome"].isna().sum()))
    return out, info


def calibration_records(
    rows: pd.DataFrame,
    cfg: MitigationConfig,
    judges: Sequence[str],
    baseline: str,
    boot: Bootstrap,
    *,
    split: Mapping[str, str],
    contexts: Mapping[str, str],
    target: str = "self",
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per-judge calibration fitted on the held-out split, evaluated on the evaluation split."""
    method = cfg.params.get("method", "auto")
    self_rows = _self(rows, lambda j: baseline, judges)
    parts: list[pd.DataFrame] = []
    info: dict[str, Any] = {
        "split": {
            "heldout": sum(1 for v in split.values() if v == "heldout"),
            "evaluation": sum(1 for v in split.values() if v == "evaluation"),
        }
    }
    for judge, group in self_rows.groupby("judge", sort=True):
        cal = calibrate(
            group["instance_id"],
            group["score"],
            group["truth"],
            split,
            method=method,
            contexts=[contexts.get(i, "") for i in group["instance_id"]],
            reasons=group["excluded_reason"],
        )
        # the held-out comparisons the fit could not use, by reason (failures are counted, not dropped)
        info[judge] = {
            "bias": cal.bias,
            "context_bias": dict(cal.context_bias),
            "n_fit": cal.n_fit,
            "fit_excluded": dict(cal.fit_excluded),
        }
        parts.append(group.assign(calibrated=cal.outcome, evaluation=cal.evaluation_mask))
    if not parts:
        return [], info
    frame = pd.concat(parts, ignore_index=True)
    frame = frame[frame["evaluation"]]
    out: list[dict[str, Any]] = []
    for label, group in _scoped(judges):
        sb = frame[frame["judge"].isin(group)]
        sm = sb.assign(outcome=sb["calibrated"], prob=float("nan"))  # calibration gives verdicts only
        for metric in BASE_METRICS:
            est, b, m = paired_effect(sb, sm, metric, bootstrap=boot)
            out.append(effect_record(label, cfg, target, metric, est, b, m))
    return out, info
