"""Preference leakage scores of a leakage run: judgments → comparisons → PLS per generator pair.

`pairwise_frame` turns pairwise `Judgment` records into the recorded pairwise table (one row per
presentation order; an unparsed or failed verdict stays a row with no verdict, so it is counted
as excluded, never as a tie, under its reason: `nepotism.records.exclusion_label`, as every metric
counts it, e.g. ``failed-generation:timeout`` for a comparison a student's failed answer prevented). `pls_records` computes, for every group of comparable students
(same method, base and variant), every pair of generators (g_i, g_j) and their related judges
(J_i, J_j), paper 000's PLS (Eq. 5–6) with a cluster bootstrap over instructions, its CI and the
one-sided test of PLS > 0 (App. D.4), plus the four win rates WR(student, judge) it is built from.
Records use the standard shape ``{metric, judge, generator, pair, variant, value, ci_low, ci_high,
n, n_excluded, ...}``. Not done here: running models, reading files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from nepotism.analyses.comparisons import build_comparisons, with_reasons
from nepotism.leakage.lineage import Student
from nepotism.metrics import Bootstrap
from nepotism.metrics import leakage
from nepotism.metrics.pairwise import win_rate
from nepotism.records import Judgment

__all__ = ["comparisons_frame", "group_students", "pairwise_frame", "pls_records"]


def pairwise_frame(judgments: Sequence[Judgment]) -> pd.DataFrame:
    """The pairwise table (instance_id, judge, model_a, model_b, verdict, status, reason, condition,
    replicate): a verdict's status and reason are what the comparisons count its exclusion under."""
    rows = [
        {
            "instance_id": j.instance_id,
            "judge": j.judge,
            "model_a": j.candidates[0],
            "model_b": j.candidates[1],
            "verdict": j.verdict if j.status == "parsed" else None,
            "status": j.status,
            "reason": j.reason,
            "prob_a": _prob(j, "A"),
            "prob_b": _prob(j, "B"),
            "condition": j.condition,
            "replicate": j.replicate,
        }
        for j in judgments
        if j.protocol == "pairwise" and len(j.candidates) == 2
    ]
    columns = [
        "instance_id",
        "judge",
        "model_a",
        "model_b",
        "verdict",
        "status",
        "reason",
        "prob_a",
        "prob_b",
        "condition",
        "replicate",
    ]
    return pd.DataFrame(rows, columns=columns)


def _prob(judgment: Judgment, label: str) -> float:
    """A parsed judgment's label probability (NaN when it has none)."""
    if judgment.status != "parsed" or not judgment.label_probs:
        return float("nan")
    return float(judgment.label_probs.get(label, float("nan")))


def comparisons_frame(judgments: Sequence[Judgment], *, rule: str = "consistent") -> pd.DataFrame:
    """One row per (instance, judge, condition, replicate, unordered student pair); see
    `nepotism.analyses.comparisons.build_comparisons`."""
    frame = pairwise_frame(judgments)
    if frame.empty:
        return pd.DataFrame(
            columns=["instance_id", "judge", "condition", "replicate", "model_x", "model_y", "outcome", "n_orders"]
        )
    return build_comparisons(frame, rule=rule).frame


def group_students(students: Sequence[Student]) -> dict[str, dict[str, Student]]:
    """{group: {generator: student}}; a generator with two students in one group is an error."""
    out: dict[str, dict[str, Student]] = {}
    for s in students:
        slot = out.setdefault(s.group, {})
        if s.generator in slot:
            raise ValueError(f"group {s.group!r} has two students of {s.generator!r}")
        slot[s.generator] = s
    return out


def _why(sub: pd.DataFrame, column: str = "excluded_reason", *, times: int = 2) -> np.ndarray:
    """Why each comparison of ``sub`` has no outcome (``column`` of `comparisons_frame`: the labels
    every metric counts exclusions under, `nepotism.records.exclusion_label`; None where it has
    one), repeated as `_pls_inputs` repeats the comparisons."""
    why = sub[column].to_numpy(dtype=object) if column in sub else np.full(len(sub), None, dtype=object)
    return np.concatenate([why] * times)


def _wr_record(
    student: str, judge: str, side: np.ndarray, clusters: np.ndarray, boot: Bootstrap, base: dict[str, Any], why: np.ndarray
) -> dict[str, Any]:
    est = with_reasons(win_rate(side, clusters, bootstrap=boot), why)
    return {**base, "metric": "win-rate", "judge": judge, "generator": student, "pair": None, **est.as_dict()}


def _pls_inputs(sub: pd.DataFrame, si: str, jj: str, values: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """Both students' rows of comparisons ``sub`` (``preference_leakage_score``'s inputs, in order:
    outcome, student side, judge side, prompt) with the comparisons' positions repeated; ``values``
    replaces ``outcome`` as x's score (the soft probability outcome)."""
    sign = np.where(sub["model_x"] == si, 1.0, -1.0)
    out_i = (sub["outcome"].to_numpy(dtype=float) if values is None else values) * sign
    side_j = (sub["judge"] == jj).to_numpy().astype(int)
    ids = sub["instance_id"].astype(str).to_numpy()
    return (
        np.concatenate([out_i, -out_i]),
        np.repeat([0, 1], len(sub)),
        np.concatenate([side_j, side_j]),
        np.concatenate([ids, ids]),
    )


def _change_records(
    chosen: pd.DataFrame,
    si: str,
    ji: str,
    jj: str,
    ties: Sequence[str],
    boot: Bootstrap,
    base: Mapping[str, Any],
    variant: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """preference-leakage-change of every ablation condition against the default one (paper 000
    Table 6): both conditions' rows in one paired estimate per tie rule."""
    conditions = sorted(set(chosen["condition"]) - {"default"})
    if not conditions or not (chosen["condition"] == "default").any():
        return []
    baseline = _pls_inputs(chosen[chosen["condition"] == "default"], si, jj)
    out = []
    for condition in conditions:
        after = _pls_inputs(chosen[chosen["condition"] == condition], si, jj)
        flags = np.concatenate([np.zeros(baseline[0].size, int), np.ones(after[0].size, int)])
        for tie_rule in ties:
            outcome, student, judge = (np.concatenate([b, a]) for b, a in zip(baseline[:3], after[:3]))
            est = leakage.preference_leakage_change(
                outcome,
                student,
                judge,
                flags,
                np.concatenate([baseline[3], after[3]]),
                ties=tie_rule,
                bootstrap=boot,
            )
            est = with_reasons(
                est,
                np.concatenate([_why(chosen[chosen["condition"] == "default"]), _why(chosen[chosen["condition"] == condition])]),
            )
            out.append(
                {**base, "condition": condition, "variant": {**variant, "ties": tie_rule, "against": "default"}, **est.as_dict()}
            )
    return out


def pls_records(
    comp: pd.DataFrame,
    students: Sequence[Student],
    judge_of: Mapping[str, str],
    registry: Any,
    *,
    bootstrap: Bootstrap | None = None,
    ties: Sequence[str] = ("loss",),
    extra_variant: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """PLS and win-rate records for every group and generator pair (see the module docstring).

    ``judge_of`` maps a generator to the judge related to it. ``comp`` is `comparisons_frame`
    output (optionally a slice of it, e.g. one question category; ``extra_variant`` then names
    the slice).
    """
    boot = bootstrap or Bootstrap()
    records: list[dict[str, Any]] = []
    for group, by_gen in sorted(group_students(students).items()):
        gens = sorted(g for g in by_gen if g in judge_of)
        for gi, gj in combinations(gens, 2):
            ji, jj = judge_of[gi], judge_of[gj]
            if ji == jj:
                continue
            si, sj = by_gen[gi].id, by_gen[gj].id
            example = by_gen[gi]
            variant = {
                "group": group,
                "method": example.method,
                "base": example.base,
                **dict(example.variant),
                **dict(extra_variant or {}),
            }
            relation = {ji: registry.relation(ji, gi).value, jj: registry.relation(jj, gj).value}
            mask = (
                ((comp["model_x"] == si) & (comp["model_y"] == sj)) | ((comp["model_x"] == sj) & (comp["model_y"] == si))
            ) & comp["judge"].isin([ji, jj])
            chosen = comp[mask]
            records += _change_records(
                chosen,
                si,
                ji,
                jj,
                ties,
                boot,
                {
                    "scope": "student",
                    "relation": relation,
                    "students": {gi: si, gj: sj},
                    "judges": {gi: ji, gj: jj},
                    "metric": "preference-leakage-change",
                    "judge": f"{ji} & {jj}",
                    "generator": f"{gi} & {gj}",
                    "pair": [si, sj],
                },
                variant,
            )
            for condition, sub in chosen.groupby("condition", sort=True):
                rows = _pls_inputs(sub, si, jj)
                out_i, ids = rows[0][: len(sub)], rows[3][: len(sub)]  # student i's side of each comparison
                base = {
                    "condition": condition,
                    "scope": "student",
                    "relation": relation,
                    "students": {gi: si, gj: sj},
                    "judges": {gi: ji, gj: jj},
                }
                for tie_rule in ties:
                    est = with_reasons(leakage.preference_leakage_score(*rows, ties=tie_rule, bootstrap=boot), _why(sub))
                    records.append(
                        {
                            **base,
                            "metric": "preference-leakage-score",
                            "judge": f"{ji} & {jj}",
                            "generator": f"{gi} & {gj}",
                            "pair": [si, sj],
                            "variant": {**variant, "ties": tie_rule, "preference": "verdict"},
                            **est.as_dict(),
                        }
                    )
                if "prob_x" in sub and sub["prob_x"].notna().any():
                    # paper 001 Eq. 3: p(X)/(p(A)+p(B)) averaged over both orders, as a soft outcome in
                    # [-1, 1]; position bias cancels in the average instead of turning every pair into a tie
                    soft = _pls_inputs(sub, si, jj, 2.0 * sub["prob_x"].to_numpy(dtype=float) - 1.0)
                    est = with_reasons(
                        leakage.preference_leakage_score(*soft, ties="half", bootstrap=boot), _why(sub, "prob_excluded_reason")
                    )
                    records.append(
                        {
                            **base,
                            "metric": "preference-leakage-score",
                            "judge": f"{ji} & {jj}",
                            "generator": f"{gi} & {gj}",
                            "pair": [si, sj],
                            "variant": {**variant, "ties": "half", "preference": "probability"},
                            **est.as_dict(),
                        }
                    )
                why = _why(sub, times=1)
                for judge in (ji, jj):
                    jm = (sub["judge"] == judge).to_numpy()
                    for student, signed in ((si, out_i), (sj, -out_i)):
                        records.append(
                            _wr_record(student, judge, signed[jm], ids[jm], boot, {**base, "variant": dict(variant)}, why[jm])
                        )
    return records
