"""The answer first: how a command that audits judgments prints it (``metrics``, ``demo``).

`print_answer` prints the judge verdicts (`nepotism.analyses.verdicts.summary_rows`: a line per
judge and relation, the number with its interval and prompts, or why it is not measurable), the
registry names of judges named otherwise in the data, the verdicts' sentences, what each judge
saw, and the judgments left out by reason — the same rows the report's Summary shows. Wording
only: the verdicts come from `nepotism.audit` (`Results.verdicts`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from nepotism.cli._common import print_table, unknown_names_lines

if TYPE_CHECKING:
    from nepotism.results import Results, Verdict

__all__ = ["exclusion_lines", "flagged_lines", "names_line", "print_answer", "print_verdicts", "verdict_sentences"]


def print_answer(results: Results, title: str, *, output_format: str) -> None:
    """Verdicts, names, sentences, what each judge saw and the exclusions, in that order."""
    print_verdicts(results, title, output_format=output_format)
    for line in verdict_sentences(results.verdicts):
        click.echo(line)
    _judges_table(results, output_format=output_format)
    for line in exclusion_lines(results.to_dicts()):
        click.echo(line)


def names_line(summary: Mapping[str, Any]) -> str | None:
    """``Registry names: gpt4_0314 = gpt-4-0314; ...`` for the judges whose name in the data differs."""
    seen: dict[str, str] = {}
    for entry in summary.get("relations") or []:
        if entry.get("judge_id") and entry["judge_id"] != entry["judge"]:
            seen[entry["judge"]] = entry["judge_id"]
    if not seen:
        return None
    return "Judges named otherwise in the registry: " + "; ".join(f"{k} = {v}" for k, v in sorted(seen.items()))


def print_verdicts(results: Results, title: str, *, output_format: str) -> None:
    """The verdict table (one row per judge and relation; a reference judge on one row) and the names line."""
    from nepotism.analyses.verdicts import summary_rows

    summary = results.summary
    table = summary_rows(results.verdicts)
    several = len({r["condition"] for r in table}) > 1
    rows = []
    for r in table:
        evidence = r["evidence"]
        rows.append(
            [r["judge"]]
            + ([r["condition"]] if several else [])
            + [r["relation"], r["verdict"], r["value"], r["ci"], r["prompts"], evidence]
        )
    level = int(round(100 * float((summary.get("options") or {}).get("confidence") or 0.95)))
    header = (
        ["judge"] + (["condition"] if several else []) + ["relation", "verdict", "value", f"{level}% CI", "prompts", "evidence"]
    )
    what = ", ".join(sorted(({t.get("kind") for t in summary.get("tables", [])} or {summary.get("kind")}) - {None}))
    title = (
        f"{title} ({what}): how much each judge favours its relatives "
        f"(a number needs at least {summary.get('min_prompts', 30)} prompts; docs/answer.md)"
    )
    if not rows:
        click.echo(f"{title}\n  no judge verdict: these tables hold no judge whose relatives could be measured")
        return
    print_table(title, header, rows, output_format=output_format)
    line = names_line(summary)
    if line and output_format != "tsv":
        click.echo(line)


def verdict_sentences(verdicts: Iterable[Verdict]) -> list[str]:
    """The plain sentence of every verdict with evidence (measured or too little data), one line each."""
    lines = [f"  - {v.sentence}" for v in verdicts if v.status != "not-measurable"]
    return ["In words:"] + lines if lines else []


def _judges_table(results: Results, *, output_format: str) -> None:
    """What each judge saw: kind, prompts, generators by relation, unknown names."""
    entries = results.summary.get("relations") or []
    if not entries:
        return
    rows = []
    for e in entries:
        generators = e.get("generators") or {}
        parts = [f"{scope} {len(names)}" for scope, names in generators.items()]
        rows.append([e["judge"], e.get("condition", ""), e.get("kind", ""), f"{e.get('prompts', 0):,}", ", ".join(parts)])
    print_table(
        "What each judge saw (generators by their relation to it)",
        ["judge", "condition", "kind", "prompts", "generators"],
        rows,
        output_format=output_format,
    )
    unknown = sorted(
        results.summary.get("generators_not_in_registry")
        or {n for e in entries for n in (e.get("generators") or {}).get("unknown", [])}
    )
    what = (
        "generator is not in the model registry, so no judge counts it as a relative",
        "generators are not in the model registry, so no judge counts them as a relative",
    )
    for line in unknown_names_lines(unknown, what, shown=8):
        click.echo(line)


def exclusion_lines(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """``Judgments without a verdict`` then one line per judge, condition and kind that has any, by reason."""
    rows = [r for r in records if r["metric"] == "excluded-verdicts" and "slice" not in (r.get("variant") or {})]
    if not rows:
        return []
    if not any(r.get("n_excluded") or r.get("label_mass_below_half") for r in rows):
        total = sum(r.get("n") or 0 for r in rows)
        return [f"Every one of the {total:,} judgments has a verdict (none left out)."] + flagged_lines(records)
    lines = ["Judgments without a verdict (left out of every metric above), by reason:"]
    for r in rows:
        if not r.get("n_excluded") and not r.get("label_mass_below_half"):
            continue
        variant = r.get("variant") or {}
        where = ", ".join(str(v) for v in (r.get("condition"), variant.get("kind"), variant.get("setup")) if v)
        reasons = ", ".join(f"{k} {v:,}" for k, v in (r.get("excluded") or {}).items()) or "none"
        if r.get("label_mass_below_half"):  # read and kept, as papers 001 and 004 read labels; counted
            reasons += f"; kept {r['label_mass_below_half']:,} read from labels holding < 1/2 of the probability"
        lines.append(f"  {r['judge']} ({where}): {r['n_excluded']:,} of {r['n']:,} — {reasons}")
    return lines + flagged_lines(records)


def flagged_lines(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per generator an ``exclusion-share-gap`` record flags (none when nothing is flagged)."""
    rows = [r for r in records if r["metric"] == "exclusion-share-gap" and r.get("flagged")]
    if not rows:
        return []
    lines = [
        "Generators left without a verdict far more often than the judge's others (a sign of gaming the "
        "verdict reader; read the raw replies, docs/verdicts.md):"
    ]
    for r in rows:
        reasons = r.get("excluded") or {}
        top = max(reasons, key=lambda k: (reasons[k], k)) if reasons else "none"
        lines.append(
            f"  {r['judge']} ({r.get('condition')}): {r['generator']} {r['share']:.1%} of {r['n']:,} vs "
            f"{r['others_share']:.1%} of {r['others_n']:,}, p {r['p_value']:.3g} — mostly {top}"
        )
    return lines
