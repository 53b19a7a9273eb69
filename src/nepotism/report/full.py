"""The full report: one self-contained HTML page, the same numbers as Markdown, CSV and JSON.

`write_report` takes result records (any mix of `run_audit`, `run_suite` and `derived` records)
and writes ``report.html`` (summary first, then every section whose records exist, then the
judge cards and all results; plots are embedded PNGs, styles inline, no script, nothing fetched
when viewed), ``report.md``, ``results.csv`` and ``results.json`` (``{summary, findings,
headline, cards, results}`` — readable again by `nepotism report` and `nepotism card`). Every
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
from pathlib import Path

import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape

from nepotism._files import atomic_write_bytes
from nepotism.report.card import Thresholds, judge_cards
from nepotism.report.headline import headline
from nepotism.report.plots import BIAS_METRICS, all_plots

__all__ = ["build_report", "format_value", "write_report"]

_PERCENT = {"win-rate", "self-preference-ratio", "position-consistency", "judge-accuracy", "mipa", "mra",
            "legitimate-self-preference-ratio", "harmful-self-preference-propensity", "overestimation-rate",
            "recognition-accuracy", "perplexity-win-rate"}
_POINTS = {"demographic-parity-bias", "equal-opportunity-bias", "error-bias", "paired-win-rate-gap",
           "matched-bias", "score-delta", "preference-leakage-score"}
_RAW_CAVEAT = ("Self-preference ratios, demographic-parity, equal-opportunity and HSPP-style metrics compare a judge "
               "with itself across items. They can come out positive for a judge with no bias at all whose own "
               "answers are strong: it wins its comparisons by wide margins and loses them by narrow ones. Numbers "
               "that compare the same items and pairs under other judges (matched bias, paired win-rate gaps) do not "
               "have that problem; the summary uses them where they exist and says when it could not.")


def _unit(metric: str) -> tuple[float, str]:
    if metric in _PERCENT:
        return 100.0, "%"
    if metric in _POINTS:
        return 100.0, " pts"
    return 1.0, ""


def format_value(record: dict) -> str:
    """``80.7% (95% CI 79.7–81.8)``, ``+6.1 pts (95% CI +3.2 to +9.0)`` or ``1.42 (…)`` by metric."""
    if record.get("value") is None:
        return f"undefined ({record.get('note') or 'no data'})"
    scale, unit = _unit(record.get("metric", ""))
    signed = unit == " pts"
    fmt = (lambda x: f"{scale * x:+.1f}") if signed else (lambda x: f"{scale * x:.1f}" if scale != 1 else f"{x:.3g}")
    text = f"{fmt(record['value'])}{unit}"
    if record.get("ci_low") is not None and record.get("ci_high") is not None:
        level = int(round(100 * (record.get("confidence") or 0.95)))
        text += f" ({level}% CI {fmt(record['ci_low'])} to {fmt(record['ci_high'])})"
    return text


def _variant_text(variant) -> str:
    if not variant:
        return ""
    return "; ".join(f"{k}={v}" for k, v in sorted(variant.items()))


def _target(record: dict) -> str:
    if record.get("pair"):
        return " vs ".join(map(str, record["pair"]))
    return str(record.get("generator") or "")


def _row(record: dict) -> dict:
    return {"metric": record.get("metric"), "judge": record.get("judge"), "condition": record.get("condition"),
            "scope": record.get("scope") or "", "target": _target(record),
            "variant": _variant_text(record.get("variant")), "estimate": format_value(record),
            "n": record.get("n"), "prompts": record.get("n_clusters"), "excluded": record.get("n_excluded"),
            "p_value": record.get("p_value"), "note": record.get("note") or ""}


def _rank(r):
    return None if r is None else (r["value"], r.get("ci_low"), r.get("ci_high"))


def _leaderboard_table(records) -> list[dict]:
    by = defaultdict(dict)
    for r in records:
        if r.get("metric") == "leaderboard-rank":
            by[str(r["generator"])][(r.get("variant") or {}).get("judges")] = r
    rows = []
    for generator, sides in by.items():
        a, u = sides.get("all"), sides.get("unrelated")
        rows.append({"generator": generator, "all": _rank(a), "unrelated": _rank(u),
                     "score_all": a and a.get("score"), "score_unrelated": u and u.get("score"),
                     "n_all": a and a.get("n"), "n_unrelated": u and u.get("n"),
                     "dropped": u.get("n_excluded") if u else None,
                     "change": (a["value"] - u["value"]) if a and u else None})
    rows.sort(key=lambda r: (r["all"][0] if r["all"] else math.inf, r["generator"]))
    return rows


def _sections(records) -> dict[str, bool]:
    metrics = {r.get("metric") for r in records}
    return {"perplexity": "perplexity-win-rate" in metrics, "confusion": any(r.get("confusion_matrix") for r in records),
            "pls": "preference-leakage-score" in metrics, "leaderboard": "leaderboard-rank" in metrics,
            "matched": "matched-bias" in metrics}


def build_report(records: list[dict], *, summary: dict | None = None, findings: list[str] | None = None,
                 thresholds: Thresholds | None = None, title: str = "nepotism report",
                 attribution: str | None = None) -> dict:
    """Everything the page and the other files show, as one dict (plots included)."""
    summary = dict(summary or {})
    source = str(summary.get("source", ""))
    cards = judge_cards(records, thresholds, source=source)
    rows = [_row(r) for r in records]
    bias_rows = [row for row, r in zip(rows, records) if r.get("metric") in BIAS_METRICS + ("matched-bias",)]
    return {
        "title": title, "summary": summary, "findings": list(findings or []), "attribution": attribution,
        "headline": headline(records), "caveat": _RAW_CAVEAT, "plots": all_plots(records),
        "cards": cards, "rows": rows, "bias_rows": bias_rows,
        "pls": [_row(r) for r in records if r.get("metric") == "preference-leakage-score"],
        "leaderboard": _leaderboard_table(records), "present": _sections(records),
        "metrics": sorted({str(r.get("metric")) for r in records}),
        "judges": sorted({str(r.get("judge")) for r in records if r.get("metric") != "leaderboard-rank"}),
        "n_records": len(records),
    }


# ------------------------------------------------------------------------------------ files
def _md(text) -> str:
    """Escape a string for a Markdown table cell or line (no markup from model names)."""
    text = "" if text is None else str(text)
    for a, b in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|"), ("`", "\\`"), ("*", "\\*"),
                 ("_", "\\_"), ("[", "\\["), ("]", "\\]"), ("\n", " ")):
        text = text.replace(a, b)
    return text


def _md_table(columns: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return lines


def _rank_text(rank) -> str:
    if rank is None:
        return "—"
    value, low, high = rank
    return f"{value:g}" + (f" ({low:g}–{high:g})" if low is not None else "")


def _markdown(context: dict) -> str:
    out = [f"# {_md(context['title'])}", ""]
    if context["summary"].get("source"):
        out += [f"Source: {_md(context['summary']['source'])}", ""]
    out += ["## Summary", ""]
    for entry in context["headline"]:
        for line in entry["lines"]:
            out.append(f"- {_md(line['text'])}")
        if entry["not_measured"]:
            out.append(f"- {_md(entry['judge'])} ({_md(entry['condition'])}): not measured — "
                       f"{_md(', '.join(entry['not_measured']))}.")
    out += ["", f"> {context['caveat']}", "", "## Bias metrics", ""]
    keys = ["metric", "judge", "condition", "scope", "target", "variant", "estimate", "n", "prompts", "excluded"]
    out += _md_table(keys, [[row[k] for k in keys] for row in context["bias_rows"]]) + [""]
    if context["pls"]:
        out += ["## Preference leakage", ""]
        out += _md_table(keys + ["p_value"], [[row[k] for k in keys + ["p_value"]] for row in context["pls"]]) + [""]
    if context["leaderboard"]:
        out += ["## Leaderboard (rank, interval)", ""]
        out += _md_table(["generator", "all judges", "related judges left out", "change"],
                         [[r["generator"], _rank_text(r["all"]), _rank_text(r["unrelated"]),
                           "" if r["change"] is None else f"{r['change']:+g}"] for r in context["leaderboard"]]) + [""]
    out += ["## Judge cards", ""]
    cards = context["cards"]
    for judge, card in cards["judges"].items():
        out += [f"### {_md(judge)} — {card['status'].upper()}", "",
                f"Conditions: {_md(', '.join(card['conditions']))}; up to {card['prompts']:,} prompts.", ""]
        out += _md_table(["metric", "results", "defined", "what it measures"],
                         [[m["metric"], m["records"], m["defined"], m["what"]] for m in card["measured"]]) + [""]
        if card["checks"]:
            out += _md_table(["rule", "scope", "condition", "target", "observed", "status"],
                             [[c["rule"], c["scope"], c["condition"], " vs ".join(c["pair"]) if c["pair"] else c["generator"],
                               "—" if c["observed"] is None else f"{c['observed']:.4g}", c["status"]]
                              for c in card["checks"]]) + [""]
    for rule in cards["unmatched_rules"]:
        out.append(f"- Threshold not measured for any judge: {_md(rule['rule'])}")
    out += ["", "## All results", ""]
    out += _md_table(keys + ["note"], [[row[k] for k in keys + ["note"]] for row in context["rows"]])
    return "\n".join(out) + "\n"


def _csv_cell(value):
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, default=str)
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        try:
            float(value)
        except ValueError:
            return "'" + value
    return value


def _csv(records: list[dict]) -> bytes:
    flat = pd.DataFrame.from_records([{k: _csv_cell(v) for k, v in r.items()} for r in records])
    return flat.to_csv(index=False).encode()


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("nepotism.report", "templates"), autoescape=select_autoescape(["html", "j2"]))
    env.filters["rank"] = _rank_text
    env.filters["num"] = lambda x, d=4: "—" if x is None else f"{x:.{d}g}"
    return env


def write_report(records: list[dict], out_dir: str | Path, *, summary: dict | None = None,
                 findings: list[str] | None = None, thresholds: Thresholds | None = None,
                 title: str = "nepotism report", attribution: str | None = None) -> dict[str, Path]:
    """Write ``report.html``, ``report.md``, ``results.json`` and ``results.csv``; return their paths."""
    context = build_report(records, summary=summary, findings=findings, thresholds=thresholds, title=title,
                           attribution=attribution)
    html = _environment().get_template("report.html.j2").render(**context)
    document = {"summary": context["summary"], "findings": context["findings"],
                "headline": [{**h, "lines": [{k: v for k, v in line.items()} for line in h["lines"]]}
                             for h in context["headline"]],
                "cards": context["cards"], "results": records}
    payloads = {"report.html": html.encode(), "report.md": _markdown(context).encode(),
                "results.json": json.dumps(document, indent=2, sort_keys=True, default=str).encode(),
                "results.csv": _csv(records)}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, data in payloads.items():
        atomic_write_bytes(out / name, data)
        paths[name] = out / name
    return paths
