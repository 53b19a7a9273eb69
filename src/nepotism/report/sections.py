"""The tables of the report's analysis sections, from result records (plots are `section_plots`).

- `mitigation_tables`: ``nepotism mitigate`` records (``metric = "mitigation-effect"``, variant
  ``{mitigation, base_metric, scope}``, the scope being the judged side — ``self``, ``family`` or
  ``student`` as ``[mitigate] target`` says — or a third-party control): one row per condition,
  judge, scope and base metric with the value before and after, the paired change and its CI, n
  and the excluded comparisons (and the judged side's win-rate rows alone, the section's main
  table); and one row per condition with what
  the run summary says failed (perturbations not made, jury items without a verdict, votes
  dropped) and why its undefined changes are undefined; and, per perturbation and judge, the
  self-evaluation change beside the third-party change and their ratio (paper 003 Fig. 15).
- `leakage_tables`: ``nepotism leakage run`` records — PLS per judge pair × student group (and per
  category slice), student recognition and the classifier baseline; and ``nepotism leakage audit``
  records — the leaderboard bonus and each entry's rank before and after removing it.
- `verifiable_table`: paper 004's SPR, LSPR, HSPP and judge accuracy per judge and condition,
  against every other model's answer as the paper counts them (`VERIFIABLE_NOTE`; the project's
  headline counts unrelated opponents only); `task_scatter_table`: the same four against each
  judge's own task accuracy, Pearson r across judges (004 Figs. 1–4).
- `rubric_table`: paper 002's HSPP ratio (self/family × instance/rubric), MIPA and MRA per judge.
- `human_tables`: ``nepotism annotate agreement`` — agreement and kappa among annotators and of
  each judge with the human majority, with the label counts.
- `exclusion_table`: ``excluded-verdicts`` records — per judge, condition and table kind, how many
  judgments had no verdict and why (``unparsed-conflicting``, ``failed-timeout``, ...); each row
  also lists the generators its ``exclusion-share-gap`` records flag (left out far more often than
  the judge's others: a sign of gaming the verdict reader).
- `coverage`: which metric ids have a section of their own and which only reach "All results".

Every estimate is written by `_format.format_value` (undefined → "n/a (why…)", never 0). What
this module leaves out: computing anything.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from typing import Any

from nepotism.report._format import format_number, format_value, na_text

__all__ = [
    "AUDIT_RANK",
    "CONTROL_SCOPES",
    "EVALUATEE_NOTE",
    "EXCLUSIONS",
    "EXCLUSION_GAP",
    "HUMANS",
    "MITIGATION",
    "RECOGNITION",
    "RUBRIC",
    "RUBRIC_COLUMNS",
    "SECTION_METRICS",
    "SELF_CONTROL_RATIO",
    "VERIFIABLE",
    "VERIFIABLE_NOTE",
    "coverage",
    "evaluatee_table",
    "exclusion_table",
    "human_tables",
    "is_audit_rank",
    "is_judged_side",
    "judged_side_words",
    "leakage_tables",
    "mitigation_tables",
    "rubric_records",
    "rubric_table",
    "spr_record",
    "task_scatter_table",
    "verifiable_records",
    "verifiable_table",
]

MITIGATION = "mitigation-effect"
#: Paper 003 Fig. 15: |self-evaluation change| / |third-party change| of a perturbation.
SELF_CONTROL_RATIO = "self-third-party-change-ratio"
RECOGNITION = ("student-recognition-accuracy", "student-recognition-yes-rate", "student-classifier-accuracy")
HUMANS = ("annotator-agreement", "annotator-kappa", "judge-human-agreement", "judge-human-kappa")
AUDIT_RANK = "leaderboard-rank"
VERIFIABLE = ("self-preference-ratio", "legitimate-self-preference-ratio", "harmful-self-preference-propensity", "judge-accuracy")
RUBRIC = ("hspp-ratio", "mipa", "mra")
EXCLUSIONS = "excluded-verdicts"
EXCLUSION_GAP = "exclusion-share-gap"
#: Metric ids each section draws; the rest of the ids show in the bias plots or only in "All results".
SECTION_METRICS = {
    "mitigations": (MITIGATION, SELF_CONTROL_RATIO),
    "leakage": ("preference-leakage-score", "preference-leakage-variance") + RECOGNITION,
    "leakage-audit": ("leaderboard-leakage-bonus", AUDIT_RANK),
    "verifiable": VERIFIABLE,
    "rubric": RUBRIC + ("rubric-precision", "rubric-recall", "rubric-f1", "rubric-balanced-f1"),  # report/meta_evaluation.py
    "humans": HUMANS,
    "exclusions": (EXCLUSIONS, EXCLUSION_GAP),
    "recognition": ("recognition-accuracy", "recognition-preference-association"),  # report/recognition.py
}
#: Scopes of the third-party control of a perturbation; every other scope is the judged side, ``[mitigate] target``.
CONTROL_SCOPES = ("third-party-control", "self-minus-control")
_SCOPE_ORDER = {"self": 0, "family": 0, "student": 0, "third-party-control": 1, "self-minus-control": 2}
_JUDGED_SIDE = {
    "self": "its own answer (self-evaluation)",
    "family": "its family member's answer (target family)",
    "student": "its student's answer (target student)",
}
_BASE_ORDER = (
    "self-preference",
    "self-preference-probability",
    "self-preference-ratio",
    "demographic-parity-bias",
    "harmful-self-preference",
    "judge-accuracy",
    "harmful-judge-accuracy",
    "error-bias",
)


def _v(record: dict[str, Any]) -> dict[str, Any]:
    return record.get("variant") or {}


def is_audit_rank(record: dict[str, Any]) -> bool:
    """A ``leaderboard-rank`` record of ``nepotism leakage audit`` (not the report's own leaderboard)."""
    return record.get("metric") == AUDIT_RANK and "baseline" in _v(record)


def _excluded(record: dict[str, Any]) -> str:
    n = record.get("n_excluded") or 0
    excluded = record.get("excluded") or {}
    if not n:
        return "0"
    why = ", ".join(f"{k}: {v:,}" for k, v in excluded.items()) if isinstance(excluded, dict) else ""
    return f"{n:,}" + (f" ({why})" if why else "")


# ------------------------------------------------------------------------------------ mitigations
def _judge_key(judge: object) -> tuple[bool, str]:
    return (judge == "all", str(judge))


def is_judged_side(record: dict[str, Any]) -> bool:
    """A mitigation effect on the judge's verdicts on the side it may favour (scope ``self``,
    ``family`` or ``student``: ``[mitigate] target``), not a third-party control."""
    return _v(record).get("scope") not in CONTROL_SCOPES


def judged_side_words(records: list[dict[str, Any]]) -> str:
    """Whose answer the mitigation effects of ``records`` measure, in words."""
    scopes = sorted(
        {str(_v(r).get("scope")) for r in records if r.get("metric") == MITIGATION and is_judged_side(r)},
        key=lambda s: (_SCOPE_ORDER.get(s, 9), s),
    )
    return " / ".join(_JUDGED_SIDE.get(s, f"the {s} answer") for s in scopes) or _JUDGED_SIDE["self"]


def mitigation_tables(records: list[dict[str, Any]], summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{effects: [row], conditions: [row], main: [row], judged: words}`` (empty lists when there is
    no mitigation record); ``main`` holds the win-rate rows of the judged side (`is_judged_side`)."""
    rows = [r for r in records if r.get("metric") == MITIGATION]
    if not rows:
        return {"effects": [], "conditions": [], "main": [], "ratios": [], "judged": judged_side_words([])}
    order: dict[str, int] = {}
    for r in rows:
        order.setdefault(str(r.get("condition")), len(order))
    base_rank = {m: i for i, m in enumerate(_BASE_ORDER)}
    rows = sorted(
        rows,
        key=lambda r: (
            order[str(r.get("condition"))],
            _judge_key(r.get("judge")),
            _SCOPE_ORDER.get(_v(r).get("scope", ""), 9),
            base_rank.get(_v(r).get("base_metric", ""), 99),
            str(_v(r).get("base_metric")),
        ),
    )
    effects = []
    for r in rows:
        v, base = _v(r), str(_v(r).get("base_metric"))
        change = format_value(r) if r.get("value") is not None else na_text(r)
        effects.append(
            {
                "condition": r.get("condition"),
                "mitigation": v.get("mitigation"),
                "judge": r.get("judge"),
                "scope": v.get("scope"),
                "base_metric": base,
                "before": format_number(r.get("value_baseline"), base, signed=False),
                "after": format_number(r.get("value_mitigated"), base, signed=False),
                "change": change,
                "defined": r.get("value") is not None,
                "n": r.get("n"),
                "prompts": r.get("n_clusters"),
                "excluded": _excluded(r),
                "note": r.get("note") or "",
            }
        )
    summary = summary or {}
    made = summary.get("perturbations") or {}
    analysis = summary.get("analysis") or {}
    conditions = []
    for condition in order:
        kinds = sorted({str(_v(r).get("mitigation")) for r in rows if str(r.get("condition")) == condition})
        defined = sum(1 for r in rows if str(r.get("condition")) == condition and r.get("value") is not None)
        total = sum(1 for r in rows if str(r.get("condition")) == condition)
        p = made.get(condition) or {}
        failed = p.get("failed") or {}
        info = analysis.get(condition) or {}
        other = [f"{k.replace('_', ' ')}: {v}" for k, v in info.items() if isinstance(v, int | float) and k != "threshold"]
        notes: defaultdict[str, int] = defaultdict(int)
        for r in rows:
            if str(r.get("condition")) == condition and r.get("value") is None:
                notes[str(r.get("note") or "no data")] += 1
        conditions.append(
            {
                "condition": condition,
                "mitigation": ", ".join(kinds),
                "defined": defined,
                "results": total,
                "perturbed": (f"{p['perturbed']:,} of {p['pairs']:,} pairs" if "pairs" in p else "—"),
                "failed": "; ".join(f"{reason}: {n:,}" for reason, n in sorted(failed.items(), key=lambda x: -x[1]))
                or ("0" if p else "—"),
                "n_failed": sum(failed.values()) if failed else (0 if p else None),
                "other": "; ".join(other),
                "undefined": "; ".join(f"{note} ({n})" for note, n in sorted(notes.items(), key=lambda x: -x[1])),
            }
        )
    main = [e for e in effects if e["scope"] not in CONTROL_SCOPES and e["base_metric"] == "self-preference"]
    return {
        "effects": effects,
        "conditions": conditions,
        "main": main,
        "ratios": _ratio_rows(records, order),
        "judged": judged_side_words(rows),
    }


def _ratio_rows(records: list[dict[str, Any]], order: dict[str, int]) -> list[dict[str, Any]]:
    """Paper 003 Fig. 15: per condition and judge, the self-evaluation change, the third-party change
    and the ratio of their magnitudes (``self-third-party-change-ratio`` records)."""
    changes = {
        (str(r.get("condition")), str(r.get("judge")), _v(r).get("scope")): r
        for r in records
        if r.get("metric") == MITIGATION and _v(r).get("base_metric") == "self-preference"
    }
    out: list[dict[str, Any]] = []
    for r in records:
        if r.get("metric") != SELF_CONTROL_RATIO:
            continue
        condition, judge = str(r.get("condition")), str(r.get("judge"))
        own = next(
            (e for (c, j, scope), e in changes.items() if c == condition and j == judge and scope not in CONTROL_SCOPES), None
        )
        control = changes.get((condition, judge, "third-party-control"))
        out.append(
            {
                "condition": condition,
                "judge": judge,
                "self_change": format_value(own) if own else "not measured",
                "control_change": format_value(control) if control else "not measured",
                "ratio": format_value(r),
                "defined": r.get("value") is not None,
                "n": r.get("n"),
                "excluded": _excluded(r),
            }
        )
    out.sort(key=lambda row: (order.get(row["condition"], len(order)), _judge_key(row["judge"])))
    return out


# ------------------------------------------------------------------------------------ leakage
def _students(record: dict[str, Any]) -> str:
    pair = record.get("pair")
    return " vs ".join(map(str, pair)) if pair else str(record.get("generator") or "")


def leakage_tables(records: list[dict[str, Any]]) -> dict[str, Any]:
    """``{pls, slices, recognition, bonus, audit_ranks, runs}`` rows (``runs``: the PLS's mean and
    variance over repeated runs, paper 000 App. D.2)."""
    pls, slices = [], []
    for r in records:
        if r.get("metric") != "preference-leakage-score":
            continue
        v = _v(r)
        group = v.get("group") or ("family students" if r.get("scope") == "family-student" else "—")
        row = {
            "judges": r.get("judge"),
            "group": group,
            "method": v.get("method") or "",
            "students": _students(r),
            "preference": v.get("preference", "verdict"),
            "ties": v.get("ties", "half"),
            "condition": r.get("condition"),
            "estimate": format_value(r),
            "defined": r.get("value") is not None,
            "p_value": r.get("p_value"),
            "n": r.get("n"),
            "prompts": r.get("n_clusters"),
            "excluded": _excluded(r),
        }
        if isinstance(v.get("slice"), dict) and v["slice"]:
            ((kind, label),) = list(v["slice"].items())[:1]
            slices.append({**row, "slice": f"{kind} = {label}"})
        else:
            pls.append(row)
    recognition = []
    for r in records:
        if r.get("metric") not in RECOGNITION:
            continue
        v = _v(r)
        if r.get("metric") == "student-classifier-accuracy":
            who = f"classifier ({v.get('classifier', '?')})"
            what = f"group {v.get('group', '—')}; classes {', '.join(map(str, v.get('classes') or []))}"
            chance = v.get("majority_rate")
            chance_text = "—" if chance is None else f"{100 * chance:.1f}% (majority class)"
        else:
            who = str(r.get("judge"))
            what = f"protocol {v.get('protocol', '—')}"
            chance = v.get("chance")
            chance_text = "—" if chance is None else f"{100 * chance:.1f}% (chance)"
        recognition.append(
            {
                "metric": r.get("metric"),
                "who": who,
                "what": what,
                "condition": r.get("condition"),
                "estimate": format_value(r),
                "chance": chance_text,
                "n": r.get("n"),
                "prompts": r.get("n_clusters"),
                "excluded": _excluded(r),
            }
        )
    bonus = [
        {
            "judge": r.get("judge"),
            "condition": r.get("condition"),
            "baseline": _v(r).get("baseline"),
            "reference_judge": _v(r).get("reference_judge") or "—",
            "estimate": format_value(r),
            "defined": r.get("value") is not None,
            "n": r.get("n"),
            "related": r.get("n_related"),
            "entries": r.get("n_entries"),
        }
        for r in records
        if r.get("metric") == "leaderboard-leakage-bonus"
    ]
    ranks = defaultdict(list)
    for r in records:
        if is_audit_rank(r):
            ranks[(str(r.get("judge")), str(r.get("condition")))].append(r)
    audit_ranks = []
    for (judge, condition), items in sorted(ranks.items()):
        items.sort(key=lambda r: (r.get("value") if r.get("value") is not None else float("inf"), str(r.get("generator"))))
        # the board's measure (`leakage.audit`): a win rate against the baseline, or the mean pointwise score
        measure = str(_v(items[0]).get("measure") or "win rate")
        scale = "win-rate" if measure.startswith("win rate") else "mean-score"  # a mean score: plain number
        audit_ranks.append(
            {
                "judge": judge,
                "condition": condition,
                "measure": measure,
                "entries": [
                    {
                        "entry": r.get("generator"),
                        "relation": r.get("relation") or "",
                        "related": bool(r.get("related")),
                        "score": format_number(r.get("score", r.get("win_rate")), scale),
                        "adjusted_score": format_number(r.get("adjusted_score", r.get("adjusted_win_rate")), scale),
                        "rank": r.get("original_rank"),
                        "adjusted_rank": r.get("value"),
                        "ci": (r.get("ci_low"), r.get("ci_high")),
                        "n": r.get("n"),
                        "excluded": _excluded(r),
                    }
                    for r in items
                ],
            }
        )
    runs = [
        {
            "judges": r.get("judge"),
            "students": _students(r),
            "scope": r.get("scope") or "",
            "condition": r.get("condition"),
            "runs": ", ".join(f"{k}: {100 * v:+.1f}%" for k, v in (r.get("runs") or {}).items()),
            "mean": format_number(r.get("mean"), "preference-leakage-score"),
            "variance": format_value(r),
            "defined": r.get("value") is not None,
            "n": r.get("n"),
            "excluded": _excluded(r),
        }
        for r in records
        if r.get("metric") == "preference-leakage-variance"
    ]
    return {"pls": pls, "slices": slices, "recognition": recognition, "bonus": bonus, "audit_ranks": audit_ranks, "runs": runs}


# ------------------------------------------------------------------------------------ human labels
def human_tables(records: list[dict[str, Any]], summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{rows, annotators, majority}``: agreement among annotators and of each judge with their majority."""
    rows = []
    for r in records:
        if r.get("metric") not in HUMANS:
            continue
        v = _v(r)
        who = f"judge {r.get('judge')}" if r.get("judge") is not None else str(v.get("between", "annotators"))
        rows.append(
            {
                "who": who,
                "statistic": v.get("statistic", r["metric"]),
                "collection": r.get("condition"),
                "estimate": format_value(r),
                "defined": r.get("value") is not None,
                "n": r.get("n"),
                "prompts": r.get("n_clusters"),
                "excluded": _excluded(r),
                "note": r.get("note") or "",
            }
        )
    summary = summary or {}
    annotators = (
        [
            {"annotator": name, **{k: info.get(k) for k in ("labelled", "skipped", "labels_per_minute")}}
            for name, info in (summary.get("annotators") or {}).items()
            if isinstance(info, dict)
        ]
        if rows
        else []
    )
    return {"rows": rows, "annotators": annotators, "majority": summary.get("majority") if rows else None}


# ------------------------------------------------------------------------------------ papers 004 and 002
def _pick(items: list[dict[str, Any]], metric: str, **variant: object) -> dict[str, Any] | None:
    """The record of ``metric`` whose variant holds ``variant`` (values may be tuples of choices, first wins)."""
    pool = [r for r in items if r.get("metric") == metric]
    for key, choices in variant.items():
        choices = choices if isinstance(choices, tuple) else (choices,)
        for choice in choices:
            hit = [r for r in pool if _v(r).get(key, choice if choice == "__default__" else None) == choice]
            if hit:
                pool = hit
                break
        else:
            return None
    return max(pool, key=lambda r: (r.get("value") is not None, r.get("n") or 0)) if pool else None


#: What the paper-004 panel shows (HTML and Markdown reports say it in these words).
VERIFIABLE_NOTE = (
    "Self scope, averaged per evaluatee, against every other model's answer: paper 004's definition "
    "(Eq. 2-5 count every other model, relatives included). The project's headline counts unrelated "
    'opponents only; those variants are in the results table. "n/a" is an undefined value (its '
    "reason and counts follow), not zero."
)
EVALUATEE_NOTE = (
    "The judge's answers against each other model's (paper 004's per-evaluatee tables: every other "
    'model is an evaluatee), pooled over that evaluatee\'s prompts; "judge accuracy (harmful)" counts '
    "only the pairs where the judge's answer is wrong and the evaluatee's right (paper 003 Table 4)."
)


def spr_record(items: list[dict[str, Any]], scope: str = "self") -> dict[str, Any] | None:
    """Paper 004's SPR for a judge: scope ``self`` against every other model (the paper's definition,
    variant ``opponents=any``), unrelated opponents only where that is all the records hold; the mean
    over evaluatees (004 Tables 1, 3, 5's Average) where it was computed, else the pooled share."""
    return _pick(
        [r for r in items if r.get("scope") == scope],
        "self-preference-ratio",
        opponents=("any", "unrelated"),
        averaging=("per-evaluatee", "__default__"),
    )


def verifiable_records(items: list[dict[str, Any]]) -> dict[str, dict[str, Any] | None]:
    """``{metric: record}`` for SPR, LSPR, HSPP and judge accuracy (per-evaluatee averaging, every
    other model as opponent: paper 004's definition; all D_diff examples: the harmful-case accuracy
    of paper 003 is a column of `evaluatee_table`)."""
    out = {"self-preference-ratio": spr_record(items)}
    for metric in VERIFIABLE[1:]:
        out[metric] = _pick(
            items,
            metric,
            averaging=("per-evaluatee", "__default__"),
            opponents=("any", "__default__", "unrelated"),
            preference=("verdict", "__default__"),
            examples=("__default__",),
        )
    return out


#: Paper 004 Figs. 1–4: each metric (y) against the judge's own task accuracy as a generator (x).
_TASK_SCATTER = (
    ("judge-accuracy", "Fig. 1"),
    ("self-preference-ratio", "Fig. 2"),
    ("legitimate-self-preference-ratio", "Fig. 3"),
    ("harmful-self-preference-propensity", "Fig. 4"),
)


def task_scatter_table(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Paper 004 Figs. 1–4 as rows: per condition and figure, each judge's point (its own answers'
    ``task-accuracy``, the metric as `verifiable_records` picks it) and Pearson r across the judges
    with its Fisher-z interval and p-value (`nepotism.metrics.stats.pearson`; "n/a" below three
    judges); empty without task-accuracy records of judges' own answers."""
    from nepotism.metrics.stats import pearson

    accuracy = {
        (str(r["judge"]), str(r.get("condition"))): r
        for r in records
        if r.get("metric") == "task-accuracy"
        and r.get("judge") is not None
        and r.get("value") is not None
        and (r.get("variant") or {}).get("of") == "judge's own answers"
    }
    if not accuracy:
        return []
    by_condition: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for (judge, condition), items in _by_judge(records, VERIFIABLE).items():
        if (judge, condition) in accuracy:
            by_condition[condition][judge] = verifiable_records(items)
    rows = []
    for condition, judges in sorted(by_condition.items()):
        for metric, figure in _TASK_SCATTER:
            points = [
                (judge, float(accuracy[(judge, condition)]["value"]), float(found[metric]["value"]))
                for judge, found in sorted(judges.items())
                if found.get(metric) is not None and found[metric].get("value") is not None
            ]
            if not points:
                continue
            test = pearson([p[1] for p in points], [p[2] for p in points])
            defined = test["r"] == test["r"]
            rows.append(
                {
                    "condition": condition,
                    "figure": figure,
                    "metric": metric,
                    "points": points,
                    "n_judges": len(points),
                    "r": test["r"] if defined else None,
                    "ci": (test["ci_low"], test["ci_high"]) if test["ci_low"] == test["ci_low"] else None,
                    "p_value": test["p_value"] if defined else None,
                    "note": None if defined else test["note"],
                }
            )
    return rows


#: Column order of the rubric table: self before family, rubric verdicts before direct scores and
#: pairwise verdicts at instance level, then rubric level, MIPA and MRA.
RUBRIC_COLUMNS = tuple(
    [f"hspp-ratio {scope} {level}" for scope in ("self", "family") for level in ("instance", "rubric")]
    + [f"hspp-ratio {scope} instance {p}" for scope in ("self", "family") for p in ("DA", "PWC")]
    + ["mipa SR", "mipa PWC", "mipa DA", "mra"]
)


def rubric_records(items: list[dict[str, Any]]) -> dict[str, dict[str, Any] | None]:
    """``{column: record}``: HSPP ratio self/family × instance/rubric, MIPA SR/PWC, MRA."""
    out = {}
    for scope in ("self", "family"):
        for level in ("instance", "rubric"):
            pool = [r for r in items if r.get("scope") == scope]
            extra = {"family_set": ("exclude judge", "__default__")} if scope == "family" else {}
            extra["denominator"] = ("not-family", "__default__")
            if level == "instance":  # rubric verdicts (SR) first; direct scores and pairwise verdicts apart
                extra["paradigm"] = ("SR", "__default__")
            out[f"hspp-ratio {scope} {level}"] = _pick(pool, "hspp-ratio", level=level, **extra)
            if level == "instance":
                for paradigm in ("DA", "PWC"):
                    out[f"hspp-ratio {scope} instance {paradigm}"] = _pick(
                        pool, "hspp-ratio", level=level, **{**extra, "paradigm": paradigm}
                    )
    for paradigm in ("SR", "PWC", "DA"):
        out[f"mipa {paradigm}"] = _pick(items, "mipa", paradigm=paradigm)
    out["mra"] = _pick(items, "mra")
    optional = (
        "mipa DA",
        "hspp-ratio self instance DA",
        "hspp-ratio self instance PWC",
        "hspp-ratio family instance DA",
        "hspp-ratio family instance PWC",
    )
    return {k: v for k, v in out.items() if v is not None or k not in optional}


def _by_judge(records: list[dict[str, Any]], metrics: Collection[str]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    groups: defaultdict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("metric") in metrics and r.get("judge") is not None:
            groups[(str(r["judge"]), str(r.get("condition")))].append(r)
    return dict(sorted(groups.items()))


def _cell(record: dict[str, Any] | None) -> dict[str, Any]:
    if record is None:
        return {"text": "not measured", "n": None, "defined": False}
    return {"text": format_value(record), "n": record.get("n"), "defined": record.get("value") is not None}


def verifiable_table(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (judge, condition) with the four paper-004 metrics; empty unless LSPR/HSPP/accuracy exist."""
    if not any(r.get("metric") in VERIFIABLE[1:] for r in records):
        return []
    return [
        {"judge": j, "condition": c, "cells": {m: _cell(r) for m, r in verifiable_records(items).items()}}
        for (j, c), items in _by_judge(records, VERIFIABLE).items()
    ]


#: The per-evaluatee table's column of paper 003 Table 4: judge accuracy on the harmful cases.
_HARMFUL_ACCURACY = "judge accuracy (harmful)"


def evaluatee_table(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Paper 004's per-evaluatee layout: one row per (judge, condition, evaluatee) with SPR (004 Tables
    1, 3, 5), judge accuracy, LSPR and HSPP on the comparisons of the judge's answers with that
    evaluatee's, and judge accuracy on the harmful ones (own answer wrong, the evaluatee's right:
    paper 003 Table 4) (every other model is an evaluatee, as in the paper: ``opponents=any``; empty
    without D_diff records)."""
    if not any(r.get("metric") in VERIFIABLE[1:] for r in records):
        return []
    rows: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in records:
        variant = r.get("variant") or {}
        if r.get("metric") in VERIFIABLE and variant.get("averaging") == "one evaluatee" and variant.get("opponents") == "any":
            column = _HARMFUL_ACCURACY if variant.get("examples") == "harmful (own wrong, other right)" else r["metric"]
            rows[(str(r["judge"]), str(r.get("condition")), str(variant.get("evaluatee")))][column] = r
    return [
        {"judge": j, "condition": c, "evaluatee": e, "cells": {m: _cell(found.get(m)) for m in VERIFIABLE + (_HARMFUL_ACCURACY,)}}
        for (j, c, e), found in sorted(rows.items())
    ]


def rubric_table(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (judge, condition) with HSPP ratios, MIPA and MRA; empty without such records."""
    if not any(r.get("metric") in RUBRIC for r in records):
        return []
    groups = [((j, c), rubric_records(items)) for (j, c), items in _by_judge(records, RUBRIC).items()]
    order = RUBRIC_COLUMNS
    present = {k for _, found in groups for k in found}
    columns = sorted(present, key=lambda k: order.index(k) if k in order else len(order))
    return [{"judge": j, "condition": c, "cells": {k: _cell(found.get(k)) for k in columns}} for (j, c), found in groups]


def exclusion_table(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per ``excluded-verdicts`` record (no slices): judge, condition, kind, how many
    judgments, how many without a verdict, the share with its CI, the count per reason, and
    ``flagged``: the generators a flagged ``exclusion-share-gap`` record of the same judge,
    condition and kind names (generator, its share and the others', the gap with its CI, the
    one-sided p-value and the level it was held to, its most frequent reason); empty for most."""
    flagged: dict[tuple[str | None, str | None, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        variant = _v(r)
        if r.get("metric") == EXCLUSION_GAP and r.get("flagged") and "slice" not in variant:
            reasons = r.get("excluded") or {}
            flagged[(r.get("judge"), r.get("condition"), variant.get("kind", ""))].append(
                {
                    "generator": r.get("generator"),
                    "share": format_number(r.get("share"), EXCLUSIONS),
                    "of": r.get("n"),
                    "others_share": format_number(r.get("others_share"), EXCLUSIONS),
                    "others_of": r.get("others_n"),
                    "gap": format_value(r),
                    "p": f"{r['p_value']:.3g} (≤ {r['p_threshold']:.3g})"
                    if r.get("p_value") is not None and r.get("p_threshold") is not None
                    else "n/a",
                    "reason": max(reasons, key=lambda k: (reasons[k], k)) if reasons else "none",
                }
            )
    rows = []
    for r in records:
        variant = _v(r)
        if r.get("metric") != EXCLUSIONS or "slice" in variant:
            continue
        reasons = r.get("excluded") or {}
        text = ", ".join(f"{k}: {v:,}" for k, v in reasons.items()) or "none"
        if r.get("label_mass_below_half"):  # counted, not left out (papers 001/004 take the argmax)
            text += f" (kept: {r['label_mass_below_half']:,} read from labels holding under ½ of the probability)"
        kind = variant.get("kind", "")
        rows.append(
            {
                "judge": r.get("judge"),
                "condition": r.get("condition"),
                "kind": kind,
                "judgments": r.get("n"),
                "without": r.get("n_excluded") or 0,
                "share": format_value(r),
                "reasons": text,
                "flagged": flagged.get((r.get("judge"), r.get("condition"), kind), []),
            }
        )
    return rows


def coverage(records: list[dict[str, Any]], drawn: set[str]) -> list[str]:
    """Metric ids present in ``records`` that no section or plot shows (only the all-results table)."""
    shown = set(drawn) | {m for ms in SECTION_METRICS.values() for m in ms}
    return sorted({str(r.get("metric")) for r in records} - shown)
