"""Leaderboard leakage audit: no training, only recorded leaderboard judgments and the registry.

For each judge of a recorded leaderboard (every judge that ranks two or more entries, unless
named), `audit_leaderboard`:

1. builds the leaderboard, ranked 1 = best: from a pairwise table (every entry compared with one
   baseline, as in AlpacaEval) each entry's win rate against the baseline (ties count ½); from a
   pointwise table (every entry graded alone, as in MT-Bench or arena-bench) each entry's mean
   score. A missing or unreadable verdict or score is excluded and counted;
2. flags every entry related to the judge by the registry's one predicate
   (`nepotism.models.Registry.is_related`: any scope but ``unrelated`` and ``unknown``, so self,
   family, student, family-student and teacher; an unregistered entry is ``unknown``, never
   assumed unrelated);
3. estimates the *bonus* related entries receive, relative to a judge unrelated to this one
   (`Registry.is_unrelated`) that judged the same entries on the same instructions: the mean
   judge-minus-reference win-rate difference of related entries minus that of unrelated entries
   (a difference in differences, so a judge that is simply more lenient shows no bonus); with no
   such reference judge the bonus is not estimated and the record says why;
4. re-ranks the leaderboard with the bonus taken off the related entries, with percentile
   bootstrap CIs of every rank (and of the bonus and of each entry's unadjusted score) from
   resampling instructions (`nepotism.metrics.bootstrap`'s weights: the same resamples as every
   metric).

With a reference leaderboard (``{model: score}``, e.g. a human-vote leaderboard), each entry on it
also gets paper 000 §5.4's ``ranking-difference`` (reference rank minus judge rank), computed by
the metric's one definition, `nepotism.metrics.leakage.ranking_difference`, with its interval.

The result is `nepotism.results.Results`: ``leaderboard-leakage-bonus`` (one per judge),
``leaderboard-rank`` (one per entry: ``scope`` its scope to the judge, ``relation`` the registry's
relation in detail, ``score``, ``original_rank``; ``win_rate`` too for pairwise tables) and
``ranking-difference`` records; ``summary["audits"]`` holds each judge's condition, baseline,
reference judge and notes. A pointwise bonus is on the judge's score scale. Reading and
validating the table (its rows, and every judge a registered model) is the caller's
(``nepotism leakage audit`` does it as `nepotism.audit` does). Left out: leaderboards without a
common baseline (Elo-style arenas).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from nepotism.metrics.bootstrap import Bootstrap, bootstrap_weights, settings
from nepotism.metrics.leakage import ranking_difference
from nepotism.results import Record, Results

__all__ = ["audit_leaderboard", "format_audit", "ranked_judges"]


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
    table = pd.DataFrame(
        {
            "instance_id": rows["instance_id"].astype(str).to_numpy(),
            "entry": rows["model"].astype(str).to_numpy(),
            "score": pd.to_numeric(rows["score"], errors="coerce").to_numpy(dtype=float),
        }
    )
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
    return np.asarray(stats.rankdata(-filled, axis=-1))


def ranked_judges(frame: pd.DataFrame) -> list[str]:
    """The judges of ``frame`` that rank two or more entries (a pairwise leaderboard's models
    include its baseline, so it needs three), sorted."""
    pointwise = _is_pointwise(frame)
    columns = ["model"] if pointwise else ["model_a", "model_b"]
    least = 2 if pointwise else 3
    return sorted(
        str(j) for j, g in frame.groupby("judge") if len(set().union(*(set(g[c].astype(str)) for c in columns))) >= least
    )


def audit_leaderboard(
    frame: pd.DataFrame,
    registry: Any,
    judges: str | Sequence[str] | None = None,
    *,
    condition: str | None = None,
    baseline: str | None = None,
    reference_judge: str | None = None,
    reference_leaderboard: Mapping[str, float] | None = None,
    bootstrap: Bootstrap | None = None,
    **fields: Any,
) -> Results:
    """Audit the leaderboard of each of ``judges`` (one name, several, or None: `ranked_judges`) in
    ``frame``, a recorded pairwise or pointwise table; see the module docstring. ``bootstrap`` (or
    its fields as keywords) sets the resamples, seed and confidence level of every interval.
    A judge without judgments, or a pairwise board without a model present in every comparison
    (pass ``baseline``), is a `ValueError`."""
    boot = settings(bootstrap, **fields)
    chosen = [judges] if isinstance(judges, str) else list(judges if judges is not None else ranked_judges(frame))
    if not chosen:
        what = "models graded" if _is_pointwise(frame) else "models besides a baseline"
        raise ValueError(f"no judge ranks two or more entries ({what}): nothing to audit")
    records: list[Record] = []
    audits: list[dict[str, Any]] = []
    for judge in chosen:
        made, facts = _audit_one(
            frame,
            registry,
            judge,
            condition=condition,
            baseline=baseline,
            reference_judge=reference_judge,
            reference_leaderboard=reference_leaderboard,
            boot=boot,
        )
        records += made
        audits.append(facts)
    summary = {"analysis": "leaderboard-leakage-audit", "judges": chosen, "audits": audits, "options": boot.as_dict()}
    return Results(records, summary=summary)


def _audit_one(
    frame: pd.DataFrame,
    registry: Any,
    judge: str,
    *,
    condition: str | None,
    baseline: str | None,
    reference_judge: str | None,
    reference_leaderboard: Mapping[str, float] | None,
    boot: Bootstrap,
) -> tuple[list[Record], dict[str, Any]]:
    """One judge's records and facts (condition, baseline, reference judge, notes)."""
    n_resamples, confidence, seed = boot.n_resamples, boot.confidence_level, boot.seed
    rows, condition = _choose_rows(frame, judge, condition)
    notes: list[str] = []
    if boot.method != "percentile":
        notes.append(
            f"the bonus's and the ranks' intervals are percentile intervals ({boot.method} applies to "
            "the ranking difference only)"
        )
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
    entries = [str(e) for e in table.columns]
    scope = {e: registry.scope(judge, e) for e in entries}
    is_related = np.array([registry.is_related(judge, e) for e in entries])
    ref_table = None

    def shared(other: str) -> pd.DataFrame | None:
        other_rows, _ = _choose_rows(frame, other, None)
        if pointwise:
            found = _point_scores(other_rows)
        elif baseline is None or _baseline(other_rows) != baseline:
            return None
        else:
            found = _scores(other_rows, baseline)
        found = found.reindex(index=table.index, columns=entries)
        judged = found.notna().any(axis=0).to_numpy()
        return found if (judged & is_related).any() and (judged & ~is_related).any() else None

    if reference_judge is None:
        for other in sorted(set(map(str, frame["judge"])) - {judge}):
            if registry.is_unrelated(judge, other) and (found := shared(other)) is not None:
                reference_judge, ref_table = other, found
                break
    else:
        ref_table = shared(reference_judge)
        if ref_table is None:
            notes.append(
                f"reference judge {reference_judge!r} shares no related and unrelated entries "
                + ("on the same instances" if pointwise else "with the same baseline")
            )
            reference_judge = None
    if reference_judge is not None and not registry.is_unrelated(judge, reference_judge):
        notes.append(
            f"reference judge {reference_judge!r} is not unrelated to {judge!r} "
            f"(scope {registry.scope(judge, reference_judge)}): the bonus is not clean"
        )
    not_estimated = None
    if reference_judge is None:
        not_estimated = (
            "no judge unrelated to this one judged the same entries "
            + ("on the same instances" if pointwise else "against the same baseline")
            + ": the bonus cannot be estimated from these judgments, the related entries are flagged "
            "from the registry's lineage alone (add an unrelated judge's judgments, e.g. from "
            "`nepotism run`)"
        )
        notes.append(not_estimated)
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
    if n_resamples:
        lo, hi = np.nanquantile(ranks_after[1:], [alpha, 1 - alpha], axis=0, method="inverted_cdf")
        with warnings.catch_warnings():  # an entry no resample scored has no interval (NaN, reported as None)
            warnings.simplefilter("ignore", RuntimeWarning)
            score_lo, score_hi = np.nanquantile(wr[1:], [alpha, 1 - alpha], axis=0)
    else:  # no resamples: no intervals
        lo = hi = score_lo = score_hi = np.full(len(entries), np.nan)
    scale = "mean score" if pointwise else f"win rate against {baseline}"
    variant = {"baseline": baseline, "reference_judge": reference_judge, "measure": scale}
    interval: dict[str, Any] = {"confidence": confidence, "method": "percentile", "n_resamples": n_resamples}
    if bonus is not None:
        finite = bonus[1:][np.isfinite(bonus[1:])]
        ci = np.quantile(finite, [alpha, 1 - alpha]) if finite.size else (np.nan, np.nan)
        one_sided = float((np.sum(finite <= 0) + 1) / (finite.size + 1)) if finite.size else None
        estimate: dict[str, Any] = {
            "value": _clean(bonus[0]),
            "ci_low": _clean(ci[0]),
            "ci_high": _clean(ci[1]),
            "p_value": one_sided,
        }
        if estimate["value"] is None:
            estimate["note"] = "the related or the unrelated entries have no score from both judges"
    else:
        estimate = {"note": not_estimated}
    records = [
        Record(
            metric="leaderboard-leakage-bonus",
            judge=judge,
            condition=condition,
            variant=variant,
            n=n_inst,
            n_clusters=n_inst,
            **interval,
            **estimate,
            extra={"n_related": int(is_related.sum()), "n_entries": len(entries)},
        )
    ]
    board = []
    for k, e in enumerate(entries):
        scored = int(count[:, k].sum())
        measure = {
            "score": float(wr[0, k]),
            "score_ci_low": _clean(score_lo[k]),
            "score_ci_high": _clean(score_hi[k]),
            "adjusted_score": float(adjusted[0, k]),
        }
        if not pointwise:
            measure.update(win_rate=measure["score"], adjusted_win_rate=measure["adjusted_score"])
        board.append(
            Record(
                metric="leaderboard-rank",
                judge=judge,
                condition=condition,
                scope=scope[e],
                generator=e,
                variant=variant,
                value=float(ranks_after[0, k]),
                ci_low=_clean(lo[k]),
                ci_high=_clean(hi[k]),
                n=scored,
                n_clusters=scored,
                n_excluded=n_inst - scored,
                excluded={"not-scored": n_inst - scored} if n_inst > scored else {},
                **interval,
                extra={
                    "relation": registry.relation(judge, e).name.lower(),
                    "related": bool(is_related[k]),
                    **measure,
                    "original_rank": float(ranks_before[0, k]),
                },
            )
        )
    board.sort(key=lambda r: (r.value, str(r.generator)))
    records += board
    records += _ranking_differences(table, reference_leaderboard, judge, condition, scope, variant, boot)
    return records, {
        "judge": judge,
        "condition": condition,
        "baseline": baseline,
        "reference_judge": reference_judge,
        "notes": notes,
    }


def _ranking_differences(
    table: pd.DataFrame,
    reference: Mapping[str, float] | None,
    judge: str,
    condition: str,
    scope: Mapping[str, str],
    variant: Mapping[str, Any],
    boot: Bootstrap,
) -> list[Record]:
    """``ranking-difference`` of each entry on the reference leaderboard (two or more needed), by
    `nepotism.metrics.leakage.ranking_difference` on the scored (instruction, entry) cells."""
    if not reference:
        return []
    known = [e for e in table.columns if e in reference]
    if len(known) < 2:
        return []
    cells = table[known].stack().rename("score").reset_index()  # scored cells only (NaN dropped)
    cells.columns = ["instance_id", "entry", "score"]
    fixed = cells["entry"].map(lambda e: float(reference[e])).to_numpy(dtype=float)
    out = []
    for e in known:
        est = ranking_difference(
            cells["score"].to_numpy(dtype=float),
            fixed,
            cells["entry"].astype(str).to_numpy(),
            cells["instance_id"].astype(str).to_numpy(),
            target=str(e),
            bootstrap=boot,
        )
        out.append(
            Record(
                metric="ranking-difference",
                judge=judge,
                condition=condition,
                scope=scope[e],
                generator=str(e),
                variant={"against": "leaderboard", **variant},
                **est.as_dict(),
            )
        )
    return out


def _clean(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def format_audit(results: Results, *, top: int | None = None) -> str:
    """A plain-text report of `audit_leaderboard`'s results: per judge, the related entries, the
    bonus (or why it is not estimated), the notes, and the re-ranked leaderboard with rank intervals,
    the rank before, the adjusted score and each related entry's scope (and the ranking difference
    against the reference leaderboard where one was given)."""
    blocks = []
    for facts in results.summary.get("audits") or []:
        judge, condition = facts["judge"], facts["condition"]
        mine = results.select(judge=judge, condition=condition)
        (b,) = mine.select("leaderboard-leakage-bonus")
        board = list(mine.select("leaderboard-rank"))
        moved = {r.generator: r.value for r in mine.select("ranking-difference")}
        against = f"baseline {facts['baseline']}" if facts["baseline"] is not None else "pointwise scores"
        lines = [
            f"judge {judge} ({condition}), {against}: "
            f"{b.extra['n_related']} of {b.extra['n_entries']} entries related to the judge"
        ]
        if b.value is None:
            lines.append(f"bonus: not estimated - {b.note}")
        else:
            interval = "" if b.ci_low is None else f" [{b.ci_low:+.3f}, {b.ci_high:+.3f}]"
            p = "" if b.p_value is None else f", one-sided p = {b.p_value:.3g}"
            lines.append(f"bonus of related entries vs {facts['reference_judge']}: {b.value:+.3f}{interval}{p}")
        for note in facts["notes"]:
            if note != b.note:
                lines.append(f"note: {note}")
        header = "win rate" if facts["baseline"] is not None else "score"
        ci_head = f"{round(100 * (b.confidence or 0.95))}% CI"
        lines.append(
            f"{'rank':>5} {ci_head:>13} {'was':>5}  {header:>8}  {'scope':<15}" + (f"{'vs ref':>7}  " if moved else "") + "entry"
        )
        for r in board[: top or None]:
            flag = str(r.scope) if r.extra["related"] else ""
            ci = "" if r.ci_low is None else f"[{r.ci_low:>4g}, {r.ci_high:>4g}]"
            shift = (f"{moved[r.generator]:>+7g}  " if moved.get(r.generator) is not None else f"{'':>7}  ") if moved else ""
            lines.append(
                f"{r.value:>5g} {ci:>13} {r.extra['original_rank']:>5g}  {r.extra['adjusted_score']:>8.3f}  "
                f"{flag:<15}{shift}{r.generator}"
            )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
