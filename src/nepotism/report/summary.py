"""Plain-words sentences from audit records: what a reader should take away, with n and CIs.

Only wording lives here; numbers come from the records unchanged. Ratios and win rates are printed
in percent, differences in percentage points.
"""

from __future__ import annotations

from collections import defaultdict

from nepotism.report._format import relation_words

__all__ = ["describe", "format_estimate"]

_SCOPE_WORDS = {
    "self": "its own answers",
    "family": "its family's answers (itself excluded)",
    "student": "answers of models trained on its outputs",
    "family-student": "answers of models trained on its relatives' outputs",
}


def _relative_words(scope: str) -> str:
    """What a related generator is to the judge, in words (a scope or a registry relation id)."""
    return {"self": "the judge itself", "family": "of the judge's family", "student": "trained on the judge's outputs",
            "family-student": "trained on its relatives' outputs"}.get(scope) or relation_words(scope)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def format_estimate(record: dict, *, percent: bool = True) -> str:
    """``value (95% CI low–high; n=…, k prompts, m excluded: why)`` for one record."""
    if record["value"] is None:
        return f"undefined ({record.get('note') or 'no data'})"
    level = int(round(100 * record.get("confidence", 0.95)))
    if percent:
        value = _pct(record["value"])
        ci = f"{_pct(record['ci_low'])}–{_pct(record['ci_high'])}" if record["ci_low"] is not None else "no CI"
    else:
        value = f"{100 * record['value']:+.1f} points"
        ci = (f"{100 * record['ci_low']:+.1f} to {100 * record['ci_high']:+.1f}"
              if record["ci_low"] is not None else "no CI")
    excluded = record.get("excluded") or {}
    why = f": {', '.join(f'{k} {v:,}' for k, v in excluded.items())}" if record["n_excluded"] and excluded else ""
    return (f"{value} ({level}% CI {ci}; n={record['n']:,} over {record['n_clusters']:,} prompts, "
            f"{record['n_excluded']:,} excluded{why})")


def _names(names: list[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _scope_line(items: list[dict], scope: str) -> str | None:
    """The sentence for one scope: unrelated opponents if measurable, else any opponents, flagged."""
    for opponents in ("unrelated", "any"):
        spr = [r for r in items if r["metric"] == "self-preference-ratio" and r["scope"] == scope
               and r["variant"].get("opponents") == opponents and r["value"] is not None]
        if not spr:
            continue
        spr = spr[0]
        dp = [r for r in items if r["metric"] == "demographic-parity-bias" and r["scope"] == scope
              and r["variant"] == {"opponents": opponents, "preference": "verdict"} and r["value"] is not None]
        against = ("unrelated models" if opponents == "unrelated"
                   else f"less related models ({_names(spr['opponent_models'])}; no unrelated opponent exists here)")
        ties = spr.get("tie_share")
        tie_text = f"; ties ({_pct(ties)}) count as not preferred" if ties else ""
        line = (f"  - {_SCOPE_WORDS[scope]} ({_names(spr['generators'])}) vs {against}: preferred in "
                f"{format_estimate(spr)}{tie_text}.")
        if dp:
            line += f"\n    Demographic-parity bias P(prefer | related) − P(prefer | other): {format_estimate(dp[0], percent=False)}."
        soft = [r for r in items if r["metric"] == "demographic-parity-bias" and r["scope"] == scope
                and r["variant"] == {"opponents": opponents, "preference": "probability"} and r["value"] is not None]
        if soft:
            line += ("\n    The same from label probabilities p(X)/(p(A)+p(B)), averaged over both orders (paper 001 "
                     f"Eq. 3): {format_estimate(soft[0], percent=False)}.")
        return line
    return None


def describe(records: list[dict]) -> list[str]:
    """Sentences, grouped per (judge, condition), in a stable order."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for record in records:
        groups[(record["judge"], record["condition"])].append(record)
    lines: list[str] = []
    for (judge, condition), items in sorted(groups.items()):
        judge_id = items[0].get("judge_id") or judge
        name = judge_id if judge_id == judge else f"{judge_id} (named '{judge}' in the data)"
        seen = sorted({r["generator"] for r in items if r["metric"] == "win-rate"})
        lines.append(f"Judge {name}, condition '{condition}' — {len(seen)} generators judged:")
        # the comparison that isolates favouritism first: same prompts and pair, another judge
        for gap in (r for r in items if r["metric"] == "paired-win-rate-gap" and r["value"] is not None):
            generator, opponent = gap["pair"]
            variant = gap["variant"]
            samples = "" if variant["texts"] == "identical" else (
                f" (the other judge saw other samples of these models: {', '.join(gap['other_generator_names'])})")
            lines.append(
                f"  - same prompts, other judge: {generator} ({_relative_words(gap['scope'])}) vs {opponent} wins "
                f"{_pct(gap['win_rate_this_judge'])} here and {_pct(gap['win_rate_other_judge'])} under "
                f"{variant['other_judge']} ('{variant['other_condition']}'; for that judge {generator} is "
                f"{relation_words(variant['other_judge_relation'])} and {opponent} is "
                f"{relation_words(variant['other_judge_relation_to_opponent'])})"
                f"{samples}; difference {format_estimate(gap, percent=False)}."
            )
        missing = []
        for scope in _SCOPE_WORDS:
            line = _scope_line(items, scope)
            if line:
                lines.append(line)
            else:
                missing.append(scope)
        if missing:
            lines.append(f"  - not measurable here (no such candidates, or no opponent outside the scope): "
                         f"{'; '.join(_SCOPE_WORDS[scope] for scope in missing)}.")
    return lines
