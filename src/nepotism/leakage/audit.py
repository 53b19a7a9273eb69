"""Leaderboard leakage audit: no training, only recorded leaderboard judgments and the registry.

For one judge of a recorded leaderboard, `audit_leaderboard`:

1. builds the leaderboard, ranked 1 = best: from a pairwise table (every entry compared with one
   baseline, as in AlpacaEval) each entry's win rate against the baseline (ties count ½); from a
   pointwise table (every entry graded alone, as in MT-Bench or arena-bench) each entry's mean
   score. A missing or unreadable verdict or score is excluded and counted;
2. flags every entry related to the judge in the registry (self, lineage, student, teacher,
   family student, same series, same family — `RELATED` by default; unregistered entries are
   ``unknown``, never assumed unrelated);
3. estimates the *bonus* related entries receive, relative to a judge unrelated to this one
   (registry relation ``unrelated``) that judged the same entries on the same instructions:
   the mean judge-minus-reference win-rate difference of related entries minus that of unrelated
   entries (a difference in differences, so a judge that is simply more lenient shows no bonus);
   with no such reference judge the bonus is not estimated and the report says so;
4. re-ranks the leaderboard with the bonus taken off the related entries, with percentile
   bootstrap CIs of every rank (and of the bonus and of each entry's unadjusted score) from
   resampling instructions.

With a reference leaderboard (``{model: score}``, e.g. a human-vote leaderboard), each flagged
entry also gets paper 000 §5.4's ranking difference (reference rank minus judge rank). Records use
the standard shape. The entry measure is ``score`` in every row (``win_rate`` too for pairwise
tables); a pointwise bonus is on the judge's score scale. Left out: leaderboards without a common
baseline (Elo-style arenas).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from nepotism.metrics.bootstrap import Bootstrap, bootstrap_weights, settings

__all__ = ["RELATED", "audit_leaderboard", "format_audit"]

RELATED = ("SELF", "LINEAGE", "STUDENT", "TEACHER", "FAMILY_STUDENT", "SAME_SERIES", "SAME_FAMILY")


def _baseline(rows: pd.DataFrame) -> str | None:
    """The model in the most comparisons, when it is in at least half of them."""
    a, b = rows["model_a"].astype(str), rows["model_b"].astype(str)
    counts = pd.concat([a, b]).value_counts()
    top = counts.index[0]
    return top if ((a == top) | (b == top)).mean() >= 0.5 else None


def _scores(rows: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per (instance, entry): 1 / ½ / 0 for the entry against the baseline, NaN when unusable."""
    a, b = rows["model_a"].astype(str).to_numpy(), rows["model_b"].astype(str).to_numpy()
    v = rows["verdict"].to_numpy(dtype=object)
    entry = np.where(a == baseline, b, a)
    entry_is_a = a != baseline
    score_a = np.select([v == "A", v == "B", v == "tie"], [1.0, 0.0, 0.5], np.nan)
    score = np.where(entry_is_a, score_a, 1.0 - score_a)
    table = pd.DataFrame({"instance_id": rows["instance_id"].astype(str).to_numpy(), "entry": entry, "score": score})
    return table.groupby(["instance_id", "entry"], sort=True)["score"].mean().unstack("entry")


def _point_scores(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (instance, entry): the entry's mean score (replicates averaged), NaN when unscored."""
    table = pd.DataFrame({"instance_id": rows["instance_id"].astype(str).to_numpy(),
                          "entry": rows["model"].astype(str).to_numpy(),
                          "score": pd.to_numeric(rows["score"], errors="coerce").to_numpy(dtype=float)})
    return table.groupby(["instance_id", "entry"], sort=True)["score"].mean().unstack("entry")


def _is_pointwise(frame: pd.DataFrame) -> bool:
    return "score" in frame and "model" in frame and "verdict" not in frame


def _choose_rows(frame: pd.DataFrame, judge: str, condition: str | None) -> tuple[pd.DataFrame, str]:
    rows = frame[frame["judge"] == judge]
    if rows.empty:
        raise ValueError(f"no judgment by {judge!r}")
    if "condition" not in rows:
        rows = rows.assign(condition="default")
    if condition is None:
        condition = str(rows["condition"].value_counts().index[0])
    return rows[rows["condition"] == condition], condition


def _rank(values: np.ndarray) -> np.ndarray:
    """Ranks along the last axis, 1 = highest, ties averaged, NaN entries ranked last."""
    filled = np.where(np.isnan(values), -np.inf, values)
    return stats.rankdata(-filled, axis=-1)


def _relation(registry: Any, judge: str, model: str) -> str:
    return registry.relation(judge, model).name


def audit_leaderboard(frame: pd.DataFrame, registry: Any, judge: str, *, condition: str | None = None,
                      baseline: str | None = None, related: Sequence[str] = RELATED,
                      reference_judge: str | None = None, reference_leaderboard: Mapping[str, float] | None = None,
                      bootstrap: Bootstrap | None = None, **fields: Any) -> dict[str, Any]:
    """Audit ``judge``'s leaderboard in ``frame`` (a recorded pairwise or pointwise table); see module docstring.

    Returns ``{"judge", "condition", "baseline", "reference_judge", "bonus": record,
    "leaderboard": [row per entry], "records": [standard records], "notes": [...]}``
    (``baseline`` is None for a pointwise table).
    """
    boot = settings(bootstrap, **fields)
    n_resamples, confidence, seed = boot.n_resamples, boot.confidence_level, boot.seed
    rows, condition = _choose_rows(frame, judge, condition)
    notes: list[str] = []
    pointwise = _is_pointwise(frame)
    if pointwise:
        baseline = None
        table = _point_scores(rows)
    else:
        baseline = baseline or _baseline(rows)
        if baseline is None:
            raise ValueError(f"{judge!r} under {condition!r} has no model present in every comparison; pass baseline=")
        with_base = (rows["model_a"].astype(str) == baseline) | (rows["model_b"].astype(str) == baseline)
        if not with_base.all():
            notes.append(f"{int((~with_base).sum())} comparisons without the baseline {baseline!r} left out")
        rows = rows[with_base]
        table = _scores(rows, baseline)
    entries = list(table.columns)
    relation = {e: _relation(registry, judge, e) for e in entries}
    is_related = np.array([relation[e] in related for e in entries])
    ref_table = None

    def shared(other: str) -> pd.DataFrame | None:
        other_rows, _ = _choose_rows(frame, other, None)
        if pointwise:
            found = _point_scores(other_rows)
        elif _baseline(other_rows) != baseline:
            return None
        else:
            found = _scores(other_rows, baseline)
        found = found.reindex(index=table.index, columns=entries)
        judged = found.notna().any(axis=0).to_numpy()
        return found if (judged & is_related).any() and (judged & ~is_related).any() else None

    if reference_judge is None:
        for other in sorted(set(frame["judge"]) - {judge}):
            if _relation(registry, judge, other) == "UNRELATED" and (found := shared(other)) is not None:
                reference_judge, ref_table = other, found
                break
    else:
        ref_table = shared(reference_judge)
        if ref_table is None:
            notes.append(f"reference judge {reference_judge!r} shares no related and unrelated entries "
                         + ("on the same instances" if pointwise else "with the same baseline"))
            reference_judge = None
    if reference_judge is not None:
        if _relation(registry, judge, reference_judge) != "UNRELATED":
            notes.append(f"reference judge {reference_judge!r} is related to {judge!r} "
                         f"({_relation(registry, judge, reference_judge).lower()}): the bonus is not clean")
    else:
        notes.append("no judge unrelated to this one judged the same entries "
                     + ("on the same instances" if pointwise else "against the same baseline")
                     + ": the bonus cannot be estimated from these judgments, the related entries are flagged from "
                     "the registry's lineage alone (add an unrelated judge's judgments, e.g. from `nepotism run`)")
    s = table.to_numpy(dtype=float)
    count = (~np.isnan(s)).astype(float)
    s0 = np.nan_to_num(s)
    n_inst = s.shape[0]  # the same resamples of instructions as every metric (`metrics.bootstrap`)
    weights = np.vstack([np.ones(n_inst), bootstrap_weights(n_inst, n_resamples, seed)])

    def bonus_of(w: np.ndarray) -> np.ndarray | None:
        if ref_table is None:
            return None
        r = ref_table.to_numpy(dtype=float)
        both = ~np.isnan(r) & ~np.isnan(s)
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            diff = (w @ np.where(both, s0 - np.nan_to_num(r), 0.0)) / (w @ both.astype(float))
            rel = np.nanmean(np.where(is_related, diff, np.nan), axis=-1) if is_related.any() else np.full(len(w), np.nan)
            unrel = np.nanmean(np.where(~is_related, diff, np.nan), axis=-1) if (~is_related).any() else np.full(len(w), np.nan)
        return rel - unrel

    with np.errstate(invalid="ignore", divide="ignore"):
        wr = (weights @ s0) / (weights @ count)  # (1 + B, entries)
    bonus = bonus_of(weights)
    adjusted = wr - (np.where(is_related, 1.0, 0.0) * bonus[:, None] if bonus is not None and np.isfinite(bonus[0]) else 0.0)
    ranks_before, ranks_after = _rank(wr), _rank(adjusted)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.nanquantile(ranks_after[1:], [alpha, 1 - alpha], axis=0, method="inverted_cdf")
    with warnings.catch_warnings():  # an entry no resample scored has no interval (NaN, reported as None)
        warnings.simplefilter("ignore", RuntimeWarning)
        score_lo, score_hi = np.nanquantile(wr[1:], [alpha, 1 - alpha], axis=0)
    ref_rank = None
    if reference_leaderboard:
        known = {e: reference_leaderboard[e] for e in entries if e in reference_leaderboard}
        if len(known) >= 2:
            names = sorted(known)
            rr = _rank(np.array([known[n] for n in names]))
            jr = _rank(np.array([wr[0][entries.index(n)] for n in names]))
            ref_rank = {n: (float(rr[i]), float(jr[i])) for i, n in enumerate(names)}
    board = []
    for k, e in enumerate(entries):
        measure = {"score": float(wr[0, k]), "score_ci_low": _clean(score_lo[k]), "score_ci_high": _clean(score_hi[k]),
                   "adjusted_score": float(adjusted[0, k])}
        if not pointwise:
            measure.update(win_rate=measure["score"], adjusted_win_rate=measure["adjusted_score"])
        row = {"entry": e, "relation": relation[e].lower(), "related": bool(is_related[k]), **measure,
               "rank": float(ranks_before[0, k]), "adjusted_rank": float(ranks_after[0, k]),
               "rank_ci_low": float(lo[k]), "rank_ci_high": float(hi[k]), "n": int(count[:, k].sum()),
               "n_excluded": int(n_inst - count[:, k].sum())}
        if ref_rank and e in ref_rank:
            row["ranking_difference"] = ref_rank[e][0] - ref_rank[e][1]
        board.append(row)
    board.sort(key=lambda r: (r["adjusted_rank"], r["entry"]))
    if bonus is not None:
        finite = bonus[1:][np.isfinite(bonus[1:])]
        ci = np.quantile(finite, [alpha, 1 - alpha]) if finite.size else (np.nan, np.nan)
        one_sided = float((np.sum(finite <= 0) + 1) / (finite.size + 1)) if finite.size else None
        bonus_record = {"value": _clean(bonus[0]), "ci_low": _clean(ci[0]), "ci_high": _clean(ci[1]),
                        "p_value": one_sided, "note": None}
    else:
        bonus_record = {"value": None, "ci_low": None, "ci_high": None, "p_value": None, "note": notes[-1]}
    scale = "mean score" if pointwise else f"win rate against {baseline}"
    base = {"judge": judge, "condition": condition, "pair": None,
            "variant": {"baseline": baseline, "reference_judge": reference_judge, "related": list(related),
                        "measure": scale}}
    bonus_record = {**base, "metric": "leaderboard-leakage-bonus", "generator": None, "n": n_inst,
                    "n_excluded": 0, "n_related": int(is_related.sum()), "n_entries": len(entries),
                    "confidence": confidence, "n_resamples": n_resamples, **bonus_record}
    records = [bonus_record] + [
        {**base, "metric": "leaderboard-rank", "generator": r["entry"], "value": r["adjusted_rank"],
         "ci_low": r["rank_ci_low"], "ci_high": r["rank_ci_high"], "n": r["n"], "n_excluded": r["n_excluded"],
         "relation": r["relation"], "related": r["related"],
         **{k: r[k] for k in ("score", "score_ci_low", "score_ci_high", "adjusted_score", "win_rate",
                              "adjusted_win_rate") if k in r},
         "original_rank": r["rank"],
         **({"ranking_difference": r["ranking_difference"]} if "ranking_difference" in r else {})}
        for r in board]
    return {"judge": judge, "condition": condition, "baseline": baseline, "reference_judge": reference_judge,
            "bonus": bonus_record, "leaderboard": board, "records": records, "notes": notes}


def _clean(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def format_audit(result: Mapping[str, Any], *, top: int | None = None) -> str:
    """A plain-text report of `audit_leaderboard`'s result."""
    b = result["bonus"]
    against = f"baseline {result['baseline']}" if result["baseline"] is not None else "pointwise scores"
    lines = [f"judge {result['judge']} ({result['condition']}), {against}: "
             f"{b['n_related']} of {b['n_entries']} entries related to the judge"]
    if b["value"] is None:
        lines.append(f"bonus: not estimated - {b['note']}")
    else:
        lines.append(f"bonus of related entries vs {result['reference_judge']}: {b['value']:+.3f} "
                     f"[{b['ci_low']:+.3f}, {b['ci_high']:+.3f}], one-sided p = {b['p_value']:.3g}")
    for note in result["notes"]:
        if note != b.get("note"):
            lines.append(f"note: {note}")
    header = "win rate" if result["baseline"] is not None else "score"
    lines.append(f"{'rank':>5} {'95% CI':>13} {'was':>5}  {header:>8}  {'relation':<15} entry")
    for r in result["leaderboard"][: top or None]:
        flag = r["relation"] if r["related"] else ""
        lines.append(f"{r['adjusted_rank']:>5g} [{r['rank_ci_low']:>4g}, {r['rank_ci_high']:>4g}] {r['rank']:>5g}  "
                     f"{r['adjusted_score']:>8.3f}  {flag:<15} {r['entry']}")
    return "\n".join(lines)
