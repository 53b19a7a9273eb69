import numpy as np
import pandas as pd
import pytest

from nepotism.leakage import audit as audit_mod
from nepotism.leakage.audit import audit_leaderboard, format_audit
from nepotism.leakage.categories import (
    DIMENSIONS,
    category_records,
    dimension_flags,
    labels_from,
    plan_dimension_flags,
)
from nepotism.leakage.lineage import Student
from nepotism.leakage.recognition import classifier_records, recognition_records
from nepotism.leakage.scores import comparisons_frame, pls_records
from nepotism.metrics.leakage import pls_from_win_rates
from nepotism.models import load_registry
from nepotism.records import Instance, Judgment, Response
from nepotism.metrics import Bootstrap

BOOT = Bootstrap(n_resamples=200, seed=0)
REG = load_registry([])
GA, GB = "qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct"
SA, SB = "student-a", "student-b"
STUDENTS = [Student(SA, "icl", "gemma-3-270m", GA, "g"), Student(SB, "icl", "gemma-3-270m", GB, "g")]
JUDGE_OF = {GA: GA, GB: GB}


def _pair(inst, judge, winner, both=True):
    out = []
    for first, second in ((SA, SB), (SB, SA)) if both else ((SA, SB),):
        verdict = "A" if winner == first else "B"
        out.append(Judgment(inst, judge, "pairwise", (first, second), "parsed", verdict, raw_output=f"{judge} says"))
    return out


def _favouring(n, p_own, seed=0):
    """Each judge picks its own student with probability p_own on each of n instructions."""
    rng = np.random.default_rng(seed)
    js = []
    for i in range(n):
        for judge, own, other in ((GA, SA, SB), (GB, SB, SA)):
            js += _pair(f"q{i}", judge, own if rng.random() < p_own else other)
    return js


def test_pls_positive_when_judges_favour_their_students():
    records = pls_records(comparisons_frame(_favouring(60, 0.8)), STUDENTS, JUDGE_OF, REG, bootstrap=BOOT)
    (pls,) = [r for r in records if r["metric"] == "preference-leakage-score"]
    assert pls["value"] > 0.2 and pls["ci_low"] > 0 and pls["p_value"] < 0.05
    assert pls["pair"] == [SA, SB] and pls["judge"] == f"{GA} & {GB}" and pls["n"] == 240
    assert pls["relation"] == {GA: "self", GB: "self"}
    wr = {(r["generator"], r["judge"]): r["value"] for r in records if r["metric"] == "win-rate"}
    assert pls["value"] == pytest.approx(float(pls_from_win_rates(wr[SA, GA], wr[SA, GB], wr[SB, GB], wr[SB, GA])))


def test_pls_near_zero_without_favouritism_and_unparsed_excluded():
    js = _favouring(80, 0.5, seed=3)
    js = [j for j in js if not (j.instance_id == "q0" and j.judge == GA and j.candidates == (SB, SA))]
    js.append(Judgment("q0", GA, "pairwise", (SB, SA), "unparsed"))
    (pls,) = [
        r
        for r in pls_records(comparisons_frame(js), STUDENTS, JUDGE_OF, REG, bootstrap=BOOT)
        if r["metric"] == "preference-leakage-score"
    ]
    assert pls["ci_low"] < 0 < pls["ci_high"]
    assert pls["n_excluded"] >= 1


def test_paper_table_8_example():
    # App. C.2: WR(GPT student, GPT judge) = 55.1 %, under Gemini 36.8 %; Gemini student 63.2 % / 44.9 %.
    assert float(pls_from_win_rates(0.551, 0.368, 0.632, 0.449)) == pytest.approx(0.184, abs=1e-3)


def test_recognition_accuracy_pointwise_and_pairwise():
    js = []
    for i in range(10):
        # GA says yes to its own student's answer and no to the other: always right.
        js.append(Judgment(f"q{i}", GA, "recognition", (SA,), "parsed", "yes"))
        js.append(Judgment(f"q{i}", GA, "recognition", (SB,), "parsed", "no"))
        # GB says yes to everything: right half the time.
        js.append(Judgment(f"q{i}", GB, "recognition", (SA,), "parsed", "yes"))
        js.append(Judgment(f"q{i}", GB, "recognition", (SB,), "parsed", "yes"))
        js.append(Judgment(f"q{i}", GA, "recognition", (SA, SB), "parsed", "A"))
        js.append(Judgment(f"q{i}", GA, "recognition", (SB, SA), "parsed", "A"))
    js.append(Judgment("q0", GB, "recognition", (SA,), "unparsed", reason="low_label_mass"))
    js.append(Judgment("q1", GB, "recognition", (SA,), "failed", reason="timeout"))
    js.append(Judgment("q1", GA, "recognition", (SA, SB), "parsed", "tie"))
    recs = {
        (r["metric"], r["judge"], r["variant"]["protocol"]): r
        for r in recognition_records(js, STUDENTS, JUDGE_OF, bootstrap=BOOT)
    }
    assert recs["student-recognition-accuracy", GA, "pointwise"]["value"] == 1.0
    assert recs["student-recognition-accuracy", GB, "pointwise"]["value"] == 0.5
    # excluded answers are counted under their own reasons (not a generic "no verdict")
    for metric in ("student-recognition-accuracy", "student-recognition-yes-rate"):
        rec = recs[metric, GB, "pointwise"]
        assert rec["n_excluded"] == 2
        assert rec["excluded"] == {"failed-timeout": 1, "unparsed-low-label-mass": 1}
    assert recs["student-recognition-yes-rate", GB, "pointwise"]["value"] == 1.0
    assert recs["student-recognition-accuracy", GA, "pairwise"]["value"] == 0.5
    assert recs["student-recognition-accuracy", GA, "pairwise"]["excluded"] == {"off-protocol-verdict": 1}


def test_classifier_tells_distinct_styles_apart_on_held_out_instructions():
    pytest.importorskip("sklearn")
    rs = []
    for i in range(40):
        rs.append(Response(f"q{i}", SA, f"Certainly! Here is a detailed answer number {i}. Hope this helps!"))
        rs.append(Response(f"q{i}", SB, f"ok. short reply {i}"))
    (rec,) = classifier_records(rs, STUDENTS, seed=0, bootstrap=BOOT)
    assert rec["value"] == 1.0 and rec["n"] == 16 and rec["variant"]["majority_rate"] == 0.5


@pytest.mark.slow
def test_paper_classifier_variant_fine_tunes_the_packaged_encoder(monkeypatch):
    """``minilm-finetune``: paper 000 App. G's fine-tuning (3 epochs, lr 2e-5, batch 16, weight decay
    0.01) on the packaged all-MiniLM-L6-v2, on the same instruction split as the default classifier.
    Ten instructions keep it to 3 optimiser steps (one batch of 16 answers per epoch), which cannot
    be expected to learn the styles, so the test holds the protocol (steps, settings, split, a
    defined accuracy with its n) and the weights' check, not a value."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    rs = []
    for i in range(10):
        rs.append(Response(f"q{i}", SA, f"Certainly! Here is a detailed answer number {i}. Hope this helps!"))
        rs.append(Response(f"q{i}", SB, f"ok. short reply {i}"))
    (rec,) = classifier_records(rs, STUDENTS, seed=0, bootstrap=BOOT, classifier="minilm-finetune")
    assert rec["variant"]["classifier"] == "minilm-finetune" and rec["variant"]["n_train"] == 16
    assert rec["n"] == 4 and 0.0 <= rec["value"] <= 1.0
    assert rec["training"]["encoder"] == "all-MiniLM-L6-v2" and rec["training"]["steps"] == 3
    assert rec["training"]["settings"] == {
        "epochs": 3,
        "learning_rate": 2e-5,
        "batch_size": 16,
        "weight_decay": 0.01,
        "max_length": 256,
        "threads": 2,
    }
    from nepotism.backends.local_models import ModelFileError
    from nepotism.leakage import encoder

    monkeypatch.setattr(encoder, "ENCODER", encoder.ENCODER.__class__(**{**encoder.ENCODER.__dict__, "sha256": "0" * 64}))
    with pytest.raises(ModelFileError, match="refusing to load it"):
        encoder.encoder_folder()
    with pytest.raises(ValueError, match="classifier must be one of"):
        classifier_records(rs, STUDENTS, classifier="bert-base")


def test_question_type_and_dimension_slices():
    js = _favouring(40, 0.9)
    types = {f"q{i}": ("writing" if i % 2 else "mathematics") for i in range(40)}
    cat_js = [Judgment(k, GA, "categorise", (), "parsed", v) for k, v in types.items()]
    cat_js.append(Judgment("q99", GA, "categorise", (), "unparsed"))
    labels, unreadable = labels_from(cat_js, target="instance")
    assert labels == types and unreadable == 1
    dims = {j.id: ("clarity" if j.judge == GA else "factuality") for j in js}
    recs = category_records(js, STUDENTS, JUDGE_OF, REG, question_types=labels, dimensions=dims, bootstrap=BOOT)
    slices = sorted(tuple(r["variant"]["slice"].items())[0] + (r["variant"]["ties"],) for r in recs)
    assert slices == [
        (kind, label, ties)
        for kind, label in (
            ("dimension", "clarity"),
            ("dimension", "factuality"),
            ("question_type", "mathematics"),
            ("question_type", "writing"),
        )
        for ties in ("half", "loss")
    ]
    for r in recs:
        if r["variant"]["slice"].get("question_type"):
            assert r["value"] > 0 and r["n"] == 80
        else:  # each dimension holds one judge only: no PLS
            assert r["value"] is None


def test_several_dimensions_per_rationale():
    """Paper 000 §5.6 maps a rationale to "one or multiple" dimensions: one yes/no call per rationale
    and dimension, and a comparison counts in every dimension its rationale weighs."""
    js = _favouring(40, 0.9)
    instances = [Instance(f"q{i}", f"question {i}") for i in range(40)]
    tasks = plan_dimension_flags(instances, js, GA)
    named = [name for name, _ in DIMENSIONS if name != "other"]
    assert len(tasks) == len(js) * len(named)
    assert {t.condition for t in tasks} == {f"dimension:{name}" for name in named}
    assert {tuple(c for c, _ in t.options["categories"]) for t in tasks} == {("yes", "no")}
    # every rationale weighs clarity; GA's also weigh factuality; one answer is unreadable
    answers = []
    for j in js:
        answers.append(Judgment(j.instance_id, GA, "categorise", (j.id,), "parsed", "yes", condition="dimension:clarity"))
        answers.append(
            Judgment(
                j.instance_id,
                GA,
                "categorise",
                (j.id,),
                "parsed",
                "yes" if j.judge == GA else "no",
                condition="dimension:factuality",
            )
        )
    answers.append(Judgment("q0", GA, "categorise", (js[0].id,), "unparsed", condition="dimension:richness"))
    answers.append(Judgment("q0", GA, "categorise", (), "parsed", "writing"))  # a question type: not a flag
    flags, unreadable = dimension_flags(answers)
    assert unreadable == 1
    assert all(flags[j.id] == ({"clarity", "factuality"} if j.judge == GA else {"clarity"}) for j in js)
    recs = category_records(js, STUDENTS, JUDGE_OF, REG, dimensions=flags, bootstrap=BOOT)
    by_slice = {(r["variant"]["slice"]["dimension"], r["variant"]["ties"]): r for r in recs}
    assert set(by_slice) == {(d, t) for d in ("clarity", "factuality") for t in ("half", "loss")}
    # clarity holds every comparison (both judges: a PLS), factuality only GA's (no PLS)
    assert by_slice["clarity", "loss"]["n"] == 160 and by_slice["clarity", "loss"]["value"] > 0
    assert by_slice["factuality", "loss"]["value"] is None


def test_comparisons_without_a_question_type_are_counted():
    js = _favouring(40, 0.9)
    labels = {f"q{i}": "writing" for i in range(30)}  # ten instances have no question type
    recs = category_records(js, STUDENTS, JUDGE_OF, REG, question_types=labels, bootstrap=BOOT)
    coverage = [r for r in recs if r["metric"] == "category-coverage"]
    assert len(coverage) == 1
    n = coverage[0]["n"]  # comparisons of the 40 instances; a quarter of them unlabelled
    assert n > 0 and coverage[0]["n_excluded"] == n // 4 and coverage[0]["value"] == 0.25
    assert coverage[0]["excluded"] == {"unlabelled": n // 4}


def _leaderboard(tmp_path):
    (tmp_path / "reg.toml").write_text(
        '[models."judge-x"]\nfamily = "fx"\n[models."judge-y"]\nfamily = "fy"\n'
        '[models."base"]\nfamily = "fb"\n'
        '[models."kid-x"]\nfamily = "fk"\nteachers = ["judge-x"]\n'
        '[models."m1"]\nfamily = "f1"\n[models."m2"]\nfamily = "f2"\n[models."m3"]\nfamily = "f3"\n'
    )
    reg = load_registry([str(tmp_path / "reg.toml")])
    rng = np.random.default_rng(0)
    quality = {"kid-x": 0.5, "m1": 0.6, "m2": 0.4, "m3": 0.5}
    rows = []
    for judge, lenient in (("judge-x", 0.05), ("judge-y", 0.0)):
        for i in range(300):
            for entry, q in quality.items():
                p = q + lenient + (0.25 if judge == "judge-x" and entry == "kid-x" else 0.0)
                rows.append(
                    {
                        "instance_id": f"i{i}",
                        "judge": judge,
                        "model_a": entry,
                        "model_b": "base",
                        "verdict": "A" if rng.random() < p else "B",
                        "condition": "c",
                    }
                )
    return pd.DataFrame(rows), reg


def _audited(out, judge="judge-x"):
    """The one audit's facts, its bonus record and its rank records by entry."""
    (facts,) = [a for a in out.summary["audits"] if a["judge"] == judge]
    (bonus,) = out.select("leaderboard-leakage-bonus", judge=judge)
    return facts, bonus, {r.generator: r for r in out.select("leaderboard-rank", judge=judge)}


def test_audit_estimates_the_bonus_and_reranks(tmp_path):
    frame, reg = _leaderboard(tmp_path)
    out = audit_leaderboard(frame, reg, "judge-x", n_resamples=300)
    facts, b, rows = _audited(out)
    assert facts["baseline"] == "base" and facts["reference_judge"] == "judge-y"
    assert 0.15 < b.value < 0.35 and b.ci_low > 0 and b.p_value < 0.05 and b.n == b.n_clusters == 300
    assert rows["kid-x"].extra["related"] and rows["kid-x"].scope == "student"
    assert rows["kid-x"].extra["relation"] == "student"
    assert rows["kid-x"].extra["original_rank"] == 1 and rows["kid-x"].value > 1
    assert rows["m1"].ci_low <= rows["m1"].value <= rows["m1"].ci_high
    assert "bonus of related entries" in format_audit(out)
    assert {r.metric for r in out} == {"leaderboard-leakage-bonus", "leaderboard-rank"}
    # the related flag is the registry's one scope rule: the baseline's judge-y is unrelated, so not flagged
    assert not rows["m1"].extra["related"] and rows["m1"].scope == "unrelated"


def test_audit_without_unrelated_judge_says_so(tmp_path):
    frame, reg = _leaderboard(tmp_path)
    out = audit_leaderboard(
        frame[frame["judge"] == "judge-x"],
        reg,
        "judge-x",
        n_resamples=200,
        reference_leaderboard={"kid-x": 0.1, "m1": 0.9, "m2": 0.5, "m3": 0.6},
    )
    _, b, rows = _audited(out)
    assert b.value is None and "cannot be estimated" in b.note
    assert rows["kid-x"].value == rows["kid-x"].extra["original_rank"] == 1
    moved = {r.generator: r for r in out.select("ranking-difference", against="leaderboard")}
    assert moved["kid-x"].value == 3.0  # 4th on the reference, 1st under the judge
    assert moved["kid-x"].ci_low <= 3.0 <= moved["kid-x"].ci_high and moved["kid-x"].n_clusters == 300
    assert audit_mod.__all__ == ["audit_leaderboard", "format_audit", "ranked_judges"]
    assert "vs ref" in format_audit(out)


def test_audit_ranking_difference_is_the_metric_definition(tmp_path):
    """The audit's ranking difference is `nepotism.metrics.ranking_difference` on the board's cells."""
    from nepotism.metrics.leakage import ranking_difference

    frame, reg = _leaderboard(tmp_path)
    reference = {"kid-x": 0.1, "m1": 0.9, "m2": 0.5, "m3": 0.6}
    out = audit_leaderboard(frame, reg, "judge-y", n_resamples=100, seed=3, reference_leaderboard=reference)
    rows = frame[frame["judge"] == "judge-y"]
    won = (rows["verdict"] == "A").astype(float).to_numpy()
    assert sorted(r.generator for r in out.select("ranking-difference")) == sorted(reference)
    for record in out.select("ranking-difference"):
        est = ranking_difference(
            won,
            rows["model_a"].map(reference).to_numpy(dtype=float),
            rows["model_a"].to_numpy(),
            rows["instance_id"].to_numpy(),
            target=record.generator,
            n_resamples=100,
            seed=3,
        )
        assert (record.value, record.ci_low, record.ci_high) == (est.value, est.ci_low, est.ci_high)


def test_audit_judges_default_to_every_ranking_judge_and_bootstrap_zero_has_no_intervals(tmp_path):
    frame, reg = _leaderboard(tmp_path)
    out = audit_leaderboard(frame, reg, n_resamples=0)
    assert out.summary["judges"] == ["judge-x", "judge-y"] and out.summary["options"]["n_resamples"] == 0
    assert all(r.ci_low is None and r.ci_high is None for r in out) and out.select("leaderboard-rank")[0].value
    with pytest.raises(ValueError, match="nothing to audit"):
        audit_leaderboard(frame[frame["model_a"] == "m1"], reg)


def _pointwise(frame: pd.DataFrame, rng) -> pd.DataFrame:
    """The same leaderboard graded pointwise on a 1-10 scale: judge-x adds 1.5 points to its student."""
    quality = {"kid-x": 5.0, "m1": 6.0, "m2": 4.0, "m3": 5.0}
    rows = []
    for judge, lenient in (("judge-x", 0.5), ("judge-y", 0.0)):
        for i in range(200):
            for entry, q in quality.items():
                bonus = 1.5 if judge == "judge-x" and entry == "kid-x" else 0.0
                rows.append(
                    {
                        "instance_id": f"i{i}",
                        "judge": judge,
                        "model": entry,
                        "score": float(np.clip(round(q + lenient + bonus + rng.normal(0, 1.5)), 1, 10)),
                    }
                )
    return pd.DataFrame(rows)


def test_audit_pointwise_bonus_against_an_unrelated_judge(tmp_path):
    _, reg = _leaderboard(tmp_path)
    frame = _pointwise(pd.DataFrame(), np.random.default_rng(1))
    out = audit_leaderboard(frame, reg, "judge-x", n_resamples=300)
    facts, b, records = _audited(out)
    assert facts["baseline"] is None and facts["reference_judge"] == "judge-y"
    assert 1.0 < b.value < 2.0 and b.ci_low > 0 and b.variant["measure"] == "mean score"
    rows = {e: r.extra for e, r in records.items()}
    assert rows["kid-x"]["original_rank"] == 1 and records["kid-x"].value > 1
    assert "win_rate" not in rows["kid-x"] and rows["kid-x"]["score"] > rows["m1"]["score"]
    assert all(r["score_ci_low"] <= r["score"] <= r["score_ci_high"] for r in rows.values())
    assert "pointwise scores" in format_audit(out)


def test_audit_pointwise_single_judge_flags_from_lineage(tmp_path):
    _, reg = _leaderboard(tmp_path)
    frame = _pointwise(pd.DataFrame(), np.random.default_rng(2))
    out = audit_leaderboard(frame[frame["judge"] == "judge-x"], reg, "judge-x", n_resamples=100)
    _, b, rows = _audited(out)
    assert b.value is None and "lineage alone" in b.note
    assert rows["kid-x"].extra["related"] and rows["kid-x"].scope == "student"
    assert all(r.value == r.extra["original_rank"] for r in rows.values())


def test_pls_table_names_each_condition_and_lists_the_ablation_changes():
    """The `nepotism leakage` table printed one row per group and condition without the condition, so
    the ablations' rows (no-<feature>) could not be told from the original answers' row."""
    from nepotism.leakage.report import pls_table

    def record(metric, condition, value, **variant):
        return {
            "metric": metric,
            "condition": condition,
            "generator": "a & b",
            "value": value,
            "ci_low": value,
            "ci_high": value,
            "p_value": None,
            "n": 12,
            "variant": {"group": "icl:base", "ties": "loss", **variant},
        }

    text = pls_table(
        [
            record("preference-leakage-score", "default", 0.25),
            record("preference-leakage-change", "no-style", -0.2, against="default"),
            record("preference-leakage-score", "no-style", 0.05),
            record("preference-leakage-score", "default", 0.3, ties="half"),
        ]
    )
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["group", "condition"] and len(lines) == 4
    assert lines[1].split()[:2] == ["icl:base", "default"] and "+25.0%" in lines[1]
    assert lines[2].split()[:2] == ["icl:base", "no-style"] and "+5.0%" in lines[2]
    assert lines[3].split()[:4] == ["icl:base", "no-style", "−", "default"] and "change" in lines[3]
    assert "-20.0%" in lines[3]
