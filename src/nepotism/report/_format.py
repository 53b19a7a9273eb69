"""How the report writes one number: units per metric id, CIs, and "n/a" (never 0) for undefined values.

- `unit(metric)`: ``(scale, suffix)`` — shares in percent, differences in points (×100), relative
  changes (PLS) in signed percent, ratios and counts as they are.
- `format_value(record)`: ``80.7% (95% CI 79.7 to 81.8)`` / ``+6.1 pts (…)`` / ``1.42 (…)``; an
  undefined value is ``n/a (reason; n=…, k excluded: why)`` so that a reader never takes a metric
  that could not be computed for a zero.
- `format_number(x, kind)`: one bare number (before/after values, changes) in the same style.

What this module leaves out: choosing records and laying them out (`full`, `sections`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["PERCENT", "POINTS", "SIGNED_PERCENT", "format_number", "format_value", "na_text", "relation_words", "unit"]

PERCENT = frozenset(
    {
        "win-rate",
        "self-preference-ratio",
        "position-consistency",
        "judge-accuracy",
        "mipa",
        "mra",
        "legitimate-self-preference-ratio",
        "harmful-self-preference-propensity",
        "overestimation-rate",
        "recognition-accuracy",
        "perplexity-win-rate",
        "student-recognition-accuracy",
        "student-recognition-yes-rate",
        "student-classifier-accuracy",
        "excluded-verdicts",
        # base metrics of mitigation effects (their before/after values)
        "self-preference",
        "self-preference-probability",
        "harmful-self-preference",
        "rubric-self-overestimation",
        "harmful-judge-accuracy",
        "own-win-rate",
        "perturbation-quality-preference",
        "rubric-precision",
        "rubric-recall",
        "rubric-f1",
        "rubric-balanced-f1",
        # human labels (`nepotism annotate agreement`)
        "annotator-agreement",
        "judge-human-agreement",
    }
)
POINTS = frozenset(
    {
        "demographic-parity-bias",
        "equal-opportunity-bias",
        "error-bias",
        "paired-win-rate-gap",
        "matched-bias",
        "score-delta",
        "mitigation-effect",
        "leaderboard-leakage-bonus",
        "win-rate-overestimation",
        "exclusion-share-gap",
    }
)
#: Relative changes: signed percent (PLS is relative to the average win rate, paper 000 Eq. 5–6).
SIGNED_PERCENT = frozenset({"preference-leakage-score"})


def unit(metric: str) -> tuple[float, str]:
    """``(scale, suffix)`` for a metric id: ``(100, "%")``, ``(100, " pts")`` or ``(1, "")``."""
    if metric in PERCENT or metric in SIGNED_PERCENT:
        return 100.0, "%"
    if metric in POINTS:
        return 100.0, " pts"
    return 1.0, ""


def _number(x: float, scale: float, signed: bool) -> str:
    if scale != 1:
        return f"{scale * x:+.1f}" if signed else f"{scale * x:.1f}"
    return f"{x:+.3g}" if signed else f"{x:.3g}"


def format_number(x: float | None, metric: str, *, signed: bool | None = None) -> str:
    """One value in the metric's unit; ``n/a`` for None or NaN."""
    if x is None or x != x:
        return "n/a"
    scale, suffix = unit(metric)
    if signed is None:
        signed = suffix == " pts" or metric in SIGNED_PERCENT
    return _number(x, scale, signed) + suffix


def na_text(record: dict[str, Any]) -> str:
    """``n/a (why; n=…, k excluded: reasons)`` for a record without a value."""
    parts = [str(record.get("note") or "no data")]
    if record.get("n") is not None:
        parts.append(f"n={record['n']:,}")
    excluded = record.get("excluded") or {}
    if record.get("n_excluded"):
        why = ", ".join(f"{k}: {v:,}" for k, v in excluded.items()) if isinstance(excluded, dict) else ""
        parts.append(f"{record['n_excluded']:,} excluded" + (f" ({why})" if why else ""))
    return "n/a (" + "; ".join(parts) + ")"


def format_value(record: dict[str, Any]) -> str:
    """``80.7% (95% CI 79.7 to 81.8)``, ``+6.1 pts (95% CI +3.2 to +9.0)`` or ``1.42 (…)`` by metric."""
    if record.get("value") is None:
        return na_text(record)
    scale, suffix = unit(record.get("metric", ""))
    signed = suffix == " pts" or record.get("metric") in SIGNED_PERCENT
    text = _number(record["value"], scale, signed) + suffix
    if record.get("ci_low") is not None and record.get("ci_high") is not None:
        level = int(round(100 * (record.get("confidence") or 0.95)))
        text += f" ({level}% CI {_number(record['ci_low'], scale, signed)} to {_number(record['ci_high'], scale, signed)})"
    return text


#: What a model is to a judge, by the registry relation (judge, model), in words.
_RELATION_WORDS = {
    "self": "the judge itself",
    "lineage": "of its lineage",
    "student": "its student",
    "teacher": "its teacher",
    "family_student": "a student of its family",
    "same_series": "of its series",
    "same_family": "of its family",
    "unrelated": "unrelated to it",
    "unknown": "not in the registry",
}


def relation_words(relation: str) -> str:
    """What ``model`` is to the judge, in words, for a registry relation (judge, model)."""
    return _RELATION_WORDS.get(str(relation).lower(), str(relation).replace("_", " "))
