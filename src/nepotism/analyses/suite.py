"""The metric suite: recorded judgments + references + registry → every metric whose inputs are present.

Records are ``{metric, judge, condition, generator, pair, scope, variant, value, ci_low, ci_high, n,
n_clusters, n_excluded, excluded, note, p_value, ...}`` (see `nepotism.metrics.catalogue` for ids).

- pairwise judgments: the first audit (`audit_pairwise`: win-rate, self-preference-ratio,
  demographic-parity-bias, paired-win-rate-gap), position-consistency and first-slot preference,
  preference-leakage-score for every pair of judges with registered students (scope ``student``) or
  students of a family member each (scope ``family-student``: paper 000 Table 2, same family), and
  with repeated runs (``replicate``) the PLS's mean and variance over them (paper 000 App. D.2); with a
  ``preference-ref``: equal-opportunity-bias, error-bias, mipa (PWC), ranking-difference against
  the humans; with ``perplexity_a/_b`` columns or a ``perplexity`` table: perplexity-win-rate
  (judge, and humans with a preference-ref), log-perplexity-gap and mean-log-perplexity; the
  self-preference-ratio per evaluatee and its mean over evaluatees (paper 004 Tables 1/3/5,
  `per_evaluatee`); with a ``correctness-ref``: judge-accuracy, legitimate-self-preference-ratio,
  harmful-self-preference-propensity (also per evaluatee), judge-accuracy on the harmful cases (paper
  003 Fig. 5, Table 4), task-accuracy (per generator, and per judge of its own answers).
- rubric judgments with a ``rubric-ref``: mra, overestimation-rate (rubric and instance level),
  hspp-ratio (self/family × rubric/instance × family set without/with the judge), mipa (SR),
  score-delta (plus the points-weighted variant with ``rubric-items``), ranking-difference;
  rubric-precision, rubric-recall and rubric-f1 of each judge's verdicts against the reference (per
  polarity with ``rubric-items``; ``in_jury`` when the reference's ``jurors`` column names the judge);
  with a ``rubric-labels`` table (people's labels, one row per annotator): rubric-balanced-f1 of each
  judge against every label (paper 002 App. C, `rubric_labels`).
- pointwise (direct-assessment) judgments: self-preference-ratio (paradigm pointwise); with a
  ``correctness-ref``: instance-level overestimation-rate, hspp-ratio, mipa (DA), score-delta,
  ranking-difference.
- recognition tables: recognition-accuracy (pairwise questions also per evaluatee and, with a
  ``correctness-ref``, on the harmful cases: paper 003 Table 5); with a ``pairwise`` table among the references:
  recognition-preference-association (all own-vs-other comparisons, and the harmful ones with a
  correctness-ref).
- every kind: excluded-verdicts (the share of judgments without a verdict, counted per
  status-reason: what every other metric leaves out); ranking-difference against a fixed leaderboard (``options.leaderboard``) or another
  judge (``options.rank_against``); `correlate` gives Pearson r across judges between two metrics.
- `committee` (majority vote as one judge, 002 §3) and `agreement_filter` (002 Fig. 4) transform
  a frame before the suite runs; ``slices`` repeats the suite per column value or derived slice
  (rubric polarity, rubric length).

The rubric, pointwise and recognition parts live in private modules of `nepotism.metrics`
(`_suite_tables`, `_suite_scores`, `_suite_recognition`) and run on integer codes with one
weights-matrix product per (judge, condition). Left out: file reading and presentation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nepotism.analyses.audit import AuditOptions, audit_pairwise
from nepotism.analyses.per_evaluatee import harmful_accuracy_records, spr_records
from nepotism.analyses.rubric_labels import label_records
from nepotism.analyses.comparisons import (
    Comparisons,
    RowPairs,
    build_comparisons,
    candidates,
    row_exclusions,
    reason_counts,
    with_reason_counts,
    with_reasons,
)
from nepotism.errors import InputError
from nepotism.metrics import leakage, recognition, reference, rubric
from nepotism.metrics._batch import ClusterSetBatch
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.metrics._common import undefined
from nepotism.metrics.coverage import (
    candidate_part,
    excluded_share,
    gaming_flag,
    gap_p_value,
    gap_undefined,
    low_label_mass,
)
from nepotism.metrics.definitions import EXCLUSION_SHARE_GAP
from nepotism.metrics._suite_recognition import association_records, perplexity_records, recognition_records
from nepotism.metrics._suite_tables import pairwise_rank_records, pointwise_records, rubric_records
from nepotism.metrics.stats import correlate_records
from nepotism.metrics.task import reasoning_length_records, task_accuracy_records
from nepotism.models import AUDITED_SCOPES, SCOPE_LADDER, Registry
from nepotism.results import Results, new_record
from nepotism.tables import VERDICT_COLUMN, name_codes, text_values
from nepotism.votes import decide

__all__ = [
    "DERIVED_SLICES",
    "REFERENCE_VOTES",
    "SuiteOptions",
    "SuiteResult",
    "agreement_filter",
    "committee",
    "correlate",
    "derive_instance_references",
    "labels_per_pair",
    "majority_labels",
    "read_leaderboard",
    "references_for",
    "run_suite",
]


#: How several human labels of one pair are used (`SuiteOptions.reference_vote`).
REFERENCE_VOTES = ("each", "majority")


@dataclass(frozen=True)
class SuiteOptions:
    bootstrap: Bootstrap = Bootstrap()
    rule: str = "consistent"
    slices: tuple[str, ...] = ()
    include_audit: bool = True  # False when the caller already ran `audit_pairwise`
    leaderboard: dict[str, float] | None = None  # {model: score}: a reference leaderboard for ranking-difference
    rank_against: str | None = None  # a judge whose leaderboard every other judge's is ranked against
    recognition_target: str = "self"  # which relation a recognition answer is about: self | student | family
    perplexity_bins: int = 5
    perplexity_difference: str = "perplexity"  # what perplexity-win-rate bins: perplexity | log (001 §5)
    opponents: tuple[str, ...] = ("unrelated", "any")  # the SPR's opponent populations (the audit's --opponents)
    # several human labels of one pair: each label is one row ("each", paper 001's one vote per battle),
    # or the pair's plurality label ("majority", paper 000 App. C.3; a split vote is a tie)
    reference_vote: str = "each"


class SuiteResult(Results):
    """`Results` of `run_suite`; ``records`` holds the same records as dicts (the JSON shape)."""

    def __init__(self, records: list[dict[str, Any]] | None = None):
        given = list(records or [])
        super().__init__(given)
        self.records: list[dict[str, Any]] = given


def scope_table(registry: Registry, judges: Iterable[str], models: Iterable[str]) -> dict[tuple[str, str], str]:
    """(judge, model) → the one scope rule's answer (`nepotism.models.Registry.scope`)."""
    return {(j, m): registry.scope(j, m) for j in judges for m in models}


# ------------------------------------------------------------------------------------ pairwise
def _position_records(frame: pd.DataFrame, options: SuiteOptions, rows: RowPairs | None = None) -> list[dict[str, Any]]:
    """Position metrics from the rows whose presentation order is known (``presentation`` a-first).

    Rows of a harness that randomised the order and kept only the preference (AlpacaEval) say
    nothing about slots, so a judge with only such rows gets no position record. A comparison's
    two presentations are the rows `build_comparisons` paired (``rows``: its `RowPairs` for this
    ``frame``; paired here when not given or when rows are left out)."""
    if "presentation" in frame:
        frame = frame[frame["presentation"].fillna("a-first").to_numpy() == "a-first"]
        rows = None
    if frame.empty:
        return []
    if rows is None:
        rows = build_comparisons(frame, rule=options.rule).rows
        assert rows is not None
    code_a = rows.code_a.astype(np.float64)
    code = np.where(rows.a_first, code_a, -code_a)
    slot = (code_a + 1.0) / 2.0  # A → 1, B → 0, tie → ½, no verdict NaN
    paired = rows.second >= 0
    first, second = rows.first[paired], rows.second[paired]
    both_why = np.where(rows.why[first] >= 0, rows.why[first], rows.why[second])
    n_conditions = len(rows.conditions)
    by_row = _spans(rows.group)
    by_pair = _spans(rows.group[first])
    records = []
    for g, rows_g in by_row.items():
        name, cond = rows.judges[g // n_conditions], rows.conditions[g % n_conditions]
        pairs = by_pair.get(g, np.zeros(0, dtype=np.int64))
        f, s_ = first[pairs], second[pairs]
        est = recognition.position_consistency(code[f], code[s_], rows.instance[f], bootstrap=options.bootstrap)
        est = with_reason_counts(est, reason_counts(both_why[pairs], rows.reasons))
        records.append(new_record("position-consistency", name, cond, est, variant={"share": "two orders agree"}))
        est = with_reason_counts(
            recognition.first_slot_preference(slot[rows_g], rows.instance[rows_g], bootstrap=options.bootstrap),
            reason_counts(rows.why[rows_g], rows.reasons),
        )
        records.append(
            new_record("position-consistency", name, cond, est, variant={"share": "first slot chosen", "ties": "exclude"})
        )
    return records


def _spans(group: np.ndarray) -> dict[int, np.ndarray]:
    """{group code: the positions holding it, in order}, groups in code order."""
    order = np.argsort(group, kind="stable")
    present, starts = np.unique(group[order], return_index=True)
    ends = [*starts[1:].tolist(), order.size]
    return {int(g): order[a:b] for g, a, b in zip(present.tolist(), starts.tolist(), ends)}


#: The relations of a student to the judge whose PLS a pair of judges gets: trained on the judge's
#: own outputs (paper 000 §4), or on a family member's (§5.2 Table 2, "same family": the data made
#: by GPT-4o, the judge GPT-4-turbo).
PLS_SCOPES = ("student", "family-student")


def _pls_records(comp: pd.DataFrame, registry: Registry, options: SuiteOptions) -> list[dict[str, Any]]:
    judges = sorted(comp["judge"].unique())
    models = candidates(comp)
    records = []
    for scope in PLS_SCOPES:
        students = {j: sorted(m for m in models if registry.scope(j, m) == scope) for j in judges}
        for ii, ji in enumerate(judges):
            for jj in judges[ii + 1 :]:
                for si in students[ji]:
                    for sj in students[jj]:
                        if si != sj:
                            records += _pls_pair(comp, ji, jj, si, sj, scope, options)
    return records


def _pls_pair(comp: pd.DataFrame, ji: str, jj: str, si: str, sj: str, scope: str, options: SuiteOptions) -> list[dict[str, Any]]:
    """PLS (paper 000 Eq. 5-6) of judges ``ji`` and ``jj`` on their related candidates ``si`` vs ``sj``."""
    mask = (((comp["model_x"] == si) & (comp["model_y"] == sj)) | ((comp["model_x"] == sj) & (comp["model_y"] == si))) & comp[
        "judge"
    ].isin([ji, jj])
    records = []
    for condition, sub in comp[mask].groupby("condition"):
        sign = np.where(sub["model_x"] == si, 1.0, -1.0)
        out_i = sub["outcome"].to_numpy() * sign
        judge_side = (sub["judge"] == jj).to_numpy().astype(int)
        ids = sub["instance_id"].to_numpy()
        for ties in leakage.PLS_TIE_RULES:
            est = leakage.preference_leakage_score(
                np.concatenate([out_i, -out_i]),
                np.repeat([0, 1], len(sub)),
                np.concatenate([judge_side, judge_side]),
                np.concatenate([ids, ids]),
                ties=ties,
                bootstrap=options.bootstrap,
            )
            records.append(
                new_record(
                    "preference-leakage-score", f"{ji} & {jj}", condition, est, pair=[si, sj], scope=scope, variant={"ties": ties}
                )
            )
        if sub["replicate"].nunique() > 1:  # repeated runs: 000 App. D.2's mean and variance (Table 9)
            runs = sub["replicate"].astype(str).to_numpy()
            spread = leakage.preference_leakage_runs(
                np.concatenate([out_i, -out_i]),
                np.repeat([0, 1], len(sub)),
                np.concatenate([judge_side, judge_side]),
                np.concatenate([runs, runs]),
                np.concatenate([ids, ids]),
                bootstrap=options.bootstrap,
            )
            mean = spread["mean"]
            records.append(
                new_record(
                    "preference-leakage-variance",
                    f"{ji} & {jj}",
                    condition,
                    spread["variance"],
                    pair=[si, sj],
                    scope=scope,
                    variant={"ties": "loss", "over": "runs (replicates)"},
                    mean=mean.as_dict()["value"],
                    mean_ci=[mean.as_dict()["ci_low"], mean.as_dict()["ci_high"]],
                    runs=spread["runs"],
                )
            )
    return records


def _self_rows(
    comp: pd.DataFrame, scopes: dict[tuple[str, str], str], scope: str, *, opponents: str = "unrelated"
) -> pd.DataFrame:
    """(judge's ``scope`` candidate vs another) comparisons, outcome from the related side.

    ``opponents="unrelated"``: the other is unrelated to the judge (or unknown to the registry);
    ``"any"``: any less related candidate (`nepotism.models.less_related`; for ``self``, every other
    answer, as paper 004 counts them). ``scopes`` maps (judge, model) to `Registry.scope`.
    """
    rung = {name: i for i, name in enumerate(SCOPE_LADDER)}
    # each (judge, model)'s rung looked up once, not once per row (20M look-ups on 10M comparisons)
    (judge,), judges = name_codes(comp["judge"])
    (x, y), models = name_codes(comp["model_x"], comp["model_y"])
    ladder = np.array([[rung[scopes.get((j, m), "unknown")] for m in models] for j in judges], dtype=int).reshape(
        judges.size, models.size
    )
    sc_x, sc_y = ladder[judge, x], ladder[judge, y]
    mine = rung[scope]
    if opponents == "unrelated":
        other_x, other_y = sc_x >= rung["unrelated"], sc_y >= rung["unrelated"]
    else:
        other_x, other_y = sc_x > mine, sc_y > mine
    x_side = (sc_x == mine) & other_y
    y_side = (sc_y == mine) & other_x & ~x_side
    sub = comp[x_side | y_side].copy()
    flip = y_side[x_side | y_side]
    for column, first, second in (("related", "model_y", "model_x"), ("other", "model_x", "model_y")):
        # names stay objects: an assigned array of str would become an Arrow column, iterated per row later
        sub[column] = pd.Series(np.where(flip, sub[first], sub[second]), index=sub.index, dtype=object)
    sub["outcome_related"] = np.where(flip, -sub["outcome"], sub["outcome"])
    return sub


def labels_per_pair(pref: pd.DataFrame) -> int:
    """The most labels any one pair of answers to one prompt has in a preference reference."""
    if pref is None or pref.empty:
        return 0
    a, b = pref["model_a"].astype(str), pref["model_b"].astype(str)
    key = pd.DataFrame({"i": pref["instance_id"].astype(str), "x": np.where(a < b, a, b), "y": np.where(a < b, b, a)})
    return int(key.groupby(["i", "x", "y"], sort=False).size().max())


def majority_labels(pref: pd.DataFrame) -> pd.DataFrame:
    """One label per (prompt, pair): the plurality of its labels (`votes.decide`), a split vote a tie —
    paper 000 App. C.3's majority of annotators. Other columns (annotator, category) are dropped."""
    a, b = pref["model_a"].astype(str).to_numpy(), pref["model_b"].astype(str).to_numpy()
    x, y = np.where(a < b, a, b), np.where(a < b, b, a)
    w = pref["winner"].astype(str).to_numpy()
    frame = pd.DataFrame(
        {
            "instance_id": pref["instance_id"].astype(str).to_numpy(),
            "model_a": x,
            "model_b": y,
            "vote_x": (w == x).astype(float),
            "vote_y": (w == y).astype(float),
            "vote_tie": ((w != x) & (w != y)).astype(float),
        }
    )
    counts = frame.groupby(["instance_id", "model_a", "model_b"], sort=True)[["vote_x", "vote_y", "vote_tie"]].sum()
    column = decide(counts.to_numpy(), rule="plurality", split="tie", tie=2)
    keys = counts.index.to_frame(index=False)
    winner = np.where(column == 0, keys["model_a"], np.where(column == 1, keys["model_b"], "tie"))
    return keys.assign(winner=winner, labels=counts.sum(axis=1).to_numpy().astype(int))


def _reference_pairwise(
    comp: pd.DataFrame, relations: dict[tuple[str, str], str], refs: dict[str, pd.DataFrame], options: SuiteOptions
) -> list[dict[str, Any]]:
    records = []
    pref = refs.get("preference-ref")
    corr = refs.get("correctness-ref")
    if pref is not None:
        several = labels_per_pair(pref) > 1 or ("labels" in pref and len(pref) and int(pref["labels"].max()) > 1)
        vote = {"reference_vote": options.reference_vote} if several else {}
        source = {
            "reference_source": str(pref["derived_from"].iloc[0])
            if "derived_from" in pref and len(pref)
            else "the human preference labels"
        }
        p = pref.copy()
        a, b = p["model_a"].astype(str), p["model_b"].astype(str)
        first = a < b
        w = p["winner"].astype(str)
        code_a = np.where(w == a, 1.0, np.where(w == b, -1.0, 0.0))
        ref = pd.DataFrame(
            {
                "instance_id": p["instance_id"].astype(str),
                "model_x": np.where(first, a, b),
                "model_y": np.where(first, b, a),
                "human": np.where(first, code_a, -code_a),
            }
        )
        merged = comp.merge(ref, on=["instance_id", "model_x", "model_y"], how="inner")
        for (judge, condition), group in merged.groupby(["judge", "condition"], sort=True):
            records.append(
                new_record(
                    "mipa",
                    judge,
                    condition,
                    rubric.mipa(group["outcome"], group["human"], group["instance_id"].to_numpy(), bootstrap=options.bootstrap),
                    variant={"paradigm": "PWC", **vote},
                )
            )
        pairs = merged[["judge", "condition", "model_x", "model_y"]].drop_duplicates()  # scopes once per pair
        for scope in AUDITED_SCOPES:
            # against unrelated opponents; where a judge has none, against any less related one
            # (variant opponents=any, flagged in its note), never silently nothing
            unrelated = _self_rows(merged, relations, scope)
            measured = set(zip(unrelated["judge"], unrelated["condition"]))
            fallback = _self_rows(merged, relations, scope, opponents="any")
            fallback = fallback[[key not in measured for key in zip(fallback["judge"], fallback["condition"])]]
            sub = pd.concat([unrelated.assign(opponents="unrelated"), fallback.assign(opponents="any")])
            sub["human_related"] = np.where(sub["related"] == sub["model_x"], sub["human"], -sub["human"])
            for (judge, condition, opponents), group in sub.groupby(["judge", "condition", "opponents"], sort=True):
                o, h = group["outcome_related"].to_numpy(), group["human_related"].to_numpy()
                ids = group["instance_id"].to_numpy()
                pref_rel = (o + 1) / 2
                hum_rel = (h + 1) / 2
                est = reference.equal_opportunity_bias(
                    np.concatenate([pref_rel, 1 - pref_rel]),
                    np.concatenate([hum_rel, 1 - hum_rel]),
                    np.repeat([True, False], len(o)),
                    np.concatenate([ids, ids]),
                    bootstrap=options.bootstrap,
                )
                matrix = reference.confusion_matrix(pref_rel, hum_rel)
                flag = {"opponent_models": sorted(map(str, set(group["other"]))), **source}  # who the related side met
                records.append(
                    new_record(
                        "equal-opportunity-bias",
                        judge,
                        condition,
                        est,
                        scope=scope,
                        variant={"judge_tie": "1/2", "opponents": opponents, **vote},
                        confusion_matrix=matrix,
                        **flag,
                    )
                )
                records.append(
                    new_record(
                        "error-bias",
                        judge,
                        condition,
                        leakage.error_bias(o, h, ids, bootstrap=options.bootstrap),
                        scope=scope,
                        variant={"opponents": opponents, **vote},
                        **flag,
                    )
                )
                prob_x = group["prob_x"].to_numpy(dtype=float) if "prob_x" in group else np.full(len(group), np.nan)
                if np.isfinite(prob_x).any():  # 001 Eq. 3: the choice is the argmax of the order-averaged score
                    p_rel = np.where(group["related"] == group["model_x"], prob_x, 1.0 - prob_x)
                    chosen = np.where(np.isnan(p_rel), np.nan, np.sign(p_rel - 0.5) / 2 + 0.5)
                    est = reference.equal_opportunity_bias(
                        np.concatenate([chosen, 1 - chosen]),
                        np.concatenate([hum_rel, 1 - hum_rel]),
                        np.repeat([True, False], len(o)),
                        np.concatenate([ids, ids]),
                        bootstrap=options.bootstrap,
                    )
                    reasons = group["prob_excluded_reason"] if "prob_excluded_reason" in group else None
                    if reasons is not None:
                        est = with_reasons(est, pd.concat([reasons, reasons]))
                    records.append(
                        new_record(
                            "equal-opportunity-bias",
                            judge,
                            condition,
                            est,
                            scope=scope,
                            variant={"judge_tie": "1/2", "opponents": opponents, "preference": "probability-argmax", **vote},
                            **flag,
                        )
                    )
            # a judge with candidates in this scope but none less related to meet: say so, not nothing
            judged = set(zip(sub["judge"], sub["condition"]))
            present = {
                (j, c) for j, c, x, y in pairs.itertuples(index=False) if scope in (relations.get((j, x)), relations.get((j, y)))
            }
            for judge, condition in sorted(present - judged):
                why = (
                    f"every {scope} candidate of this judge met only candidates at least as related to it "
                    "(no unrelated or less related opponent), so a preference for it cannot be told from one for them"
                )
                for metric, variant in (
                    ("equal-opportunity-bias", {"judge_tie": "1/2", "opponents": "any"}),
                    ("error-bias", {"opponents": "any"}),
                ):
                    empty = undefined(why, bootstrap=options.bootstrap)
                    records.append(new_record(metric, judge, condition, empty, scope=scope, variant=variant, opponent_models=[]))
    if corr is not None and "correct" in corr:
        c = corr[["instance_id", "model", "correct"]].copy()
        c["instance_id"] = c["instance_id"].astype(str)
        c["correct"] = c["correct"].map(lambda v: np.nan if v is None else float(v))
        lookup = c.set_index(["instance_id", "model"])["correct"]
        for opponents in ("unrelated", "any"):
            records += _d_diff_records(comp, relations, lookup, opponents, options)
        records += task_accuracy_records(comp, corr, options.bootstrap)
    return records


def _d_diff_records(
    comp: pd.DataFrame, relations: dict[tuple[str, str], str], lookup: pd.Series, opponents: str, options: SuiteOptions
) -> list[dict[str, Any]]:
    """Paper 004 Eq. 3-5 per (judge, condition) against one opponent population (variant.opponents)."""
    records = []
    sub = _self_rows(comp, relations, "self", opponents=opponents)
    own = lookup.reindex(pd.MultiIndex.from_arrays([sub["instance_id"], sub["related"]])).to_numpy(dtype=float)
    oth = lookup.reindex(pd.MultiIndex.from_arrays([sub["instance_id"], sub["other"]])).to_numpy(dtype=float)
    sub["own_ok"], sub["other_ok"] = own, oth
    prob_x = sub["prob_x"].to_numpy(dtype=float) if "prob_x" in sub else np.full(len(sub), np.nan)
    sub["p_own"] = np.where(sub["related"] == sub["model_x"], prob_x, 1 - prob_x)
    for (judge, condition), g in sub.groupby(["judge", "condition"], sort=True):
        rest = (g["own_ok"].to_numpy(), g["other_ok"].to_numpy(), g["other"].to_numpy(), g["instance_id"].to_numpy())
        readings = [("verdict", g["outcome_related"].to_numpy(), g.get("excluded_reason"))]
        if np.isfinite(g["p_own"].to_numpy(dtype=float)).any():  # label probabilities were recorded
            readings.append(("probability", g["p_own"].to_numpy(dtype=float), g.get("prob_excluded_reason")))
        for preference, outcome, reasons in readings:
            for averaging in ("per-evaluatee", "pooled"):
                for metric, fn in (
                    ("judge-accuracy", reference.judge_accuracy),
                    ("legitimate-self-preference-ratio", reference.legitimate_self_preference_ratio),
                    ("harmful-self-preference-propensity", reference.harmful_self_preference_propensity),
                ):
                    est = fn(outcome, *rest, averaging=averaging, preference=preference, bootstrap=options.bootstrap)
                    if reasons is not None:  # the rows without a verdict or probability, by reason
                        est = with_reasons(est, reasons)
                    variant = {"averaging": averaging, "opponents": opponents}
                    if preference == "probability":
                        variant["preference"] = "probability"
                    records.append(new_record(metric, judge, condition, est, scope="self", variant=variant))
        # paper 004's tables: the same three numbers per evaluatee (the model the judge's answer met)
        for evaluatee, part in g.groupby("other", sort=True):
            rest = (
                part["own_ok"].to_numpy(),
                part["other_ok"].to_numpy(),
                part["other"].to_numpy(),
                part["instance_id"].to_numpy(),
            )
            for metric, fn in (
                ("judge-accuracy", reference.judge_accuracy),
                ("legitimate-self-preference-ratio", reference.legitimate_self_preference_ratio),
                ("harmful-self-preference-propensity", reference.harmful_self_preference_propensity),
            ):
                est = fn(part["outcome_related"].to_numpy(), *rest, averaging="pooled", bootstrap=options.bootstrap)
                if "excluded_reason" in part:
                    est = with_reasons(est, part["excluded_reason"])
                records.append(
                    new_record(
                        metric,
                        judge,
                        condition,
                        est,
                        scope="self",
                        generator=str(evaluatee),
                        variant={"averaging": "one evaluatee", "opponents": opponents, "evaluatee": str(evaluatee)},
                    )
                )
    return records + harmful_accuracy_records(sub, opponents, options.bootstrap)  # 003 Fig. 5, Table 4


def _pairwise_suite(
    frame: pd.DataFrame,
    registry: Registry,
    refs: dict[str, pd.DataFrame],
    options: SuiteOptions,
    comparisons: Comparisons | None = None,
) -> list[dict[str, Any]]:
    if comparisons is None:
        comparisons = build_comparisons(frame, rule=options.rule)
    audit = AuditOptions(bootstrap=options.bootstrap)
    records = audit_pairwise(comparisons, registry, options=audit) if options.include_audit else []
    frame_ids = comparisons.frame["instance_id"]  # ids as str objects, no Arrow copy; other columns shared (copy on write)
    comp = comparisons.frame.assign(instance_id=pd.Series(text_values(frame_ids), index=frame_ids.index, dtype=object))
    judges = sorted(comp["judge"].unique())
    models = candidates(comp)
    relations = scope_table(registry, judges, models)
    records += _position_records(frame, options, comparisons.rows)
    records += _pls_records(comp, registry, options)
    for opponents in options.opponents:  # 004 Tables 1/3/5: SPR per evaluatee and their mean
        records += spr_records(_self_rows(comp, relations, "self", opponents=opponents), opponents, options.bootstrap)
    records += _reference_pairwise(comp, relations, refs, options)
    records += reasoning_length_records(frame, refs.get("correctness-ref"), relations, options.bootstrap)
    records += pairwise_rank_records(
        comp,
        registry,
        options.bootstrap,
        preference=refs.get("preference-ref"),
        leaderboard=options.leaderboard,
        rank_against=options.rank_against,
    )
    records += perplexity_records(
        frame,
        registry,
        options.bootstrap,
        preference=refs.get("preference-ref"),
        bins=options.perplexity_bins,
        difference=options.perplexity_difference,
        perplexity=refs.get("perplexity"),
    )
    from nepotism.analyses.matched import MatchedOptions, run_matched

    records += run_matched(
        comparisons, "pairwise", registry, references=refs, options=MatchedOptions(bootstrap=options.bootstrap)
    )
    return records


# ------------------------------------------------------------------------------------ rubric
def _rubric_suite(
    frame: pd.DataFrame, registry: Registry, refs: dict[str, pd.DataFrame], options: SuiteOptions
) -> list[dict[str, Any]]:
    records = rubric_records(frame, registry, refs, options.bootstrap, leaderboard=options.leaderboard)
    if refs.get("rubric-labels") is not None:  # people's labels of the items: 002 App. C's balanced F1
        records += label_records(frame, refs["rubric-labels"], items=refs.get("rubric-items"), bootstrap=options.bootstrap)
    reference = refs.get("rubric-ref")
    if reference is not None and not reference.empty:  # each judge's verdicts against the reference (002 App. C)
        from nepotism.grading.rubric_reference import jurors_of, meta_evaluation

        records += meta_evaluation(
            frame,
            reference,
            items=refs.get("rubric-items"),
            reference_name="jury" if jurors_of(reference) else "rubric-ref",
            bootstrap=options.bootstrap,
        )
    return records


# ------------------------------------------------------------------------------------ transforms
def committee(frame: pd.DataFrame, judges: Iterable[str], *, name: str | None = None) -> pd.DataFrame:
    """Majority vote of ``judges`` on each verdict, as one judge (002 §3, Fig. 3).

    Rubric frames vote on ``met``; pairwise frames on ``verdict`` (A / B / tie, per presentation
    order). A verdict needs a strict majority of the members' parsed verdicts; otherwise it is
    unparsed (empty), never a tie broken at random. Returns rows for the committee under ``name``
    (default ``committee(a+b+...)``) and — so that a member's committee-aggregated self-preference
    can be measured (002 Fig. 3) — one copy per member under the member's name with the condition
    ``"<condition> | <name>"`` (so the copies never mix with the member's own verdicts).
    """
    judges = list(judges)
    rows = frame[frame["judge"].isin(judges)]
    label = name or f"committee({'+'.join(judges)})"
    if "verdict" in frame:
        key = ["instance_id", "model_a", "model_b", "condition", "replicate"]
        verdict = rows["verdict"].astype(object)
        votes = pd.DataFrame({k: rows[k].astype(object).to_numpy() for k in key})
        for option in ("A", "B", "tie"):
            votes[option] = (verdict == option).to_numpy().astype(float)
        votes["parsed"] = verdict.notna().to_numpy().astype(float)
        agg = votes.groupby(key, sort=False)[["A", "B", "tie", "parsed"]].sum().reset_index()
        column = decide(agg[["A", "B", "tie"]].to_numpy(), rule="majority")
        agg["verdict"] = pd.Series([None if c < 0 else ("A", "B", "tie")[c] for c in column], dtype=object)
        value = "verdict"
    else:
        key = ["instance_id", "model", "rubric_id", "condition", "replicate"] + (["setup"] if "setup" in rows else [])
        votes = rows.assign(yes=rows["met"].map({True: 1.0, False: 0.0}).astype(float))
        agg = votes.groupby(key, observed=True, sort=False)["yes"].agg(["sum", "count"]).reset_index()
        column = decide(np.column_stack([agg["sum"], agg["count"] - agg["sum"]]), rule="majority")
        agg["met"] = pd.Series([None if c < 0 else c == 0 for c in column], dtype=object)
        value = "met"
    base = agg[key + [value]]
    out = [base.assign(judge=label)]
    for member in judges:
        copy = base.assign(judge=member)
        copy["condition"] = copy["condition"].astype(str) + f" | {label}"
        out.append(copy)
    return pd.concat(out, ignore_index=True)


def agreement_filter(frame: pd.DataFrame, threshold: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Keep rubrics whose inter-judge pairwise agreement is at least ``threshold`` (002 Fig. 4).

    Agreement of a rubric (instance_id, rubric_id) = over its generators, the share of judge pairs
    giving the same verdict (parsed verdicts only): with m "met" out of n judges, (C(m,2) +
    C(n−m,2)) / C(n,2), pooled over generators. Returns (filtered frame, per-rubric agreement).
    """
    votes = frame.assign(yes=frame["met"].map({True: 1.0, False: 0.0}).astype(float))
    cell = votes.groupby(["instance_id", "rubric_id", "model"], observed=True)["yes"].agg(["sum", "count"]).reset_index()
    m, n = cell["sum"], cell["count"]
    cell["agree"] = (m * (m - 1) + (n - m) * (n - m - 1)) / 2
    cell["pairs"] = n * (n - 1) / 2
    per = cell.groupby(["instance_id", "rubric_id"], observed=True)[["agree", "pairs"]].sum().reset_index()
    per["agreement"] = per["agree"] / per["pairs"]
    keep = per.loc[per["agreement"] >= threshold, ["instance_id", "rubric_id"]]
    filtered = frame.merge(keep, on=["instance_id", "rubric_id"], how="inner")
    return filtered, per[["instance_id", "rubric_id", "agreement"]]


# ------------------------------------------------------------------------------------ entry point
#: Slices computed from the rubric-items table rather than read from a judgment column.
DERIVED_SLICES = ("rubric-polarity", "rubric-length")


def exclusion_records(
    frame: pd.DataFrame, kind: str, options: SuiteOptions, rows: RowPairs | None = None
) -> list[dict[str, Any]]:
    """excluded-verdicts per (judge, condition): the judgments without a verdict, by status-reason;
    then exclusion-share-gap per generator of each (`_gap_records`).

    ``rows``: a pairwise ``frame``'s `RowPairs` (from its `build_comparisons`), whose codes and
    exclusion labels are the ones computed here otherwise."""
    column = VERDICT_COLUMN.get(kind)
    if column is None or column not in frame or frame.empty:
        return []
    if rows is not None and kind == "pairwise":
        missing = np.isnan(rows.code_a)
        labels = np.full(len(frame), None, dtype=object)
        labels[missing] = rows.why_labels(np.flatnonzero(missing))
        instance, group, n_conditions = rows.instance, rows.group, len(rows.conditions)

        def named(g: int) -> tuple[str, str, dict[str, Any]]:
            return rows.judges[g // n_conditions], rows.conditions[g % n_conditions], {"kind": kind}
    else:
        keys = ["judge", "condition"] + (["setup"] if kind == "rubric" and "setup" in frame else [])
        group = np.zeros(len(frame), dtype=np.int64)
        names = []
        for key in keys:  # one code per (judge, condition[, setup]), in sorted order (as a sorted groupby)
            codes, values = pd.factorize(frame[key], sort=True)  # the column's own dtype: no object copy
            group = group * len(values) + codes
            names.append(np.asarray(values, dtype=object))
        missing = frame[column].isna().to_numpy()
        labels = np.full(len(frame), None, dtype=object)  # only the rows without a verdict have a label
        if missing.any():
            labels[missing] = row_exclusions(frame[missing])
        (instance,), _ = name_codes(frame["instance_id"])  # in the order of the instances' text

        def named(g: int) -> tuple[str, str, dict[str, Any]]:
            parts = []
            for values in reversed(names):
                g, code = divmod(g, len(values))
                parts.append(values[code])
            judge, condition, *setup = reversed(parts)
            return judge, condition, {"kind": kind} | ({"setup": setup[0]} if setup else {})

    columns = [frame[c] for c in ("model_a", "model_b", "model") if c in frame][:2]
    codes, generators = pd.factorize(pd.concat(columns, ignore_index=True), sort=True)
    shows = codes.reshape(len(columns), len(frame))  # per side, each judgment's generator code
    records = []
    for g, where in _spans(group).items():  # a group's records together, as a streamed partition gives them
        judge, condition, variant = named(g)
        est = excluded_share(missing[where], instance[where], reasons=labels[where], bootstrap=options.bootstrap)
        records.append(new_record("excluded-verdicts", judge, condition, est, variant=variant))
        records += _gap_records(named(g), where, shows, np.asarray(generators, dtype=object), missing, labels, instance, options)
    keys = ["judge", "condition"] + (["setup"] if kind == "rubric" and "setup" in frame else [])
    return _with_low_mass(records, frame, column, keys)


def _with_low_mass(records: list[dict[str, Any]], frame: pd.DataFrame, column: str, keys: list[str]) -> list[dict[str, Any]]:
    """Each record with ``label_mass_below_half``: its judgments that have a verdict read from labels
    holding less than half the next-token probability (`nepotism.metrics.coverage.low_label_mass`),
    when the table records label masses."""
    if "label_mass" not in frame or not records:
        return records
    parsed = frame[column].notna().to_numpy()
    mass = frame["label_mass"].to_numpy(dtype=float)
    texts = pd.DataFrame({key: pd.Series(text_values(frame[key]), dtype=object) for key in keys})  # no Arrow copy
    groups = texts.groupby(keys, sort=False).indices  # keys: at least judge and condition
    counts = {key: low_label_mass(mass[at], parsed[at]) for key, at in groups.items()}
    for record in records:
        if record["metric"] != "excluded-verdicts":
            continue
        key = (str(record["judge"]), str(record["condition"])) + ((str(record["variant"]["setup"]),) if "setup" in keys else ())
        record["label_mass_below_half"] = counts.get(key, 0)
    return records


_NOT_ASKED = "failed-generation:"  # the label prefix of a judgment a failed generation prevented


def _gap_records(
    named: tuple[str, str, dict[str, Any]],
    where: np.ndarray,
    shows: np.ndarray,
    generators: np.ndarray,
    missing: np.ndarray,
    labels: np.ndarray,
    instance: np.ndarray,
    options: SuiteOptions,
) -> list[dict[str, Any]]:
    """exclusion-share-gap for each generator the judge saw in one (judge, condition): how much
    more often the judgments showing it have no verdict than the judge's others
    (`nepotism.metrics.definitions.EXCLUSION_SHARE_GAP`'s sums and `coverage.exclusion_share_gap`'s
    counts and test, every generator's resampled in one product), and whether that flags it (`gaming_flag`: Bonferroni over the
    generators tested, at 1 − the confidence level). The judgments a failed generation prevented are left out: the
    judge never saw those candidates."""
    judge, condition, variant = named
    gone = missing[where]
    asked = np.ones(where.size, dtype=bool)
    if gone.any():
        asked[gone] = [not (isinstance(label, str) and label.startswith(_NOT_ASKED)) for label in labels[where[gone]]]
    where = where[asked]
    if where.size == 0:
        return []
    gone, sides, why = missing[where], shows[:, where], labels[where]
    _, prompt = np.unique(instance[where], return_inverse=True)  # prompts in order, as `cluster_sums` codes them
    n_prompts = int(prompt.max()) + 1
    batch = ClusterSetBatch(options.bootstrap)
    rows, tests = [], []
    for code in np.unique(sides):
        shown = (sides == code).any(axis=0)
        part = candidate_part(EXCLUSION_SHARE_GAP.dense_sums(gone, shown, codes=prompt, size=n_prompts), gone, shown, why)
        n, n_excluded = part.n, part.n_excluded
        note = gap_undefined(n, where.size)
        sums = np.zeros((0, 4)) if note else part.sums
        index = batch.add(
            sums, EXCLUSION_SHARE_GAP.statistic, n=n, n_excluded=n_excluded, excluded=part.excluded, note=note or None
        )
        others, others_gone = where.size - n, int(gone.sum()) - n_excluded
        rows.append((str(generators[code]), index, n, n_excluded, others, others_gone))
        tests.append(None if note else gap_p_value(sums))
    estimates = [replace(est, p_value=p) for est, p in zip(batch.run(), tests, strict=True)]
    if not any(estimates[index].defined for _, index, *_ in rows):
        return []  # no generator to set against the others (one generator, or a pairwise judge with two)
    tested = sum(1 for est in estimates if est.defined and est.p_value is not None)
    alpha = 1.0 - options.bootstrap.confidence_level
    records = []
    for name, index, n, n_excluded, others, others_gone in sorted(rows):
        est = estimates[index]
        share = n_excluded / n if n else None
        others_share = others_gone / others if others else None
        flagged = (
            share is not None and others_share is not None and gaming_flag(est, share, others_share, tested=tested, alpha=alpha)
        )
        records.append(
            new_record(
                "exclusion-share-gap",
                judge,
                condition,
                est,
                generator=name,
                variant=variant,
                share=share,
                others_share=others_share,
                others_n=others,
                others_n_excluded=others_gone,
                flagged=flagged,
                p_threshold=alpha / tested if tested else None,
            )
        )
    return records


def flagged_candidates(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The flagged exclusion-share-gap records as plain dicts (``Results.summary["flagged_candidates"]``):
    judge, condition, kind, generator, share, others_share, n, n_excluded, reason (the candidate's most
    frequent exclusion label) and p_value."""
    out = []
    for r in records:
        if r.get("metric") != "exclusion-share-gap" or not r.get("flagged"):
            continue
        reasons = r.get("excluded") or {}
        out.append(
            {
                "judge": r["judge"],
                "condition": r["condition"],
                "kind": (r.get("variant") or {}).get("kind"),
                "generator": r["generator"],
                "share": r["share"],
                "others_share": r["others_share"],
                "n": r["n"],
                "n_excluded": r["n_excluded"],
                "reason": max(reasons, key=lambda k: (reasons[k], k)) if reasons else None,
                "p_value": r.get("p_value"),
            }
        )
    return out


def _one(
    frame: pd.DataFrame,
    kind: str,
    registry: Registry,
    refs: dict[str, pd.DataFrame],
    options: SuiteOptions,
    comparisons: Comparisons | None = None,
) -> list[dict[str, Any]]:
    if kind == "pairwise" and comparisons is None:
        comparisons = build_comparisons(frame, rule=options.rule)  # paired once: excluded verdicts use it too
    return exclusion_records(frame, kind, options, comparisons.rows if comparisons is not None else None) + _metrics(
        frame, kind, registry, refs, options, comparisons
    )


def _metrics(
    frame: pd.DataFrame,
    kind: str,
    registry: Registry,
    refs: dict[str, pd.DataFrame],
    options: SuiteOptions,
    comparisons: Comparisons | None = None,
) -> list[dict[str, Any]]:
    boot = options.bootstrap
    if kind == "pairwise":
        return _pairwise_suite(frame, registry, refs, options, comparisons)
    if kind in ("rubric", "pointwise"):
        from nepotism.analyses.matched import MatchedOptions, run_matched

        records = (
            _rubric_suite(frame, registry, refs, options)
            if kind == "rubric"
            else pointwise_records(
                frame, registry, refs, boot, leaderboard=options.leaderboard, rank_against=options.rank_against
            )
        )
        matched_options = MatchedOptions(bootstrap=boot)
        if kind == "rubric" and "setup" in frame and frame["setup"].notna().any():
            # rubric verdicts asked one item per call and all items in one call are measured apart, never pooled
            for setup, part in frame.groupby("setup", sort=True):
                for r in run_matched(part, kind, registry, references=refs, options=matched_options):
                    r["variant"] = {**r["variant"], "setup": setup}
                    records.append(r)
            return records
        return records + run_matched(frame, kind, registry, references=refs, options=matched_options)
    if kind in ("recognition", "recognition-pairwise"):
        records = recognition_records(
            frame, kind, registry, boot, target=options.recognition_target, correctness=refs.get("correctness-ref")
        )
        if refs.get("pairwise") is not None:
            pairwise = refs["pairwise"]
            if "condition" not in pairwise:
                pairwise = pairwise.assign(condition="default")
            if "replicate" not in pairwise:
                pairwise = pairwise.assign(replicate=0)
            comparisons = build_comparisons(pairwise, rule=options.rule).frame
            records += association_records(
                frame,
                kind,
                comparisons,
                registry,
                boot,
                target=options.recognition_target,
                correctness=refs.get("correctness-ref"),
            )
        return records
    return []


def _derived_slice(frame: pd.DataFrame, name: str, refs: dict[str, pd.DataFrame]) -> pd.Series | None:
    """rubric-polarity (points < 0 → negative) or rubric-length (word-count tertiles of the rubric text)."""
    items = refs.get("rubric-items")
    if items is None or "rubric_id" not in frame:
        return None
    items = items.assign(instance_id=items["instance_id"].astype(str), rubric_id=items["rubric_id"].astype(str))
    if name == "rubric-polarity":
        label = np.where(items["points"].to_numpy(dtype=float) < 0, "negative", "positive")
    else:
        words = items["text"].astype(str).str.split().str.len().to_numpy()
        low, high = np.quantile(words, [1 / 3, 2 / 3])
        label = np.where(
            words <= low,
            f"short (<= {low:g} words)",
            np.where(words <= high, f"medium (<= {high:g} words)", f"long (> {high:g} words)"),
        )
    lookup_table = pd.Series(label, index=pd.MultiIndex.from_frame(items[["instance_id", "rubric_id"]]))
    keys = pd.MultiIndex.from_arrays([frame["instance_id"].astype(str), frame["rubric_id"].astype(str)])
    return pd.Series(lookup_table.reindex(keys).to_numpy(dtype=object), index=frame.index)


def _preference_from_scores(scores: pd.DataFrame, source: str) -> pd.DataFrame:
    """w* for every pair of answers to one prompt: the higher reference score wins, equal scores tie."""
    pairs = scores.merge(scores, on="instance_id", suffixes=("_a", "_b"))
    pairs = pairs[pairs["model_a"] < pairs["model_b"]]
    winner = np.where(
        pairs["score_a"] > pairs["score_b"],
        pairs["model_a"],
        np.where(pairs["score_a"] < pairs["score_b"], pairs["model_b"], "tie"),
    )
    return pd.DataFrame(
        {
            "instance_id": pairs["instance_id"].to_numpy(),
            "model_a": pairs["model_a"].to_numpy(),
            "model_b": pairs["model_b"].to_numpy(),
            "winner": winner,
            "derived_from": source,
        }
    )


def derive_instance_references(refs: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Instance-level truth from rubric truth or reference scores, where no direct reference is given (002 §2).

    With a ``rubric-ref`` and no ``correctness-ref``: an answer's reference score s* is the share of
    its rubric items met (for direct assessment: score-based overestimation, HSPP ratio, MIPA DA).
    With no ``preference-ref``: for each pair of answers to one prompt the one with the larger s*
    wins and equal ones tie (w*, for pairwise MIPA PWC and equal-opportunity bias) — s* from the
    rubric shares, else from a ``correctness-ref`` with a ``score`` column (a graded reference such
    as MT-Bench's 1–10 grades), else from its ``correct`` column (a correct answer beats a wrong
    one; two correct or two wrong answers tie, which equal-opportunity bias leaves out). Only decided rubric verdicts and given scores count; the derived
    frames say where they came from in a ``derived_from`` column. Given references are never replaced.
    """
    out = dict(refs)
    rubric_ref = refs.get("rubric-ref")
    if rubric_ref is not None and not rubric_ref.empty:
        met = rubric_ref.assign(
            instance_id=rubric_ref["instance_id"].astype(str),
            model=rubric_ref["model"].astype(str),
            met=rubric_ref["met"].astype(float),
        )
        shares = met.groupby(["instance_id", "model"], sort=True)["met"].mean().reset_index(name="score")
        if "correctness-ref" not in out:
            out["correctness-ref"] = shares.assign(derived_from="rubric-ref: share of rubric items met")
        if "preference-ref" not in out:
            out["preference-ref"] = _preference_from_scores(shares, "rubric-ref: larger share of rubric items met")
    corr = out.get("correctness-ref")
    if "preference-ref" not in out and corr is not None and "score" in corr and corr["score"].notna().any():
        scores = corr[corr["score"].notna()]
        scores = pd.DataFrame(
            {
                "instance_id": scores["instance_id"].astype(str),
                "model": scores["model"].astype(str),
                "score": scores["score"].astype(float),
            }
        )
        out["preference-ref"] = _preference_from_scores(scores, "correctness-ref: the higher reference score")
    elif "preference-ref" not in out and corr is not None and "correct" in corr and corr["correct"].notna().any():
        graded = corr[corr["correct"].notna()]
        graded = pd.DataFrame(
            {
                "instance_id": graded["instance_id"].astype(str),
                "model": graded["model"].astype(str),
                "score": graded["correct"].map(float).astype(float),
            }
        )
        out["preference-ref"] = _preference_from_scores(graded, "correctness-ref: a correct answer beats a wrong one")
    return out


def references_for(
    kind: str, references: Mapping[str, pd.DataFrame] | None, *, reference_vote: str = "each"
) -> dict[str, pd.DataFrame]:
    """The reference tables a ``kind`` table's metrics are measured against: a pointwise or
    pairwise table given only rubric truth or correctness gets the instance-level truth derived
    from it (`derive_instance_references`), and with ``reference_vote="majority"`` several human
    labels of one pair become its plurality label (`majority_labels`). `run_suite` measures
    against these, and `nepotism.analyses.cases` finds the cases behind a verdict in them."""
    if reference_vote not in REFERENCE_VOTES:
        raise InputError(f"reference_vote must be one of {', '.join(REFERENCE_VOTES)}", field="reference_vote")
    refs = derive_instance_references(dict(references or {})) if kind in ("pointwise", "pairwise") else dict(references or {})
    pref = refs.get("preference-ref")
    if reference_vote == "majority" and pref is not None and labels_per_pair(pref) > 1:
        refs["preference-ref"] = majority_labels(pref)
    return refs


def run_suite(
    frame: pd.DataFrame,
    kind: str,
    registry: Registry,
    *,
    references: Mapping[str, pd.DataFrame] | None = None,
    options: SuiteOptions | None = None,
    comparisons: Comparisons | None = None,
) -> SuiteResult:
    """Every metric whose inputs are present, for every (judge, condition) of ``frame``.

    ``kind`` is the table kind of ``frame`` (pairwise, pointwise, rubric, recognition,
    recognition-pairwise). ``comparisons``: a pairwise frame's `build_comparisons` under
    ``options.rule`` when the caller already has it (`nepotism.audit` does), so it is not built
    twice. ``references`` maps a kind to its frame: the reference kinds
    (``preference-ref``, ``correctness-ref``, ``rubric-ref``, ``rubric-items``) and, for a
    recognition table, a ``pairwise`` table (for recognition-preference-association).
    ``options.slices`` adds the records again per slice value with ``variant["slice"]``: any column
    of ``frame`` (``category``, ``condition``, ...) or a `DERIVED_SLICES` name. A pointwise or
    pairwise table given only a ``rubric-ref`` is measured against the instance-level truth
    derived from it (`derive_instance_references`).
    """
    options = options or SuiteOptions()
    refs = references_for(kind, references, reference_vote=options.reference_vote)
    if "condition" not in frame:
        frame = frame.assign(condition="default")
    if "replicate" not in frame:
        frame = frame.assign(replicate=0)
    for column in options.slices:
        if column in DERIVED_SLICES:
            if kind != "rubric" or "rubric-items" not in refs:
                raise InputError(f"slice '{column}' needs a rubric table and a rubric-items reference", field="--slice")
        elif column not in frame or column.startswith("_"):
            usable = sorted(c for c in frame.columns if not c.startswith("_")) + sorted(DERIVED_SLICES)
            raise InputError(f"unknown slice column '{column}'; this {kind} table has: {', '.join(usable)}", field="--slice")
    if comparisons is not None and (kind != "pairwise" or comparisons.rule != options.rule):
        raise ValueError("comparisons must be the pairwise frame's, built under options.rule")
    records = _one(frame, kind, registry, refs, options, comparisons)
    for column in options.slices:
        values = _derived_slice(frame, column, refs) if column in DERIVED_SLICES else frame[column]
        for value, part in frame.groupby(values, observed=True, sort=True):
            for r in _one(part, kind, registry, refs, options):
                r["variant"] = {**r.get("variant", {}), "slice": {column: value}}
                records.append(r)
    return SuiteResult(records)


def correlate(records: list[dict[str, Any]], x_metric: str, y_metric: str, *, confidence: float = 0.95) -> dict[str, Any]:
    """Pearson r across judges between two metrics' headline values (e.g. 004 Fig. 1).

    A judge's headline value of a metric is its first record with no generator, no pair, no slice
    and scope ``self`` or none, in the suite's record order (the default variant). Returns
    `nepotism.metrics.stats.correlate_records`'s dict (r, p, Fisher-z interval, n, keys).
    """

    def headline(r: Mapping[str, Any]) -> bool:
        return (
            r.get("generator") is None
            and r.get("pair") is None
            and r.get("scope") in (None, "self")
            and "slice" not in (r.get("variant") or {})
        )

    first: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in records:
        if r["metric"] in (x_metric, y_metric) and headline(r):
            first.setdefault((r["metric"], r["judge"], r["condition"]), r)
    return correlate_records(list(first.values()), x_metric, y_metric, key=("judge", "condition"), confidence=confidence)


def read_leaderboard(path: str | Path) -> dict[str, float]:
    """A leaderboard file: CSV with columns ``model, score`` (higher = better) → {model: score}."""
    from nepotism.errors import InputError

    try:
        table = pd.read_csv(path, dtype={"model": str})
    except (OSError, ValueError) as err:
        raise InputError(f"not readable as a CSV leaderboard ({err})", path=str(path)) from None
    for column in ("model", "score"):
        if column not in table:
            raise InputError("a leaderboard needs the columns model, score", path=str(path), line=1, field=column)
    scores = pd.to_numeric(table["score"], errors="coerce")
    bad = scores.isna() | table["model"].isna()
    if bad.any():
        row = int(np.argmax(bad.to_numpy()))
        raise InputError(
            "empty model or non-numeric score",
            path=str(path),
            line=row + 2,
            field="score" if table["model"].iloc[row] is not None else "model",
        )
    duplicated = table["model"].duplicated()
    if duplicated.any():
        row = int(np.argmax(duplicated.to_numpy()))
        raise InputError("model listed twice", path=str(path), line=row + 2, field="model")
    return dict(zip(table["model"].astype(str), scores.astype(float)))
