"""Plain-text tables of a leakage run's records (the HTML report is the report module's job)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["analyses_table", "pls_table"]


def _pct(x: float | None) -> str:
    return "   n/a" if x is None else f"{100 * x:+6.1f}%"


def pls_table(records: Sequence[Mapping[str, Any]], *, ties: str = "loss") -> str:
    """PLS per group, condition and generator/judge pair, with CI, one-sided p and n (slices excluded),
    then the change of PLS under each spurious-feature ablation (paper 000 Table 6: condition
    ``no-<feature>`` minus ``default``, paired on the same prompts)."""
    wanted = ("preference-leakage-score", "preference-leakage-change")
    rows = [r for r in records if r["metric"] in wanted and r["variant"].get("ties") == ties and "slice" not in r["variant"]]
    rows.sort(key=lambda r: wanted.index(r["metric"]))  # stable: the scores first, then their changes
    lines = [
        f"{'group':<40} {'condition':<20} {'generators (= judges)':<40} {'from':<11} {'PLS':>7} {'95% CI':>17} {'p':>7} {'n':>5}"
    ]
    for r in rows:
        p = "n/a" if r.get("p_value") is None else f"{r['p_value']:.3f}"
        source = r["variant"].get("preference", "verdict")
        condition = str(r.get("condition") or "default")
        if r["metric"] == "preference-leakage-change":
            condition, source = f"{condition} − {r['variant'].get('against', 'default')}", "change"
        lines.append(
            f"{r['variant']['group'][:40]:<40} {condition[:20]:<20} {r['generator'][:40]:<40} {source:<11} "
            f"{_pct(r['value'])} [{_pct(r['ci_low'])},{_pct(r['ci_high'])}] {p:>7} {r['n']:>5}"
        )
    return "\n".join(lines)


def analyses_table(records: Sequence[Mapping[str, Any]]) -> str:
    """Recognition, classifier and per-category PLS lines."""
    lines = []
    for r in records:
        m, v = r["metric"], r.get("variant", {})
        if m in ("student-recognition-accuracy", "student-recognition-yes-rate", "student-classifier-accuracy"):
            what = v.get("protocol") or v.get("group")
            extra = f" (majority rate {v['majority_rate']:.2f})" if "majority_rate" in v else ""
            value = "n/a" if r["value"] is None else f"{r['value']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
            lines.append(f"{m:<30} {str(r.get('judge') or ''):<30} {str(what):<40} {value} n={r['n']}{extra}")
        elif m == "preference-leakage-score" and "slice" in v and v.get("ties") == "loss":
            ((kind, label),) = v["slice"].items()
            lines.append(
                f"PLS by {kind:<13} {label:<16} {v['group'][:30]:<30} {_pct(r['value'])} "
                f"[{_pct(r['ci_low'])},{_pct(r['ci_high'])}] n={r['n']}"
            )
    return "\n".join(lines)
