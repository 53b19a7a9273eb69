"""The first audit: planted biases are recovered, numbers are reproducible, scopes follow the registry."""

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nepotism.analyses.audit import AuditOptions, audit_pairwise
from nepotism.analyses.comparisons import build_comparisons
from nepotism.metrics import Bootstrap
from nepotism.models import load_registry


_TOML = """
[models.j1]
family = "F"
[models.f1]
family = "F"
[models.j2]
family = "G"
[models.s1]
family = "H"
teachers = ["j1"]
[models.u1]
family = "U1"
[models.u2]
family = "U2"
"""


def TinyRegistry():
    """Judge j1 is family of f1, teacher of s1; everything else unrelated (a real registry file)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tiny.toml"
        path.write_text(_TOML)
        return load_registry([path], include_default=False)


def simulate(bias, *, n=600, seed=0, opponents=("u1", "u2", "f1", "s1")):
    """Judge j1 picks its own answer with probability `bias`, otherwise flips a fair coin (equal
    quality), in both orders; judge j2 always flips a coin. True DP bias for j1 = bias."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        for judge in ("j1", "j2"):
            for opponent in opponents:
                for first, second in (("j1", opponent), (opponent, "j1")):
                    if judge == "j1" and rng.random() < bias:
                        pick = "j1"
                    else:
                        pick = first if rng.random() < 0.5 else second
                    rows.append((f"p{i}", judge, first, second, "A" if pick == first else "B"))
    df = pd.DataFrame(rows, columns=["instance_id", "judge", "model_a", "model_b", "verdict"])
    df["condition"], df["replicate"] = "default", 0
    return df


def find(records, metric, judge, scope=None, **variant):
    out = [
        r
        for r in records
        if r["metric"] == metric
        and r["judge"] == judge
        and (scope is None or r["scope"] == scope)
        and all(r["variant"].get(k) == v for k, v in variant.items())
    ]
    assert len(out) == 1, out
    return out[0]


@pytest.mark.parametrize("bias", [0.0, 0.25, 0.5])
def test_planted_demographic_parity_bias_is_recovered_within_its_ci(bias):
    """Over 20 simulated worlds the 95% interval covers the planted bias in at least 17 (the
    expected count is 19; 17 or fewer happens with probability < 8% for a correct interval), and
    the estimates centre on the truth."""
    covered, values, spr = 0, [], []
    for seed in range(20):
        records = audit_pairwise(
            build_comparisons(simulate(bias, n=200, seed=seed)),
            TinyRegistry(),
            options=AuditOptions(bootstrap=Bootstrap(n_resamples=400, seed=seed)),
        )
        dp = find(records, "demographic-parity-bias", "j1", "self", opponents="unrelated", preference="verdict")
        covered += dp["ci_low"] <= bias <= dp["ci_high"]
        values.append(dp["value"])
        spr.append(find(records, "self-preference-ratio", "j1", "self", opponents="unrelated")["value"])
    assert covered >= 17
    assert np.mean(values) == pytest.approx(bias, abs=0.015)
    # self-preference ratio under Eq. 1 aggregation = P(own chosen in both orders)
    p_own = bias + (1 - bias) / 2
    assert np.mean(spr) == pytest.approx(p_own**2, abs=0.015)


def test_unbiased_judge_interval_covers_zero():
    records = audit_pairwise(
        build_comparisons(simulate(0.4)), TinyRegistry(), options=AuditOptions(bootstrap=Bootstrap(n_resamples=800))
    )
    # j2 never sees its own answers; its family (none present) and others are unmeasurable
    spr = find(records, "self-preference-ratio", "j2", "self", opponents="unrelated")
    assert spr["value"] is None and "no comparison" in spr["note"]


def test_scopes_use_only_unrelated_opponents():
    records = audit_pairwise(
        build_comparisons(simulate(0.2, n=50)), TinyRegistry(), options=AuditOptions(bootstrap=Bootstrap(n_resamples=0))
    )
    self_record = find(records, "self-preference-ratio", "j1", "self", opponents="unrelated")
    # opponents f1 (family) and s1 (student) are excluded from the self scope by default
    assert self_record["generators"] == ["j1"]
    assert self_record["opponent_models"] == ["u1", "u2"]
    assert self_record["n"] == 50 * 2
    # "any": every opponent less related than the judge itself
    assert find(records, "self-preference-ratio", "j1", "self", opponents="any")["n"] == 50 * 4
    # the family member f1 only ever faces the judge itself, which is more related: never counted
    family_any = find(records, "self-preference-ratio", "j1", "family", opponents="any")
    assert family_any["n"] == 0 and family_any["value"] is None


def test_same_seed_same_numbers_and_seed_matters():
    comparisons = build_comparisons(simulate(0.3, n=200))
    a = audit_pairwise(comparisons, TinyRegistry(), options=AuditOptions(bootstrap=Bootstrap(n_resamples=300, seed=7)))
    b = audit_pairwise(comparisons, TinyRegistry(), options=AuditOptions(bootstrap=Bootstrap(n_resamples=300, seed=7)))
    c = audit_pairwise(comparisons, TinyRegistry(), options=AuditOptions(bootstrap=Bootstrap(n_resamples=300, seed=8)))
    assert a == b
    assert _lows(a) != _lows(c)


def _lows(records):
    return [r["ci_low"] for r in records if r["ci_low"] is not None]


def test_paired_gap_compares_judges_on_the_same_items():
    records = audit_pairwise(
        build_comparisons(simulate(0.5, n=300)), TinyRegistry(), options=AuditOptions(bootstrap=Bootstrap(n_resamples=500))
    )
    gaps = [r for r in records if r["metric"] == "paired-win-rate-gap" and r["judge"] == "j1" and r["pair"] == ["j1", "u1"]]
    assert len(gaps) == 1
    gap = gaps[0]
    # j1 wins with prob 0.75 per order under j1, 0.5 under j2 -> aggregated win-rate gap ~ (0.75-0.5)
    assert gap["variant"]["other_judge"] == "j2"
    assert gap["ci_low"] > 0.1
    assert gap["win_rate_this_judge"] > gap["win_rate_other_judge"]


def test_excluded_comparisons_are_counted_in_the_metrics():
    df = simulate(0.0, n=40)
    df.loc[df.index[:6], "verdict"] = None  # unparsed rows
    records = audit_pairwise(build_comparisons(df), TinyRegistry(), options=AuditOptions(bootstrap=Bootstrap(n_resamples=0)))
    wins = [r for r in records if r["metric"] == "win-rate" and r["judge"] == "j1"]
    assert sum(r["n_excluded"] for r in wins) > 0
    # counted by status and reason: these rows were made unparsed without a recorded reason
    assert all(r["excluded"].get("unparsed", 0) == r["n_excluded"] for r in wins)
    df["status"] = np.where(df["verdict"].isna(), "failed", "parsed")
    df["reason"] = np.where(df["verdict"].isna(), "timeout", None)
    records = audit_pairwise(build_comparisons(df), TinyRegistry(), options=AuditOptions(bootstrap=Bootstrap(n_resamples=0)))
    wins = [r for r in records if r["metric"] == "win-rate" and r["judge"] == "j1"]
    assert all(r["excluded"].get("failed-timeout", 0) == r["n_excluded"] > 0 for r in wins if r["n_excluded"])
