"""The report's accuracy-vs-bias panel across judging paradigms (paper 002 Fig. 2).

Paper 002 plots, per paradigm (rubric verdicts SR / AR, direct assessment DA, pairwise PWC), each
judge's accuracy against its self-preference bias: instance level MIPA vs the HSPP-instance ratio,
rubric level MRA vs the HSPP-rubric ratio. `accuracy_bias_table` reads the rubric metrics of
``nepotism metrics`` (picked as the rubric section picks them, `sections.rubric_records`) and gives,
per condition (a rubric setup such as all-rubrics follows the condition) and paradigm, the Pearson
r across judges with its Fisher-z interval and p-value (`nepotism.metrics.stats.pearson`), the
number of judges and the points themselves. Fewer than three judges with both values → r is
"n/a" with the reason. `accuracy_bias_plots` draws the same rows as Fig. 2 does: per condition, one
scatter panel per paradigm and level, each judge a labelled point (accuracy in %, HSPP ratio), the
dashed line at ratio 1 (no bias) and r in the panel's title.
"""

from __future__ import annotations

from typing import Any

from nepotism.metrics.stats import pearson
from nepotism.report.sections import RUBRIC, _by_judge, rubric_records

__all__ = ["PAIRS", "accuracy_bias_plots", "accuracy_bias_table"]

#: (paradigm, level, accuracy column, bias column) of `sections.rubric_records`.
PAIRS = (
    ("SR", "instance", "mipa SR", "hspp-ratio self instance"),
    ("SR", "rubric", "mra", "hspp-ratio self rubric"),
    ("DA", "instance", "mipa DA", "hspp-ratio self instance DA"),
    ("PWC", "instance", "mipa PWC", "hspp-ratio self instance PWC"),
)


def accuracy_bias_table(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (condition, paradigm, level) with any judge measured on both; empty without rubric records."""
    by_condition: dict[str, dict[str, dict[str, Any]]] = {}
    for (judge, condition), items in _by_judge(records, RUBRIC).items():
        by_condition.setdefault(condition, {})[judge] = rubric_records(items)
    rows = []
    for condition, judges in sorted(by_condition.items()):
        for paradigm, level, acc, bias in PAIRS:
            points = []
            for judge, found in sorted(judges.items()):
                a, b = found.get(acc), found.get(bias)
                if a is not None and b is not None and a.get("value") is not None and b.get("value") is not None:
                    points.append((judge, float(a["value"]), float(b["value"])))
            if not points:
                continue
            test = pearson([p[1] for p in points], [p[2] for p in points])
            defined = test["r"] == test["r"]
            r_text = (
                f"{test['r']:+.2f}"
                + (f" (95% CI {test['ci_low']:+.2f} to {test['ci_high']:+.2f})" if test["ci_low"] == test["ci_low"] else "")
                if defined
                else f"n/a ({test['note']})"
            )
            rows.append(
                {
                    "condition": condition,
                    "paradigm": paradigm,
                    "level": level,
                    "accuracy": acc.split(" ")[0].upper(),
                    "bias": bias.replace("hspp-ratio self ", "HSPP-"),
                    "n_judges": len(points),
                    "r": r_text,
                    "p_value": f"{test['p_value']:.3g}" if defined else "n/a",
                    "points": "; ".join(f"{j}: {x:.2f}, {y:.2f}" for j, x, y in points),
                    "xy": points,
                }
            )
    return rows


_MAX_CONDITIONS = 6


def accuracy_bias_plots(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Paper 002 Fig. 2: one figure per condition (at most six), a scatter panel per paradigm and level."""
    rows = accuracy_bias_table(records)
    if not rows:
        return []
    from nepotism.report.plots import OKABE_ITO, _plot, _short, _style

    by_condition: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_condition.setdefault(row["condition"], []).append(row)
    plots = []
    with _style():
        import matplotlib.pyplot as plt

        for k, (condition, panels) in enumerate(sorted(by_condition.items())[:_MAX_CONDITIONS]):
            fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels) + 0.4, 3.4), squeeze=False)
            for ax, row in zip(axes[0], panels):
                xs = [100 * x for _, x, _ in row["xy"]]
                ys = [y for _, _, y in row["xy"]]
                ax.scatter(xs, ys, color=OKABE_ITO["blue"], zorder=3)
                for (judge, _, _), x, y in zip(row["xy"], xs, ys):
                    ax.annotate(_short(judge, 24), (x, y), textcoords="offset points", xytext=(4, 3), fontsize=7)
                ax.axhline(1.0, color="#777777", linestyle="--", linewidth=0.8)
                ax.set_xlabel(f"{row['accuracy']} (%)")
                ax.set_ylabel(f"{row['bias']} ratio (1 = no bias)")
                ax.set_title(f"{row['paradigm']}, {row['level']} level: r = {row['r'].split(' (')[0]}", fontsize=9)
            fig.tight_layout()
            plots.append(
                _plot(
                    f"paradigms-{k}",
                    f"Accuracy against self-preference ({condition})",
                    fig,
                    f"Scatter panels, one per paradigm: each judge's accuracy against its HSPP ratio under condition {condition}",
                    "Paper 002 Fig. 2: each judge is a point; a negative r means the more accurate judges "
                    "favour themselves less. The dashed line is no bias (ratio 1); r is Pearson's across "
                    "judges (n/a below three), its interval in the table below.",
                )
            )
    return plots
