"""The answer for each judge: one `Verdict` per (judge, condition, scope), by one evidence ladder.

docs/answer.md states the ladder; this module is its only implementation. For a judge J, a
condition and a scope (``self``, ``family``, ``student``, ``family-student``: `Registry.scope`),
the verdict reads the first rung whose record is defined, has an interval of non-zero width and
rests on at least ``min_prompts`` prompts (clusters, not rows):

1. ``matched`` — J against judges unrelated to both candidates, on the same items and pairs:
   ``matched-bias`` (subset ``all``), else the cleanest ``paired-win-rate-gap`` (the other judge
   unrelated to both candidates, the same texts, an opponent unrelated to J; the pair with most
   prompts, never a median of pairs). Both sides of the difference share every item, so answer
   quality and item difficulty cancel.
2. ``reference`` — J against a truth: ``equal-opportunity-bias`` (paper 001 Def. 4.1) against human
   preference labels, or against correctness turned into preferences (a correct answer beats a wrong
   one); ``hspp-ratio`` (paper 002 Eq. 1–2) against rubric truth or reference scores. A reference
   tells whether J deviates from the truth more for its relatives, but it compares J with itself
   across *different* items, so a judge whose relatives win by wide margins can show a gap without
   any bias (docs/matched-bias.md measures this) — which is why ``matched`` comes first.
3. ``alone`` — ``self-preference-ratio`` (paper 004 Eq. 2) against unrelated models (any less
   related model when none exists, said so): the judge's own preferences, which cannot tell
   favouritism from better answers; the sentence says so.

A rung that exists but has too few prompts, no interval, or an interval of zero width is not used:
it is listed in ``also`` with why, and when no rung qualifies the verdict says "too little data"
and gives no number. A scope with no evidence at all is ``not-measurable``, with the reason read
from the relations the audit saw (`relation_census`) and what data would make it measurable.
``harm`` adds, where a truth tells, how often the favouritism costs a better answer (matched-bias
on the ``harmful`` subset, or paper 004's harmful self-preference propensity).

Numbers come from the records unchanged: this module chooses and words, it computes no metric.
Left out: the cases behind a verdict (`nepotism.analyses.cases`), rendering (`nepotism.report`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from nepotism.models.registry import AUDITED_SCOPES, Registry
from nepotism.results import Verdict, record_key
from nepotism.tables import name_codes

__all__ = [
    "FINDING_WORDS",
    "LADDER_METRICS",
    "MIN_PROMPTS",
    "RELATION_LABELS",
    "RUNG_WORDS",
    "SCOPE_WORDS",
    "evidence_prompts",
    "interval_text",
    "judge_verdicts",
    "reason_text",
    "relation_census",
    "status_text",
    "summary_rows",
    "value_text",
    "verdict_scope",
]

#: The fewest prompts (clusters) a verdict's number may rest on; below it the verdict says "too
#: little data". Percentile intervals from fewer resampled clusters undercover noticeably.
MIN_PROMPTS = 30

#: What each scope's candidates are, in words.
SCOPE_WORDS = {
    "self": "its own answers",
    "family": "its family's answers",
    "student": "answers of models trained on its outputs",
    "family-student": "answers of models trained on its family's outputs",
}

#: Each scope in one or two words (table columns).
RELATION_LABELS = {"self": "own answers", "family": "family", "student": "students", "family-student": "family's students"}

#: Record scope values (registry relations, older spellings) → the verdict scope they belong to.
_SCOPE_OF_RECORD = {
    "self": "self",
    "family": "family",
    "same_family": "family",
    "same_series": "family",
    "lineage": "family",
    "student": "student",
    "family-student": "family-student",
    "family_student": "family-student",
}
_UNRELATED = ("unrelated",)
#: The metrics a verdict reads, strongest rung first (`_matched`, `_reference`, `_alone`); a judge
#: whose records hold none of them per scope, and whom no census names, gets no verdict rows.
LADDER_METRICS = ("matched-bias", "paired-win-rate-gap", "equal-opportunity-bias", "hspp-ratio", "self-preference-ratio")


def verdict_scope(record_scope: str | None) -> str | None:
    """The verdict scope a record's ``scope`` belongs to (None for other scopes: teacher, neutral...)."""
    return _SCOPE_OF_RECORD.get(str(record_scope)) if record_scope is not None else None


# ----------------------------------------------------------------------------------- census
def relation_census(frame: pd.DataFrame, kind: str, registry: Registry) -> list[dict[str, Any]]:
    """For each (judge, condition) of a judged table: the generators it judged grouped by their
    scope to it (`Registry.scope`), its registry id and how many prompts it judged — what a verdict
    needs to say why a scope is not measurable. Stored in ``Results.summary["relations"]``."""
    if frame.empty or "judge" not in frame:
        return []
    columns = ["model_a", "model_b"] if "model_a" in frame else ["model"] if "model" in frame else []
    if not columns:
        return []
    # on integer codes, never a string per row: the census of a 10M-row table is a few thousand values
    (judge_codes,), judges = name_codes(frame["judge"])
    if "condition" in frame:
        (cond_codes,), conditions = name_codes(frame["condition"])
    else:
        cond_codes, conditions = np.zeros(len(frame), dtype=np.int64), np.array(["default"], dtype=object)
    group = judge_codes * len(conditions) + cond_codes
    (inst_codes,), instances = name_codes(frame["instance_id"])
    pairs = np.unique(group * max(len(instances), 1) + inst_codes)
    prompts = np.bincount(pairs // max(len(instances), 1), minlength=len(judges) * len(conditions))
    models: dict[int, set[str]] = defaultdict(set)
    for column in columns:
        (model_codes,), names = name_codes(frame[column])
        for key in np.unique(group * len(names) + model_codes).tolist():
            models[key // len(names)].add(names[key % len(names)].split("@", 1)[0])
    keyed = sorted((str(judges[g // len(conditions)]), str(conditions[g % len(conditions)]), g) for g in models)
    out = []
    for judge, cond, g in keyed:
        by_scope: dict[str, list[str]] = defaultdict(list)
        for model in sorted(models[g]):
            by_scope[registry.scope(judge, model)].append(model)
        judge_id = registry.resolve(judge) if registry.knows(judge) else judge
        family = registry.family_of(judge) if registry.knows(judge) else None
        out.append(
            {
                "judge": judge,
                "judge_id": judge_id,
                "condition": cond,
                "kind": kind,
                "family": family,
                "prompts": int(prompts[g]),
                "generators": dict(sorted(by_scope.items())),
            }
        )
    return out


# ----------------------------------------------------------------------------------- wording
def _pts(x: float) -> str:
    return f"{100 * x:+.1f}"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _ci(r: Mapping[str, Any], fmt: Callable[[float], str]) -> str:
    level = int(round(100 * (r.get("confidence") or 0.95)))
    return f"{level}% CI {fmt(r['ci_low'])} to {fmt(r['ci_high'])}"


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _unit(record: Mapping[str, Any]) -> tuple[Callable[[float], str], str]:
    """How a matched value is printed: pairwise preference shares and rubric met-rates in points
    (×100), pointwise score differences in the judge's own score units."""
    kind = (record.get("variant") or {}).get("kind", "pairwise")
    if kind == "pointwise":
        return (lambda x: f"{x:+.2f}"), "score units"
    if kind == "rubric":
        return _pts, "points of rubrics met"
    return _pts, "points"


# ----------------------------------------------------------------------------------- readings
def _plain(record: Mapping[str, Any]) -> bool:
    """A record of the whole table: not a slice, an agreement subset or a sensitivity check."""
    variant = record.get("variant") or {}
    return "slice" not in variant and "agreement_at_least" not in variant and "check" not in variant


def _scoped(records: Iterable[Mapping[str, Any]], metric: str, scope: str) -> list[Mapping[str, Any]]:
    return [r for r in records if r.get("metric") == metric and verdict_scope(r.get("scope")) == scope and _plain(r)]


def _first(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The record with most prompts, then most units; ties by key (never chosen by its value)."""
    if not rows:
        return None
    return sorted(rows, key=lambda r: (-(r.get("n_clusters") or 0), -(r.get("n") or 0), record_key(r)))[0]


def _matched(items: Sequence[Mapping[str, Any]], scope: str, census: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    readings: list[dict[str, Any]] = []
    rows = [r for r in _scoped(items, "matched-bias", scope) if (r.get("variant") or {}).get("subset", "all") == "all"]
    record = _first([r for r in rows if r.get("value") is not None]) or _first(rows)
    if record is not None:
        readings.append({"rung": "matched", "record": record, "null": 0.0})
    opponents = census.get("generators", {}).get("unrelated", []) if census else None
    gaps = []
    for r in _scoped(items, "paired-win-rate-gap", scope):
        v = r.get("variant") or {}
        opponent = str((r.get("pair") or [None, None])[1]).split("@", 1)[0]
        if (
            v.get("texts") == "identical"
            and v.get("other_judge_relation") in _UNRELATED
            and v.get("other_judge_relation_to_opponent") in _UNRELATED
            and v.get("other_condition") in (None, r.get("condition"))
            and (opponents is None or opponent in opponents)
        ):
            gaps.append(r)
    gap = _first([r for r in gaps if r.get("value") is not None])
    if gap is not None:
        readings.append({"rung": "matched", "record": gap, "null": 0.0, "pairs": len(gaps)})
    # a gap against a judge related to a candidate, or on other samples, is shown, never read as a verdict
    unclean = _first([r for r in _scoped(items, "paired-win-rate-gap", scope) if r not in gaps and r.get("value") is not None])
    if unclean is not None:
        v = unclean.get("variant") or {}
        why = (
            "the other judge saw other samples of these models"
            if v.get("texts") != "identical"
            else f"the other judge ({v.get('other_judge')}) is related to a candidate "
            f"({v.get('other_judge_relation')} / {v.get('other_judge_relation_to_opponent')})"
        )
        readings.append({"rung": "matched", "record": unclean, "null": 0.0, "unclean": why})
    return readings


def _reference(items: Sequence[Mapping[str, Any]], scope: str) -> list[dict[str, Any]]:
    readings: list[dict[str, Any]] = []
    eo = [r for r in _scoped(items, "equal-opportunity-bias", scope) if "preference" not in (r.get("variant") or {})]
    unrelated = [r for r in eo if (r.get("variant") or {}).get("opponents") == "unrelated" and r.get("value") is not None]
    record = _first(unrelated) or _first([r for r in eo if r.get("value") is not None]) or _first(eo)
    if record is not None:
        readings.append({"rung": "reference", "record": record, "null": 0.0})
    ratios = []
    for r in _scoped(items, "hspp-ratio", scope):
        v = r.get("variant") or {}
        if (
            v.get("level", "instance") == "instance"
            and v.get("denominator", "not-family") == "not-family"
            and v.get("family_set", "exclude judge") == "exclude judge"
        ):
            ratios.append(r)
    ratio = _first([r for r in ratios if r.get("value") is not None]) or _first(ratios)
    if ratio is not None:
        readings.append({"rung": "reference", "record": ratio, "null": 1.0})
    return readings


def _alone(items: Sequence[Mapping[str, Any]], scope: str) -> list[dict[str, Any]]:
    # the pooled share (paper 004 Eq. 2); its per-evaluatee cells and their mean are the papers' tables, not a verdict
    rows = [r for r in _scoped(items, "self-preference-ratio", scope) if "averaging" not in (r.get("variant") or {})]
    # a pointwise ratio comes with ties counted half (50% = equal preference on a coarse scale that ties
    # often) and as not preferred; the verdict reads the half reading, the pairwise one says its tie share
    halves = [r for r in rows if (r.get("variant") or {}).get("ties") == "half"]
    rows = halves or rows
    unrelated = [r for r in rows if (r.get("variant") or {}).get("opponents") == "unrelated" and r.get("value") is not None]
    record = _first(unrelated) or _first([r for r in rows if r.get("value") is not None]) or _first(rows)
    return [{"rung": "alone", "record": record, "null": None}] if record is not None else []


def _usable(reading: Mapping[str, Any], min_prompts: int) -> str | None:
    """None when the reading can be a verdict, else why not (in words)."""
    r = reading["record"]
    if reading.get("unclean"):
        return f"not a clean comparison: {reading['unclean']}"
    if r.get("value") is None:
        if not r.get("n") and r.get("n_excluded"):
            reasons = ", ".join(f"{k} {v:,}" for k, v in (r.get("excluded") or {}).items())
            return f"all {r['n_excluded']:,} of its comparisons were left out ({reasons or 'no verdict'})"
        return r.get("note") or "no value"
    prompts = evidence_prompts(r)
    if prompts < min_prompts:
        return f"only {_count(prompts, 'prompt')}; a verdict needs at least {min_prompts}"
    if r.get("ci_low") is None or r.get("ci_high") is None:
        return "no interval could be computed"
    if r["ci_low"] == r["ci_high"]:
        return "its interval has zero width (every resample of prompts gave the same value)"
    return None


def evidence_prompts(record: Mapping[str, Any]) -> int:
    """How many prompts can carry a record's evidence: its clusters, but never more than its units
    (a ratio over rare cases — paper 002's HSPP ratio over the few answers at risk — resamples every
    prompt while only the prompts holding such a case move it)."""
    clusters, units = record.get("n_clusters") or 0, record.get("n") or 0
    return min(clusters, units) if units else clusters


def _finding(value_low: float, value_high: float, null: float | None) -> str:
    if null is None:
        return "cannot-separate"
    if value_low > null:
        return "favours"
    if value_high < null:
        return "disfavours"
    return "no-clear-difference"


# ----------------------------------------------------------------------------------- sentences
def _lead(name: str, words: str, finding: str) -> str:
    return {
        "favours": f"{name} favours {words}",
        "disfavours": f"{name} is harder on {words} than the comparison is",
        "no-clear-difference": f"{name} shows no clear favouritism toward {words}",
    }.get(finding, name)


def _truth_words(source: str | None) -> str:
    """What a reference-rung record was measured against, in words (its ``reference_source``)."""
    if not source or source == "the human preference labels":
        return "the human preference labels"
    if source.startswith("correctness-ref: a correct answer"):
        return "the correctness reference (a correct answer beats a wrong one)"
    if source.startswith("correctness-ref"):
        return "the reference scores"
    if source.startswith("rubric-ref"):
        return "the rubric truth"
    return source


def _sentence(name: str, scope: str, reading: Mapping[str, Any], finding: str) -> str:
    r = reading["record"]
    words = SCOPE_WORDS[scope]
    metric = r["metric"]
    n, k = r.get("n") or 0, r.get("n_clusters") or 0
    if metric == "matched-bias":
        fmt, unit = _unit(r)
        refs = r.get("n_reference_judges") or len(r.get("reference_judges") or [])
        who = _count(refs, "judge") + " unrelated to both candidates" if refs else "judges unrelated to both candidates"
        return (
            f"{_lead(name, words, finding)}: {fmt(r['value'])} {unit} ({_ci(r, fmt)}) over what {who} give "
            f"the same pairs on the same prompts ({_count(n, 'comparison')} over {_count(k, 'prompt')})."
        )
    if metric == "paired-win-rate-gap":
        generator, opponent = r["pair"]
        other = (r.get("variant") or {}).get("other_judge")
        more = reading.get("pairs", 1) - 1
        tail = (
            f" One pair shown (the one with most prompts); {more} other clean pair{'s' if more != 1 else ''} in the records."
            if more > 0
            else ""
        )
        return (
            f"{_lead(name, words, finding)}: {generator} wins {_pts(r['value'])} points more against {opponent} "
            f"here than under {other}, a judge unrelated to both ({_ci(r, _pts)}; the same "
            f"{_count(k, 'prompt')}, {_count(n, 'comparison')}).{tail}"
        )
    if metric == "equal-opportunity-bias":
        truth = _truth_words(r.get("reference_source"))
        against = (
            ""
            if (r.get("variant") or {}).get("opponents") == "unrelated"
            else " (against less related models: no unrelated opponent exists here)"
        )
        whose = "its own" if scope == "self" else "its relatives'"
        more = "more" if r["value"] >= 0 else "less"
        return (
            f"{_lead(name, words, finding)} against {truth}{against}: of the answers the reference prefers, "
            f"it picks {whose} {abs(100 * r['value']):.1f} points {more} often than others' ({_ci(r, _pts)}; "
            f"paper 001's equal-opportunity bias, {_count(n, 'answer')} over {_count(k, 'prompt')})."
        )
    if metric == "hspp-ratio":
        fmt = lambda x: f"{x:.2f}×"  # noqa: E731
        truth = "the reference grading"
        return (
            f"{_lead(name, words, finding)} against {truth}: it overestimates {words} {fmt(r['value'])} as often "
            f"as answers of models outside its family ({_ci(r, fmt)}; paper 002's HSPP ratio, 1.00× = none; "
            f"{_count(k, 'prompt')})."
        )
    if metric == "self-preference-ratio":
        variant = r.get("variant") or {}
        against = (
            "unrelated models"
            if variant.get("opponents") == "unrelated"
            else "less related models (no unrelated opponent exists here)"
        )
        if variant.get("ties") == "half":
            ties = "; equal scores count half, so 50% is equal preference"
        elif r.get("tie_share"):
            ties = f"; ties ({_pct(r['tie_share'])} of them) count as not preferred"
        else:
            ties = ""
        return (
            f"{name} prefers {words} over {against} in {_pct(r['value'])} of comparisons ({_ci(r, _pct)}; "
            f"{_count(n, 'comparison')} over {_count(k, 'prompt')}{ties}). This cannot tell favouritism from "
            "better answers."
        )
    return f"{name}: {metric} = {r['value']}"


def _harm(items: Sequence[Mapping[str, Any]], scope: str, reading: Mapping[str, Any], min_prompts: int) -> dict[str, Any] | None:
    """How often the favouritism costs a better answer, where a truth tells (see the module doc)."""
    rung = reading["rung"]
    if rung == "matched" and reading["record"]["metric"] == "matched-bias":
        rows = [
            r
            for r in _scoped(items, "matched-bias", scope)
            if (r.get("variant") or {}).get("subset") == "harmful"
            and (r.get("variant") or {}).get("kind") == (reading["record"].get("variant") or {}).get("kind")
        ]
        r = _first(rows)
        if r is None or r.get("value") is None:
            return None
        fmt, unit = _unit(r)
        why = _usable({"record": r}, min_prompts)
        text = (
            f"where its relative's answer is truly the worse one: {fmt(r['value'])} {unit} ({_ci(r, fmt)}; "
            f"{_count(r.get('n') or 0, 'comparison')} over {_count(r.get('n_clusters') or 0, 'prompt')})"
            if why is None
            else f"where its relative's answer is truly the worse one: too little data ({why})"
        )
        return {
            "metric": "matched-bias",
            "variant": dict(r.get("variant") or {}),
            "value": r.get("value"),
            "ci_low": r.get("ci_low"),
            "ci_high": r.get("ci_high"),
            "n": r.get("n"),
            "n_clusters": r.get("n_clusters"),
            "usable": why is None,
            "text": text,
            "record": record_key(r),
        }
    if scope == "self":
        rows = [
            r
            for r in _scoped(items, "harmful-self-preference-propensity", scope)
            if (r.get("variant") or {}).get("averaging") == "per-evaluatee" and "preference" not in (r.get("variant") or {})
        ]
        unrelated = [r for r in rows if (r.get("variant") or {}).get("opponents") == "unrelated"]
        r = _first(unrelated) or _first(rows)
        if r is None or r.get("value") is None:
            return None
        why = _usable({"record": r}, min_prompts)
        text = (
            f"when its own answer was wrong and the other right, it picked its own in {_pct(r['value'])} "
            f"({_ci(r, _pct)}; paper 004's HSPP over {_count(r.get('n_clusters') or 0, 'prompt')})"
            if why is None
            else f"harmful self-preference (paper 004's HSPP): too little data ({why})"
        )
        return {
            "metric": r["metric"],
            "variant": dict(r.get("variant") or {}),
            "value": r.get("value"),
            "ci_low": r.get("ci_low"),
            "ci_high": r.get("ci_high"),
            "n": r.get("n"),
            "n_clusters": r.get("n_clusters"),
            "usable": why is None,
            "text": text,
            "record": record_key(r),
        }
    return None


# ----------------------------------------------------------------------------------- not measurable
def _missing(name: str, scope: str, census: Mapping[str, Any] | None, notes: list[str]) -> tuple[str, list[str]]:
    """Why a scope has no evidence, and what data would measure it."""
    words = SCOPE_WORDS[scope]
    needs: list[str] = []
    if notes and notes[0].startswith("all "):  # the candidates are there, but no verdict survived
        # the reading that names its reasons (a matched reading may only know "no verdict")
        note = next((n for n in notes if n.startswith("all ") and "(no verdict" not in n), notes[0])
        if "failed-" in note:
            needs.append(
                "answers and verdicts from calls that succeed (a rerun retries the failed calls; see the exclusions by reason)"
            )
        else:
            needs.append("verdicts the parser can read (see the exclusions by reason; docs/verdicts.md)")
        return f"{name}, {words}: not measurable — {note}.", needs
    if census:
        generators = census.get("generators") or {}
        total = sum(len(v) for v in generators.values())
        unknown = generators.get("unknown") or []
        if not generators.get(scope):
            why = {
                "self": f"its own answers are not among the {_count(total, 'generator')} it judged",
                "family": f"no generator of its family ({census.get('family') or 'unknown'}) is among the "
                f"{_count(total, 'generator')} it judged",
                "student": f"none of the {_count(total, 'generator')} it judged is recorded as trained on its outputs",
                "family-student": f"none of the {_count(total, 'generator')} it judged is recorded as trained on its "
                "family's outputs",
            }[scope]
            needs.append(
                {
                    "self": "answers written by the judge itself among the generators (its registry name or an alias)",
                    "family": "answers of a model of its family among the generators",
                    "student": "a generator trained on its outputs, declared with `teachers` in a models file",
                    "family-student": "a generator trained on its family's outputs, declared with `teachers` in a models file",
                }[scope]
            )
            if unknown:
                shown = ", ".join(unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
                needs.append(
                    f"relations for the {_count(len(unknown), 'generator')} the registry does not know "
                    f"({shown}): a models file with their families or aliases"
                )
            return f"{name}, {words}: not measurable — {why}.", needs
        opponents = [s for s in generators if s not in ("self", scope)]
        if not opponents:
            needs.append("comparisons of these answers with a model unrelated to the judge")
            return (
                f"{name}, {words}: not measurable — every such answer met only answers at least as related to the judge.",
                needs,
            )
    why = notes[0] if notes else "no metric measured it in this data"
    needs.append(
        "a judge unrelated to both candidates on the same items and pairs, or reference labels "
        "(human preferences, correctness or rubric truth)"
    )
    return f"{name}, {words}: not measurable — {why}.", needs


# ----------------------------------------------------------------------------------- short forms
#: A verdict's rung in a few words (tables).
RUNG_WORDS = {"matched": "vs unrelated judges", "reference": "vs reference", "alone": "judge alone"}
#: A verdict's finding in a few words (tables).
FINDING_WORDS = {
    "favours": "favours",
    "disfavours": "harder on them",
    "no-clear-difference": "no clear effect",
    "cannot-separate": "cannot separate",
}


def _formatter(verdict: Verdict) -> Callable[[float], str]:
    if verdict.metric == "hspp-ratio":
        return lambda x: f"{x:.2f}×"
    if verdict.metric == "self-preference-ratio":
        return _pct
    if verdict.metric == "matched-bias" and verdict.variant.get("kind") == "pointwise":
        return lambda x: f"{x:+.2f}"
    return _pts


def value_text(verdict: Verdict) -> str:
    """The verdict's number as printed in tables (``+8.6`` points, ``1.51×``, ``81.0%``), or ``—``."""
    if verdict.value is None:
        return "—"
    return _formatter(verdict)(verdict.value)


def interval_text(verdict: Verdict) -> str:
    """``low to high`` on the value's scale, or ``—``."""
    if verdict.ci_low is None or verdict.ci_high is None:
        return "—"
    fmt = _formatter(verdict)
    return f"{fmt(verdict.ci_low)} to {fmt(verdict.ci_high)}"


def status_text(verdict: Verdict) -> str:
    """The verdict in a few words: its finding, ``too little data`` or ``not measurable``."""
    if verdict.status == "measured":
        return FINDING_WORDS.get(verdict.finding or "", verdict.finding or "")
    return verdict.status.replace("-", " ")


def reason_text(verdict: Verdict) -> str:
    """For a verdict without a number: why, in one clause (the sentence after its dash)."""
    _, _, why = verdict.sentence.partition(" — ")
    return why.rstrip(".") if why else verdict.sentence


#: The reasons that say a relation has no candidate among the generators judged (`_missing`).
_NO_RELATIVE = ("its own answers are not among", "no generator of its family", "none of the")


def summary_rows(verdicts: Sequence[Verdict]) -> list[dict[str, Any]]:
    """The rows every summary shows (``nepotism metrics``, the report, the demo): one per verdict,
    except that a judge none of whose relatives it judged (a reference judge) gets one row, not
    one per scope. Each row: judge, judge_id, condition, scope (``any`` for the collapsed row),
    relation, status, verdict, finding, value, ci, prompts, evidence (rung and metric, or the
    reason), sentence, needs, records (the record keys it reads) and confidence."""
    groups: dict[tuple[str, str], list[Verdict]] = {}
    for v in verdicts:
        groups.setdefault((v.judge, v.condition), []).append(v)
    rows: list[dict[str, Any]] = []
    for (judge, condition), items in groups.items():
        base = {"judge": judge, "judge_id": items[0].judge_id, "condition": condition}
        if len(items) > 1 and all(v.status == "not-measurable" and reason_text(v).startswith(_NO_RELATIVE) for v in items):
            rows.append(
                {
                    **base,
                    "scope": "any",
                    "relation": "any relative",
                    "status": "not-measurable",
                    "verdict": "not measurable",
                    "finding": "not-measurable",
                    "value": "—",
                    "ci": "—",
                    "prompts": "—",
                    "confidence": None,
                    "evidence": "none of its own, its family's or its students' answers is among those it judged",
                    "sentence": " ".join(v.sentence for v in items),
                    "needs": list(dict.fromkeys(n for v in items for n in v.needs)),
                    "records": [],
                }
            )
            continue
        for v in items:
            measured = v.status == "measured"
            if measured and v.rung:
                evidence = f"{RUNG_WORDS[v.rung]}: {v.metric}"
            elif v.status == "too-little-data" and v.also:
                best = next((a for a in v.also if a["value"] is not None), v.also[0])
                evidence = f"{RUNG_WORDS[best['rung']]}: {best['metric']} — {best['why_not']}"
            else:
                evidence = reason_text(v)
            rows.append(
                {
                    **base,
                    "scope": v.scope,
                    "relation": RELATION_LABELS[v.scope],
                    "status": v.status,
                    "verdict": status_text(v),
                    "finding": v.finding or v.status,
                    "value": value_text(v),
                    "ci": interval_text(v) if measured else "—",
                    "prompts": f"{v.n_clusters:,}" if measured else "—",
                    "confidence": v.confidence,
                    "evidence": evidence,
                    "sentence": v.sentence,
                    "needs": list(v.needs),
                    "records": list(v.evidence),
                }
            )
    return rows


# ----------------------------------------------------------------------------------- the ladder
def _also(reading: Mapping[str, Any], why: str | None) -> dict[str, Any]:
    """A reading the verdict did not use: ``usable`` when it could have carried one (a stronger rung
    did), else ``why_not`` says why it could not."""
    r = reading["record"]
    return {
        "rung": reading["rung"],
        "metric": r["metric"],
        "value": r.get("value"),
        "ci_low": r.get("ci_low"),
        "ci_high": r.get("ci_high"),
        "n": r.get("n") or 0,
        "n_clusters": r.get("n_clusters") or 0,
        "record": record_key(r),
        "used": False,
        "usable": why is None,
        "why_not": why or "a stronger reading carries the verdict",
    }


def _one(
    name: str,
    judge: str,
    judge_id: str | None,
    condition: str,
    scope: str,
    items: list[Mapping[str, Any]],
    census: Mapping[str, Any] | None,
    min_prompts: int,
) -> Verdict:
    readings = _matched(items, scope, census) + _reference(items, scope) + _alone(items, scope)
    chosen, also = None, []
    for reading in readings:
        why = _usable(reading, min_prompts)
        if chosen is None and why is None:
            chosen = reading
            continue
        also.append(_also(reading, why))
    verdict = partial(Verdict, judge=judge, judge_id=judge_id, condition=condition, scope=scope)
    if chosen is not None:
        r = chosen["record"]
        finding = _finding(r["ci_low"], r["ci_high"], chosen["null"])
        harm = _harm(items, scope, chosen, min_prompts)
        needs = []
        if chosen["rung"] == "alone":
            needs.append(
                "a judge unrelated to both candidates on the same items and pairs, or reference labels "
                "(human preferences or correctness), to separate favouritism from answer quality"
            )
        elif chosen["rung"] == "reference":
            needs.append(
                "a judge unrelated to both candidates on the same items and pairs: a reference compares the "
                "judge with itself across different items, which wide winning margins can push up "
                "(docs/matched-bias.md)"
            )
        sentence = _sentence(name, scope, chosen, finding)
        if chosen["rung"] == "alone":
            stronger = [a for a in also if a["rung"] != "alone" and a["value"] is not None]
            if stronger:
                sentence += (
                    " Stronger evidence exists but cannot carry a verdict: "
                    + "; ".join(f"{a['metric']} ({a['rung']}) — {a['why_not']}" for a in stronger)
                    + "."
                )
            else:
                sentence += " No judge unrelated to both candidates saw these pairs and no reference says which is better."
        if harm is not None:
            sentence += f" Harm: {harm['text']}."
        return verdict(
            status="measured",
            rung=chosen["rung"],
            metric=r["metric"],
            variant=dict(r.get("variant") or {}),
            value=r["value"],
            ci_low=r["ci_low"],
            ci_high=r["ci_high"],
            confidence=r.get("confidence"),
            n=r.get("n") or 0,
            n_clusters=r.get("n_clusters") or 0,
            p_value=r.get("p_value"),
            null=chosen["null"],
            finding=finding,
            sentence=sentence,
            needs=tuple(needs),
            evidence=(record_key(r),) + ((harm["record"],) if harm else ()),
            also=tuple(also),
            harm=harm,
        )
    defined = [a for a in also if a["value"] is not None and not a["why_not"].startswith("not a clean")]
    if defined:
        best = defined[0]
        rung_words = {
            "matched": "a comparison with judges unrelated to both candidates",
            "reference": "a comparison with reference labels",
            "alone": "the judge's own preferences",
        }
        sentence = (
            f"{name}, {SCOPE_WORDS[scope]}: too little data for a verdict — the strongest evidence, "
            f"{rung_words[best['rung']]} ({best['metric']}): {best['why_not']}."
        )
        return verdict(
            status="too-little-data",
            sentence=sentence,
            needs=(f"more prompts (at least {min_prompts}) where the judge compares these answers",),
            evidence=tuple(a["record"] for a in defined),
            also=tuple(also),
        )
    notes = [a["why_not"] for a in also if a["why_not"].startswith("all ")]
    notes += [str(a_note) for a_note in (r.get("note") for r in (x["record"] for x in readings)) if a_note]
    sentence, needs = _missing(name, scope, census, [n.removeprefix("not measurable: ") for n in notes])
    return verdict(
        status="not-measurable",
        sentence=sentence,
        needs=tuple(needs),
        evidence=tuple(a["record"] for a in also),
        also=tuple(also),
    )


def judge_verdicts(
    records: Iterable[Mapping[str, Any]],
    relations: Sequence[Mapping[str, Any]] = (),
    *,
    min_prompts: int = MIN_PROMPTS,
    scopes: Sequence[str] = AUDITED_SCOPES,
) -> list[Verdict]:
    """One `Verdict` per (judge, condition) and scope, in a stable order (module docstring).

    ``records``: result records as dicts (`Record.to_dict`). ``relations``: the audit's
    `relation_census` (``Results.summary["relations"]``); without it, the (judge, condition) pairs
    come from the records and a scope without evidence says only what the records' notes say.
    ``min_prompts``: the fewest prompts a verdict's number may rest on (`MIN_PROMPTS`)."""
    if min_prompts < 1:
        raise ValueError("min_prompts must be at least 1")
    unknown = [s for s in scopes if s not in SCOPE_WORDS]
    if unknown:
        raise ValueError(f"unknown scope(s): {', '.join(unknown)}")
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("judge") is None:
            continue
        groups[(str(r["judge"]), str(r.get("condition") or "default"))].append(r)
    census: dict[tuple[str, str], Mapping[str, Any]] = {}
    for row in relations:
        key = (str(row["judge"]), str(row["condition"]))
        census.setdefault(key, row)
        groups.setdefault(key, [])
    if census:  # the judges of the tables audited, not pseudo-judges of pooled records (PLS pairs)
        groups = defaultdict(list, {key: items for key, items in groups.items() if key in census})
    conditions: dict[str, set[str]] = defaultdict(set)
    for judge, condition in groups:
        conditions[judge].add(condition)
    out = []
    for (judge, condition), items in sorted(groups.items()):
        entry = census.get((judge, condition))
        judge_id = (entry or {}).get("judge_id") or next((r.get("judge_id") for r in items if r.get("judge_id")), None)
        if entry is None and not any(r.get("metric") in LADDER_METRICS and verdict_scope(r.get("scope")) for r in items):
            continue  # no record the ladder reads (a committee's agreement, a leaderboard audit's ranks only)
        name = judge if len(conditions[judge]) == 1 else f"{judge} ('{condition}')"
        for scope in scopes:
            out.append(_one(name, judge, judge_id, condition, scope, items, entry, min_prompts))
    return out
