"""`nepotism.analyses.verdicts`: the evidence ladder (docs/answer.md) on planted and clean judges."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import nepotism
from nepotism.analyses.verdicts import MIN_PROMPTS, judge_verdicts, summary_rows
from nepotism.metrics import Bootstrap
from nepotism.models import load_registry
from nepotism.results import Results, Verdict, record_key
from nepotism.simulate import panel_spec, simulate

BOOT = Bootstrap(n_resamples=300, seed=3)


@pytest.fixture(scope="module")
def panel(tmp_path_factory):
    """Five judges (docs/matched-bias.md): judge-a clean with the strongest answers, judge-b with
    planted self, family and student effects, judge-c/d unrelated references, judge-e a student."""
    sim = simulate(
        panel_spec(n_instances=160, planted={"self": 0.8, "family": 0.8, "student": 0.8}), seed=11, kinds=("pairwise",)
    )
    folder = tmp_path_factory.mktemp("panel")
    registry_file = folder / "registry.toml"
    registry_file.write_text(sim.spec.registry_toml())
    results = nepotism.audit(
        sim.pairwise, references={"preference-ref": sim.preference_ref}, models=[registry_file], bootstrap=BOOT
    )
    return results


def _verdict(results, judge, scope) -> Verdict:
    return next(v for v in results.verdicts if v.judge == judge and v.scope == scope)


def test_planted_judge_favours_and_clean_judge_does_not(panel):
    for scope in ("self", "family", "student"):
        planted, clean = _verdict(panel, "judge-b", scope), _verdict(panel, "judge-a", scope)
        assert planted.status == clean.status == "measured"
        assert planted.rung == clean.rung == "matched" and planted.metric == "matched-bias"
        assert planted.finding == "favours" and planted.ci_low > 0
        assert clean.finding != "favours" and abs(clean.value) < 0.05 < planted.value
        assert planted.n_clusters >= MIN_PROMPTS and planted.harm is not None and planted.harm["usable"]


def test_reference_rung_would_flag_the_clean_strong_judge(panel):
    """Why matched comes first: the clean judge's equal-opportunity bias is positive (its answers
    win by wide margins), the verdict reads the matched comparison instead and lists the reference
    reading under `also`."""
    flagged_by_eo = []
    for scope in ("self", "family", "student"):
        clean = _verdict(panel, "judge-a", scope)
        eo = next(a for a in clean.also if a["metric"] == "equal-opportunity-bias")
        assert eo["rung"] == "reference" and eo["used"] is False
        assert eo["value"] > clean.value  # the margin effect pushes the reference reading up
        if eo["ci_low"] > 0:
            flagged_by_eo.append(scope)
            assert clean.finding != "favours"
    assert flagged_by_eo  # the reference rung alone would have called the clean judge biased


def test_reference_judges_are_one_line_and_say_why(panel):
    rows = [r for r in summary_rows(panel.verdicts) if r["judge"] == "judge-c"]
    assert len(rows) == 1 and rows[0]["status"] == "not-measurable" and rows[0]["value"] == "—"
    self_verdict = _verdict(panel, "judge-c", "self")
    assert "its own answers are not among the 9 generators it judged" in self_verdict.sentence
    assert any("answers written by the judge itself" in n for n in self_verdict.needs)


def test_evidence_keys_name_records_of_the_results(panel):
    keys = {record_key(r) for r in panel}
    for v in panel.verdicts:
        assert set(v.evidence) <= keys
        if v.status == "measured":
            record = next(r for r in panel if record_key(r) == v.evidence[0])
            assert (record.metric, record.value, record.ci_low, record.ci_high) == (v.metric, v.value, v.ci_low, v.ci_high)


def _one_judge(n_prompts: int, *, own_wins: float, seed: int = 0) -> pd.DataFrame:
    """gpt-4 judging its own answers against claude-2's, both orders, on n_prompts prompts."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_prompts):
        own = rng.random() < own_wins
        rows.append(
            {"instance_id": f"p{i}", "judge": "gpt-4", "model_a": "gpt-4", "model_b": "claude-2", "verdict": "A" if own else "B"}
        )
        rows.append(
            {"instance_id": f"p{i}", "judge": "gpt-4", "model_a": "claude-2", "model_b": "gpt-4", "verdict": "B" if own else "A"}
        )
    return pd.DataFrame(rows)


def test_too_little_data_gives_no_number():
    results = nepotism.audit(_one_judge(12, own_wins=0.7), bootstrap=BOOT)
    v = _verdict(results, "gpt-4", "self")
    assert v.status == "too-little-data" and v.value is None and v.rung is None
    assert "only 12 prompts" in v.sentence and "at least 30" in v.sentence
    # the same with the minimum lowered: a number, from the judge alone, which says what it cannot tell
    lowered = judge_verdicts(results.to_dicts(), results.summary["relations"], min_prompts=10)
    v = next(x for x in lowered if x.scope == "self")
    assert v.status == "measured" and v.rung == "alone" and v.finding == "cannot-separate"
    assert "cannot tell favouritism from better answers" in v.sentence


@pytest.mark.parametrize("condition", ["default", "a"])
def test_the_judge_alone_reads_the_pooled_ratio_not_the_per_evaluatee_tables(condition):
    """Paper 004's per-evaluatee SPR (Tables 1, 3, 5: each evaluatee's cell and their mean) sits beside
    the pooled one with the same prompts; the verdict reads the pooled share (Eq. 2). Planted: own
    answer wins 32 of 40 prompts against claude-2 and 2 of 20 against llama-2-70b-chat: pooled 34/60,
    the mean over evaluatees (0.8 + 0.1) / 2 = 0.45. The two records tie on prompts and comparisons,
    so only the record keys would order them (condition "a": the mean's key sorts first)."""
    rows = []
    for other, n, wins, start in (("claude-2", 40, 32, 0), ("llama-2-70b-chat", 20, 2, 40)):
        for i in range(n):
            own = i < wins
            rows.append(
                {
                    "instance_id": f"p{start + i}",
                    "judge": "gpt-4",
                    "model_a": "gpt-4",
                    "model_b": other,
                    "verdict": "A" if own else "B",
                    "condition": condition,
                }
            )
            rows.append(
                {
                    "instance_id": f"p{start + i}",
                    "judge": "gpt-4",
                    "model_a": other,
                    "model_b": "gpt-4",
                    "verdict": "B" if own else "A",
                    "condition": condition,
                }
            )
    results = nepotism.audit(pd.DataFrame(rows), bootstrap=BOOT)
    spr = {
        (r.get("variant") or {}).get("averaging"): r["value"]
        for r in results.to_dicts()
        if r["metric"] == "self-preference-ratio"
        and r["scope"] == "self"
        and (r.get("variant") or {}).get("opponents") == "unrelated"
        and "ties" not in (r.get("variant") or {})
    }
    assert spr[None] == pytest.approx(34 / 60) and spr["per-evaluatee"] == pytest.approx(0.45)
    v = _verdict(results, "gpt-4", "self")
    assert v.rung == "alone" and v.metric == "self-preference-ratio" and "averaging" not in v.variant
    assert v.value == pytest.approx(34 / 60)


def test_a_zero_width_interval_is_not_a_finding():
    results = nepotism.audit(_one_judge(80, own_wins=1.0), bootstrap=BOOT)  # every prompt: own answer wins
    v = _verdict(results, "gpt-4", "self")
    assert v.status == "too-little-data" and v.value is None
    assert "zero width" in v.sentence


def test_human_labels_give_a_reference_verdict_and_the_vote_choice_is_recorded():
    judged = _one_judge(60, own_wins=0.8, seed=2)
    rng = np.random.default_rng(5)
    labels = []
    for i in range(60):  # three crowd votes per pair, mostly for claude-2
        for k in range(3):
            labels.append(
                {
                    "instance_id": f"p{i}",
                    "model_a": "gpt-4",
                    "model_b": "claude-2",
                    "winner": "claude-2" if rng.random() < 0.6 else "gpt-4",
                    "annotator": f"u{k}",
                }
            )
    labels = pd.DataFrame(labels)
    each = nepotism.audit(judged, references={"preference-ref": labels}, bootstrap=BOOT)
    majority = nepotism.audit(judged, references={"preference-ref": labels}, bootstrap=BOOT, reference_vote="majority")
    for results, vote in ((each, "each"), (majority, "majority")):
        v = _verdict(results, "gpt-4", "self")
        assert v.rung == "reference" and v.metric == "equal-opportunity-bias" and v.variant["reference_vote"] == vote
        assert results.summary["reference_labels_per_pair"] == 3 and results.summary["reference_vote"] == vote
        assert "human preference labels" in v.sentence
    # majority: one label per pair, so half the rows of one vote each (two sides per labelled pair)
    n_each = next(
        r for r in each if r.metric == "equal-opportunity-bias" and r.scope == "self" and "preference" not in r.variant
    ).n
    n_majority = next(
        r for r in majority if r.metric == "equal-opportunity-bias" and r.scope == "self" and "preference" not in r.variant
    ).n
    assert n_each == 3 * n_majority
    with pytest.raises(nepotism.InputError):
        nepotism.audit(judged, reference_vote="median")


def test_results_document_round_trip(panel):
    document = json.loads(panel.to_json())
    assert document["schema_version"] == 2
    assert len(document["verdicts"]) == len(panel.verdicts)
    assert document["findings"] == [v.sentence for v in panel.verdicts]
    back = Results.from_document(document)
    assert back.verdicts == panel.verdicts and back == panel
    with pytest.raises(ValueError, match="schema_version"):
        Results.from_document({**document, "schema_version": 99})


def test_verdict_validation():
    with pytest.raises(ValueError):
        Verdict(judge="j", condition="c", scope="self", status="maybe", sentence="")
    with pytest.raises(ValueError):
        Verdict(judge="j", condition="c", scope="self", status="measured", sentence="", rung="alone")
    with pytest.raises(ValueError):
        judge_verdicts([], min_prompts=0)


def test_registry_names_come_from_the_census():
    registry = load_registry([])
    frame = _one_judge(40, own_wins=0.6).replace({"gpt-4": "gpt4"})  # the data's name for gpt-4 (an alias)
    if not registry.knows("gpt4"):
        pytest.skip("the bundled registry has no alias gpt4")
    results = nepotism.audit(frame, bootstrap=BOOT)
    entry = results.summary["relations"][0]
    assert entry["judge"] == "gpt4" and entry["judge_id"] == registry.resolve("gpt4")


def _census_by_rows(frame: pd.DataFrame, registry) -> list[tuple]:
    """The census spelled per row (the plain reading of its docstring), to hold the coded one to."""
    condition = frame["condition"] if "condition" in frame else pd.Series("default", index=frame.index)
    out = {}
    for column in ("model_a", "model_b"):
        for judge, cond, model, inst in zip(
            frame["judge"].astype(str), condition.astype(str), frame[column].astype(str), frame["instance_id"].astype(str)
        ):
            entry = out.setdefault((judge, cond), (set(), set()))
            entry[0].add(model.split("@", 1)[0])
            entry[1].add(inst)
    rows = []
    for (judge, cond), (models, prompts) in sorted(out.items()):
        scopes: dict[str, list[str]] = {}
        for m in sorted(models):
            scopes.setdefault(registry.scope(judge, m), []).append(m)
        rows.append((judge, cond, len(prompts), dict(sorted(scopes.items()))))
    return rows


@pytest.mark.parametrize("with_condition", [True, False])
def test_the_census_is_the_per_row_reading_and_stays_small(with_condition):
    """`relation_census` on integer codes equals the per-row reading (tags dropped, conditions kept
    apart, a missing condition column is "default"), and a 200k-row table allocates a few MB: it
    built four strings per row and side before (4.8 GB at 10M rows, bisected to 4f7d880)."""
    import tracemalloc

    from nepotism.analyses.verdicts import relation_census

    registry = load_registry([])
    rng = np.random.default_rng(5)
    n = 200_000
    names = np.array(["gpt-4", "gpt-4@sample2", "claude-3-opus", "vicuna-13b", "not-registered"])
    frame = pd.DataFrame(
        {
            "instance_id": [f"q{i}" for i in rng.integers(0, 3000, n)],
            "judge": rng.choice(["gpt-4", "claude-3-opus"], n),
            "model_a": rng.choice(names, n),
            "model_b": rng.choice(names, n),
        }
    )
    if with_condition:
        frame["condition"] = rng.choice(["plain", "cot"], n)
    tracemalloc.start()
    try:
        found = relation_census(frame, "pairwise", registry)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(e["judge"], e["condition"], e["prompts"], e["generators"]) for e in found] == _census_by_rows(frame, registry)
    assert peak < 30 * 2**20, f"the census allocated {peak / 2**20:.0f} MB for {n:,} rows"


def test_a_leaderboard_audit_alone_gives_no_verdict_rows():
    """`nepotism leakage audit`'s document holds ranks with a scope per entry, but none of the
    metrics the ladder reads: no verdict rows (four "not measurable — no metric measured it" rows
    for a judge were what a report of it said); a self-preference ratio beside them gives rows."""
    rank = {
        "metric": "leaderboard-rank",
        "judge": "gpt-4",
        "condition": "default",
        "scope": "family",
        "generator": "gpt-4-0314",
        "value": 1.0,
        "ci_low": 1.0,
        "ci_high": 1.0,
        "n": 300,
        "n_clusters": 300,
    }
    bonus = {
        "metric": "leaderboard-leakage-bonus",
        "judge": "gpt-4",
        "condition": "default",
        "value": None,
        "note": "no judge unrelated to this one judged the same entries",
    }
    assert judge_verdicts([rank, bonus]) == []
    ratio = {
        "metric": "self-preference-ratio",
        "judge": "gpt-4",
        "condition": "default",
        "scope": "family",
        "variant": {"opponents": "unrelated"},
        "value": 0.7,
        "ci_low": 0.65,
        "ci_high": 0.75,
        "n": 900,
        "n_clusters": 300,
    }
    verdicts = judge_verdicts([rank, bonus, ratio])
    assert len(verdicts) == 4 and [v.status for v in verdicts if v.scope == "family"] == ["measured"]
