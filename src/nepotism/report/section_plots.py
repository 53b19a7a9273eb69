"""The figures of the analysis sections: mitigation effects, preference leakage, recognition, the
leaderboard leakage audit, paper 004's verifiable-task metrics (and Figs. 1–4: each against the
judges' own task accuracy), paper 002's rubric metrics and the agreement of human annotators (and of
judges with them).

Same style as `plots` (Okabe–Ito colours, labelled axes with units, embedded PNG, model names as
plain text). Every estimate is a dot with its CI drawn as an error bar; a row whose estimate is
undefined gets a grey "n/a" at the left edge instead of a dot — it is never drawn as 0. Each
function returns a list of plots ``{id, title, png, alt, caption}``, empty when there is nothing
to draw.

What this module leaves out: the tables (`sections`) and the page (`full`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any

from nepotism.report.paradigms import accuracy_bias_plots
from nepotism.report.plots import OKABE_ITO, _min_span, _plot, _short, _style, pls_tie_rule
from nepotism.report.sections import (
    HUMANS,
    MITIGATION,
    RECOGNITION,
    RUBRIC_COLUMNS,
    is_audit_rank,
    is_judged_side,
    judged_side_words,
    rubric_records,
    task_scatter_table,
    verifiable_records,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "human_agreement",
    "leakage_audit",
    "leakage_plots",
    "mitigation_effects",
    "rubric_metrics",
    "section_plots",
    "task_scatter",
    "verifiable_metrics",
]

_SERIES = [OKABE_ITO[k] for k in ("blue", "vermillion", "green", "orange", "purple", "sky", "black")]
_MARKERS = "osD^vP*"
_MAX_ROWS = 40


def _v(r: dict[str, Any]) -> dict[str, Any]:
    return r.get("variant") or {}


def _series_colours(names: Iterable[str]) -> dict[str, str]:
    return {name: (OKABE_ITO["black"] if name == "all" else _SERIES[i % len(_SERIES)]) for i, name in enumerate(names)}


def _forest(
    ax: Axes,
    rows: list[str],
    series: list[str],
    cells: dict[tuple[str, str], dict[str, Any]],
    *,
    colours: dict[str, str],
    scale: float,
    null: float | None = None,
) -> None:
    """Dots with CI error bars: ``cells[(row, series)] = record``; dodged per series; n/a marked.

    Panels made with ``sharey=True`` share their tick labels (matplotlib hides the inner ones)."""
    k = len(series)
    step = 0.7 / max(k, 1)
    for s_i, name in enumerate(series):
        offset = (s_i - (k - 1) / 2) * step if k > 1 else 0.0
        xs, ys, lo, hi = [], [], [], []
        for r_i, row in enumerate(rows):
            r = cells.get((row, name))
            if r is None or r.get("value") is None:
                continue
            x = scale * r["value"]
            xs.append(x)
            ys.append(r_i + offset)
            low = r.get("ci_low")
            high = r.get("ci_high")
            lo.append(0.0 if low is None else max(0.0, x - scale * low))
            hi.append(0.0 if high is None else max(0.0, scale * high - x))
        if xs:
            ax.errorbar(
                xs,
                ys,
                xerr=[lo, hi],
                fmt=_MARKERS[s_i % len(_MARKERS)],
                color=colours[name],
                markersize=4.5,
                elinewidth=1.6,
                capsize=2.5,
                label=_short(name, 34),
            )
        else:
            ax.plot([], [], _MARKERS[s_i % len(_MARKERS)], color=colours[name], label=_short(name, 34))
    if null is not None:
        ax.axvline(null, color="#444444", linestyle="--", linewidth=1)
    for r_i, row in enumerate(rows):
        present = [cells.get((row, s)) for s in series]
        if any(r is not None for r in present) and all(r is None or r.get("value") is None for r in present):
            ax.text(
                0.01,
                r_i,
                "n/a",
                transform=ax.get_yaxis_transform(),
                ha="left",
                va="center",
                fontsize=7,
                color="#666666",
                style="italic",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5},
            )
    ax.set_yticks(range(len(rows)), [_short(r, 60) for r in rows], fontsize=7.5)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.grid(axis="y", visible=False)


def _legend(fig: Figure, ax: Axes, title: str) -> None:
    """One legend above the panels (call after ``tight_layout``; the PNG is cropped to fit it)."""
    handles, names = ax.get_legend_handles_labels()
    if handles:
        fig.legend(
            handles,
            names,
            title=title,
            loc="lower center",
            bbox_to_anchor=(0.5, 1.0),
            ncol=min(len(names), 4),
            fontsize=7.5,
            title_fontsize=8,
            frameon=False,
        )


def _level(records: Iterable[dict[str, Any]]) -> int:
    return int(round(100 * next((float(r["confidence"]) for r in records if r.get("confidence")), 0.95)))


# ------------------------------------------------------------------------------------ mitigations
_BASE_WORDS = {
    "self-preference": "own answer's win rate (ties ½)",
    "self-preference-probability": "own answer's probability share",
    "self-preference-ratio": "own answer wins outright",
    "demographic-parity-bias": "demographic-parity bias",
    "harmful-self-preference": "prefers own wrong answer",
    "judge-accuracy": "judge accuracy",
    "error-bias": "error bias",
    "rubric-self-overestimation": "rubric self-overestimation",
}
_PLOT_ORDER = (
    "self-preference",
    "self-preference-probability",
    "self-preference-ratio",
    "harmful-self-preference",
    "judge-accuracy",
    "error-bias",
)


def _condition_labels(rows: list[dict[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for r in rows:
        c = str(r.get("condition"))
        kind = str(_v(r).get("mitigation"))
        out.setdefault(c, c if kind in (c, "None") else f"{c} ({kind})")
    return out


def mitigation_effects(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Change per mitigation (rows) and judge (series), one panel per base metric; plus the control."""
    rows = [r for r in records if r.get("metric") == MITIGATION]
    if not rows:
        return []
    labels = _condition_labels(rows)
    conditions = list(labels)
    judges = sorted({str(r.get("judge")) for r in rows}, key=lambda j: (j == "all", j))
    colours = _series_colours(judges)
    level = _level(rows)
    out = []
    present = {str(_v(r).get("base_metric")) for r in rows if is_judged_side(r)}
    panels = [m for m in _PLOT_ORDER if m in present] + sorted(present - set(_PLOT_ORDER) - {"demographic-parity-bias"})
    # panels measured on the same conditions share a figure (a filter with its own base metric gets its own)
    by_rows = defaultdict(list)
    for metric in panels:
        measured = {str(r.get("condition")) for r in rows if is_judged_side(r) and _v(r).get("base_metric") == metric}
        by_rows[tuple(c for c in conditions if c in measured)].append(metric)
    with _style():
        import matplotlib.pyplot as plt

        for index, (shown, group) in enumerate(sorted(by_rows.items(), key=lambda x: -len(x[0]))):
            ncols = min(3, len(group))
            nrows = math.ceil(len(group) / ncols)
            height = 0.24 * len(shown) + 1.3
            fig, axes = plt.subplots(
                nrows, ncols, figsize=(12 if ncols > 1 else 8, 0.6 + nrows * height), sharey=True, squeeze=False
            )
            for i, metric in enumerate(group):
                ax = axes[i // ncols][i % ncols]
                cells = {
                    (labels[str(r.get("condition"))], str(r.get("judge"))): r
                    for r in rows
                    if is_judged_side(r) and _v(r).get("base_metric") == metric
                }
                _forest(ax, [labels[c] for c in shown], judges, cells, colours=colours, scale=100, null=0.0)
                _min_span(ax, 4.0)
                ax.set_title(f"{metric}\n({_BASE_WORDS.get(metric, metric)})", fontsize=8.5)
                ax.set_xlabel("change, mitigated − baseline (pts)", fontsize=8)
            for j in range(len(group), nrows * ncols):
                axes[j // ncols][j % ncols].set_visible(False)
            fig.tight_layout()
            _legend(fig, axes[0][0], "judge ('all' = judges pooled)")
            which = ", ".join(group)
            out.append(
                _plot(
                    "mitigation-effects" if index == 0 else f"mitigation-effects-{index}",
                    f"Mitigation effects on the judges' verdicts on {judged_side_words(rows)}"
                    + ("" if index == 0 else f": {which}"),
                    fig,
                    f"Dot plots: change in {which} per mitigation and judge, with intervals",
                    f"Each dot is a bias metric under the mitigation minus the same metric at baseline, on the "
                    f"same comparisons by the same judge, in percentage points; bars are {level}% paired "
                    f"cluster-bootstrap intervals (prompts resampled). The dashed line is no change. 'n/a' marks "
                    f"a mitigation whose change is undefined for every judge (no usable comparison in both "
                    f"conditions, or no truth) — see the table for why."
                    + (
                        " Demographic-parity bias is 2 × the self-preference change and is in the table only."
                        if "self-preference" in group
                        else ""
                    ),
                )
            )
        control = [
            r
            for r in rows
            if _v(r).get("base_metric") == "self-preference"
            and _v(r).get("scope") in ("third-party-control", "self-minus-control")
        ]
        if control:
            perturbed = [c for c in conditions if any(str(r.get("condition")) == c for r in control)]
            scopes = ["self", "third-party-control", "self-minus-control"]
            scope_colours = {
                "self": OKABE_ITO["blue"],
                "third-party-control": OKABE_ITO["grey"],
                "self-minus-control": OKABE_ITO["vermillion"],
            }
            ncols = len(judges)
            fig, axes = plt.subplots(1, ncols, figsize=(12, 1.6 + 0.3 * len(perturbed)), sharey=True, squeeze=False)
            for i, judge in enumerate(judges):
                ax = axes[0][i]
                cells = {
                    (labels[str(r.get("condition"))], _v(r).get("scope", "")): r
                    for r in rows
                    if str(r.get("judge")) == judge
                    and _v(r).get("base_metric") == "self-preference"
                    and str(r.get("condition")) in perturbed
                }
                _forest(ax, [labels[c] for c in perturbed], scopes, cells, colours=scope_colours, scale=100, null=0.0)
                _min_span(ax, 4.0)
                ax.set_title(_short("judges pooled" if judge == "all" else judge, 40), fontsize=8.5)
                ax.set_xlabel("change in own win rate (pts)", fontsize=8)
            fig.tight_layout()
            _legend(fig, axes[0][0], "who judged the perturbed pairs")
            out.append(
                _plot(
                    "mitigation-control",
                    "Perturbations: self-evaluation vs third-party control",
                    fig,
                    "Dot plots per judge: change in own win rate for self-evaluation, third-party judges and their difference",
                    f"For each perturbation: the change in the judge's win rate for its own answer (blue), the "
                    f"change when other judges see the same perturbed pairs (grey, the control) and the "
                    f"difference of the two (vermillion, paper 003 Fig. 9), in percentage points with {level}% "
                    f"paired bootstrap intervals.",
                )
            )
    return out


# ------------------------------------------------------------------------------------ leakage
def leakage_plots(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """PLS per student group (and category slice), verdict vs probability; recognition and classifier."""
    out = []
    rule = pls_tie_rule(records)
    pls = [r for r in records if r.get("metric") == "preference-leakage-score" and _v(r).get("ties", "half") == rule]
    with _style():
        import matplotlib.pyplot as plt

        if pls:
            cells: dict[tuple[str, str], dict[str, Any]] = {}
            rows: list[str] = []
            pairs = sorted({str(r.get("judge")) for r in pls})
            for r in pls:
                v = _v(r)
                label = str(v.get("group") or "students")
                if (r.get("condition") or "default") != "default":  # an ablation (no-<feature>): its own row
                    label += f" · {r.get('condition')}"
                if len(pairs) > 1:
                    label = f"{_short(r.get('judge'), 36)} · {label}"
                if isinstance(v.get("slice"), dict) and v["slice"]:
                    ((kind, value),) = list(v["slice"].items())[:1]
                    label += f" · {kind}={value}"
                if label not in rows:
                    rows.append(label)
                cells[(label, v.get("preference", "verdict"))] = r
            rows = rows[:_MAX_ROWS]
            series = sorted({k[1] for k in cells}, key=lambda s: (s != "verdict", s))
            colours = {s: _SERIES[i] for i, s in enumerate(series)}
            fig, ax = plt.subplots(figsize=(9.5, 1.5 + 0.3 * len(rows)))
            _forest(ax, rows, series, cells, colours=colours, scale=100, null=0.0)
            ax.set_xlabel("preference leakage score (% relative to the average win rate)")
            ax.set_title(
                "Preference leakage score per student group"
                + (f"\njudges {_short(pairs[0], 90)}" if len(pairs) == 1 else " and judge pair")
            )
            ax.legend(
                title="preference from",
                fontsize=7.5,
                title_fontsize=8,
                loc="upper left",
                bbox_to_anchor=(1.01, 1.0),
                frameon=False,
            )
            out.append(
                _plot(
                    "leakage-pls",
                    "Preference leakage score",
                    fig,
                    "Dot plot of preference leakage scores with intervals per student group",
                    f"PLS (paper 000 Eq. 5–6, ties counted ½): how much more each judge prefers its own "
                    f"student than the other judge does, relative; 0 (dashed) is no leakage. 'verdict' uses "
                    f"the judges' verdicts, 'probability' their label probabilities. Bars: {_level(pls)}% "
                    f"cluster-bootstrap intervals. Rows with '·' and a category are per-category slices.",
                )
            )
        rec = [r for r in records if r.get("metric") in RECOGNITION]
        if rec:
            cells, rows, chance = {}, [], {}
            for r in rec:
                v = _v(r)
                if r.get("metric") == "student-classifier-accuracy":
                    label = f"classifier {v.get('classifier', '')} · {v.get('group', '')}"
                    base = v.get("majority_rate")
                else:
                    label = f"{_short(r.get('judge'), 30)} · {v.get('protocol', '')}"
                    base = v.get("chance")
                if label not in rows:
                    rows.append(label)
                what = {
                    "student-recognition-yes-rate": "says 'my student' (yes rate)",
                    "student-classifier-accuracy": "classifier accuracy",
                }.get(r["metric"], "recognition accuracy")
                cells[(label, what)] = r
                if base is not None:
                    chance[label] = base
            names = sorted({k[1] for k in cells})
            colours = {s: _SERIES[i] for i, s in enumerate(names)}
            fig, ax = plt.subplots(figsize=(9.5, 1.5 + 0.32 * len(rows)))
            _forest(ax, rows, names, cells, colours=colours, scale=100)
            for i, row in enumerate(rows):
                if row in chance:
                    ax.plot([100 * chance[row]], [i], "|", color="#444444", markersize=12, markeredgewidth=2)
            ax.plot([], [], "|", color="#444444", markersize=10, markeredgewidth=2, label="chance / majority class")
            ax.set_xlim(-2, 102)
            ax.set_xlabel("share of answers (%)")
            ax.set_title("Do judges recognise their students? (and can a classifier tell the teachers apart?)")
            ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
            out.append(
                _plot(
                    "leakage-recognition",
                    "Student recognition and classifier baseline",
                    fig,
                    "Dot plot of recognition accuracies with chance levels",
                    f"Recognition accuracy of each judge (pairwise: which of two answers is its student's; "
                    f"pointwise: is this its student's), its yes rate, and a text classifier's accuracy at "
                    f"telling which teacher a student learnt from. The black tick is chance (or the majority "
                    f"class); bars are {_level(rec)}% bootstrap intervals.",
                )
            )
    return out


def leakage_audit(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per audited judge: each entry's rank before and after removing the bonus, related entries marked."""
    groups = defaultdict(list)
    for r in records:
        if is_audit_rank(r):
            groups[(str(r.get("judge")), str(r.get("condition")))].append(r)
    out = []
    with _style():
        import matplotlib.pyplot as plt

        for index, ((judge, condition), items) in enumerate(sorted(groups.items())):
            items = sorted(items, key=lambda r: (r.get("original_rank") or r.get("value") or 1e9, str(r.get("generator"))))
            shown = items[:_MAX_ROWS]
            fig, ax = plt.subplots(figsize=(9.5, 1.5 + 0.26 * len(shown)))
            for i, r in enumerate(shown):
                colour = OKABE_ITO["orange"] if r.get("related") else OKABE_ITO["blue"]
                if r.get("original_rank") is not None:
                    ax.plot([r["original_rank"]], [i - 0.15], "o", color=colour, markersize=4, fillstyle="none")
                if r.get("value") is not None:
                    low, high = r.get("ci_low"), r.get("ci_high")
                    err = [[0 if low is None else r["value"] - low], [0 if high is None else high - r["value"]]]
                    ax.errorbar([r["value"]], [i + 0.15], xerr=err, fmt="D", color=colour, markersize=4, capsize=2)
            ax.set_yticks(range(len(shown)), [_short(r.get("generator"), 40) for r in shown], fontsize=7)
            ax.set_ylim(len(shown) - 0.5, -0.5)
            ax.grid(axis="y", visible=False)
            ax.set_xlabel("rank (1 = best)")
            ax.plot([], [], "o", color="#444444", fillstyle="none", label="rank as published")
            ax.plot([], [], "D", color="#444444", label="rank without the bonus (interval)")
            ax.plot([], [], "s", color=OKABE_ITO["orange"], label="related to the judge")
            ax.plot([], [], "s", color=OKABE_ITO["blue"], label="unrelated")
            ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
            ax.set_title(_short(f"Leaderboard audit: judge {judge}, {condition}", 90))
            more = f" Showing the first {len(shown)} of {len(items)} entries." if len(items) > len(shown) else ""
            out.append(
                _plot(
                    f"leakage-audit-{index}",
                    f"Leaderboard audit of {judge}",
                    fig,
                    f"Dot plot of leaderboard ranks under judge {judge}, with and without the leakage bonus",
                    "Each entry's rank as the judge's win rates give it (open circle) and after removing the "
                    "estimated bonus of entries related to the judge (diamond, with its bootstrap rank "
                    "interval). When the bonus cannot be estimated (see the table) the two ranks coincide." + more,
                )
            )
    return out


# ------------------------------------------------------------------------------------ papers 004 / 002
def _judge_rows(records: list[dict[str, Any]], metrics: Collection[str]) -> dict[str, list[dict[str, Any]]]:
    groups: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("metric") in metrics and r.get("judge") is not None:
            groups[str(r["judge"])].append(r)
    return dict(sorted(groups.items()))


def _panel_figure(
    panels: list[str],
    judges: list[str],
    conditions: list[str],
    cell_of: Callable[[str], dict[tuple[str, str], dict[str, Any]]],
    *,
    xlabels: list[tuple[str, bool]],
    nulls: list[float | None],
    title: str,
) -> Figure:
    import matplotlib.pyplot as plt

    ncols = min(len(panels), 4 if len(panels) > 3 else len(panels))
    nrows = math.ceil(len(panels) / ncols)
    height = 0.34 * len(judges) * max(1, len(conditions) ** 0.5) + 1.2
    fig, axes = plt.subplots(nrows, ncols, figsize=(12, 0.5 + nrows * height), sharey=True, squeeze=False)
    colours = _series_colours(conditions)
    for i, panel in enumerate(panels):
        ax = axes[i // ncols][i % ncols]
        _forest(ax, judges, conditions, cell_of(panel), colours=colours, scale=100 if xlabels[i][1] else 1, null=nulls[i])
        if xlabels[i][1]:  # shares: the whole 0–100% range, so that panels compare at a glance
            ax.set_xlim(-3, 103)
        else:
            _min_span(ax, 0.5)
        ax.set_title(panel, fontsize=8.5)
        ax.set_xlabel(xlabels[i][0], fontsize=8)
    for j in range(len(panels), nrows * ncols):
        axes[j // ncols][j % ncols].set_visible(False)
    fig.tight_layout()
    _legend(fig, axes[0][0], f"{title} (colour = condition)")
    return fig


def verifiable_metrics(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Paper 004: SPR, LSPR, HSPP and judge accuracy per judge, conditions side by side."""
    if not any(
        r.get("metric") in ("legitimate-self-preference-ratio", "harmful-self-preference-propensity", "judge-accuracy")
        for r in records
    ):
        return []
    metrics = (
        "self-preference-ratio",
        "legitimate-self-preference-ratio",
        "harmful-self-preference-propensity",
        "judge-accuracy",
    )
    by = _judge_rows(records, metrics)
    conditions = sorted({str(r.get("condition")) for rs in by.values() for r in rs})
    picked = {}
    for judge, items in by.items():
        for condition in conditions:
            chosen = verifiable_records([r for r in items if str(r.get("condition")) == condition])
            for metric, r in chosen.items():
                if r is not None:
                    picked[(metric, judge, condition)] = r
    titles = {
        "self-preference-ratio": "SPR: prefers its own answer",
        "legitimate-self-preference-ratio": "LSPR: … when its own is right",
        "harmful-self-preference-propensity": "HSPP: … when its own is wrong",
        "judge-accuracy": "judge accuracy (clear-cut pairs)",
    }
    with _style():
        fig = _panel_figure(
            [titles[m] for m in metrics],
            list(by),
            conditions,
            lambda panel: {(j, c): r for (m, j, c), r in picked.items() if titles[m] == panel},
            xlabels=[
                ("% of comparisons", True),
                ("% of own-preferences", True),
                ("% of pairs with own answer wrong", True),
                ("% correct verdicts", True),
            ],
            nulls=[None, None, None, None],
            title="Verifiable tasks (paper 004): per judge and condition",
        )
        return [
            _plot(
                "verifiable-004",
                "Verifiable-task metrics per judge and condition",
                fig,
                "Four dot-plot panels: SPR, LSPR, HSPP and judge accuracy per judge, one colour per condition",
                f"Paper 004's metrics, self scope, against every other model's answer as the paper counts them: SPR (Eq. 2), LSPR (Eq. 4: of "
                f"the pairs where it prefers its own answer, how often its own is the correct one), HSPP (Eq. 5: "
                f"how often it prefers its own wrong answer over a correct one) and judge accuracy (Eq. 3), each "
                f"averaged per evaluatee. Conditions (e.g. verdict only vs reasoning first) are side by side; bars "
                f"are {_level(picked.values())}% cluster-bootstrap intervals; 'n/a' means undefined (e.g. no pair "
                f"where exactly one answer is correct), never 0.",
            )
        ]


_SCATTER_LABELS = {
    "judge-accuracy": "judge accuracy (%)",
    "self-preference-ratio": "SPR (%)",
    "legitimate-self-preference-ratio": "LSPR (%)",
    "harmful-self-preference-propensity": "HSPP (%)",
}
_MAX_SCATTER_CONDITIONS = 6


def task_scatter(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Paper 004 Figs. 1–4: per condition (at most six), four scatter panels — judge accuracy, SPR,
    LSPR and HSPP against each judge's own task accuracy, each judge a labelled point, Pearson r in
    the panel's title ("n/a" below three judges)."""
    rows = task_scatter_table(records)
    if not rows:
        return []
    by_condition: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_condition[row["condition"]].append(row)
    plots = []
    with _style():
        import matplotlib.pyplot as plt

        for k, (condition, panels) in enumerate(sorted(by_condition.items())[:_MAX_SCATTER_CONDITIONS]):
            fig, axes = plt.subplots(1, len(panels), figsize=(3.3 * len(panels) + 0.4, 3.3), squeeze=False)
            for ax, row in zip(axes[0], panels):
                xs = [100 * x for _, x, _ in row["points"]]
                ys = [100 * y for _, _, y in row["points"]]
                ax.scatter(xs, ys, color=OKABE_ITO["blue"], zorder=3)
                for (judge, _, _), x, y in zip(row["points"], xs, ys):
                    ax.annotate(_short(judge, 22), (x, y), textcoords="offset points", xytext=(4, 3), fontsize=7)
                r_text = "n/a" if row["r"] is None else f"{row['r']:+.2f}"
                ax.set_title(f"{row['figure']}: r = {r_text} ({row['n_judges']} judges)", fontsize=9)
                ax.set_xlabel("task accuracy of its own answers (%)")
                ax.set_ylabel(_SCATTER_LABELS[row["metric"]])
            fig.tight_layout()
            plots.append(
                _plot(
                    f"verifiable-scatter-{k}",
                    f"Judge metrics against task accuracy ({condition})",
                    fig,
                    f"Scatter panels, one per metric: each judge's judge accuracy, SPR, LSPR and HSPP "
                    f"against its own task accuracy under condition {condition}",
                    "Paper 004 Figs. 1–4: each judge is a point at its own answers' task accuracy (x) "
                    "and its metric as in the table above (y; self scope, averaged per evaluatee). r is "
                    "Pearson's across judges (n/a below three judges); with a handful of judges it is "
                    "uncertain (`nepotism metrics --correlate` gives its bootstrap interval).",
                )
            )
    return plots


def rubric_metrics(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Paper 002: HSPP ratio self/family × instance/rubric, MIPA and MRA per judge."""
    if not any(r.get("metric") in ("hspp-ratio", "mipa", "mra") for r in records):
        return []
    by = _judge_rows(records, ("hspp-ratio", "mipa", "mra"))
    conditions = sorted({str(r.get("condition")) for rs in by.values() for r in rs})
    picked = {}
    for judge, items in by.items():
        for condition in conditions:
            for column, r in rubric_records([r for r in items if str(r.get("condition")) == condition]).items():
                if r is not None:
                    picked[(column, judge, condition)] = r
    order = list(RUBRIC_COLUMNS)  # the fixed column order: self before family, instance before rubric
    columns = sorted({k[0] for k in picked}, key=lambda c: order.index(c) if c in order else len(order))
    if not columns:
        return []
    hspp = [c for c in columns if c.startswith("hspp")]
    agree = [c for c in columns if not c.startswith("hspp")]
    plots = []
    with _style():
        for group, xlabel, scaled, null, id_, title in (
            (hspp, "ratio (1 = no bias)", False, 1.0, "rubric-hspp", "HSPP ratio: self and family, instance and rubric level"),
            (agree, "agreement (%)", True, None, "rubric-agreement", "MIPA and MRA: agreement with the reference grading"),
        ):
            if not group:
                continue
            fig = _panel_figure(
                group,
                list(by),
                conditions,
                lambda panel: {(j, c): r for (col, j, c), r in picked.items() if col == panel},
                xlabels=[(xlabel, scaled)] * len(group),
                nulls=[null] * len(group),
                title=f"Rubric metrics (paper 002): {title}",
            )
            caption = (
                "Paper 002 Eq. 1–2: how much more often the judge overestimates related generators than "
                "unrelated ones (family excludes the judge itself); 1 (dashed) is no bias."
                if id_ == "rubric-hspp"
                else "MIPA (Eq. 5): agreement with the reference on which of two answers is better, per paradigm "
                "(SR: from the judge's single-answer scores; PWC: from its pairwise verdicts). MRA (Eq. 6): "
                "agreement with the reference on each rubric verdict."
            )
            plots.append(
                _plot(
                    id_,
                    title,
                    fig,
                    f"Dot-plot panels: {title} per judge",
                    caption + f" Bars are {_level(picked.values())}% cluster-bootstrap intervals; 'n/a' "
                    f"means undefined, never 0.",
                )
            )
    return plots


def human_agreement(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Agreement (%) and chance-corrected agreement (kappa, alpha) among annotators and of judges with them."""
    rows = [r for r in records if r.get("metric") in HUMANS]
    if not rows:
        return []
    labels: dict[str, int] = {}
    cells: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in rows:
        v = _v(r)
        row = f"judge {_short(r.get('judge'), 40)}" if r.get("judge") is not None else str(v.get("between"))
        labels.setdefault(row, len(labels))
        panel = "agreement" if r["metric"].endswith("agreement") else "chance-corrected"
        statistic = (
            "percent agreement"
            if panel == "agreement"
            else str(v.get("statistic", r["metric"])).replace(" with the human majority", "")
        )
        cells[(panel, row, statistic)] = r
    names = list(labels)
    with _style():
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(12, 1.4 + 0.34 * len(names)), sharey=True, squeeze=False)
        for ax, (panel, xlabel, scale, null) in zip(
            axes[0],
            (
                ("agreement", "agreement (% of items)", 100, None),
                ("chance-corrected", "kappa / alpha (0 = chance, 1 = perfect)", 1, 0.0),
            ),
        ):
            series = sorted({s for p, _, s in cells if p == panel})
            colours = {s: _SERIES[i % len(_SERIES)] for i, s in enumerate(series)}
            _forest(
                ax,
                names,
                series,
                {(row, s): r for (p, row, s), r in cells.items() if p == panel},
                colours=colours,
                scale=scale,
                null=null,
            )
            if scale == 100:
                ax.set_xlim(-3, 103)
            else:
                _min_span(ax, 0.5)
            ax.set_xlabel(xlabel)
            if series:
                ax.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 1.0), frameon=False, ncol=2)
        fig.tight_layout()
        return [
            _plot(
                "humans",
                "Agreement of annotators and judges",
                fig,
                "Two dot-plot panels: percent agreement and kappa among annotators and of judges with them",
                f"Among annotators (all of them, and each pair) and of each judge with the human majority: the "
                f"share of items with the same label (left) and chance-corrected agreement (right; 0 = chance). "
                f"Bars are {_level(rows)}% bootstrap intervals over prompts; 'n/a' means undefined, not 0.",
            )
        ]


def section_plots(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """``{section: [plot, ...]}`` for the sections this module draws."""
    return {
        "mitigations": mitigation_effects(records),
        "leakage": leakage_plots(records),
        "leakage_audit": leakage_audit(records),
        "verifiable": verifiable_metrics(records) + task_scatter(records),
        "rubric": rubric_metrics(records) + accuracy_bias_plots(records),
        "humans": human_agreement(records),
    }
