"""The one-screen summary: each judge's self, family and student bonus in plain words, with CIs.

For every (judge, condition) and scope the best available estimate is chosen, in this order:

1. ``matched-bias`` (subset ``all``): preference for the related candidate minus that of unrelated
   reference judges on the same items and pairs — the number the summary is about;
2. ``paired-win-rate-gap``: the same pair on the same prompts under one other judge, preferring
   pairs whose opponent is unrelated to this judge and whose other judge is unrelated to both
   candidates; of those, the median pair is shown with the range of the others;
3. ``score-delta`` (rubric, centred, counted): how much higher the judge scores the generator than
   the reference grading does, relative to its average over all generators;
4. raw ``self-preference-ratio`` (unrelated opponents): flagged as raw, because it mixes bias with
   real quality differences.

Numbers come from the records unchanged; differences are printed in points (×100). Scopes that
have no record are listed as not measured. Wording only: this module computes nothing.
"""

from __future__ import annotations

from collections import defaultdict

from nepotism.report._format import relation_words

__all__ = ["headline"]

_SCOPES = {
    "self": ("its own answers", frozenset({"self"})),
    "family": ("its family's answers", frozenset({"family", "lineage", "same_series", "same_family"})),
    "student": ("answers of its students (models trained on its or its family's outputs)",
                frozenset({"student", "family-student", "family_student"})),
}


#: Records that are not one judge's bias estimate: they have sections of their own.
_NOT_PER_JUDGE = frozenset({"leaderboard-rank", "preference-leakage-score", "mitigation-effect",
                            "leaderboard-leakage-bonus", "student-recognition-accuracy", "student-recognition-yes-rate",
                            "student-classifier-accuracy", "correlation", "judge-human-agreement",
                            "judge-human-kappa", "annotator-agreement", "annotator-kappa"})


def _points(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:+.1f}"


def _ci(record: dict, scale: float = 100.0, signed: bool = True) -> str:
    level = int(round(100 * (record.get("confidence") or 0.95)))
    if record.get("ci_low") is None:
        return "no CI"
    fmt = "{:+.1f}" if signed else "{:.1f}"
    return f"{level}% CI {fmt.format(scale * record['ci_low'])} to {fmt.format(scale * record['ci_high'])}"


def _n(record: dict) -> str:
    return f"n={record.get('n') or 0:,} over {record.get('n_clusters') or 0:,} prompts"


def _judge_name(record: dict) -> str:
    return record.get("judge_id") or record["judge"]


def _defined(records, **match) -> list[dict]:
    return [r for r in records if r.get("value") is not None and all(r.get(k) == v for k, v in match.items())]


def _matched(records, scope, words, name):
    rows = [r for r in _defined(records, metric="matched-bias") if r.get("scope") in _SCOPES[scope][1]
            and (r.get("variant") or {}).get("subset", "all") == "all"]
    if not rows:
        return None
    r = max(rows, key=lambda r: r.get("n") or 0)
    refs = r.get("n_reference_judges")
    who = f"{refs} unrelated judge{'s' if refs != 1 else ''}" if refs else "unrelated judges"
    return {"scope": scope, "metric": "matched-bias", "record": r, "kind": "matched", "text":
            f"{name} gives {words} {_points(r['value'])} points ({_ci(r)}) over what {who} give the same "
            f"pairs on the same prompts ({_n(r)})."}


def _paired(records, scope, words, name):
    rows = [r for r in _defined(records, metric="paired-win-rate-gap") if r.get("scope") in _SCOPES[scope][1]]
    # prefer the other judge under the same condition: a gap across conditions mixes two effects
    same = [r for r in rows if r["variant"].get("other_condition") in (None, r.get("condition"))]
    rows = same or rows
    if not rows:
        return None
    # this judge's relation to each generator, from its win-rate records
    relation = {str(r.get("generator")): r.get("relation") for r in records if r.get("metric") == "win-rate"}
    unrelated = ("unrelated", "unknown")
    clean = [r for r in rows if r["variant"].get("other_judge_relation") in unrelated
             and r["variant"].get("other_judge_relation_to_opponent") in unrelated
             and relation.get(str(r["pair"][1]), "unrelated") in unrelated]
    pool = sorted(clean or rows, key=lambda r: (r["value"], str(r.get("pair"))))
    r = pool[(len(pool) - 1) // 2]  # the (lower) median pair: neither the best nor the worst case
    generator, opponent = r["pair"]
    other = r["variant"]["other_judge"]
    if r["variant"].get("other_condition") not in (None, r.get("condition")):
        other = f"{other} (under condition '{r['variant']['other_condition']}')"
    caveat = "" if clean else (
        f" — but not a clean comparison: for {r['variant']['other_judge']}, {generator} is "
        f"{relation_words(r['variant']['other_judge_relation'])} and {opponent} is "
        f"{relation_words(r['variant']['other_judge_relation_to_opponent'])}; for this judge {opponent} is "
        f"{relation_words(relation.get(str(opponent), 'unknown'))}")
    more = ""
    if len(pool) > 1:
        more = (f" This is the median of {len(pool)} such pairs, whose gaps run from {_points(pool[0]['value'])} to "
                f"{_points(pool[-1]['value'])} points; all are in the tables.")
    return {"scope": scope, "metric": "paired-win-rate-gap", "record": r, "kind": "paired", "text":
            f"{name} gives {words} ({generator} vs {opponent}) {_points(r['value'])} points ({_ci(r)}) over what "
            f"{other} gives the same pair on the same prompts ({_n(r)}){caveat}.{more}"}


def _delta(records, scope, words, name):
    rows = [r for r in _defined(records, metric="score-delta") if r.get("scope") in _SCOPES[scope][1]
            and (r.get("variant") or {}).get("weighting", "count") == "count"]
    if not rows:
        return None
    r = max(rows, key=lambda r: abs(r["value"]))
    more = f" (largest of {len(rows)} generators)" if len(rows) > 1 else ""
    return {"scope": scope, "metric": "score-delta", "record": r, "kind": "reference", "text":
            f"{name} scores {words} ({r.get('generator')}){more} {_points(r['value'])} points of rubrics met "
            f"({_ci(r)}) above what the reference grading gives them, relative to its average over all "
            f"generators ({_n(r)})."}


def _raw(records, scope, words, name):
    rows = [r for r in _defined(records, metric="self-preference-ratio") if r.get("scope") in _SCOPES[scope][1]]
    rows = ([r for r in rows if (r.get("variant") or {}).get("opponents") == "unrelated"] or rows)
    if not rows:
        return None
    r = max(rows, key=lambda r: r.get("n") or 0)  # the scope with most comparisons (student or family-student)
    against = "unrelated models" if r["variant"].get("opponents") == "unrelated" else "less related models"
    return {"scope": scope, "metric": "self-preference-ratio", "record": r, "kind": "raw", "text":
            f"{name} prefers {words} over {against} in {100 * r['value']:.1f}% of comparisons "
            f"({_ci(r, signed=False)}%; {_n(r)}). Raw: this mixes bias with real quality differences — "
            "no other judge saw the same pairs, so nothing here separates the two."}


def headline(records: list[dict]) -> list[dict]:
    """One entry per (judge, condition): ``{judge, condition, lines: [{scope, metric, kind, text,
    record}], not_measured: [scope, ...]}`` in a stable order."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in records:
        if r.get("metric") in _NOT_PER_JUDGE or r.get("judge") is None:
            continue
        groups[(str(r["judge"]), str(r.get("condition")))].append(r)
    conditions = defaultdict(set)
    for judge, condition in groups:
        conditions[judge].add(condition)
    out = []
    for (judge, condition), items in sorted(groups.items()):
        name = _judge_name(items[0])
        if len(conditions[judge]) > 1:
            name = f"{name} ('{condition}')"
        name = f"The {name} judge"
        lines, missing = [], []
        for scope, (words, _) in _SCOPES.items():
            for pick in (_matched, _paired, _delta, _raw):
                line = pick(items, scope, words, name)
                if line:
                    lines.append(line)
                    break
            else:
                missing.append(scope)
        out.append({"judge": judge, "judge_id": items[0].get("judge_id"), "condition": condition,
                    "lines": lines, "not_measured": missing})
    return out
