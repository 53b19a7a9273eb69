"""The recorded-judgment audit: every first metric, for every judge, as a list of result records.

Given aggregated comparisons and the model registry, this computes per (judge, condition):

- ``win-rate`` of every generator the judge saw (ties as ½; paper 000 / AlpacaEval convention);
- ``self-preference-ratio`` (paper 004 Eq. 2) and ``demographic-parity-bias`` (paper 001 Eq. 4)
  for each relation *scope*: ``self`` (the judge's own answers), ``family`` (same family, series
  or lineage, the judge itself excluded — paper 002 Eq. 2's text), ``student`` (models trained on
  the judge's outputs) and ``family-student`` (models trained on outputs of the judge's relatives).
  Two opponent populations, reported as the variant ``opponents``: ``unrelated`` (the default
  reading: the other candidate has no relation to the judge) and ``any`` (any candidate less
  closely related to the judge than the scoped one, by the registry's precedence — e.g. the
  judge's own answer facing a family member; used where no unrelated opponent exists, and flagged);
- ``paired-win-rate-gap``: for a candidate R related to the judge and an opponent O, the judge's
  win rate for R minus another judge's win rate for R on the same instances against the same
  opponent — how the same comparison fares with every other judge available. Matching is on the
  generators' registry ids: when the two judges saw different samples of the same models (different
  names that the registry resolves to one id) the variant says ``texts: same models, other samples``.
  The bootstrap resamples the shared instances.

Each record is ``{metric, judge, judge_id, condition, generator, pair, scope, variant, value, ci_low,
ci_high, n, n_clusters, n_excluded, excluded, note, p_value}``. What this module leaves out: reading
files (`nepotism.tables`) and presenting results (`nepotism.report`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nepotism.analyses.comparisons import Comparisons, with_reasons
from nepotism.metrics.bootstrap import Bootstrap, cluster_bootstrap, cluster_sums
from nepotism.metrics._estimate import Estimate
from nepotism.metrics.pairwise import demographic_parity_bias, self_preference_ratio, win_rate

__all__ = ["OPPONENT_POPULATIONS", "SCOPE_RELATIONS", "AuditOptions", "audit_pairwise"]

#: Which registry relations (`nepotism.models.Relation` names) put a candidate in each scope.
SCOPE_RELATIONS: dict[str, frozenset[str]] = {
    "self": frozenset({"SELF"}),
    "family": frozenset({"LINEAGE", "SAME_SERIES", "SAME_FAMILY"}),
    "student": frozenset({"STUDENT"}),
    "family-student": frozenset({"FAMILY_STUDENT"}),
}
OPPONENT_POPULATIONS = ("unrelated", "any")
_UNRELATED = frozenset({"UNRELATED", "UNKNOWN"})
#: Strongest relation first (the registry's precedence), used to orient paired gaps.
_STRENGTH = ["SELF", "LINEAGE", "STUDENT", "TEACHER", "FAMILY_STUDENT", "SAME_SERIES", "SAME_FAMILY",
             "UNRELATED", "UNKNOWN"]


@dataclass(frozen=True)
class AuditOptions:
    """Bootstrap and variant options shared by every metric of one audit."""

    bootstrap: Bootstrap = Bootstrap()
    opponents: tuple[str, ...] = OPPONENT_POPULATIONS


class _Relations:
    """Registry look-ups memoised per (judge, model) name pair."""

    def __init__(self, registry):
        self.registry = registry
        self._relation: dict[tuple[str, str], str] = {}
        self._id: dict[str, str] = {}

    def __call__(self, judge: str, model: str) -> str:
        key = (judge, model)
        if key not in self._relation:
            self._relation[key] = self.registry.relation(judge, model).name
        return self._relation[key]

    def canonical(self, name: str) -> str:
        if name not in self._id:
            base = name.split("@", 1)[0]
            try:
                self._id[name] = self.registry.resolve(base) + (name[len(base):] if "@" in name else "")
            except (KeyError, AttributeError):
                self._id[name] = name
        return self._id[name]


def _record(metric: str, judge: str, condition: str, estimate: Estimate, relations: _Relations, **extra) -> dict:
    record = {"metric": metric, "judge": judge, "judge_id": relations.canonical(judge), "condition": condition,
              "generator": None, "pair": None, "scope": None, "variant": {}}
    record.update(extra)
    record.update(estimate.as_dict())
    return record


def _generator_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Two rows per comparison: one from each candidate's side (outcome sign flipped for Y)."""
    reasons = {column: frame[column] if column in frame else None
               for column in ("excluded_reason", "prob_excluded_reason")}
    x = pd.DataFrame({"instance_id": frame["instance_id"], "generator": frame["model_x"],
                      "opponent": frame["model_y"], "outcome": frame["outcome"], "prob": frame["prob_x"], **reasons})
    y = pd.DataFrame({"instance_id": frame["instance_id"], "generator": frame["model_y"],
                      "opponent": frame["model_x"], "outcome": -frame["outcome"], "prob": 1.0 - frame["prob_x"],
                      **reasons})
    return pd.concat([x, y], ignore_index=True)


def _win_rates(rows, judge, condition, relations, options) -> list[dict]:
    records = []
    for generator, group in rows.groupby("generator", sort=True):
        estimate = with_reasons(win_rate(group["outcome"].to_numpy(), group["instance_id"].to_numpy(),
                                         bootstrap=options.bootstrap), group["excluded_reason"])
        opponents = sorted(group["opponent"].unique())
        variant = {"ties": "half", "opponents": opponents if len(opponents) <= 3 else f"{len(opponents)} models"}
        records.append(_record("win-rate", judge, condition, estimate, relations, generator=generator,
                               variant=variant, relation=relations(judge, generator).lower(),
                               n_ties=int((group["outcome"] == 0).sum())))
    return records


def _scope_records(rows, judge, condition, relations, options) -> list[dict]:
    records = []
    generator_relation = rows["generator"].map(lambda g: relations(judge, g))
    opponent_relation = rows["opponent"].map(lambda g: relations(judge, g))
    generator_strength = generator_relation.map(_STRENGTH.index)
    opponent_strength = opponent_relation.map(_STRENGTH.index)
    for scope, in_scope in SCOPE_RELATIONS.items():
        for opponents in options.opponents:
            mask = generator_relation.isin(in_scope)
            if opponents == "unrelated":
                mask &= opponent_relation.isin(_UNRELATED)
            else:
                mask &= ~opponent_relation.isin(in_scope) & (opponent_strength > generator_strength)
            subset = rows[mask]
            base = {"scope": scope, "variant": {"opponents": opponents},
                    "generators": sorted(subset["generator"].unique()),
                    "opponent_models": sorted(subset["opponent"].unique())[:20]}
            if subset.empty:
                what = "an unrelated" if opponents == "unrelated" else "any other"
                empty = cluster_bootstrap(np.zeros((0, 1)), lambda t: t[..., 0], n=0,
                                          note=f"no comparison of a {scope} candidate with {what} model",
                                          bootstrap=options.bootstrap)
                records.append(_record("self-preference-ratio", judge, condition, empty, relations, **base))
                records.append(_record("demographic-parity-bias", judge, condition, empty, relations, **base))
                continue
            clusters = subset["instance_id"].to_numpy()
            outcomes = subset["outcome"].to_numpy()
            decided = outcomes[~np.isnan(outcomes)]
            spr = with_reasons(self_preference_ratio(outcomes, clusters, bootstrap=options.bootstrap),
                               subset["excluded_reason"])
            records.append(_record("self-preference-ratio", judge, condition, spr, relations,
                                   tie_share=float(np.mean(decided == 0)) if decided.size else None, **base))
            related = np.repeat([True, False], len(subset))
            both = np.concatenate([clusters, clusters])
            score = (outcomes + 1.0) / 2.0
            dp = with_reasons(demographic_parity_bias(np.concatenate([score, 1.0 - score]), related, both,
                                                      bootstrap=options.bootstrap),
                              np.concatenate([subset["excluded_reason"].to_numpy()] * 2))
            records.append(_record("demographic-parity-bias", judge, condition, dp, relations,
                                   **{**base, "variant": {**base["variant"], "preference": "verdict"}}))
            if subset["prob"].notna().any():
                prob = subset["prob"].to_numpy()
                dp_prob = with_reasons(demographic_parity_bias(np.concatenate([prob, 1.0 - prob]), related, both,
                                                               bootstrap=options.bootstrap),
                                       np.concatenate([subset["prob_excluded_reason"].to_numpy()] * 2))
                records.append(_record("demographic-parity-bias", judge, condition, dp_prob, relations,
                                       **{**base, "variant": {**base["variant"], "preference": "probability"}}))
    return records


def _gap(totals: np.ndarray) -> np.ndarray:
    return totals[..., 0] / totals[..., 1] - totals[..., 2] / totals[..., 3]


def _paired_gap(mine: pd.DataFrame, theirs: pd.DataFrame, options: AuditOptions) -> tuple[Estimate, float, float]:
    shared = np.intersect1d(mine["instance_id"].to_numpy(dtype=str), theirs["instance_id"].to_numpy(dtype=str))
    a = mine[mine["instance_id"].isin(shared)]
    b = theirs[theirs["instance_id"].isin(shared)]
    n_missing = int(a["outcome"].isna().sum() + b["outcome"].isna().sum())
    reasons = pd.concat([a["excluded_reason"], b["excluded_reason"]])
    a, b = a[a["outcome"].notna()], b[b["outcome"].notna()]
    columns = np.zeros((len(a) + len(b), 4))
    columns[: len(a), 0] = (a["outcome"].to_numpy() + 1) / 2
    columns[: len(a), 1] = 1
    columns[len(a):, 2] = (b["outcome"].to_numpy() + 1) / 2
    columns[len(a):, 3] = 1
    clusters = np.concatenate([a["instance_id"].to_numpy(dtype=str), b["instance_id"].to_numpy(dtype=str)])
    _, sums = cluster_sums(clusters, columns)
    estimate = with_reasons(cluster_bootstrap(sums, _gap, n=len(a) + len(b), n_excluded=n_missing,
                                              excluded={"no verdict": n_missing} if n_missing else {},
                                              bootstrap=options.bootstrap), reasons)
    return estimate, _mean(columns[: len(a), 0]), _mean(columns[len(a):, 2])


def _mean(values: np.ndarray) -> float:
    """Mean, or NaN for no values (undefined, not zero)."""
    return float(values.mean()) if values.size else float("nan")


def _paired_gaps(all_rows: pd.DataFrame, judge: str, condition: str, relations: _Relations,
                 options: AuditOptions) -> list[dict]:
    """Win-rate gap of related candidates under this judge vs each other judge, same items and pair."""
    mine = all_rows[(all_rows["judge"] == judge) & (all_rows["condition"] == condition)]
    others = all_rows[all_rows["judge_id"] != relations.canonical(judge)]
    records = []
    if mine.empty or others.empty:
        return records
    for (generator_id, opponent_id), group in mine.groupby(["generator_id", "opponent_id"], sort=True):
        generator, opponent = group["generator"].iloc[0], group["opponent"].iloc[0]
        strength = _STRENGTH.index(relations(judge, generator))
        if relations(judge, generator) in _UNRELATED or strength > _STRENGTH.index(relations(judge, opponent)):
            continue  # report each pair once, from its more strongly related side
        theirs_all = others[(others["generator_id"] == generator_id) & (others["opponent_id"] == opponent_id)]
        for (other_judge, other_condition), theirs in theirs_all.groupby(["judge", "condition"], sort=True):
            estimate, this_rate, other_rate = _paired_gap(group, theirs, options)
            if estimate.n == 0 and estimate.n_excluded == 0:
                continue
            same_texts = set(group["generator"]) == set(theirs["generator"]) and set(group["opponent"]) == set(theirs["opponent"])
            records.append(_record(
                "paired-win-rate-gap", judge, condition, estimate, relations, generator=generator,
                pair=[generator, opponent], scope=relations(judge, generator).lower(),
                variant={"other_judge": other_judge, "other_condition": other_condition,
                         "other_judge_relation": relations(other_judge, generator).lower(),
                         "other_judge_relation_to_opponent": relations(other_judge, opponent).lower(),
                         "texts": "identical" if same_texts else "same models, other samples",
                         "ties": "half"},
                other_generator_names=sorted(set(theirs["generator"])),
                win_rate_this_judge=this_rate, win_rate_other_judge=other_rate,
            ))
    return records


def audit_pairwise(comparisons: Comparisons, registry, *, options: AuditOptions | None = None) -> list[dict]:
    """Every first pairwise metric for every (judge, condition) in ``comparisons``."""
    options = options or AuditOptions()
    unknown = set(options.opponents) - set(OPPONENT_POPULATIONS)
    if unknown:
        raise ValueError(f"unknown opponent population(s): {', '.join(sorted(unknown))}")
    frame = comparisons.frame
    if frame.empty:
        return []
    relations = _Relations(registry)
    parts = []
    for (judge, condition), group in frame.groupby(["judge", "condition"], sort=True):
        rows = _generator_rows(group)
        rows["judge"], rows["condition"] = judge, condition
        parts.append(rows)
    all_rows = pd.concat(parts, ignore_index=True)
    all_rows["generator_id"] = all_rows["generator"].map(relations.canonical)
    all_rows["opponent_id"] = all_rows["opponent"].map(relations.canonical)
    all_rows["judge_id"] = all_rows["judge"].map(relations.canonical)
    records: list[dict] = []
    for (judge, condition), rows in all_rows.groupby(["judge", "condition"], sort=True):
        records.extend(_win_rates(rows, judge, condition, relations, options))
        records.extend(_scope_records(rows, judge, condition, relations, options))
        records.extend(_paired_gaps(all_rows, judge, condition, relations, options))
    return records
