"""The catalogue of metric ids (the public interface): id → function, paper, formula, variants.

`METRICS` is what ``nepotism metrics`` and the docs list; tests check that every id has a
property row. Computing is left to the functions named here and to `nepotism.analyses.suite`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nepotism.metrics import coverage, leakage, matched, pairwise, recognition, reference, rubric, task

__all__ = ["METRICS", "VALUE_RANGES", "MetricInfo", "metric"]


@dataclass(frozen=True)
class MetricInfo:
    id: str
    function: Callable
    paper: str
    formula: str
    variants: tuple[str, ...] = ()


_ROWS = [
    MetricInfo("win-rate", pairwise.win_rate, "000 (AlpacaEval convention)", "(wins + ½ ties) / n",
               ("ties=half (default)", "ties=exclude")),
    MetricInfo("preference-leakage-score", leakage.preference_leakage_score, "000 Eq. 5–6, App. C.2, D.4",
               "½[(WR(i,i)−AVG(i,j))/AVG(i,j) + (WR(j,j)−AVG(j,i))/AVG(j,i)], AVG(i,j)=(WR(i,i)+WR(i,j))/2, "
               "WR = wins / all games (a tie is a non-win: paper 000 Table 1)",
               ("ties=loss (default; paper 000 Table 1)", "ties=half (AlpacaEval; soft outcomes)",
                "ties=exclude", "one-sided bootstrap p for PLS > 0")),
    MetricInfo("error-bias", leakage.error_bias, "000 Eq. 10",
               "N(target preferred | other wins)/N(other wins) − N(other preferred | target wins)/N(target wins)"),
    MetricInfo("ranking-difference", leakage.ranking_difference, "000 §5.4 Table 4",
               "rank on reference leaderboard − rank on judge leaderboard (1 = best)",
               ("against=preference-ref|rubric-ref|correctness-ref|leaderboard file|judge J",)),
    MetricInfo("equal-opportunity-bias", reference.equal_opportunity_bias, "001 Def. 4.1",
               "P(Y′=1 | S=1, Y=1) − P(Y′=1 | S=0, Y=1)", ("judge tie = ½",)),
    MetricInfo("demographic-parity-bias", pairwise.demographic_parity_bias, "001 Eq. 4",
               "P(Y′=1 | S=1) − P(Y′=1 | S=0)", ("preference = verdict", "preference = probability (001 Eq. 3)")),
    MetricInfo("perplexity-win-rate", reference.perplexity_win_rate, "001 §5 Fig. 3–4",
               "P(judge picks A | perplexity-difference bin) vs humans",
               ("bins=quantiles (default 5)|explicit edges", "group=all|self|other", "rater=judge|human")),
    MetricInfo("overestimation-rate", rubric.overestimation_rate, "002 Eq. 3 (instance), Eq. 4 (rubric)",
               "Σ 1{w_J > w*, w* = −1} / Σ 1{w* = −1}", ("level=instance|rubric", "kind=any|loss-to-win|loss-to-tie")),
    MetricInfo("hspp-ratio", rubric.hspp_ratio, "002 Eq. 1–2",
               "mean_{G∈N} O(J,G) / mean_{G∈S_J} O(J,G)",
               ("scope=self|family", "level=instance|rubric", "family_set=exclude judge (Eq. 2 text)|include judge",
                "denominator=not-family (Eq. 1: S_J = not the judge, not its family)|unrelated (also without "
                "students and teachers)", "setup=single-rubric|all-rubrics (rubric tables with a setup column)",
                "paradigm=SR|DA|PWC (instance level: rubric verdicts, direct scores or pairwise verdicts)")),
    MetricInfo("mipa", rubric.mipa, "002 Eq. 5", "mean over G<G′, x of 1{w_J = w*}", ("paradigm=SR|PWC|DA",)),
    MetricInfo("mra", rubric.mra, "002 Eq. 6", "share of rubric verdicts b_J = b*"),
    MetricInfo("score-delta", rubric.score_delta, "002 Fig. 5",
               "(S_J(G) − S*(G)) − mean_G′ (S_J(G′) − S*(G′))",
               ("weighting=count|points|raw scale (pointwise)", "centred=True|False")),
    MetricInfo("self-preference-ratio", pairwise.self_preference_ratio, "004 Eq. 2",
               "share of (J vs G) comparisons whose aggregated verdict is J's answer",
               ("scope=self|family|student|family-student", "opponents=unrelated|any", "paradigm=pairwise|pointwise",
                "ties=not preferred|half (pointwise: equal scores)")),
    MetricInfo("judge-accuracy", reference.judge_accuracy, "004 Eq. 3",
               "mean_G share of D_diff verdicts naming the correct answer",
               ("averaging=per-evaluatee|pooled", "opponents=unrelated|any (004: every other answer)",
                "preference=verdict|probability (label-probability share, beyond the paper)")),
    MetricInfo("legitimate-self-preference-ratio", reference.legitimate_self_preference_ratio, "004 Eq. 4",
               "mean_G P(own correct | judge prefers own, D_diff)",
               ("averaging=per-evaluatee|pooled", "opponents=unrelated|any", "preference=verdict|probability")),
    MetricInfo("harmful-self-preference-propensity", reference.harmful_self_preference_propensity, "004 Eq. 5",
               "mean_G P(judge prefers own | other correct, D_diff)",
               ("averaging=per-evaluatee (default)|pooled", "opponents=unrelated|any", "preference=verdict|probability")),
    MetricInfo("task-accuracy", task.task_accuracy, "004 §3 (Figs. 1–4 x axis, Tables 7–9)",
               "share of a generator's graded answers that are correct (correctness-ref; ungraded excluded)",
               ("of=generator|judge's own answers (paired with judge-accuracy by --correlate)",)),
    MetricInfo("recognition-accuracy", recognition.recognition_accuracy, "000 §5.5, 003",
               "share of recognition answers equal to the truth",
               ("mode=pointwise|pairwise", "answers=all|own|other", "target=self|student|family")),
    MetricInfo("recognition-preference-association", recognition.recognition_preference_association, "003",
               "Pearson r(recognised, preferred) with bootstrap and Fisher-z CI; chi-square (df=1)",
               ("subset=all own-vs-other comparisons|harmful (own wrong, other right)",)),
    MetricInfo("position-consistency", recognition.position_consistency, "004 Eq. 1 setting, 002 §2.2",
               "share of comparisons whose two orders agree; first-slot share", ("share=two orders agree|first slot chosen",)),
    MetricInfo("matched-bias", matched.matched_bias, "new (docs/matched-bias.md); contrasts 001 Def. 4.1, 004 Eq. 4–5",
               "mean_c [p_J(c) − mean_{K unrelated to both candidates} p_K(c)], c = (item, related vs unrelated candidate)",
               ("scope=self|family|student|teacher", "subset=all|harmful|legitimate", "kind=pairwise|pointwise|rubric",
                "check=sensitivity (scope neutral)", "one-sided bootstrap p for value > 0")),
    MetricInfo("excluded-verdicts", coverage.excluded_share, "nepotism bookkeeping (docs/verdicts.md)",
               "judgments without a verdict / all judgments; excluded per status-reason "
               "(unparsed-conflicting, unparsed-low-label-mass, failed-timeout, ...)",
               ("kind=pairwise|pointwise|rubric|recognition|recognition-pairwise",)),
]

METRICS: dict[str, MetricInfo] = {row.id: row for row in _ROWS}

#: The values each metric can take, (low, high), None = unbounded on that side. Shares and
#: probabilities are fractions (0.6 = 60%), differences of shares lie in [-1, 1]; a
#: ranking-difference counts places and a score-delta is in the judge's score units. `nepotism
#: card` refuses a threshold outside these (a 60 meant as 60% for a share is caught).
VALUE_RANGES: dict[str, tuple[float | None, float | None]] = {
    "win-rate": (0.0, 1.0), "preference-leakage-score": (-1.0, 1.0), "error-bias": (-1.0, 1.0),
    "ranking-difference": (None, None), "equal-opportunity-bias": (-1.0, 1.0),
    "demographic-parity-bias": (-1.0, 1.0), "perplexity-win-rate": (0.0, 1.0), "overestimation-rate": (0.0, 1.0),
    "hspp-ratio": (0.0, None), "mipa": (0.0, 1.0), "mra": (0.0, 1.0), "score-delta": (None, None),
    "self-preference-ratio": (0.0, 1.0), "judge-accuracy": (0.0, 1.0), "task-accuracy": (0.0, 1.0),
    "legitimate-self-preference-ratio": (0.0, 1.0),
    "harmful-self-preference-propensity": (0.0, 1.0), "recognition-accuracy": (0.0, 1.0),
    "recognition-preference-association": (-1.0, 1.0), "position-consistency": (0.0, 1.0),
    "matched-bias": (-1.0, 1.0), "excluded-verdicts": (0.0, 1.0),
}


def metric(metric_id: str) -> MetricInfo:
    try:
        return METRICS[metric_id]
    except KeyError:
        raise KeyError(f"unknown metric {metric_id!r}; known: {', '.join(METRICS)}") from None
