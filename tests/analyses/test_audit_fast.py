"""The audit's batched path gives the records of the straightforward one, bit for bit.

`straightforward_audit` below computes every record the plain way: a pandas group per (judge,
condition), per generator, per scope and per pair of judges, each metric called on its own rows
with string instance ids and its own bootstrap product (`win_rate`, `self_preference_ratio`,
`demographic_parity_bias`, `cluster_bootstrap`). The planted table has what makes the fast path's
bookkeeping hard: failed and unparsed verdicts with reasons, single-order comparisons, label
probabilities missing in places, two conditions, a second replicate, a judge that skipped
instances (so records resample different numbers of prompts), an alias (two names, one model),
students and families.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from nepotism.analyses.audit import _STRENGTH, SCOPES, AuditOptions, _Relations, audit_pairwise
from nepotism.analyses.comparisons import build_comparisons, with_reasons
from nepotism.metrics import Bootstrap
from nepotism.metrics.bootstrap import cluster_bootstrap
from nepotism.metrics.definitions import PAIRED_WIN_RATE_GAP
from nepotism.metrics.pairwise import demographic_parity_bias, self_preference_ratio, win_rate
from nepotism.models import less_related, load_registry
from nepotism.simulate import SimulationSpec, simulate
from nepotism.tables import validate


# ------------------------------------------------------------------ the straightforward computation
def _record(metric, judge, condition, estimate, relations, **extra):
    record = {
        "metric": metric,
        "judge": judge,
        "judge_id": relations.canonical(judge),
        "condition": condition,
        "generator": None,
        "pair": None,
        "scope": None,
        "variant": {},
    }
    record.update(extra)
    record.update(estimate.as_dict())
    return record


def _generator_rows(frame):
    reasons = {c: frame[c] if c in frame else None for c in ("excluded_reason", "prob_excluded_reason")}
    x = pd.DataFrame(
        {
            "instance_id": frame["instance_id"],
            "generator": frame["model_x"],
            "opponent": frame["model_y"],
            "outcome": frame["outcome"],
            "prob": frame["prob_x"],
            **reasons,
        }
    )
    y = pd.DataFrame(
        {
            "instance_id": frame["instance_id"],
            "generator": frame["model_y"],
            "opponent": frame["model_x"],
            "outcome": -frame["outcome"],
            "prob": 1.0 - frame["prob_x"],
            **reasons,
        }
    )
    return pd.concat([x, y], ignore_index=True)


def _win_rates(rows, judge, condition, relations, options):
    records = []
    for generator, group in rows.groupby("generator", sort=True):
        estimate = with_reasons(
            win_rate(group["outcome"].to_numpy(), group["instance_id"].to_numpy(), bootstrap=options.bootstrap),
            group["excluded_reason"],
        )
        opponents = sorted(group["opponent"].unique())
        variant = {"ties": "half", "opponents": opponents if len(opponents) <= 3 else f"{len(opponents)} models"}
        records.append(
            _record(
                "win-rate",
                judge,
                condition,
                estimate,
                relations,
                generator=generator,
                variant=variant,
                relation=relations(judge, generator).lower(),
                n_ties=int((group["outcome"] == 0).sum()),
            )
        )
    return records


def _scope_records(rows, judge, condition, relations, options):
    records = []
    generator_scope = rows["generator"].map(lambda g: relations.scope(judge, g))
    opponent_scope = rows["opponent"].map(lambda g: relations.scope(judge, g))
    for scope in SCOPES:
        for opponents in options.opponents:
            mask = generator_scope == scope
            if opponents == "unrelated":
                mask &= opponent_scope.isin(["unrelated", "unknown"])
            else:
                mask &= opponent_scope.map(lambda o: less_related(o, scope))
            subset = rows[mask]
            base = {
                "scope": scope,
                "variant": {"opponents": opponents},
                "generators": sorted(subset["generator"].unique()),
                "opponent_models": sorted(subset["opponent"].unique())[:20],
            }
            if subset.empty:
                what = "an unrelated" if opponents == "unrelated" else "any other"
                empty = cluster_bootstrap(
                    np.zeros((0, 1)),
                    lambda t: t[..., 0],
                    n=0,
                    note=f"no comparison of a {scope} candidate with {what} model",
                    bootstrap=options.bootstrap,
                )
                records.append(_record("self-preference-ratio", judge, condition, empty, relations, **base))
                records.append(_record("demographic-parity-bias", judge, condition, empty, relations, **base))
                continue
            clusters = subset["instance_id"].to_numpy()
            outcomes = subset["outcome"].to_numpy()
            decided = outcomes[~np.isnan(outcomes)]
            spr = with_reasons(self_preference_ratio(outcomes, clusters, bootstrap=options.bootstrap), subset["excluded_reason"])
            records.append(
                _record(
                    "self-preference-ratio",
                    judge,
                    condition,
                    spr,
                    relations,
                    tie_share=float(np.mean(decided == 0)) if decided.size else None,
                    **base,
                )
            )
            related = np.repeat([True, False], len(subset))
            both = np.concatenate([clusters, clusters])
            score = (outcomes + 1.0) / 2.0
            dp = with_reasons(
                demographic_parity_bias(np.concatenate([score, 1.0 - score]), related, both, bootstrap=options.bootstrap),
                np.concatenate([subset["excluded_reason"].to_numpy()] * 2),
            )
            records.append(
                _record(
                    "demographic-parity-bias",
                    judge,
                    condition,
                    dp,
                    relations,
                    **{**base, "variant": {**base["variant"], "preference": "verdict"}},
                )
            )
            if subset["prob"].notna().any():
                prob = subset["prob"].to_numpy()
                dp_prob = with_reasons(
                    demographic_parity_bias(np.concatenate([prob, 1.0 - prob]), related, both, bootstrap=options.bootstrap),
                    np.concatenate([subset["prob_excluded_reason"].to_numpy()] * 2),
                )
                records.append(
                    _record(
                        "demographic-parity-bias",
                        judge,
                        condition,
                        dp_prob,
                        relations,
                        **{**base, "variant": {**base["variant"], "preference": "probability"}},
                    )
                )
                chosen = np.where(np.isnan(prob), np.nan, np.where(prob > 0.5, 1.0, np.where(prob < 0.5, 0.0, 0.5)))
                dp_arg = with_reasons(
                    demographic_parity_bias(np.concatenate([chosen, 1.0 - chosen]), related, both, bootstrap=options.bootstrap),
                    np.concatenate([subset["prob_excluded_reason"].to_numpy()] * 2),
                )
                records.append(
                    _record(
                        "demographic-parity-bias",
                        judge,
                        condition,
                        dp_arg,
                        relations,
                        **{**base, "variant": {**base["variant"], "preference": "probability-argmax"}},
                    )
                )
    return records


def _mean(values):
    return float(values.mean()) if values.size else float("nan")


def _paired_gap(mine, theirs, options):
    """The paired gap by its definition on the rows of both judges (shared instances only)."""
    shared = np.intersect1d(mine["instance_id"].to_numpy(dtype=str), theirs["instance_id"].to_numpy(dtype=str))
    a = mine[mine["instance_id"].astype(str).isin(shared)]
    b = theirs[theirs["instance_id"].astype(str).isin(shared)]
    reasons = pd.concat([a["excluded_reason"], b["excluded_reason"]])
    outcome = np.concatenate([a["outcome"].to_numpy(dtype=float), b["outcome"].to_numpy(dtype=float)])
    other = np.repeat([False, True], [len(a), len(b)])
    clusters = np.concatenate([a["instance_id"].to_numpy(dtype=str), b["instance_id"].to_numpy(dtype=str)])
    estimate = with_reasons(PAIRED_WIN_RATE_GAP.estimate(outcome, other, clusters=clusters, bootstrap=options.bootstrap), reasons)
    rates = [(o.dropna().to_numpy() + 1) / 2 for o in (a["outcome"], b["outcome"])]
    return estimate, _mean(rates[0]), _mean(rates[1])


def _paired_gaps(all_rows, judge, condition, relations, options):
    mine = all_rows[(all_rows["judge"] == judge) & (all_rows["condition"] == condition)]
    others = all_rows[all_rows["judge_id"] != relations.canonical(judge)]
    records = []
    if mine.empty or others.empty:
        return records
    for (generator_id, opponent_id), group in mine.groupby(["generator_id", "opponent_id"], sort=True):
        generator, opponent = group["generator"].iloc[0], group["opponent"].iloc[0]
        strength = _STRENGTH.index(relations(judge, generator))
        if relations(judge, generator) in ("UNRELATED", "UNKNOWN") or strength > _STRENGTH.index(relations(judge, opponent)):
            continue
        theirs_all = others[(others["generator_id"] == generator_id) & (others["opponent_id"] == opponent_id)]
        for (other_judge, other_condition), theirs in theirs_all.groupby(["judge", "condition"], sort=True):
            estimate, this_rate, other_rate = _paired_gap(group, theirs, options)
            if estimate.n == 0 and estimate.n_excluded == 0:
                continue
            same_texts = set(group["generator"]) == set(theirs["generator"]) and set(group["opponent"]) == set(theirs["opponent"])
            records.append(
                _record(
                    "paired-win-rate-gap",
                    judge,
                    condition,
                    estimate,
                    relations,
                    generator=generator,
                    pair=[generator, opponent],
                    scope=relations(judge, generator).lower(),
                    variant={
                        "other_judge": other_judge,
                        "other_condition": other_condition,
                        "other_judge_relation": relations(other_judge, generator).lower(),
                        "other_judge_relation_to_opponent": relations(other_judge, opponent).lower(),
                        "texts": "identical" if same_texts else "same models, other samples",
                        "ties": "half",
                    },
                    other_generator_names=sorted(set(theirs["generator"])),
                    win_rate_this_judge=this_rate,
                    win_rate_other_judge=other_rate,
                )
            )
    return records


def straightforward_audit(comparisons, registry, options):
    relations = _Relations(registry)
    parts = []
    for (judge, condition), group in comparisons.frame.groupby(["judge", "condition"], sort=True):
        rows = _generator_rows(group)
        rows["judge"], rows["condition"] = judge, condition
        parts.append(rows)
    all_rows = pd.concat(parts, ignore_index=True)
    for column in ("generator", "opponent", "judge"):
        all_rows[f"{column}_id"] = all_rows[column].map(relations.canonical)
    records = []
    for (judge, condition), rows in all_rows.groupby(["judge", "condition"], sort=True):
        records += _win_rates(rows, judge, condition, relations, options)
        records += _scope_records(rows, judge, condition, relations, options)
        records += _paired_gaps(all_rows, judge, condition, relations, options)
    return records


# ------------------------------------------------------------------ the planted table
MODELS = ("j-a", "j-b", "j-c", "s-a", "s-b", "o-1", "o-2")


def planted(tmp_path, seed=0):
    spec = SimulationSpec(
        judges=("j-a", "j-b", "j-c"),
        generators=MODELS,
        families={"j-a": "A", "j-b": "B", "j-c": "A", "s-a": "S", "s-b": "S", "o-1": "O1", "o-2": "O2"},
        students={"s-a": "j-a", "s-b": "j-c"},
        n_instances=60,
        self_bias=0.8,
        family_bias=0.4,
        student_bias=0.5,
        tie_rate=0.15,
    )
    frame = simulate(spec, seed=seed, kinds=("pairwise",)).pairwise
    rng = np.random.default_rng(seed)
    n = len(frame)
    frame["prob_a"] = rng.uniform(0.05, 0.95, n)
    frame["prob_b"] = 1.0 - frame["prob_a"]
    frame.loc[rng.random(n) < 0.05, ["prob_a", "prob_b"]] = np.nan
    frame["status"], frame["reason"] = "parsed", None
    failed = rng.random(n) < 0.04
    frame.loc[failed, ["verdict", "prob_a", "prob_b"]] = None
    frame.loc[failed, "status"] = np.where(rng.random(failed.sum()) < 0.5, "failed", "unparsed")
    frame.loc[failed, "reason"] = np.where(frame.loc[failed, "status"] == "failed", "timeout", "conflicting")
    frame = frame[rng.random(n) > 0.03]  # single-order comparisons
    frame = frame[~((frame["judge"] == "j-c") & frame["instance_id"].isin([f"x{i:05d}" for i in range(0, 60, 7)]))]
    other = frame[frame["instance_id"] < "x00030"].assign(condition="shuffled")  # a second condition
    again = frame[(frame["judge"] == "j-b") & (frame["instance_id"] < "x00010")].assign(replicate=1)
    frame = pd.concat([frame, other, again], ignore_index=True)
    alias = (frame["judge"] == "j-b") & (frame["instance_id"] > "x00040")  # another name for o-1's answers
    for column in ("model_a", "model_b"):
        frame.loc[alias & (frame[column] == "o-1"), column] = "o-1-alias"
    registry_toml = spec.registry_toml().replace('[models."o-1"]', '[models."o-1"]\naliases = ["o-1-alias"]')
    (tmp_path / "registry.toml").write_text(registry_toml)
    for column in ("prob_a", "prob_b"):  # an empty cell, as a file has it
        frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
    return validate(frame.reset_index(drop=True), kind="pairwise").frame, load_registry([tmp_path / "registry.toml"])


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_fast_audit_equals_the_straightforward_computation(tmp_path, method):
    frame, registry = planted(tmp_path)
    comparisons = build_comparisons(frame)
    options = AuditOptions(bootstrap=Bootstrap(n_resamples=300, seed=3, method=method))
    fast = audit_pairwise(comparisons, registry, options=options)
    slow = straightforward_audit(comparisons, registry, options)
    assert len(fast) == len(slow) > 100
    assert json.dumps(fast) == json.dumps(slow)  # every key, in order, every number to the bit
    kinds = {(r["metric"], (r["variant"] or {}).get("texts")) for r in fast}
    assert ("paired-win-rate-gap", "same models, other samples") in kinds  # the alias was exercised
    assert any(r["excluded"].get("failed-timeout") for r in fast)
    assert len({r["n_clusters"] for r in fast}) > 3  # records resampling different numbers of prompts
    assert any((r["variant"] or {}).get("preference") == "probability" and r["value"] is not None for r in fast)


def test_fast_audit_equals_the_straightforward_computation_on_integer_ids(tmp_path):
    """Integer instance ids sort as numbers for the per-judge metrics and as text for the gaps (the
    gaps used to be dropped for them: the shared ids were compared as text with numbers)."""
    frame, registry = planted(tmp_path, seed=1)
    comparisons = build_comparisons(frame)
    numbered = comparisons.frame.assign(instance_id=comparisons.frame["instance_id"].str[1:].astype(int) * 3)
    comparisons = type(comparisons)(frame=numbered, excluded=comparisons.excluded, rule=comparisons.rule)
    options = AuditOptions(bootstrap=Bootstrap(n_resamples=200, seed=0), opponents=("any",))
    assert json.dumps(audit_pairwise(comparisons, registry, options=options)) == json.dumps(
        straightforward_audit(comparisons, registry, options)
    )
