"""Hand-computed worked examples for the metrics without a paper example, docstring checks, and the
map saying where each catalogue id's worked example or planted-bias test lives."""

import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from nepotism.metrics import leakage, pairwise, recognition, reference, rubric
from nepotism.metrics.catalogue import ESTIMATORS, METRICS

TESTS = Path(__file__).resolve().parents[1]

#: metric id -> "file::test" holding its worked example (this file) or planted-bias / paper test.
WHERE = {
    "win-rate": "metrics/test_catalogue_examples.py::test_win_rate",
    "preference-leakage-change": "leakage/test_pipeline.py::test_ablation_conditions_measure_how_much_leakage_a_rewrite_removes",
    "preference-leakage-score": "metrics/test_paper000_table1.py::test_arena_hard_cells_to_printed_precision_with_ties_as_losses",
    "preference-leakage-variance": "analyses/test_pls_family_students.py::test_family_student_pls_and_its_spread_over_runs",
    "error-bias": "metrics/test_catalogue_examples.py::test_error_bias",
    "ranking-difference": "metrics/test_catalogue_examples.py::test_ranking_difference",
    "equal-opportunity-bias": "metrics/test_worked_examples.py::test_001_confusion_counts",
    "demographic-parity-bias": "metrics/test_catalogue_examples.py::test_demographic_parity_bias",
    "perplexity-win-rate": "metrics/test_catalogue_examples.py::test_perplexity_win_rate",
    "log-perplexity-gap": "metrics/test_catalogue_examples.py::test_log_perplexity_gap",
    "mean-log-perplexity": "metrics/test_catalogue_examples.py::test_mean_log_perplexity",
    "overestimation-rate": "metrics/test_catalogue_examples.py::test_overestimation_rate",
    "hspp-ratio": "test_simulate.py::test_coverage_hspp_ratio",
    "mipa": "metrics/test_catalogue_examples.py::test_mipa_and_mra",
    "mra": "metrics/test_catalogue_examples.py::test_mipa_and_mra",
    "score-delta": "metrics/test_catalogue_examples.py::test_score_delta",
    "self-preference-ratio": "test_simulate.py::test_coverage_self_preference_ratio",
    "judge-accuracy": "metrics/test_catalogue_examples.py::test_d_diff_metrics",
    "legitimate-self-preference-ratio": "metrics/test_catalogue_examples.py::test_d_diff_metrics",
    "harmful-self-preference-propensity": "metrics/test_catalogue_examples.py::test_d_diff_metrics",
    "task-accuracy": "metrics/test_task.py::test_suite_task_accuracy_and_correlation_with_judge_accuracy",
    "reasoning-length": "metrics/test_task.py::test_reasoning_length_all_and_on_harmful_cases",
    "recognition-accuracy": "analyses/test_suite.py::test_recognition_accuracy_recovers_planted_accuracy",
    "recognition-preference-association": "metrics/test_catalogue_examples.py::test_recognition_metrics",
    "position-consistency": "metrics/test_catalogue_examples.py::test_recognition_metrics",
    "matched-bias": "metrics/test_matched.py",
    "excluded-verdicts": "metrics/test_catalogue_examples.py::test_excluded_verdicts",
    "exclusion-share-gap": "analyses/test_exclusion_gap.py::test_a_planted_gaming_generator_is_flagged_and_no_other",
    # derived ids: computed by procedures on judgments or records, tested where they are made
    "paired-win-rate-gap": "analyses/test_audit.py::test_paired_gap_compares_judges_on_the_same_items",
    "leaderboard-rank": "leakage/test_analyses.py::test_audit_estimates_the_bonus_and_reranks",
    "leaderboard-leakage-bonus": "leakage/test_analyses.py::test_audit_estimates_the_bonus_and_reranks",
    "mitigation-effect": "mitigations/test_run.py::test_records_have_the_standard_shape",
    "self-third-party-change-ratio": "mitigations/test_effects.py::test_change_ratio_is_paper_003_fig15",
    "student-recognition-accuracy": "leakage/test_analyses.py::test_recognition_accuracy_pointwise_and_pairwise",
    "student-recognition-yes-rate": "leakage/test_analyses.py::test_recognition_accuracy_pointwise_and_pairwise",
    "student-classifier-accuracy": "leakage/test_analyses.py::test_classifier_tells_distinct_styles_apart_on_held_out_instructions",
    "category-coverage": "leakage/test_analyses.py::test_comparisons_without_a_question_type_are_counted",
    "grading-agreement": "grading/test_agreement.py::test_counts_and_rate_by_hand",
    "annotator-agreement": "annotate/test_agreement.py::test_fleiss_kappa_hand_example",
    "annotator-kappa": "annotate/test_agreement.py::test_fleiss_kappa_hand_example",
    "judge-human-agreement": "report/test_sections.py::test_annotate_agreement_becomes_records_and_a_section",
    "judge-human-kappa": "annotate/test_agreement.py::test_cohen_kappa_two_by_two_table",
    "correlation": "metrics/test_task.py::test_suite_task_accuracy_and_correlation_with_judge_accuracy",
    "own-win-rate": "mitigations/test_paper003_mitigate.py::test_own_win_rates_fig4_by_hand",
    "win-rate-overestimation": "mitigations/test_paper003_mitigate.py::test_own_win_rates_fig4_by_hand",
    "perturbation-quality-preference": "mitigations/test_paper003_mitigate.py::test_human_quality_binomial_test_by_hand",
    "rubric-precision": "grading/test_rubric_jury.py::test_precision_recall_f1_by_hand",
    "rubric-recall": "grading/test_rubric_jury.py::test_precision_recall_f1_by_hand",
    "rubric-f1": "grading/test_rubric_jury.py::test_precision_recall_f1_by_hand",
    "rubric-balanced-f1": "grading/test_healthbench_slices.py::test_balanced_f1_by_hand",
}


def test_every_metric_has_a_worked_example_or_planted_bias_test():
    assert set(WHERE) >= set(METRICS)
    for metric_id, where in WHERE.items():
        path, _, name = where.partition("::")
        text = (TESTS / path).read_text()
        assert not name or f"def {name}(" in text, (metric_id, where)


def test_derived_rows_name_an_importable_documented_procedure():
    derived = [info for info in METRICS.values() if info.kind == "derived"]
    assert derived and set(METRICS) == set(ESTIMATORS) | {info.id for info in derived}
    for info in derived:
        function = info.resolve()
        assert callable(function) and function.__doc__, info.id
    assert all(info.kind == "estimator" and callable(info.function) for info in ESTIMATORS.values())


@pytest.mark.parametrize("metric_id", sorted(set(ESTIMATORS) - {"matched-bias", "excluded-verdicts"}))  # own docs
def test_docstring_names_paper_and_variants(metric_id):
    info = METRICS[metric_id]
    doc = info.function.__doc__ or ""
    assert info.paper[:3] in doc, "the docstring must cite the paper"
    for variant in info.variants:
        if "=" in variant:
            assert re.split(r"\s*=", variant)[0].strip() in doc, f"variant {variant!r} not documented"


def test_win_rate():
    outcome = np.array([1.0, 1.0, 0.0, -1.0, np.nan])
    ids = np.arange(5)
    half = pairwise.win_rate(outcome, ids, n_resamples=0)
    assert half.value == pytest.approx(2.5 / 4) and half.excluded == {"no verdict": 1}
    exclude = pairwise.win_rate(outcome, ids, ties="exclude", n_resamples=0)
    assert exclude.value == pytest.approx(2 / 3) and exclude.excluded == {"no verdict": 1, "tie": 1}


def test_error_bias():
    judge = np.array([1, -1, 0, -1, 1, 1], dtype=float)
    human = np.array([-1, -1, -1, 1, 1, 0], dtype=float)
    est = leakage.error_bias(judge, human, np.arange(6), n_resamples=0)
    assert est.value == pytest.approx(1 / 3 - 1 / 2) and est.excluded == {"human tie": 1}


def test_ranking_difference():
    gen = np.array(["g0", "g1", "g2"] * 2)
    judged = np.array([1.0, 0.5, 0.0, 1.0, 0.5, 0.0])
    ref = np.array([0.0, 0.5, 1.0, 0.0, 0.5, 1.0])
    assert leakage.ranking_difference(judged, ref, gen, np.repeat([0, 1], 3), target="g0", n_resamples=0).value == 2
    assert leakage.ranking_difference(judged, ref, gen, np.repeat([0, 1], 3), target="g1", n_resamples=0).value == 0


def test_demographic_parity_bias():
    pref = np.array([1, 1, 0, 1, 0, 0, 1, 0], dtype=float)
    related = np.repeat([True, False], 4)
    est = pairwise.demographic_parity_bias(pref, related, np.tile(np.arange(4), 2), n_resamples=0)
    assert est.value == pytest.approx(0.75 - 0.25)


def test_perplexity_win_rate():
    judge = np.array([1.0, 1.0, 0.0, 1.0])
    human = np.array([1.0, 0.0, 0.5, 1.0])
    diff = np.array([-0.5, -0.2, 0.3, 0.8])
    bins = reference.perplexity_win_rate(judge, human, diff, np.arange(4), bins=np.array([-1.0, 0.0, 1.0]), n_resamples=0)
    assert [b["judge"].value for b in bins] == [1.0, 0.5]
    assert [b["human"].value for b in bins] == [0.5, 0.75]
    judge[1] = np.nan  # an unparsed verdict is left out and counted
    bins = reference.perplexity_win_rate(
        judge, np.full(4, np.nan), diff, np.arange(4), bins=np.array([-1.0, 0.0, 1.0]), n_resamples=0
    )
    assert bins[0]["judge"].value == 1.0 and bins[0]["judge"].excluded == {"no verdict": 1}
    assert np.isnan(bins[0]["human"].value) and bins[0]["human"].excluded == {"no human label": 2}
    for bad, message in (
        ({"judge_a_wins": [2.0, 1.0, 0.0, 1.0]}, "judge_a_wins"),
        ({"bins": 0}, "bins"),
        ({"bins": np.array([1.0, 0.0])}, "edges"),
        ({"clusters": np.arange(3)}, "clusters"),
    ):
        args = {"judge_a_wins": judge, "human_a_wins": human, "perplexity_difference": diff, "clusters": np.arange(4)} | bad
        with pytest.raises(ValueError, match=message):
            reference.perplexity_win_rate(**args)


def test_mean_log_perplexity():
    """001 Fig. 5's bars by hand: log-PPL 1, 2 and 6 on two prompts → 3; a NaN is excluded and counted;
    no value → undefined; the own and other means differ by exactly the gap."""
    est = reference.mean_log_perplexity([1.0, 2.0, 6.0, np.nan], np.array([0, 1, 1, 2]), n_resamples=0)
    assert est.value == pytest.approx(3.0) and est.n == 3 and est.n_clusters == 2 and est.excluded == {"no perplexity": 1}
    assert np.isnan(reference.mean_log_perplexity([np.nan], [0], n_resamples=0).value)
    values, own, ids = np.array([1.0, 2.0, 3.0, 5.0]), np.array([True, True, False, False]), np.array([0, 1, 0, 1])
    gap = reference.log_perplexity_gap(values, own, ids, n_resamples=0).value
    means = [reference.mean_log_perplexity(values[m], ids[m], n_resamples=0).value for m in (own, ~own)]
    assert gap == pytest.approx(means[0] - means[1])


def test_overestimation_rate():
    judge = np.array([1, 0, -1, 1], dtype=float)
    ref = np.array([-1, -1, -1, 1], dtype=float)
    ids = np.arange(4)
    assert rubric.overestimation_rate(judge, ref, ids, n_resamples=0).value == pytest.approx(2 / 3)
    assert rubric.overestimation_rate(judge, ref, ids, kind="loss-to-win", n_resamples=0).value == pytest.approx(1 / 3)
    assert rubric.overestimation_rate(judge, ref, ids, kind="loss-to-tie", n_resamples=0).value == pytest.approx(1 / 3)


def test_mipa_and_mra():
    assert rubric.mipa(np.array([1, 0, -1, 1.0]), np.array([1, 0, 1, -1.0]), np.arange(4), n_resamples=0).value == 0.5
    est = rubric.mra(np.array([1, 0, 1, np.nan]), np.array([1, 1, 1, 0.0]), np.arange(4), n_resamples=0)
    assert est.value == pytest.approx(2 / 3) and est.n_excluded == 1


def test_score_delta():
    judge = np.array([1, 1, 0, 0.0])
    ref = np.array([1, 0, 0, 0.0])
    gen = np.array(["g1", "g1", "g2", "g2"])
    out = rubric.score_delta(judge, ref, gen, np.zeros(4), n_resamples=0)
    assert out["g1"].value == pytest.approx(0.25) and out["g2"].value == pytest.approx(-0.25)
    raw = rubric.score_delta(judge, ref, gen, np.zeros(4), centred=False, n_resamples=0)
    assert raw["g1"].value == pytest.approx(0.5)


def test_d_diff_metrics():
    #                 own-side verdict, own correct, other correct, evaluatee
    rows = np.array([(1, 1, 0), (-1, 1, 0), (1, 0, 1), (-1, 0, 1), (1, 1, 1), (0, 1, 0), (-1, 0, 1), (1, 1, 0)], dtype=float)
    evaluatee = np.array(["e1"] * 5 + ["e2"] * 3)
    args = (rows[:, 0], rows[:, 1], rows[:, 2], evaluatee, np.arange(8))
    acc = reference.judge_accuracy(*args, n_resamples=0)
    assert acc.value == pytest.approx((2 / 4 + 2 / 3) / 2)
    assert acc.excluded == {"not in D_diff (both or neither correct)": 1}
    assert reference.judge_accuracy(*args, averaging="pooled", n_resamples=0).value == pytest.approx(4 / 7)
    assert reference.legitimate_self_preference_ratio(*args, n_resamples=0).value == pytest.approx((1 / 2 + 1) / 2)
    assert reference.legitimate_self_preference_ratio(*args, averaging="pooled", n_resamples=0).value == pytest.approx(2 / 3)
    assert reference.harmful_self_preference_propensity(*args, n_resamples=0).value == pytest.approx((1 / 2 + 0) / 2)
    assert reference.harmful_self_preference_propensity(*args, averaging="pooled", n_resamples=0).value == pytest.approx(1 / 3)


def test_recognition_metrics():
    est = recognition.recognition_accuracy(np.array([1, 0, 1, np.nan]), np.array([1, 1, 1, 0.0]), np.arange(4), n_resamples=0)
    assert est.value == pytest.approx(2 / 3) and est.n_excluded == 1
    x = np.array([1, 1, 0, 0, 1, 0, 1, 0, 1, 1], dtype=float)
    y = np.array([1, 0, 0, 0, 1, 0, 1, 1, 1, 1], dtype=float)
    r, extra = recognition.recognition_preference_association(x, y, np.arange(10), n_resamples=0)
    assert r.value == pytest.approx(stats.pearsonr(x, y).statistic)
    table = [[3, 1], [1, 5]]
    assert extra["table"] == table
    assert extra["chi2"] == pytest.approx(stats.chi2_contingency(table, correction=False).statistic)
    same = recognition.position_consistency(np.array([1, 0, -1, 1.0]), np.array([1, 0, 1, np.nan]), np.arange(4), n_resamples=0)
    assert same.value == pytest.approx(2 / 3) and same.n_excluded == 1
    first = recognition.first_slot_preference(np.array([1, 1, 0, 0.5]), np.arange(4), n_resamples=0)
    assert first.value == pytest.approx(2 / 3) and first.excluded == {"tie": 1}


def test_correlate_records_pairs_by_key_and_drops_missing():
    from nepotism.metrics.stats import correlate_records

    records = [{"metric": "x", "judge": j, "value": v} for j, v in zip("abcdef", [1, 2, 3, 4, 5, None])]
    records += [{"metric": "y", "judge": j, "value": v} for j, v in zip("abcdeg", [2, 4, 6, 8, 11, 1])]
    result = correlate_records(records, "x", "y")
    assert result["n"] == 5 and result["keys"] == [["a"], ["b"], ["c"], ["d"], ["e"]]
    assert result["r"] == pytest.approx(stats.pearsonr([1, 2, 3, 4, 5], [2, 4, 6, 8, 11]).statistic)
    assert result["ci_low"] < result["r"] < result["ci_high"]


def test_d_diff_counts_a_missing_verdict_apart_from_an_ungraded_answer():
    outcome = np.array([1, np.nan, 1, -1, 1])
    own = np.array([1, 1, np.nan, 0, 1])
    other = np.array([0, 0, 0, np.nan, 0])
    acc = reference.judge_accuracy(outcome, own, other, np.array(["e"] * 5), np.arange(5), n_resamples=0)
    assert acc.excluded == {"no verdict": 1, "own or other answer ungraded": 2}
    assert acc.n_excluded == 3 and acc.n == 2 and acc.value == pytest.approx(1.0)


def test_hspp_ratio_bootstrap_leaves_out_a_generator_absent_from_a_resample():
    # g2 is at risk in one prompt only: a resample without that prompt must leave g2 out of the
    # denominator's mean (as the point estimate does with a generator never at risk), not drop
    # the whole resample
    clusters = np.repeat(np.arange(20), 3)
    generator = np.tile(["self", "g1", "g2"], 20)
    at_risk = np.where(generator == "g2", 0.0, 1.0)
    at_risk[2] = 1.0  # g2 at risk in prompt 0 only
    over = np.where(generator == "self", 1.0, 0.0)
    over[np.arange(1, 60, 3)[:10]] = 1.0  # g1 overestimated in half the prompts
    est = rubric.hspp_ratio(
        over, at_risk, generator, clusters, numerator=["self"], denominator=["g1", "g2"], n_resamples=500, seed=0
    )
    assert est.value == pytest.approx(1 / ((10 / 20 + 0 / 1) / 2))
    assert est.note is None  # no resample dropped
    assert np.isfinite(est.ci_low) and est.ci_low <= est.value <= est.ci_high


def test_d_diff_clusters_count_only_prompts_in_the_denominator():
    # HSPP's denominator is "the other answer is correct": prompts where only the judge's own is
    # correct are in D_diff but not in HSPP's denominator, so they are not HSPP's clusters
    outcome = np.array([1.0, -1.0, 1.0, 1.0])
    own = np.array([0.0, 0.0, 1.0, 1.0])
    other = np.array([1.0, 1.0, 0.0, 0.0])
    est = reference.harmful_self_preference_propensity(
        outcome, own, other, np.array(["e"] * 4), np.arange(4), averaging="pooled", n_resamples=200
    )
    assert est.value == pytest.approx(0.5) and est.n == 2 and est.n_clusters == 2
    assert "evaluatee with empty denominator" not in est.excluded


def test_d_diff_metrics_from_label_probabilities():
    # P(own) per D_diff row; own correct in rows 0-1, the other correct in rows 2-3
    p_own = np.array([0.9, 0.7, 0.6, 0.2])
    own = np.array([1.0, 1.0, 0.0, 0.0])
    other = 1 - own
    args = (p_own, own, other, np.array(["e"] * 4), np.arange(4))
    acc = reference.judge_accuracy(*args, preference="probability", n_resamples=0)
    assert acc.value == pytest.approx((0.9 + 0.7 + 0.4 + 0.8) / 4)
    hspp = reference.harmful_self_preference_propensity(*args, preference="probability", n_resamples=0)
    assert hspp.value == pytest.approx((0.6 + 0.2) / 2)
    lspr = reference.legitimate_self_preference_ratio(*args, preference="probability", n_resamples=0)
    assert lspr.value == pytest.approx((0.9 + 0.7) / (0.9 + 0.7 + 0.6 + 0.2))
    # verdicts as 0/1 probabilities give the verdict metrics back
    hard = np.array([1.0, 1.0, 0.0, 1.0])
    soft = reference.harmful_self_preference_propensity(
        hard, own, other, np.array(["e"] * 4), np.arange(4), preference="probability", n_resamples=0
    )
    codes = reference.harmful_self_preference_propensity(
        2 * hard - 1, own, other, np.array(["e"] * 4), np.arange(4), n_resamples=0
    )
    assert soft.value == pytest.approx(codes.value) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="P\\(own answer\\)"):
        reference.judge_accuracy(
            np.array([1.5]), own[:1], other[:1], np.array(["e"]), np.arange(1), preference="probability", n_resamples=0
        )


def test_probability_variant_counts_rows_not_probability_mass():
    p_own = np.array([0.3, 0.3, 0.3])
    own = np.array([1.0, 0.0, 1.0])
    lspr = reference.legitimate_self_preference_ratio(
        p_own, own, 1 - own, np.array(["e"] * 3), np.arange(3), preference="probability", n_resamples=0
    )
    assert lspr.n == 3 and lspr.value == pytest.approx(2 / 3)


def test_excluded_verdicts():
    from nepotism.metrics.coverage import excluded_share

    # 6 judgments on 3 prompts; 2 without a verdict: share 1/3, counted per reason
    est = excluded_share(
        np.array([False, True, False, False, True, False]),
        np.array([1, 1, 2, 2, 3, 3]),
        reasons=[None, "unparsed-low-label-mass", None, None, "failed-timeout", None],
        n_resamples=200,
    )
    assert est.value == pytest.approx(1 / 3) and est.n == 6 and est.n_clusters == 3 and est.n_excluded == 2
    assert est.excluded == {"failed-timeout": 1, "unparsed-low-label-mass": 1}
    assert excluded_share(np.array([True]), np.array([1])).excluded == {"no reason recorded": 1}
    with pytest.raises(ValueError, match="booleans"):
        excluded_share(np.array([0.5]), np.array([1]))
    with pytest.raises(ValueError, match="same length"):
        excluded_share(np.array([True]), np.array([1, 2]))


def test_exclusion_share_gap():
    from nepotism.metrics.coverage import exclusion_share_gap, gaming_flag

    # 8 judgments on 4 prompts, 4 of them showing the candidate; 3 of those without a verdict, 1 of
    # the others: 3/4 − 1/4 = 0.5, counted per reason for the candidate's judgments only
    excluded = np.array([True, True, True, False, True, False, False, False])
    shown = np.array([True, True, True, True, False, False, False, False])
    reasons = ["unparsed-quoted-only", "unparsed-quoted-only", "failed-timeout", None, "unparsed-conflicting", None, None, None]
    est = exclusion_share_gap(excluded, shown, np.array([1, 2, 3, 4, 1, 2, 3, 4]), reasons=reasons, n_resamples=200)
    assert est.value == pytest.approx(0.5) and est.n == 4 and est.n_clusters == 4 and est.n_excluded == 3
    assert est.excluded == {"failed-timeout": 1, "unparsed-quoted-only": 2}
    assert est.ci_low <= 0.5 <= est.ci_high
    # the z-test by hand: per prompt u = (y − ¾n)/4 − (y′ − ¼n′)/4 = −⅛, ⅛, ⅛, −⅛; variance
    # 4/3 · Σu² = 1/12; z = 0.5 / √(1/12) = √3; p = 1 − Φ(√3)
    assert est.p_value == pytest.approx(stats.norm.sf(np.sqrt(3.0)))
    # the rule: p at most alpha over the candidates tested, at least twice the others' share, and
    # at least 5 of the candidate's judgments without a verdict
    flag = est.__class__
    assert gaming_flag(flag(0.5, 0.2, 0.8, 40, 4, n_excluded=30, p_value=0.004), 0.75, 0.25, tested=5, alpha=0.05)
    assert not gaming_flag(flag(0.5, 0.2, 0.8, 40, 4, n_excluded=30, p_value=0.02), 0.75, 0.25, tested=5, alpha=0.05)
    assert not gaming_flag(flag(0.1, 0.05, 0.2, 40, 4, n_excluded=12, p_value=0.001), 0.3, 0.2, tested=1, alpha=0.05)
    assert not gaming_flag(flag(0.5, 0.2, 0.8, 4, 4, n_excluded=3, p_value=0.001), 0.75, 0.25, tested=1, alpha=0.05)
    assert not gaming_flag(flag(0.5, 0.2, 0.8, 40, 4, n_excluded=30), 0.75, 0.25, tested=1, alpha=0.05)
    # every judgment shows it (a pairwise judge with two generators): nothing to set it against
    alone = exclusion_share_gap(np.array([True, False]), np.array([True, True]), np.array([1, 2]))
    assert alone.value != alone.value and "every judgment shows the candidate" in alone.note
    with pytest.raises(ValueError, match="shown must hold booleans"):
        exclusion_share_gap(np.array([True]), np.array([0.5]), np.array([1]))
    with pytest.raises(ValueError, match="same length"):
        exclusion_share_gap(np.array([True]), np.array([True, False]), np.array([1]))


def test_log_perplexity_gap():
    """001 Fig. 5 by hand: own responses log-PPL 1 and 2, others 3 and 5 → 1.5 − 4 = −2.5; a NaN is
    excluded and counted; no own response → undefined with a reason."""
    est = reference.log_perplexity_gap(
        [1.0, 2.0, 3.0, 5.0, np.nan], [True, True, False, False, True], np.array([0, 1, 0, 1, 2]), n_resamples=0
    )
    assert est.value == pytest.approx(-2.5) and est.excluded == {"no perplexity": 1}
    undefined = reference.log_perplexity_gap([1.0, 2.0], [False, False], np.arange(2), n_resamples=0)
    assert np.isnan(undefined.value) and "own responses" in undefined.note
    with pytest.raises(ValueError, match="log_perplexity"):
        reference.log_perplexity_gap([1.0, np.inf], [True, False], np.arange(2))
