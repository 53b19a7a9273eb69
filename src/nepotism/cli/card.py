"""``nepotism card``: per-judge cards against thresholds; ``--check`` exits 1 when one fails."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import click

from nepotism.cli._common import echo_json


@click.command("card")
@click.argument("results", type=click.Path(dir_okay=False))
@click.option(
    "--thresholds",
    "thresholds_file",
    type=click.Path(dir_okay=False),
    required=True,
    help="Thresholds TOML, or an experiment file whose [card] table holds them.",
)
@click.option("--check", is_flag=True, help="Exit with status 1 when any threshold fails (for CI pipelines).")
@click.option("--judge", "judges", multiple=True, help="Only these judges (repeatable); default all.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Also write card.json and card.md here.")
@click.option("--json", "as_json", is_flag=True, help="Print the cards as JSON.")
def command(results: str, thresholds_file: str, check: bool, judges: tuple[str, ...], out_dir: str | None, as_json: bool) -> None:
    """Judge cards for RESULTS (a results JSON file) against thresholds.

    For each judge: which biases were measured, on what data, with n and intervals, and each
    threshold's pass or fail. Thresholds, in TOML (top level or an experiment file's [card]):

    \b
      statistic = "value"        # or ci_low / ci_high: what is compared (default value)
      on_missing = "fail"        # a rule no judge has a result for fails (or "ignore")
      max_self_preference_ratio = { self = 0.60, family = 0.55 }   # per scope
      max_matched_bias = 0.05    # every scope
      min_judge_accuracy = 0.7
      [[rule]]                   # full form ([[card.rule]] in an experiment file)
      metric = "paired-win-rate-gap"
      scope = "self"             # also judge, condition, generator
      variant = { texts = "identical" }
      max = 0.05
      statistic = "ci_low"

    Values are in the records' units (fractions: 0.05 = 5 points). Each check line names the
    record's variant (opponents=unrelated or opponents=any, ties=..., ...): a rule without a
    variant checks every variant of its metric. A result whose value is undefined is "not
    measured", neither pass nor fail. With --check the exit status is 1 when any check fails (or
    a rule measured nothing, unless on_missing = "ignore"), 0 otherwise; bad input (an unknown
    metric or scope, a malformed rule) is status 2.
    """
    import json
    from pathlib import Path

    from nepotism._files import atomic_write_bytes
    from nepotism.analyses.verdicts import MIN_PROMPTS, judge_verdicts
    from nepotism.errors import InputError
    from nepotism.report.card import judge_cards, judges_of, load_thresholds
    from nepotism.report.inputs import load_results

    thresholds = load_thresholds(thresholds_file)
    records, summary, _ = load_results(results)
    if judges:
        known = {j for r in records for j in judges_of(r)}
        missing = [j for j in judges if j not in known]
        if missing:
            raise InputError(f"no results for judge(s) {', '.join(missing)}", path=str(results), field="--judge")
        records = [r for r in records if set(judges_of(r)) & set(judges)]
    verdicts = judge_verdicts(records, summary.get("relations") or (), min_prompts=int(summary.get("min_prompts") or MIN_PROMPTS))
    cards = judge_cards(records, thresholds, source=str(summary.get("source", results)), verdicts=verdicts)
    text = _text(cards)
    if out_dir:
        out = Path(out_dir)
        atomic_write_bytes(out / "card.json", json.dumps(cards, indent=2, sort_keys=True, default=str).encode())
        atomic_write_bytes(out / "card.md", text.encode())
    if as_json:
        echo_json(cards)
    else:
        click.echo(text, nl=False)
    if check and cards["status"] == "fail":
        click.echo(f"card check failed: {_failures(cards)}", err=True)
        sys.exit(1)


def _failures(cards: Mapping[str, Any]) -> str:
    parts = [
        f"{judge}: {sum(c['status'] == 'fail' for c in card['checks'])} failed"
        for judge, card in cards["judges"].items()
        if card["status"] == "fail"
    ]
    if cards["unmatched_rules"] and cards["on_missing"] == "fail":
        parts.append(f"{len(cards['unmatched_rules'])} threshold(s) measured for no judge")
    return "; ".join(parts)


def _text(cards: Mapping[str, Any]) -> str:
    lines = [f"Judge cards: {cards['status'].upper()}", ""]
    for judge, card in cards["judges"].items():
        name = card["judge_id"] or judge
        lines.append(f"{name}{'' if name == judge else f' ({judge})'} — {card['status'].upper()}")
        lines.append(f"  data: {card['data']}; conditions: {', '.join(card['conditions'])}; up to {card['prompts']:,} prompts")
        for a in card.get("answer") or []:
            where = f" ('{a['condition']}')" if len(card["conditions"]) > 1 else ""
            if a["status"] == "measured":
                lines.append(
                    f"  answer{where}, {a['relation']}: {a['verdict']} {a['value']} (CI {a['ci']}; "
                    f"{a['prompts']} prompts; {a['evidence']})"
                )
            else:
                lines.append(f"  answer{where}, {a['relation']}: {a['verdict']} — {a['evidence']}")
        lines.append("  measured: " + ", ".join(f"{m['metric']} ({m['defined']}/{m['records']})" for m in card["measured"]))
        for c in card["checks"]:
            target = " vs ".join(c["pair"]) if c["pair"] else (c["generator"] or "")
            variant = ", ".join(
                f"{k}={v}" for k, v in (c.get("variant") or {}).items() if not isinstance(v, (list, dict))
            )  # which variant: opponents=unrelated, ...
            observed = "n/a" if c["observed"] is None else f"{c['observed']:.4g}"
            ci = f" (CI {c['ci_low']:.4g} to {c['ci_high']:.4g})" if c["ci_low"] is not None else ""
            lines.append(
                f"  [{c['status']}] {c['rule']} — {c['condition']}{' · ' + variant if variant else ''}"
                f"{' · ' + target if target else ''}: {c['statistic']} = {observed}{ci}, n={c['n']}"
            )
        lines.append("")
    for rule in cards["unmatched_rules"]:
        lines.append(
            f"[not measured] {rule['rule']} — no judge has a defined result for it"
            + (" (counts as a failure)" if cards["on_missing"] == "fail" else "")
        )
    return "\n".join(lines).rstrip() + "\n"
