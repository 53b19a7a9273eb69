"""The judge card: per judge, which biases were measured, on what data, with n and CIs, and whether
each passes the thresholds the user set — the page a CI pipeline gates on (`nepotism card --check`).

Thresholds are TOML: a file of its own, or the ``[card]`` table of an experiment file (used when
present). Two forms, mixable:

.. code-block:: toml

    [card]
    statistic = "value"          # default for every rule: value | ci_low | ci_high
    on_missing = "fail"          # a rule that matches no defined result for ANY judge: fail | ignore

    # short form: max_<metric id with _ for ->  or  min_<metric id>; a number for every scope,
    # or a table per scope
    max_self_preference_ratio = { self = 0.60, family = 0.55 }
    max_matched_bias = 0.05
    min_judge_accuracy = 0.7

    # full form: any record field to match, plus a subset of the variant
    [[card.rule]]
    metric = "paired-win-rate-gap"
    scope = "self"               # optional; also judge, condition, generator
    variant = { texts = "identical" }
    max = 0.05                   # and/or min
    statistic = "ci_low"         # fail only when the whole interval is above 0.05

A rule applies to every record whose fields equal the rule's (the variant as a subset). Each
matching record with a defined value is one check: pass or fail. A record whose value is undefined
is listed as "not measured" and neither passes nor fails. A rule that matches no defined record
for any judge is reported as "not measured" too, and fails the card unless ``on_missing =
"ignore"`` — so a typo or missing data cannot pass silently. Unknown metric ids, unknown scopes
and malformed rules are `InputError`s (exit status 2), not failed checks. Values are in the record's own units (fractions, not percent).

What this module leaves out: rendering (`nepotism.report.full`, `nepotism.cli.card`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nepotism.analyses.verdicts import summary_rows
from nepotism.errors import InputError
from nepotism.input_limits import read_toml
from nepotism.results import Verdict

__all__ = ["Rule", "Thresholds", "judge_cards", "judges_of", "load_thresholds", "parse_thresholds"]

_STATISTICS = ("value", "ci_low", "ci_high")
_MATCH_FIELDS = ("metric", "scope", "judge", "condition", "generator")
#: What each bias metric measures, in a few words, for the card.
_BIAS_WORDS = {
    "self-preference-ratio": "share of comparisons won by the related candidate (raw; mixes bias with quality)",
    "demographic-parity-bias": "P(prefer | related) − P(prefer | other) (raw)",
    "equal-opportunity-bias": "recall on related minus on other, against human labels",
    "error-bias": "how much more often the judge errs in favour of the related candidate than against it",
    "paired-win-rate-gap": "win rate under this judge minus under another judge, same prompts and pair",
    "matched-bias": "preference for related minus that of unrelated reference judges, same items",
    "score-delta": "centred rubric score minus reference score",
    "hspp-ratio": "overestimation of related generators relative to unrelated ones",
    "overestimation-rate": "share of reference losses the judge turns into wins or ties",
    "harmful-self-preference-propensity": "preference for its own answer when the other answer is correct",
    "legitimate-self-preference-ratio": "share of own-preferences where its own answer is correct",
    "preference-leakage-score": "how much two judges favour their own students over each other's",
    "position-consistency": "agreement of the two presentation orders / first-slot share",
    "judge-accuracy": "share of verdicts naming the correct answer",
    "mipa": "agreement with the reference on which of two answers is better",
    "mra": "agreement with the reference rubric verdicts",
    "mitigation-effect": "change of a bias metric under a mitigation, same items and judge",
    "student-recognition-accuracy": "how often it recognises its own student's answers",
    "student-recognition-yes-rate": "how often it says an answer is its student's",
    "leaderboard-leakage-bonus": "leaderboard win-rate bonus of entries related to it",
    "judge-human-agreement": "share of its verdicts that match the human majority",
    "judge-human-kappa": "Cohen's kappa of its verdicts with the human majority",
}


@dataclass(frozen=True)
class Rule:
    """One threshold: records matching ``match`` (and ``variant`` as a subset) must satisfy min/max."""

    match: dict[str, Any]
    variant: dict[str, Any] = field(default_factory=dict)
    max: float | None = None
    min: float | None = None
    statistic: str = "value"
    source: str = ""

    def matches(self, record: dict[str, Any]) -> bool:
        if any(record.get(k) != v for k, v in self.match.items()):
            return False
        variant = record.get("variant") or {}
        return all(variant.get(k) == v for k, v in self.variant.items())

    def describe(self) -> str:
        where = ", ".join(f"{k}={v}" for k, v in {**self.match, **self.variant}.items())
        bounds = " and ".join(
            b for b in (f"≥ {self.min:g}" if self.min is not None else "", f"≤ {self.max:g}" if self.max is not None else "") if b
        )
        return f"{where}: {self.statistic} {bounds}"


@dataclass(frozen=True)
class Thresholds:
    rules: tuple[Rule, ...] = ()
    on_missing: str = "fail"
    path: str | None = None


def _known_metrics() -> set[str]:
    from nepotism.metrics.catalogue import METRICS

    return set(METRICS)


def _number(value: object, path: str | None, name: str, metric: str | None = None) -> float:
    """A finite threshold inside the values ``metric`` can take (`catalogue.VALUE_RANGES`)."""
    import math

    from nepotism.metrics.catalogue import VALUE_RANGES

    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"threshold {name} must be a finite number, not {value!r}", path=path, field=name)
    low, high = VALUE_RANGES.get(metric or "", (None, None))
    if (low is not None and value < low) or (high is not None and value > high):
        span = f"{'-inf' if low is None else f'{low:g}'} to {'inf' if high is None else f'{high:g}'}"
        raise InputError(
            f"threshold {name} = {value:g} is outside what {metric} can be ({span}); values are "
            "fractions (0.6 = 60%), differences in [-1, 1]",
            path=path,
            field=name,
        )
    return float(value)


def _metric(name: str, path: str | None, key: str) -> str:
    metric = name.replace("_", "-")
    if metric not in _known_metrics():
        raise InputError(
            f"unknown metric {metric!r} in threshold {key!r}; known: {', '.join(sorted(_known_metrics()))}", path=path, field=key
        )
    return metric


def _scope(scope: object, path: str | None, name: str) -> object:
    """A scope a record can carry (`nepotism.models.SCOPE_LADDER`, the lineage predicates, the
    matched-bias ``neutral`` check); a typo is an `InputError` naming it, not a rule that matches
    nothing and fails the card."""
    from nepotism.models import SCOPE_LADDER, SCOPES

    known = dict.fromkeys((*SCOPE_LADDER, *SCOPES, "neutral"))
    if scope not in known:
        raise InputError(f"unknown scope {scope!r}; scopes are {', '.join(known)}", path=path, field=name)
    return scope


def parse_thresholds(table: dict[str, Any], *, path: str | None = None) -> Thresholds:
    """Thresholds from a parsed TOML table (the ``[card]`` table, or a whole thresholds file)."""
    if "card" in table and isinstance(table["card"], dict):
        table = table["card"]
    statistic = table.get("statistic", "value")
    if statistic not in _STATISTICS:
        raise InputError(f"statistic must be one of {', '.join(_STATISTICS)}", path=path, field="statistic")
    on_missing = table.get("on_missing", "fail")
    if on_missing not in ("fail", "ignore"):
        raise InputError("on_missing must be 'fail' or 'ignore'", path=path, field="on_missing")
    rules: list[Rule] = []
    for key, value in table.items():
        if key in ("statistic", "on_missing", "rule"):
            continue
        bound, _, name = key.partition("_")
        if bound not in ("max", "min") or not name:
            raise InputError(
                f"unknown threshold key {key!r}: use max_<metric>, min_<metric> or [[card.rule]]", path=path, field=key
            )
        metric = _metric(name, path, key)
        per_scope = value if isinstance(value, dict) else {None: value}
        for scope, limit in per_scope.items():
            if scope is not None:
                _scope(scope, path, f"{key}.{scope}")
            match = {"metric": metric} | ({"scope": scope} if scope is not None else {})
            number = _number(limit, path, f"{key}.{scope}" if scope else key, metric)
            rules.append(
                Rule(
                    match=match,
                    statistic=statistic,
                    source=key,
                    max=number if bound == "max" else None,
                    min=number if bound == "min" else None,
                )
            )
    for i, raw in enumerate(table.get("rule", [])):
        name = f"rule[{i}]"
        if not isinstance(raw, dict) or "metric" not in raw:
            raise InputError(f"{name} needs a metric", path=path, field=name)
        unknown = set(raw) - set(_MATCH_FIELDS) - {"variant", "max", "min", "statistic"}
        if unknown:
            raise InputError(f"{name}: unknown field(s) {', '.join(sorted(unknown))}", path=path, field=name)
        if "max" not in raw and "min" not in raw:
            raise InputError(f"{name} needs max and/or min", path=path, field=name)
        rule_metric = _metric(str(raw["metric"]), path, name)
        if "scope" in raw:
            _scope(raw["scope"], path, f"{name}.scope")
        rule_statistic = raw.get("statistic", statistic)
        if rule_statistic not in _STATISTICS:
            raise InputError(f"{name}: statistic must be one of {', '.join(_STATISTICS)}", path=path, field=name)
        rules.append(
            Rule(
                match={k: raw[k] for k in _MATCH_FIELDS if k in raw},
                variant=dict(raw.get("variant", {})),
                statistic=rule_statistic,
                source=name,
                max=_number(raw["max"], path, f"{name}.max", rule_metric) if "max" in raw else None,
                min=_number(raw["min"], path, f"{name}.min", rule_metric) if "min" in raw else None,
            )
        )
    return Thresholds(rules=tuple(rules), on_missing=on_missing, path=path)


def load_thresholds(path: str | Path) -> Thresholds:
    """Read a thresholds TOML file (or an experiment file with a ``[card]`` table)."""
    path = Path(path)
    table = read_toml(path, what="thresholds file")
    return parse_thresholds(table, path=str(path))


def judges_of(record: dict[str, Any]) -> list[str]:
    """The judges a record belongs to (a preference-leakage record names two: ``a & b``)."""
    if record.get("judge") is None:  # e.g. a classifier baseline or a correlation across judges
        return []
    judge = str(record.get("judge"))
    if record.get("metric") == "mitigation-effect" and judge == "all":  # judges pooled: each judge has its own
        return []
    pair_of_judges = ("preference-leakage-score", "preference-leakage-variance")
    return judge.split(" & ") if record.get("metric") in pair_of_judges else [judge]


def _check(rule: Rule, record: dict[str, Any]) -> dict[str, Any]:
    x = record.get(rule.statistic)
    status = (
        "not measured"
        if x is None
        else ("fail" if (rule.max is not None and x > rule.max) or (rule.min is not None and x < rule.min) else "pass")
    )
    return {
        "rule": rule.describe(),
        "source": rule.source,
        "metric": record["metric"],
        "scope": record.get("scope"),
        "condition": record.get("condition"),
        "generator": record.get("generator"),
        "pair": record.get("pair"),
        "variant": record.get("variant") or {},
        "statistic": rule.statistic,
        "observed": x,
        "value": record.get("value"),
        "ci_low": record.get("ci_low"),
        "ci_high": record.get("ci_high"),
        "n": record.get("n"),
        "max": rule.max,
        "min": rule.min,
        "status": status,
    }


def judge_cards(
    records: list[dict[str, Any]], thresholds: Thresholds | None = None, *, source: str = "", verdicts: Sequence[Verdict] = ()
) -> dict[str, Any]:
    """``{"judges": {judge: card}, "unmatched_rules": [...], "status": pass|fail|no thresholds}``.

    A card: ``{judge, judge_id, conditions, data, answer, measured: [{metric, what, records}],
    checks, status}`` with status ``pass``, ``fail`` or ``no thresholds``; ``answer`` holds the
    judge's verdicts as the summaries show them (`nepotism.analyses.verdicts.summary_rows`).
    """
    answers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in summary_rows(list(verdicts)):
        answers[row["judge"]].append(
            {
                k: row[k]
                for k in ("condition", "scope", "relation", "verdict", "value", "ci", "prompts", "evidence", "sentence", "status")
            }
        )
    per_judge: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("metric") == "leaderboard-rank":
            continue
        for judge in judges_of(record):
            per_judge[judge].append(record)
    rules = thresholds.rules if thresholds else ()
    matched_anywhere: defaultdict[int, bool] = defaultdict(bool)
    cards: dict[str, dict[str, Any]] = {}
    for judge, items in sorted(per_judge.items()):
        checks = []
        for i, rule in enumerate(rules):
            for record in items:
                if rule.matches(record):
                    check = _check(rule, record)
                    checks.append(check)
                    matched_anywhere[i] |= check["status"] != "not measured"
        measured = defaultdict(list)
        for record in items:
            measured[record["metric"]].append(record)
        failed = any(c["status"] == "fail" for c in checks)
        cards[judge] = {
            "judge": judge,
            "judge_id": next((r.get("judge_id") for r in items if r.get("judge_id")), None),
            "conditions": sorted({str(r.get("condition")) for r in items}),
            "data": source,
            "answer": answers.get(judge, []),
            "prompts": max((r.get("n_clusters") or 0 for r in items), default=0),
            "measured": [
                {
                    "metric": m,
                    "what": _BIAS_WORDS.get(m, ""),
                    "records": len(rs),
                    "defined": sum(r.get("value") is not None for r in rs),
                }
                for m, rs in sorted(measured.items())
            ],
            "checks": checks,
            "status": "fail" if failed else ("pass" if checks else "no thresholds"),
        }
    unmatched = [
        {"rule": r.describe(), "source": r.source, "status": "not measured"}
        for i, r in enumerate(rules)
        if not matched_anywhere[i]
    ]
    if not rules:
        status = "no thresholds"
    elif any(c["status"] == "fail" for c in cards.values()) or (
        unmatched and thresholds is not None and thresholds.on_missing == "fail"
    ):
        status = "fail"
    else:
        status = "pass"
    return {
        "judges": cards,
        "unmatched_rules": unmatched,
        "status": status,
        "on_missing": thresholds.on_missing if thresholds else None,
    }
