"""The full report: one self-contained HTML page, the same numbers as Markdown, CSV and JSON.

`write_report` takes result records (any mix of `nepotism.audit`, `run_suite` and `derived` records)
and writes ``report.html`` (the Summary first — the judge verdicts of `nepotism.analyses.verdicts`
as a table and sentences, each linked to the records it reads and, when given, to the cases
behind it (`nepotism.report.cases`) —, then those cases, then every section whose records
exist, then the judge cards and all results; plots are embedded PNGs, styles inline, no script,
nothing fetched when viewed), ``report.md``, ``results.csv`` and ``results.json`` (the results
document, `nepotism.results.Results.to_json`, with the judge cards under ``summary.cards`` —
readable again by `nepotism report` and `nepotism card`). Every
model-provided string is escaped: jinja2 autoescape in HTML; ``<``, ``>``, ``&``, ``|`` and
backticks in Markdown; CSV cells that a spreadsheet would run as a formula get a leading ``'``.
All files are built in memory and each is written atomically.

What this module leaves out: computing results (`nepotism.analyses`, `derived`) and the figures
themselves (`plots`).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape

from nepotism._files import write_files
from nepotism.analyses.verdicts import MIN_PROMPTS, judge_verdicts, summary_rows
from nepotism.report import plots
from nepotism.report._format import format_value
from nepotism.report.card import Thresholds, judge_cards, judges_of
from nepotism.report.cases import case_links, case_sections, cases_markdown
from nepotism.report.meta_evaluation import meta_evaluation_table
from nepotism.report.paradigms import accuracy_bias_table
from nepotism.report.plots import BIAS_METRICS
from nepotism.report.recognition import CAPTION as RECOGNITION_CAPTION
from nepotism.report.recognition import EVALUATEE_CAPTION as RECOGNITION_EVALUATEE_CAPTION
from nepotism.report.recognition import recognition_markdown, recognition_table
from nepotism.report.section_plots import section_plots
from nepotism.report.sections import (
    EVALUATEE_NOTE,
    VERIFIABLE_NOTE,
    coverage,
    evaluatee_table,
    exclusion_table,
    human_tables,
    is_audit_rank,
    leakage_tables,
    mitigation_tables,
    rubric_table,
    task_scatter_table,
    verifiable_table,
)
from nepotism.results import Results, Verdict, record_key

if TYPE_CHECKING:
    from nepotism.analyses.cases import Explanation

__all__ = ["build_report", "format_value", "verdict_groups", "write_report"]

_RAW_CAVEAT = (
    "Self-preference ratios, demographic-parity, equal-opportunity and HSPP-style metrics compare a judge "
    "with itself across items. They can come out positive for a judge with no bias at all whose own "
    "answers are strong: it wins its comparisons by wide margins and loses them by narrow ones. Numbers "
    "that compare the same items and pairs under other judges (matched bias, paired win-rate gaps) do not "
    "have that problem; the summary uses them where they exist and says when it could not."
)


def _variant_text(variant: dict[str, Any] | None) -> str:
    if not variant:
        return ""
    return "; ".join(f"{k}={v}" for k, v in sorted(variant.items()))


def _target(record: dict[str, Any]) -> str:
    if record.get("pair"):
        return " vs ".join(map(str, record["pair"]))
    return str(record.get("generator") or "")


def _row(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "key": record_key(record),
        "metric": record.get("metric"),
        "judge": record.get("judge"),
        "condition": record.get("condition"),
        "scope": record.get("scope") or "",
        "target": _target(record),
        "variant": _variant_text(record.get("variant")),
        "estimate": format_value(record),
        "n": record.get("n"),
        "prompts": record.get("n_clusters"),
        "excluded": record.get("n_excluded"),
        "p_value": record.get("p_value"),
        "note": record.get("note") or "",
    }


#: A rank with its interval, ``(rank, ci_low, ci_high)``.
_Rank = tuple[float, float | None, float | None]


def _rank(r: dict[str, Any] | None) -> _Rank | None:
    return None if r is None or r.get("value") is None else (r["value"], r.get("ci_low"), r.get("ci_high"))


def _rank_change(a: dict[str, Any] | None, u: dict[str, Any] | None) -> float | None:
    """All judges' rank minus the unrelated judges' rank; None unless both are defined (either may be
    unranked)."""
    if a is None or u is None or a.get("value") is None or u.get("value") is None:
        return None
    return float(a["value"] - u["value"])


def _leaderboard_table(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by: defaultdict[str, dict[str | None, dict[str, Any]]] = defaultdict(dict)
    for r in records:
        if r.get("metric") == "leaderboard-rank" and not is_audit_rank(r):
            by[str(r["generator"])][(r.get("variant") or {}).get("judges")] = r
    rows: list[dict[str, Any]] = []
    for generator, sides in by.items():
        a, u = sides.get("all"), sides.get("unrelated")
        rows.append(
            {
                "generator": generator,
                "board": ((a or u or {}).get("variant") or {}).get("board"),
                "flagged_entry": bool((a or u or {}).get("flagged_entry")),
                "unranked": a.get("note") if a and a.get("value") is None else None,
                "all": _rank(a),
                "unrelated": _rank(u),
                "score_all": a and a.get("score"),
                "score_unrelated": u and u.get("score"),
                "n_all": a and a.get("n"),
                "n_unrelated": u and u.get("n"),
                "dropped": u.get("n_excluded") if u else None,
                "flag": u.get("note") if u and u.get("value") is None else None,
                "related_judges": (u or {}).get("related_judges"),
                "change": _rank_change(a, u),
            }
        )
    if any(r["flag"] for r in rows):  # ranks among fewer generators: a change of rank would mislead
        for r in rows:
            r["change"] = None
    rows.sort(key=lambda r: (r["board"] is None, r["board"] or "", r["all"][0] if r["all"] else math.inf, r["generator"]))
    return rows


def _sections(records: list[dict[str, Any]]) -> dict[str, bool]:
    metrics = {r.get("metric") for r in records}
    return {
        "perplexity": bool({"perplexity-win-rate", "mean-log-perplexity"} & metrics),
        "confusion": any(r.get("confusion_matrix") for r in records),
        "pls": "preference-leakage-score" in metrics,
        "leaderboard": any(r.get("metric") == "leaderboard-rank" and not is_audit_rank(r) for r in records),
        "matched": "matched-bias" in metrics,
    }


#: The page's analysis sections in order: (id, name in the navigation, why a section can be missing).
_SECTIONS = (
    (
        "heatmaps",
        "Heatmaps",
        "no generator was scored by two or more judges against the same opponents, and there are no rubric score deltas",
    ),
    ("bias", "Bias per judge", "no bias metric"),
    (
        "verifiable",
        "Verifiable tasks",
        "LSPR, HSPP and judge accuracy need a correctness reference (correctness-ref) for pairwise judgments",
    ),
    ("rubric", "Rubric metrics", "HSPP ratio, MIPA and MRA need rubric judgments with a reference grading (rubric-ref)"),
    (
        "recognition",
        "Self-recognition",
        "needs recognition judgments (a [[judging.protocols]] with protocol = "
        '"recognition"); with a perturbation, nepotism mitigate asks them again',
    ),
    (
        "pls",
        "Preference leakage",
        "needs two judges that each have a registered student among the generators (nepotism leakage run)",
    ),
    ("leakage-audit", "Leakage audit", "nepotism leakage audit writes these"),
    (
        "perplexity",
        "Perplexity",
        "needs the judge's perplexity of each response (a [perplexity] table in the "
        "experiment, or perplexity_a/_b columns); the human line needs a preference-ref",
    ),
    ("confusion", "Confusion matrices", "needs human preference labels (a preference-ref table)"),
    ("conditions", "Conditions", "each bias metric was measured under one condition only"),
    ("mitigations", "Mitigations", "nepotism mitigate writes these"),
    ("leaderboard", "Leaderboard", "computed from pairwise judgments (run nepotism report on the judgments file)"),
    ("humans", "Human labels", "nepotism annotate agreement --json writes these"),
    ("exclusions", "Verdicts left out", "no judgment tables (the records hold no excluded-verdicts)"),
)


def _shown(context: dict[str, Any]) -> dict[str, bool]:
    plots, leak = context["plots"], context["leakage"]
    return {
        "heatmaps": bool(plots["heatmaps"]),
        "bias": bool(plots["bias"]),
        "verifiable": bool(context["verifiable"]),
        "rubric": bool(context["rubric"]),
        "recognition": bool(context["recognition"]["rows"]),
        "pls": bool(leak["pls"] or leak["slices"] or leak["recognition"]),
        "leakage-audit": bool(leak["bonus"] or leak["audit_ranks"]),
        "perplexity": bool(plots["perplexity"]),
        "confusion": bool(plots["confusion"]),
        "conditions": bool(plots["conditions"]),
        "mitigations": bool(context["mitigations"]["effects"]),
        "leaderboard": bool(context["leaderboard"]),
        "humans": bool(context["humans"]["rows"]),
        "exclusions": bool(context["exclusions"]),
    }


#: Metric ids each generic plot draws (for the list of ids shown only in the all-results table).
_DRAWN = set(BIAS_METRICS) | {"win-rate", "perplexity-win-rate", "mean-log-perplexity", "leaderboard-rank", "score-delta"}


def _setting(record: dict[str, Any]) -> dict[str, Any]:
    """For display, a rubric setup (``variant.setup``) joins the condition: "default · all-rubrics".

    Single-rubric and all-rubrics results are separate measurements (paper 002 §2); every section
    that lays results out by condition then shows them side by side instead of picking one.
    """
    setup = (record.get("variant") or {}).get("setup")
    if not setup:
        return record
    return {**record, "condition": f"{record.get('condition') or 'default'} · {setup}"}


def _all_plots(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Every section's plots: ``{section: [plot, ...]}`` (the analysis sections' from `section_plots`)."""
    return {
        "heatmaps": plots.heatmaps(records),
        "bias": plots.bias_bars(records),
        "perplexity": plots.perplexity(records),
        "confusion": plots.confusion_matrices(records),
        "conditions": plots.mitigation(records),
        "leaderboard": plots.leaderboard(records),
        **section_plots(records),
    }


def verdict_groups(verdicts: list[Verdict], keys: set[str]) -> list[dict[str, Any]]:
    """The Summary's rows (`summary_rows`) grouped per (judge, condition), each row's links limited
    to the record keys the page holds."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for row in summary_rows(verdicts):
        group = groups.setdefault(
            (row["judge"], row["condition"]),
            {"judge": row["judge"], "judge_id": row["judge_id"], "condition": row["condition"], "rows": []},
        )
        group["rows"].append({**row, "links": [k for k in row["records"] if k in keys]})
    return list(groups.values())


def build_report(
    records: list[dict[str, Any]],
    *,
    summary: dict[str, Any] | None = None,
    findings: list[str] | None = None,
    thresholds: Thresholds | None = None,
    title: str = "nepotism report",
    attribution: str | None = None,
    verdicts: list[Verdict] | None = None,
    cases: Mapping[str, Explanation] | None = None,
) -> dict[str, Any]:
    """Everything the page and the other files show, as one dict (plots included). ``verdicts``: the
    judge verdicts (default: made from ``records`` and ``summary["relations"]`` by the one ladder).
    ``cases``: the cases behind the verdicts (`nepotism.analyses.cases.Explanation` by
    ``judge|condition|scope``, as `nepotism.api.explain_verdicts` makes them from the judgments);
    without them the page has no cases section."""
    records = [_setting(r) for r in records]
    summary = dict(summary or {})

    source = str(summary.get("source", ""))
    if verdicts is None:
        verdicts = judge_verdicts(
            records, summary.get("relations") or (), min_prompts=int(summary.get("min_prompts") or MIN_PROMPTS)
        )
    cards = judge_cards(records, thresholds, source=source, verdicts=verdicts)
    rows = [_row(r) for r in records]
    bias_rows = [
        row
        for row, r in zip(rows, records)
        if r.get("metric") in BIAS_METRICS + ("matched-bias",) and r.get("metric") != "preference-leakage-score"
    ]
    drawn = _DRAWN | ({"equal-opportunity-bias"} if any(r.get("confusion_matrix") for r in records) else set())
    context: dict[str, Any] = {
        "mitigations": mitigation_tables(records, summary),
        "leakage": leakage_tables(records),
        "verifiable": verifiable_table(records),
        "evaluatees": evaluatee_table(records),
        "rubric": rubric_table(records),
        "task_scatter": task_scatter_table(records),
        "verifiable_note": VERIFIABLE_NOTE,
        "evaluatee_note": EVALUATEE_NOTE,
        "recognition": recognition_table(records),
        "recognition_caption": RECOGNITION_CAPTION,
        "recognition_evaluatee_caption": RECOGNITION_EVALUATEE_CAPTION,
        "paradigms": accuracy_bias_table(records),
        "meta_evaluation": meta_evaluation_table(records),
        "humans": human_tables(records, summary),
        "exclusions": exclusion_table(records),
        "generic_only": coverage(records, drawn),
        "title": title,
        "summary": summary,
        "findings": list(findings or []),
        "attribution": attribution,
        "verdicts": verdict_groups(verdicts, {row["key"] for row in rows}),
        "verdict_list": verdicts,
        "caveat": _RAW_CAVEAT,
        "plots": _all_plots(records),
        "cards": cards,
        "rows": rows,
        "bias_rows": bias_rows,
        "pls": [_row(r) for r in records if r.get("metric") == "preference-leakage-score"],
        "leaderboard": _leaderboard_table(records),
        "present": _sections(records),
        "metrics": sorted({str(r.get("metric")) for r in records}),
        "judges": sorted({j for r in records if r.get("metric") != "leaderboard-rank" for j in judges_of(r)}),
        "n_records": len(records),
        "cases": case_links(cases),
        "case_sections": case_sections(cases),
    }
    shown = _shown(context)
    context.update(sections=_SECTIONS, shown=shown, missing=[s for s in _SECTIONS if not shown[s[0]]])
    return context


# ------------------------------------------------------------------------------------ files
def _md(text: object) -> str:
    """Escape a string for a Markdown table cell or line (no markup from model names)."""
    out = "" if text is None else str(text)
    for a, b in (
        ("&", "&amp;"),
        ("<", "&lt;"),
        (">", "&gt;"),
        ("|", "\\|"),
        ("`", "\\`"),
        ("*", "\\*"),
        ("_", "\\_"),
        ("[", "\\["),
        ("]", "\\]"),
        ("\n", " "),
    ):
        out = out.replace(a, b)
    return out


def _md_table(columns: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return lines


def _flag_text(row: dict[str, Any]) -> str:
    """``lineage only (gpt-4: same_series)``: no judge unrelated to the generator scored it."""
    judges = row.get("related_judges") or {}
    return "lineage only" + (f" ({', '.join(f'{j}: {v}' for j, v in judges.items())})" if judges else "")


def _rank_text(rank: _Rank | None) -> str:
    if rank is None:
        return "—"
    value, low, high = rank
    return f"{value:g}" + (f" ({low:g}–{high:g})" if low is not None else "")


def _markdown(context: dict[str, Any]) -> str:
    out = [f"# {_md(context['title'])}", ""]
    if context["summary"].get("source"):
        out += [f"Source: {_md(context['summary']['source'])}", ""]
    out += ["## Summary: how much each judge favours its relatives", ""]
    rows = [
        [g["judge"], g["condition"], r["relation"], r["verdict"], r["value"], r["ci"], r["prompts"], r["evidence"]]
        for g in context["verdicts"]
        for r in g["rows"]
    ]
    if rows:
        out += _md_table(["judge", "condition", "relation", "verdict", "value", "95% CI", "prompts", "evidence"], rows)
        out += [""]
        out += [f"- {_md(r['sentence'])}" for g in context["verdicts"] for r in g["rows"] if r["status"] != "not-measurable"]
    else:
        shown = context["shown"]
        below = shown["mitigations"] or shown["pls"] or shown["leakage-audit"]
        out.append("No per-judge verdict in these results" + (": see the sections below." if below else "."))
    out += ["", f"> {context['caveat']}", ""]
    if context["missing"]:
        out += ["Not in these results: " + "; ".join(f"{name} ({why})" for _, name, why in context["missing"]) + ".", ""]
    out += cases_markdown(context["case_sections"], _md)
    out += ["## Bias metrics", ""]
    keys = ["metric", "judge", "condition", "scope", "target", "variant", "estimate", "n", "prompts", "excluded"]
    out += _md_table(keys, [[row[k] for k in keys] for row in context["bias_rows"]]) + [""]
    out += _md_sections(context)
    if context["leaderboard"]:
        out += ["## Leaderboard (rank, interval)", ""]
        out += _md_table(
            ["generator", "all judges", "related judges left out", "change"],
            [
                [
                    r["generator"],
                    _rank_text(r["all"]),
                    _flag_text(r) if r["flag"] else _rank_text(r["unrelated"]),
                    "" if r["change"] is None else f"{r['change']:+g}",
                ]
                for r in context["leaderboard"]
            ],
        ) + [""]
    out += ["## Judge cards", ""]
    cards = context["cards"]
    for judge, card in cards["judges"].items():
        out += [
            f"### {_md(judge)} — {card['status'].upper()}",
            "",
            f"Conditions: {_md(', '.join(card['conditions']))}; up to {card['prompts']:,} prompts.",
            "",
        ]
        out += _md_table(
            ["metric", "results", "defined", "what it measures"],
            [[m["metric"], m["records"], m["defined"], m["what"]] for m in card["measured"]],
        ) + [""]
        if card["checks"]:
            out += _md_table(
                ["rule", "scope", "condition", "target", "observed", "status"],
                [
                    [
                        c["rule"],
                        c["scope"],
                        c["condition"],
                        " vs ".join(c["pair"]) if c["pair"] else c["generator"],
                        "n/a" if c["observed"] is None else f"{c['observed']:.4g}",
                        c["status"],
                    ]
                    for c in card["checks"]
                ],
            ) + [""]
    for rule in cards["unmatched_rules"]:
        out.append(f"- Threshold not measured for any judge: {_md(rule['rule'])}")
    out += ["", "## All results", ""]
    out += _md_table(keys + ["note"], [[row[k] for k in keys + ["note"]] for row in context["rows"]])
    return "\n".join(out) + "\n"


def _cells(row: dict[str, Any], columns: list[str]) -> list[str]:
    # an undefined value's text already carries its n and reason (format_value)
    return [
        row["cells"][c]["text"]
        + (f" (n={row['cells'][c]['n']})" if row["cells"][c]["n"] is not None and row["cells"][c]["defined"] else "")
        for c in columns
    ]


def _md_sections(context: dict[str, Any]) -> list[str]:
    """Markdown of the analysis sections (mitigations, leakage, papers 004 and 002)."""
    out = []
    captions = {
        "Verifiable tasks (paper 004)": VERIFIABLE_NOTE,
        "Rubric metrics (paper 002)": "HSPP ratios with 002's comparison set S_J (every generator that is neither "
        "the judge nor its family); the 'unrelated only' denominator is in the results "
        "table. A rubric setup (single-rubric, all-rubrics) follows the condition.",
    }
    for name, rows in (
        ("Verifiable tasks (paper 004)", context["verifiable"]),
        ("Rubric metrics (paper 002)", context["rubric"]),
    ):
        if rows:
            columns = list(rows[0]["cells"])
            out += [f"## {name}", "", captions[name], ""]
            out += _md_table(
                ["judge", "condition"] + columns, [[r["judge"], r["condition"]] + _cells(r, columns) for r in rows]
            ) + [""]
    if context.get("evaluatees"):
        columns = list(context["evaluatees"][0]["cells"])
        out += ["### Per evaluatee (paper 004's tables)", "", EVALUATEE_NOTE, ""]
        out += _md_table(
            ["judge", "condition", "evaluatee"] + columns,
            [[r["judge"], r["condition"], r["evaluatee"]] + _cells(r, columns) for r in context["evaluatees"]],
        ) + [""]
    if context.get("task_scatter"):
        out += [
            "### Against the judges' own task accuracy (paper 004 Figs. 1–4)",
            "",
            "Pearson r across judges between each judge's own task accuracy and the metric above; n/a below "
            "three judges or when either value is the same for every judge.",
            "",
        ]
        out += _md_table(
            ["condition", "figure", "metric", "judges", "r", "p", "judge: task accuracy, metric"],
            [
                [
                    r["condition"],
                    r["figure"],
                    r["metric"],
                    r["n_judges"],
                    f"n/a ({r['note']})" if r["r"] is None else f"{r['r']:+.3f}",
                    "n/a" if r["p_value"] is None else f"{r['p_value']:.3g}",
                    "; ".join(f"{j}: {x:.3f}, {y:.3f}" for j, x, y in r["points"]),
                ]
                for r in context["task_scatter"]
            ],
        ) + [""]
    if context.get("meta_evaluation"):
        out += [
            "### Each judge against the rubric reference (paper 002 App. C)",
            "",
            "Precision, recall and F1 of the judge's 'met' verdicts against the reference's; a juror is "
            "scored against a reference it voted in.",
            "",
        ]
        out += _md_table(
            ["judge", "condition", "reference", "polarity", "juror", "precision", "recall", "F1", "balanced F1"],
            [
                [r["judge"], r["condition"], r["reference"], r["polarity"], r["juror"]]
                + _cells(r, ["precision", "recall", "f1", "balanced-f1"])
                for r in context["meta_evaluation"]
            ],
        )
        out += [""]
    if context["paradigms"]:
        cols = ["condition", "paradigm", "level", "accuracy", "bias", "n_judges", "r", "p_value", "points"]
        out += ["### Accuracy against self-preference across paradigms (paper 002 Fig. 2)", ""]
        out += _md_table(cols, [[r[k] for k in cols] for r in context["paradigms"]]) + [""]
    out += recognition_markdown(context["recognition"], _md_table)
    mit = context["mitigations"]
    if mit["effects"]:
        out += ["## Mitigation effects", ""]
        out += _md_table(
            ["condition", "mitigation", "results defined", "why undefined", "perturbed", "failed", "other"],
            [
                [
                    c["condition"],
                    c["mitigation"],
                    f"{c['defined']} of {c['results']}",
                    c["undefined"],
                    c["perturbed"],
                    c["failed"],
                    c["other"],
                ]
                for c in mit["conditions"]
            ],
        ) + [""]
        cols = ["condition", "mitigation", "judge", "scope", "base_metric", "before", "after", "change", "n", "excluded"]
        out += _md_table(cols, [[e[k] for k in cols] for e in mit["effects"]]) + [""]
        if mit["ratios"]:
            out += ["### Self-evaluation against third-party change (paper 003 Fig. 15)", ""]
            cols = ["condition", "judge", "self_change", "control_change", "ratio", "n", "excluded"]
            out += _md_table(
                [
                    "condition",
                    "judge",
                    "change, self-evaluation",
                    "change, third-party judges",
                    "ratio of magnitudes",
                    "n",
                    "excluded",
                ],
                [[e[k] for k in cols] for e in mit["ratios"]],
            )
            out += [""]
    leak = context["leakage"]
    if leak["pls"] or leak["slices"] or leak["recognition"]:
        out += ["## Preference leakage", ""]
        cols = ["judges", "group", "condition", "students", "preference", "ties", "estimate", "p_value", "n", "excluded"]
        if leak["pls"]:
            out += _md_table(cols, [[r[k] for k in cols] for r in leak["pls"]]) + [""]
        if leak["slices"]:
            out += _md_table(["slice"] + cols, [[r[k] for k in ["slice"] + cols] for r in leak["slices"]]) + [""]
        if leak["runs"]:
            out += ["### Run to run (paper 000 App. D.2)", ""]
            cols = ["judges", "students", "scope", "condition", "runs", "mean", "variance", "n", "excluded"]
            out += _md_table(cols, [[r[k] for k in cols] for r in leak["runs"]]) + [""]
        if leak["recognition"]:
            cols = ["metric", "who", "what", "estimate", "chance", "n", "excluded"]
            out += _md_table(cols, [[r[k] for k in cols] for r in leak["recognition"]]) + [""]
    if leak["bonus"] or leak["audit_ranks"]:
        out += ["## Leaderboard leakage audit", ""]
        cols = ["judge", "condition", "baseline", "reference_judge", "estimate", "n", "related", "entries"]
        out += _md_table(cols, [[r[k] for k in cols] for r in leak["bonus"]]) + [""]
        for audit in leak["audit_ranks"]:
            out += [f"### {_md(audit['judge'])} ({_md(audit['condition'])})", ""]
            out += _md_table(
                ["entry", "relation", audit["measure"], "adjusted", "rank", "adjusted rank", "n"],
                [
                    [
                        e["entry"],
                        e["relation"],
                        e["score"],
                        e["adjusted_score"],
                        _num(e["rank"]),
                        _rank_text((e["adjusted_rank"], *e["ci"])) if e["adjusted_rank"] is not None else "n/a",
                        e["n"],
                    ]
                    for e in audit["entries"]
                ],
            ) + [""]
    if context["humans"]["rows"]:
        out += ["## Human labels: agreement", ""]
        cols = ["who", "statistic", "estimate", "n", "excluded"]
        out += _md_table(cols, [[r[k] for k in cols] for r in context["humans"]["rows"]]) + [""]
    if context["exclusions"]:
        out += [
            "## Verdicts left out",
            "",
            "Judgments without a verdict are left out of every metric; the reasons are in docs/verdicts.md.",
            "",
        ]
        cols = ["judge", "condition", "kind", "judgments", "without", "share", "reasons"]
        out += _md_table(
            ["judge", "condition", "kind", "judgments", "without a verdict", "share", "by reason"],
            [[r[k] for k in cols] for r in context["exclusions"]],
        ) + [""]
        flagged = [(r, f) for r in context["exclusions"] for f in r["flagged"]]
        if flagged:
            out += [
                "### Generators left out far more often than the others",
                "",
                "A generator whose text holds the verdict markers a judge writes can turn its losses into "
                "exclusions (docs/verdicts.md); read the raw replies before trusting this judge's numbers for it.",
                "",
            ]
            out += _md_table(
                [
                    "judge",
                    "condition",
                    "kind",
                    "generator",
                    "without a verdict",
                    "others",
                    "gap (CI)",
                    "p (level)",
                    "most frequent reason",
                ],
                [
                    [
                        r["judge"],
                        r["condition"],
                        r["kind"],
                        f["generator"],
                        f"{f['share']} of {f['of']}",
                        f"{f['others_share']} of {f['others_of']}",
                        f["gap"],
                        f["p"],
                        f["reason"],
                    ]
                    for r, f in flagged
                ],
            ) + [""]
    if context["generic_only"]:
        out += [
            f"Shown only in the results table below (no plot or section of their own): "
            f"{_md(', '.join(context['generic_only']))}.",
            "",
        ]
    return out


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:g}"


def _csv_cell(value: object) -> object:
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, default=str)
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        try:
            float(value)
        except ValueError:
            return "'" + value
    return value


def _csv(records: list[dict[str, Any]]) -> bytes:
    flat = pd.DataFrame.from_records([{k: _csv_cell(v) for k, v in r.items()} for r in records])
    text: str = flat.to_csv(index=False)
    return text.encode()


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("nepotism.report", "templates"), autoescape=select_autoescape(["html", "j2"]))
    env.filters["rank"] = _rank_text
    env.filters["num"] = lambda x, d=4: "n/a" if x is None else f"{x:.{d}g}"
    return env


def write_report(
    records: list[dict[str, Any]],
    out_dir: str | Path,
    *,
    summary: dict[str, Any] | None = None,
    findings: list[str] | None = None,
    thresholds: Thresholds | None = None,
    title: str = "nepotism report",
    attribution: str | None = None,
    verdicts: list[Verdict] | None = None,
    cases: Mapping[str, Explanation] | None = None,
) -> dict[str, Path]:
    """Write ``report.html``, ``report.md``, ``results.json`` and ``results.csv``; return their paths
    (``cases``: as `build_report` takes them)."""
    context = build_report(
        records,
        summary=summary,
        findings=findings,
        thresholds=thresholds,
        title=title,
        attribution=attribution,
        verdicts=verdicts,
        cases=cases,
    )
    html = _environment().get_template("report.html.j2").render(**context)
    verdicts = context["verdict_list"]
    document = Results(
        records,
        summary={**context["summary"], "cards": context["cards"]},
        findings=[v.sentence for v in verdicts] if verdicts else context["findings"],
        verdicts=verdicts,
    )
    payloads = {
        "report.html": html.encode(),
        "report.md": _markdown(context).encode(),
        "results.json": document.to_json().encode(),
        "results.csv": _csv(records),
    }
    return write_files(out_dir, payloads)
