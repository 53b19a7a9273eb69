"""The gaming signal (issue 39): exclusion-share-gap records and the generators they flag.

A generator whose text holds the verdict markers a judge writes can turn its losses into judgments
without a verdict. Planted here: one generator's judgments are left out far more often than the
others' (as a gaming candidate's would be). The rule (`nepotism.metrics.coverage.gaming_flag`,
docs/verdicts.md) must flag it and nothing else, stay quiet on tables without one (its false-alarm
rate over many seeded tables is held to the level it claims), leave out the judgments a failed
generation prevented, and reach `Results.summary["flagged_candidates"]`.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from nepotism import audit
from nepotism.analyses.suite import SuiteOptions, run_suite
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.models import load_registry
from nepotism.simulate import SimulationSpec

GENERATORS = ("judge-a", "judge-b", "student-a", "other-1", "other-2")


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    path = tmp_path_factory.mktemp("registry") / "registry.toml"
    path.write_text(SimulationSpec().registry_toml())
    return load_registry([str(path)])


def _pairwise(
    seed: int,
    *,
    gamer: str | None = "other-2",
    base: float = 0.04,
    gamed: float = 0.4,
    prompts: int = 60,
    reason: str = "quoted_only",
) -> pd.DataFrame:
    """Every pair of GENERATORS in both orders on each prompt, judged by judge-a. A prompt has its
    own exclusion propensity (prompts cluster); a judgment showing ``gamer`` is left out with
    probability ``gamed``, any other with ``base`` (times the prompt's propensity)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(prompts):
        propensity = rng.uniform(0.5, 1.5)
        for x, y in itertools.combinations(GENERATORS, 2):
            for a, b in ((x, y), (y, x)):
                p = (gamed if gamer in (a, b) else base) * propensity
                row = {"instance_id": f"q{i:03d}", "judge": "judge-a", "model_a": a, "model_b": b}
                if rng.random() < p:
                    rows.append(row | {"verdict": None, "status": "unparsed", "reason": reason})
                else:
                    rows.append(row | {"verdict": str(rng.choice(["A", "B"])), "status": "parsed", "reason": None})
    return pd.DataFrame(rows)


def _gaps(records: list[dict]) -> dict[str, dict]:
    return {r["generator"]: r for r in records if r["metric"] == "exclusion-share-gap"}


def test_a_planted_gaming_generator_is_flagged_and_no_other(registry):
    results = audit(_pairwise(1), kind="pairwise", registry=registry, bootstrap=Bootstrap(n_resamples=1000))
    gaps = _gaps(results.to_dicts())
    assert set(gaps) == set(GENERATORS)
    assert [g for g, r in gaps.items() if r["flagged"]] == ["other-2"]
    gamer = gaps["other-2"]
    # the record states its numbers: the candidate's share, the others', n and the test's level
    assert gamer["n"] == 60 * 4 * 2 and gamer["others_n"] == 60 * 6 * 2
    assert gamer["share"] == pytest.approx(gamer["n_excluded"] / gamer["n"])
    assert gamer["others_share"] == pytest.approx(gamer["others_n_excluded"] / gamer["others_n"])
    assert gamer["value"] == pytest.approx(gamer["share"] - gamer["others_share"])
    assert gamer["ci_low"] > 0 and gamer["p_value"] <= gamer["p_threshold"] == pytest.approx(0.05 / 5)
    assert gamer["excluded"] == {"unparsed-quoted-only": gamer["n_excluded"]}
    assert gamer["variant"] == {"kind": "pairwise"} and gamer["n_clusters"] == 60
    # an innocent generator, often paired with the gamer, is not flagged: its gap is below zero
    assert gaps["other-1"]["value"] < 0 and not gaps["other-1"]["flagged"]
    (flag,) = results.summary["flagged_candidates"]
    assert flag == {
        "judge": "judge-a",
        "condition": "default",
        "kind": "pairwise",
        "generator": "other-2",
        "share": gamer["share"],
        "others_share": gamer["others_share"],
        "n": gamer["n"],
        "n_excluded": gamer["n_excluded"],
        "reason": "unparsed-quoted-only",
        "p_value": gamer["p_value"],
    }


def test_without_a_gaming_generator_flags_stay_within_the_level(registry):
    """Equal exclusion rates for everyone (clustered by prompt): over 40 seeded tables, a table with
    any flag is rarer than the familywise level the rule claims (5%: Bonferroni over 5 generators),
    with room for the bootstrap's approximation."""
    options = SuiteOptions(bootstrap=Bootstrap(n_resamples=400))
    flagged = 0
    for seed in range(40):
        frame = _pairwise(100 + seed, gamer=None, base=0.1, prompts=40)
        records = run_suite(frame, "pairwise", registry, options=options).records
        gaps = _gaps(records)
        assert len(gaps) == len(GENERATORS)
        flagged += any(r["flagged"] for r in gaps.values())
    assert flagged <= 4


def test_a_small_excess_is_not_far_more_often(registry):
    # 6% against 4%: a real difference over many prompts, but not twice the others' share
    frame = _pairwise(3, base=0.04, gamed=0.065, prompts=400)
    gaps = _gaps(run_suite(frame, "pairwise", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=400))).records)
    assert not any(r["flagged"] for r in gaps.values())
    assert gaps["other-2"]["share"] < 2 * gaps["other-2"]["others_share"]


def test_judgments_a_failed_generation_prevented_are_left_out(registry):
    """A generator whose generations failed gets `failed-generation:` rows: the judge never saw it,
    so they are no sign of gaming the judge and count on neither side."""
    frame = _pairwise(4, gamer="other-2", gamed=0.5, reason="generation:timeout")
    frame.loc[frame["reason"] == "generation:timeout", "status"] = "failed"
    gaps = _gaps(run_suite(frame, "pairwise", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=200))).records)
    prevented = int((frame["reason"] == "generation:timeout").sum())
    assert not any(r["flagged"] for r in gaps.values())
    assert gaps["other-2"]["n"] + gaps["other-2"]["others_n"] == len(frame) - prevented
    assert all("failed-generation:timeout" not in r["excluded"] for r in gaps.values())


def test_pointwise_rubric_and_recognition_tables_get_the_signal_too(registry):
    rng = np.random.default_rng(5)
    rows = []
    for i in range(80):
        for model in GENERATORS:
            gone = rng.random() < (0.5 if model == "other-2" else 0.03)
            rows.append(
                {
                    "instance_id": f"q{i}",
                    "judge": "judge-a",
                    "model": model,
                    "score": None if gone else float(rng.integers(1, 11)),
                    "status": "unparsed" if gone else "parsed",
                    "reason": "quoted_only" if gone else None,
                }
            )
    pointwise = pd.DataFrame(rows)
    options = SuiteOptions(bootstrap=Bootstrap(n_resamples=400))
    gaps = _gaps(run_suite(pointwise, "pointwise", registry, options=options).records)
    assert [g for g, r in gaps.items() if r["flagged"]] == ["other-2"] and gaps["other-2"]["n"] == 80
    rubric = pointwise.rename(columns={"score": "met"}).assign(
        rubric_id="r1", met=lambda f: f["met"].map(lambda v: None if v is None or v != v else v > 5)
    )
    gaps = _gaps(run_suite(rubric, "rubric", registry, options=options).records)
    assert [g for g, r in gaps.items() if r["flagged"]] == ["other-2"] and gaps["other-2"]["variant"]["kind"] == "rubric"
    recognition = pointwise.rename(columns={"score": "claimed"}).assign(
        claimed=lambda f: f["claimed"].map(lambda v: None if v is None or v != v else v > 5)
    )
    gaps = _gaps(run_suite(recognition, "recognition", registry, options=options).records)
    assert [g for g, r in gaps.items() if r["flagged"]] == ["other-2"]


def test_a_judge_that_saw_two_generators_only_has_no_gap_records(registry):
    frame = _pairwise(6)
    frame = frame[frame["model_a"].isin(("judge-a", "other-2")) & frame["model_b"].isin(("judge-a", "other-2"))]
    records = run_suite(frame, "pairwise", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=50))).records
    assert not _gaps(records)  # every judgment shows both: nothing to set either against
    assert any(r["metric"] == "excluded-verdicts" for r in records)


def test_the_test_needs_no_resamples_and_a_few_exclusions(registry):
    """The flag's p-value is a cluster-robust z-test, not the bootstrap's share of resamples: it
    does not bottom out at 1 / (resamples + 1), so it flags without resamples (no interval then)
    and with many generators; a candidate with fewer than 5 judgments left out is never flagged."""
    records = run_suite(_pairwise(1), "pairwise", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0))).records
    gaps = _gaps(records)
    assert gaps["other-2"]["ci_low"] is None and gaps["other-2"]["p_value"] < 1e-6
    assert [g for g, r in gaps.items() if r["flagged"]] == ["other-2"]
    few = _pairwise(2, gamed=0.08, base=0.0, prompts=12)  # a handful left out, none among the others
    gaps = _gaps(run_suite(few, "pairwise", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=200))).records)
    assert gaps["other-2"]["others_n_excluded"] == 0 and 0 < gaps["other-2"]["n_excluded"] < 5
    assert not gaps["other-2"]["flagged"]


def test_suite_records_equal_the_estimator_generator_by_generator(registry):
    """The suite resamples every generator of a judge in one product (`EXCLUSION_SHARE_GAP.dense_sums`, one prompt code
    per judgment); each record equals `exclusion_share_gap` on that generator alone."""
    from nepotism.metrics.coverage import exclusion_share_gap

    frame = _pairwise(8, prompts=30)
    frame.loc[frame.index[::17], ["verdict", "status", "reason"]] = [None, "failed", "timeout"]
    boot = Bootstrap(n_resamples=300, seed=4)
    gaps = _gaps(run_suite(frame, "pairwise", registry, options=SuiteOptions(bootstrap=boot)).records)
    missing = frame["verdict"].isna().to_numpy()
    reasons = [f"{s}-{r.replace('_', '-')}" if m else None for s, r, m in zip(frame["status"], frame["reason"], missing)]
    for name in GENERATORS:
        shown = ((frame["model_a"] == name) | (frame["model_b"] == name)).to_numpy()
        est = exclusion_share_gap(missing, shown, frame["instance_id"].to_numpy(), reasons=reasons, bootstrap=boot)
        record = gaps[name]
        assert (record["value"], record["ci_low"], record["ci_high"], record["p_value"]) == (
            est.value,
            est.ci_low,
            est.ci_high,
            est.p_value,
        )
        assert (record["n"], record["n_excluded"], record["excluded"], record["n_clusters"]) == (
            est.n,
            est.n_excluded,
            dict(est.excluded),
            est.n_clusters,
        )
