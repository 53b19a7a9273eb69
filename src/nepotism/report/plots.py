"""The report's figures from result records, in one colour-blind-safe style, as embedded PNGs.

Every function takes the records and returns a list of plots ``{id, title, png (base64), alt,
caption, labels}`` — empty when the records hold nothing to draw; ``labels`` are the texts drawn in
the figure (ticks, legend, titles), for the page and its tests. `leaderboard` may also return a
note ``{id, note}`` (a board it leaves out, and why), which the page prints as text. Colours are
the Okabe–Ito palette, one per relation of the generator to the judge (`SCOPE_COLOURS`: itself
blue, its family orange, its series vermillion, its lineage black, its student green, its
family's student purple, its teacher sky, anything else grey), named in words in every legend;
heatmaps use a blue–white–vermillion diverging map or cividis for counts; every axis names its
quantity and unit. Model names are drawn as plain text (``text.parse_math`` off, so a ``$`` in a
name is not TeX), whole: a long label is wrapped at spaces and separators (`_wrap`), never cut,
and each figure is sized to its labels. Figures are PNG so that the page can embed them as
``<img>`` (an SVG inlined into HTML could carry markup from a model name).

What is left out, and said so in the captions: heatmap columns that compare a model with samples
of itself (``m@output_1`` against ``m@output_2``); the judges none of whose columns another judge
saw; leaderboards of fewer than three models (samples of one model count once).

What this module leaves out: choosing which records exist (the suite) and the page (`full`).
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from nepotism.models import related_scope, untagged
from nepotism.report._format import relation_words

if TYPE_CHECKING:
    import numpy.typing as npt
    from matplotlib.axes import Axes
    from matplotlib.colors import Colormap
    from matplotlib.figure import Figure
    from matplotlib.typing import LegendLocType, LineStyleType, RcKeyType

__all__ = [
    "BIAS_METRICS",
    "OKABE_ITO",
    "SCOPE_COLOURS",
    "bias_bars",
    "confusion_matrices",
    "heatmaps",
    "leaderboard",
    "mitigation",
    "perplexity",
    "perplexity_means",
    "pls_tie_rule",
]

OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "grey": "#999999",
}
#: Scope (`Registry.scope`) or registry relation → colour: one colour per relation. The family scope
#: is drawn as its commonest relation (same family); its series and lineage get their own colours.
SCOPE_COLOURS = {
    "self": OKABE_ITO["blue"],
    "family": OKABE_ITO["orange"],
    "same_family": OKABE_ITO["orange"],
    "same_series": OKABE_ITO["vermillion"],
    "lineage": OKABE_ITO["black"],
    "student": OKABE_ITO["green"],
    "family-student": OKABE_ITO["purple"],
    "family_student": OKABE_ITO["purple"],
    "teacher": OKABE_ITO["sky"],
}
#: Legend words of the scopes `relation_words` (registry relations) does not name.
_SCOPE_WORDS = {
    "family": "of its family",
    "family-student": "a student of its family",
    "neutral": "neither answer related to it (check)",
    "None": "no relation recorded",
}
_FAMILY = {"family", "lineage", "same_series", "same_family"}
_STUDENT = {"student", "family-student", "family_student"}
_MAX_ROWS = 40


@contextmanager
def _style() -> Iterator[None]:
    """The report's style over the block (figures drawn in it import `matplotlib.pyplot` there)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.rcsetup import cycler

    rc: dict[RcKeyType, Any] = {
        "text.parse_math": False,
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.labelsize": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.color": "#e5e5e5",
        "axes.axisbelow": True,
        "figure.dpi": 100,
        "savefig.dpi": 110,
        "font.family": "DejaVu Sans",
        "axes.prop_cycle": cycler(
            color=[OKABE_ITO[k] for k in ("blue", "orange", "green", "vermillion", "purple", "sky", "yellow", "black")]
        ),
    }
    with plt.rc_context(rc):
        yield


def _png(fig: Figure) -> tuple[str, list[str]]:
    """The figure as base64 PNG, and every non-empty text it draws (read after drawing)."""
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    texts = [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode(), list(dict.fromkeys(texts))


#: A run of characters a label is never broken inside, and the separators after it.
_PIECE = re.compile(r"[^_/@·,;:-]*[_/@·,;:-]*")


def _wrap(text: object, width: int = 40) -> str:
    """``text`` on lines of at most ``width`` characters, broken between words, and inside a word
    longer than a line only after a separator (``_ - / @ · , ; :``), never inside a run of letters,
    digits and dots; nothing is left out, and a run longer than ``width`` keeps a line of its own."""
    text = str(text)
    if len(text) <= width:
        return text
    pieces = []
    for word in text.split():
        pieces += [word] if len(word) <= width else [p for p in _PIECE.findall(word) if p]
        pieces[-1] += " "
    lines, line = [], ""
    for piece in pieces:
        if line and len((line + piece).rstrip()) > width:
            lines.append(line.rstrip())
            line = piece
        else:
            line += piece
    lines.append(line.rstrip())
    return "\n".join(lines)


#: The name section_plots and paradigms import: labels are wrapped, never shortened.
_short = _wrap


def _lines(labels: Iterable[object]) -> int:
    """The most lines any of ``labels`` takes."""
    return max((str(x).count("\n") + 1 for x in labels), default=1)


def _pitch(labels: Iterable[object], least: float, per_line: float = 0.135) -> float:
    """Inches per row of a plot whose rows carry ``labels`` (7.5-point text): ``least``, or more
    when a wrapped label needs it."""
    return max(least, per_line * _lines(labels) + 0.08)


def _plot(id_: str, title: str, fig: Figure, alt: str, caption: str) -> dict[str, Any]:
    png, labels = _png(fig)
    return {"id": id_, "title": title, "png": png, "alt": alt, "caption": caption, "labels": labels}


def _relation_legend(ax: Axes, scopes: Iterable[str], *, loc: LegendLocType, **options: object) -> None:
    """A legend of the colours drawn, one per scope or relation, named in words."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=_colour(s), marker="o", label=_SCOPE_WORDS.get(s) or relation_words(s)) for s in scopes]
    ax.legend(handles=handles, title="the generator is, to the judge", loc=loc, **options)


def _colour(scope: object) -> str:
    return SCOPE_COLOURS.get(str(scope), OKABE_ITO["grey"])


_ORDER = (
    "self",
    "lineage",
    "same_series",
    "family",
    "same_family",
    "student",
    "family-student",
    "family_student",
    "teacher",
    "neutral",
    "unrelated",
    "unknown",
)


def _scope_order(scope: str) -> tuple[int, str]:
    """Legend order: from the most related to the least (`SCOPE_LADDER`'s order, relations in place)."""
    return (_ORDER.index(scope) if scope in _ORDER else len(_ORDER), scope)


def _min_span(ax: Axes, span: float) -> None:
    """Widen the x range to at least ``span`` (estimates that are all 0 would otherwise get a ±0.04 axis)."""
    low, high = ax.get_xlim()
    if high - low < span:
        mid = (low + high) / 2
        ax.set_xlim(mid - span / 2, mid + span / 2)


def _judge_labels(records: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(judge, condition) → label, whole (callers wrap it); the condition shown only for judges with several."""
    conditions: defaultdict[str, set[str]] = defaultdict(set)
    for r in records:
        conditions[str(r.get("judge"))].add(str(r.get("condition")))
    return {(j, c): (j if len(cs) == 1 else f"{j} / {c}") for j, cs in conditions.items() for c in cs}


def _defined(records: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    return [r for r in records if r.get("metric") == metric and r.get("value") is not None]


def _cmap() -> Colormap:
    from matplotlib.colors import LinearSegmentedColormap

    return LinearSegmentedColormap.from_list("nepotism-diverging", [OKABE_ITO["blue"], "#ffffff", OKABE_ITO["vermillion"]])


# ------------------------------------------------------------------------------------ heatmaps
#: Heatmap outlines: (kind, line style, words). A cell is outlined by the generator's relation to the judge.
_OUTLINES: tuple[tuple[str, Literal["-", "--", ":"], str], ...] = (
    ("self", "-", "the judge itself"),
    ("family", "--", "of its family, series or lineage"),
    ("student", ":", "its student, or its family's"),
)


def _outline(relation: object) -> str | None:
    if not isinstance(relation, str):  # e.g. leakage win rates carry a {judge: relation} mapping
        return None
    return "self" if relation == "self" else "family" if relation in _FAMILY else "student" if relation in _STUDENT else None


def _heatmap(
    rows: list[str],
    columns: list[str],
    values: npt.NDArray[np.float64],
    relations: dict[tuple[int, int], object],
    *,
    title: str,
    unit: str,
    id_: str,
    caption: str,
) -> dict[str, Any]:
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    matrix = np.array(values, dtype=float)
    limit = float(np.nanmax(np.abs(matrix))) if np.isfinite(matrix).any() else 1.0
    limit = limit or 1.0
    row_labels, column_labels = [_wrap(r, 36) for r in rows], [_wrap(c, 36) for c in columns]
    width = min(2.5 + len(columns) * _pitch(column_labels, 0.42, per_line=0.17), 24)
    fig, ax = plt.subplots(figsize=(width, 1.6 + len(rows) * _pitch(row_labels, 0.42, per_line=0.16)))
    ax.grid(False)
    image = ax.imshow(np.ma.masked_invalid(matrix), cmap=_cmap(), vmin=-limit, vmax=limit, aspect="auto")
    ax.set_facecolor("#f0f0f0")
    ax.set_xticks(range(len(columns)), column_labels, rotation=60, ha="right", rotation_mode="anchor")
    ax.set_yticks(range(len(rows)), row_labels)
    ax.set_xlabel("generator (whose answers were judged)")
    ax.set_ylabel("judge")
    styles = {kind: style for kind, style, _ in _OUTLINES}
    drawn = set()
    for (i, j), relation in relations.items():
        kind = _outline(relation)
        if kind:
            drawn.add(kind)
            ax.add_patch(
                Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.2, linestyle=styles[kind])
            )
    if matrix.size <= 400:
        for (i, j), v in np.ndenumerate(matrix):
            if np.isfinite(v):
                ax.text(
                    j, i, f"{v:+.1f}", ha="center", va="center", fontsize=7, color="white" if abs(v) > 0.6 * limit else "black"
                )
    bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    bar.set_label(unit)
    handles = [
        Line2D([], [], color="black", linestyle=style, linewidth=2, label=words)
        for kind, style, words in _OUTLINES
        if kind in drawn
    ]
    if handles:
        ax.legend(
            handles=handles,
            loc="lower left",
            bbox_to_anchor=(0.0, 1.0),
            ncol=len(handles),
            fontsize=8,
            frameon=False,
            title="outlined: the generator is, to the judge",
            title_fontsize=8,
        )
    ax.set_title(title, pad=40 if handles else 8)
    return _plot(id_, title, fig, f"Heatmap: {title}", caption)


def _self_pair(generator: str, opponents: object) -> bool:
    """Whether a win rate compares a model with samples of itself (``m@output_1`` against ``m@output_2``):
    it says nothing about whom a judge favours."""
    return isinstance(opponents, list) and bool(opponents) and all(untagged(o) == untagged(generator) for o in opponents)


def _names(items: Iterable[str], limit: int = 8) -> str:
    items = sorted(items)
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def heatmaps(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Judge × generator: centred rubric score deltas, and win rates centred per generator across judges."""
    out = []
    labels = _judge_labels(records)
    deltas = [
        r
        for r in _defined(records, "score-delta")
        if (r.get("variant") or {}).get("weighting", "count") == "count" and (r.get("variant") or {}).get("centred", True)
    ]
    win = _defined(records, "win-rate")
    with _style():
        for kind, rows_in in (("score-delta", deltas), ("win-rate", win)):
            if not rows_in:
                continue
            cells, with_itself = {}, set()
            for r in rows_in:
                column = str(r["generator"])
                if kind == "win-rate":  # comparable only against the same opponents
                    opponents = (r.get("variant") or {}).get("opponents")
                    column = f"{column} (vs {', '.join(opponents) if isinstance(opponents, list) else opponents})"
                    if _self_pair(r["generator"], opponents):
                        with_itself.add(column)
                        continue
                cells[((str(r["judge"]), str(r.get("condition"))), column)] = r
            judges = sorted({k[0] for k in cells})
            generators = sorted({k[1] for k in cells})
            notes = []
            if kind == "win-rate":  # centre per column over the judges that saw it; needs two judges
                everyone = sorted({(str(r["judge"]), str(r.get("condition"))) for r in rows_in})
                seen = {g: [j for j in judges if (j, g) in cells] for g in generators}
                generators = [g for g in generators if len(seen[g]) >= 2]
                if not generators:
                    continue
                related = {
                    g
                    for g in generators
                    if any(
                        isinstance(cells[(j, g)].get("relation"), str) and related_scope(cells[(j, g)]["relation"])
                        for j in seen[g]
                    )
                }
                comparable = len(generators)
                generators.sort(key=lambda g: (g not in related, -len(seen[g]), g))
                generators = sorted(generators[:_MAX_ROWS])
                judges = [j for j in judges if any((j, g) in cells for g in generators)]
                if comparable > len(generators):
                    notes.append(
                        f"Showing {len(generators)} of the {comparable} comparable generators: those "
                        "related to a judge first, then those most judges saw."
                    )
                if with_itself:
                    notes.append(
                        f"Left out: {len(with_itself)} column(s) comparing a model with samples of itself "
                        f"({_names(with_itself, 4)}), which say nothing about whom a judge favours."
                    )
                left = [labels[j] for j in everyone if j not in judges]
                if left:
                    notes.append(
                        f"Not shown: {_names(left)} — no generator they judged was judged by another "
                        "judge (or under another condition) against the same opponents"
                        + (", or their columns are beyond those shown" if comparable > len(generators) else "")
                        + "."
                    )
            values, relations = [], {}
            for i, j in enumerate(judges):
                line = []
                for k, g in enumerate(generators):
                    cell = cells.get((j, g))
                    line.append(np.nan if cell is None else 100 * cell["value"])
                    if cell is not None:
                        relations[(i, k)] = cell.get("relation") if kind == "win-rate" else cell.get("scope")
                values.append(line)
            matrix = np.array(values, dtype=float)
            if kind == "win-rate":
                matrix = matrix - np.nanmean(matrix, axis=0, keepdims=True)
                title = "Win rate of each generator under each judge, centred on its mean over judges"
                unit = "win rate − mean over judges (percentage points)"
                caption = (
                    "Rows are judges (and conditions); each column is one generator against the same "
                    "opponents, seen by at least two rows; a cell is that row's win rate for it minus the mean "
                    "over those rows, so a positive outlined cell is a judge rating its relative higher than "
                    "the other judges do. Outlined cells: the generator is the judge itself (solid), of its "
                    "family (dashed) or its student (dotted). A generator only one row saw against its opponents "
                    "has no column."
                )
            else:
                title = "Centred rubric score delta: judge score − reference score, centred per judge"
                unit = "score delta (percentage points of rubrics met)"
                caption = (
                    "S_J(G) − S*(G) minus its mean over the judge's generators (paper 002 Fig. 5): positive means "
                    "the judge grades that generator more generously than the reference does, relative to the "
                    "others. Outlined cells: self (solid), family (dashed), student (dotted)."
                )
            out.append(
                _heatmap(
                    [labels[j] for j in judges],
                    generators,
                    matrix,
                    relations,
                    title=title,
                    unit=unit,
                    id_=f"heatmap-{kind}",
                    caption=" ".join([caption, *notes]),
                )
            )
    return out


# ------------------------------------------------------------------------------------ bias bars
def _variant(r: dict[str, Any]) -> dict[str, Any]:
    return r.get("variant") or {}


#: (metric, which of its records are drawn, the no-bias value, the scale to the axis unit, the axis label).
_BARS: list[tuple[str, Callable[[dict[str, Any]], bool], float | None, int, str]] = [
    ("matched-bias", lambda r: True, 0.0, 100, "related preferred minus unrelated reference judges (points)"),
    ("paired-win-rate-gap", lambda r: True, 0.0, 100, "win rate here minus under the other judge (percentage points)"),
    (
        "self-preference-ratio",
        lambda r: "averaging" not in _variant(r),
        50.0,
        100,  # pooled; per evaluatee: 004 tables
        "related candidate preferred (% of comparisons)",
    ),
    (
        "demographic-parity-bias",
        lambda r: _variant(r).get("preference", "verdict") == "verdict",
        0.0,
        100,
        "P(prefer | related) − P(prefer | other) (percentage points)",
    ),
    (
        "equal-opportunity-bias",
        lambda r: _variant(r).get("preference", "verdict") == "verdict",
        0.0,
        100,
        "recall on related − recall on other (percentage points)",
    ),
    ("error-bias", lambda r: True, 0.0, 100, "errors for related − errors against it (percentage points)"),
    (
        "score-delta",
        lambda r: related_scope(r.get("scope")) and _variant(r).get("weighting", "count") == "count",
        0.0,
        100,
        "centred score delta (percentage points)",
    ),
    (
        "hspp-ratio",
        lambda r: (
            _variant(r).get("family_set", "exclude judge") == "exclude judge"
            and _variant(r).get("denominator", "not-family") == "not-family"
        ),
        1.0,
        1,
        "overestimation of related ÷ of unrelated generators (ratio)",
    ),
    (
        "harmful-self-preference-propensity",
        lambda r: (
            _variant(r).get("averaging", "per-evaluatee") == "per-evaluatee"
            and _variant(r).get("opponents", "unrelated") == "unrelated"
            and _variant(r).get("preference", "verdict") == "verdict"
        ),
        None,
        100,
        "prefers own answer when the other is correct (%)",
    ),
    (
        "preference-leakage-score",
        lambda r: True,
        0.0,
        100,  # one tie rule: see pls_tie_rule
        "preference leakage score (%, relative)",
    ),
]
#: Metric ids shown as bias bars (and compared across conditions).
BIAS_METRICS = tuple(m for m, *_ in _BARS)
_JUDGE_ALONE = (
    "this metric reads the judge alone, so it cannot tell favouritism from better answers: a judge "
    "whose relatives write better answers prefers them without any bias. Matched bias (against judges "
    "unrelated to both answers, on the same pairs) and equal-opportunity bias (against human labels) can."
)
#: What a metric's dashed line marks, where "no bias" would say more than the metric can ({null}: its value).
_NULL_WORDS = {
    "self-preference-ratio": "the dashed line is equal preference ({null:g}%: the related answer preferred as often "
    'as the other), not "no bias": ' + _JUDGE_ALONE,
    "demographic-parity-bias": "the dashed line is equal preference ({null:g}: related answers preferred as often as "
    'others), not "no bias": ' + _JUDGE_ALONE,
    "paired-win-rate-gap": "the dashed line is no difference between the two judges ({null:g}); the other judge may "
    "favour the candidates too (matched bias compares with judges unrelated to both)",
}


def _row_label(r: dict[str, Any], labels: dict[tuple[str, str], str], suffix: str = "", width: int = 60) -> str:
    """A forest plot row: judge (and condition) · scope (pair or generator; other judge; variant), wrapped."""
    judge = labels.get((str(r["judge"]), str(r.get("condition"))), str(r["judge"]))
    v = _variant(r)
    extra = []
    if r.get("pair"):
        extra.append(" vs ".join(str(p) for p in r["pair"]))
    elif r.get("generator"):
        extra.append(str(r["generator"]))
    if "other_judge" in v:  # its condition too when it judged under several (as the judge's label)
        other = (str(v["other_judge"]), str(v.get("other_condition")))
        extra.append(f"other judge {labels.get(other, other[0])}")
    for key in ("opponents", "level", "subset"):
        if key in v and isinstance(v[key], str):
            extra.append(f"{key} {v[key]}")
    scope = r.get("scope") or ""
    return _wrap(f"{judge} · {scope}" + (f" ({'; '.join(extra)})" if extra else "") + suffix, width)


def pls_tie_rule(records: list[dict[str, Any]]) -> str:
    """The tie rule PLS is drawn with: paper 000's default ``loss`` (a tie is a non-win) when the
    records carry it, else ``half`` (results written before ``loss`` was the default)."""
    loss = any(r.get("metric") == "preference-leakage-score" and _variant(r).get("ties") == "loss" for r in records)
    return "loss" if loss else "half"


def bias_bars(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One forest plot per bias metric: every judge and scope with its CI, the no-bias value marked."""
    labels = _judge_labels(records)
    out = []
    with _style():
        import matplotlib.pyplot as plt

        for metric, keep, null, scale, xlabel in _BARS:
            if metric == "preference-leakage-score":  # drawn in the leakage section (section_plots)
                continue
            rows = [r for r in _defined(records, metric) if keep(r)]
            if not rows:
                continue
            rows.sort(key=lambda r: (str(r["judge"]), str(r.get("condition")), str(r.get("scope")), -(r.get("n") or 0)))
            dropped = max(0, len(rows) - _MAX_ROWS)
            rows = rows[:_MAX_ROWS]
            names = [_row_label(r, labels) for r in rows]
            fig, ax = plt.subplots(figsize=(9.5, 1.1 + _pitch(names, 0.3) * len(rows)))
            for i, r in enumerate(rows):
                colour = _colour(r.get("scope"))
                value = scale * r["value"]
                ax.plot([value], [i], "o", color=colour, markersize=6)
                if r.get("ci_low") is not None:
                    ax.plot([scale * r["ci_low"], scale * r["ci_high"]], [i, i], "-", color=colour, linewidth=2.2)
            if null is not None:
                ax.axvline(null, color="#444444", linestyle="--", linewidth=1)
            _min_span(ax, 4.0 if scale == 100 else 0.5)
            ax.set_yticks(range(len(rows)), names, fontsize=7.5)
            ax.set_ylim(len(rows) - 0.5, -0.5)
            ax.set_xlabel(xlabel)
            ax.grid(axis="y", visible=False)
            _relation_legend(
                ax,
                sorted({str(r.get("scope")) for r in rows}, key=_scope_order),
                loc="upper left",
                bbox_to_anchor=(1.01, 1.0),
                fontsize=7.5,
                frameon=False,
                title_fontsize=8,
            )
            level = int(round(100 * (rows[0].get("confidence") or 0.95)))
            ax.set_title(metric)
            line = "" if null is None else "; " + _NULL_WORDS.get(metric, "the dashed line is no bias ({null:g})")
            caption = (
                f"{metric}: dots are estimates, lines their {level}% cluster-bootstrap intervals"
                + line.format(null=null).rstrip(".")
                + (f". {dropped} more rows are in the tables." if dropped else ".")
            )
            out.append(_plot(f"bias-{metric}", metric, fig, f"Forest plot of {metric} per judge and scope", caption))
    return out


# ------------------------------------------------------------------------------------ perplexity
def _group(r: dict[str, Any]) -> str:
    """A perplexity-win-rate record's group: ``all`` | ``self`` | ``other`` (suite: ``group``;
    `nepotism.analyses.derived.perplexity_records`: ``split``)."""
    v = _variant(r)
    return str(v.get("group", v.get("split", "all")))


def _bin_line(
    ax: Axes, points: list[dict[str, Any]], colour: str, marker: str, label: str, linestyle: LineStyleType = "-"
) -> None:
    x = np.array([_variant(r).get("bin", i) for i, r in enumerate(points)], dtype=float)
    y = np.array([np.nan if r["value"] is None else 100 * r["value"] for r in points])
    low = np.array([np.nan if r.get("ci_low") is None else 100 * r["ci_low"] for r in points])
    high = np.array([np.nan if r.get("ci_high") is None else 100 * r["ci_high"] for r in points])
    ax.plot(x, y, marker=marker, color=colour, label=label, linestyle=linestyle)
    ax.fill_between(x, low, high, color=colour, alpha=0.15, linewidth=0)


def perplexity(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Paper 001 §5 per judge: Fig. 3 (the judge's and the humans' choice of A per bin of the
    judge's perplexity difference) beside Fig. 4 (the judge on pairs holding its own answer, shown
    as A, vs pairs without it), then Fig. 5 (mean log-perplexity of own vs other responses)."""
    rows = [r for r in records if r.get("metric") == "perplexity-win-rate"]
    labels = _judge_labels(records)
    groups: defaultdict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(str(r["judge"]), str(r.get("condition")))].append(r)
    out: list[dict[str, Any]] = []
    with _style():
        import matplotlib.pyplot as plt

        for (judge, condition), items in sorted(groups.items()):

            def line(group: str, rater: str, items: list[dict[str, Any]] = items) -> list[dict[str, Any]]:
                return sorted(
                    (r for r in items if _group(r) == group and _variant(r).get("rater", "judge") == rater),
                    key=lambda r: _variant(r).get("bin", 0),
                )

            # (title, [(group, rater, colour, marker, label, line style)])
            panels: list[tuple[str, list[tuple[str, str, str, str, str, LineStyleType]]]] = [
                (
                    "Judge vs human (Fig. 3)",
                    [
                        ("all", "judge", OKABE_ITO["blue"], "o", "judge", "-"),
                        ("all", "human", OKABE_ITO["orange"], "s", "human", "-"),
                    ],
                ),
                (
                    "Own vs other pairs (Fig. 4)",
                    [
                        ("self", "judge", OKABE_ITO["vermillion"], "o", "judge, own answer as A", "-"),
                        ("other", "judge", OKABE_ITO["blue"], "o", "judge, pairs without its answer", "-"),
                        ("self", "human", OKABE_ITO["vermillion"], "s", "human, own answer as A", ":"),
                    ],
                ),
            ]
            panels = [(t, [spec for spec in specs if line(spec[0], spec[1])]) for t, specs in panels]
            panels = [(t, specs) for t, specs in panels if specs]
            if not panels:
                continue
            reference = line("all", "judge") or next(line(g, r) for _, specs in panels for g, r, *_ in specs)
            difference = _variant(reference[0]).get("difference", "log perplexity of A − of B")
            fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels) + 0.5, 3.6), squeeze=False)
            for ax, (title, specs) in zip(axes[0], panels):
                for group, rater, colour, marker, label, style in specs:
                    _bin_line(ax, line(group, rater), colour, marker, label, style)
                ticks = [_variant(r).get("bin", i) for i, r in enumerate(reference)]
                ax.set_xticks(
                    ticks,
                    [f"{_variant(r).get('low', np.nan):.2g} to {_variant(r).get('high', np.nan):.2g}" for r in reference],
                    rotation=30,
                    fontsize=7,
                )
                ax.set_ylim(0, 100)
                ax.axhline(50, color="#444444", linestyle="--", linewidth=0.8)
                ax.set_title(title, fontsize=9)
                ax.set_xlabel(f"{difference} under the judge (bin)", fontsize=8)
                ax.set_ylabel("A chosen (% of comparisons)")
                ax.legend(fontsize=7)
            fig.suptitle(_wrap(labels.get((judge, condition), judge), 80))
            fig.tight_layout()
            out.append(
                _plot(
                    f"perplexity-{len(out)}",
                    f"Perplexity-binned win rates: {labels.get((judge, condition), judge)}",
                    fig,
                    "Line plots of the share of comparisons where A is chosen, per bin of the judge's perplexity difference",
                    "Left: the judge (blue) and the humans (orange) pick A, per equal-count bin of the judge's "
                    f"{difference}; a judge line falling faster than the human one means the judge favours text "
                    "it finds familiar (paper 001 Fig. 3). Right: the judge on pairs holding its own answer "
                    "(shown as A) and on pairs without it, with the same bins; lines that coincide mean the "
                    "perplexity, not the authorship, drives the choice (Fig. 4). Bands: bootstrap intervals "
                    "over prompts.",
                )
            )
    out += perplexity_means(records)
    return out


def perplexity_means(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Paper 001 Fig. 5: each judge's mean log-perplexity of its own and of other responses, with CIs."""
    rows = [r for r in records if r.get("metric") == "mean-log-perplexity" and r.get("value") is not None]
    if not rows:
        return []
    labels = _judge_labels(records)
    keys = sorted({(str(r["judge"]), str(r.get("condition"))) for r in rows})[:_MAX_ROWS]
    gaps = {(str(r["judge"]), str(r.get("condition"))): r for r in records if r.get("metric") == "log-perplexity-gap"}
    with _style():
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(
            figsize=(max(5.0, 1.3 * len(keys) + 2.0), 3.6 + 0.12 * _lines(_wrap(labels.get(k, k[0]), 24) for k in keys))
        )
        width = 0.38
        for offset, name, colour in ((-width / 2, "own", OKABE_ITO["vermillion"]), (width / 2, "other", OKABE_ITO["blue"])):
            for i, key in enumerate(keys):
                r = next(
                    (
                        r
                        for r in rows
                        if (str(r["judge"]), str(r.get("condition"))) == key and _variant(r).get("responses") == name
                    ),
                    None,
                )
                if r is None:
                    continue
                ax.bar(i + offset, r["value"], width, color=colour, label=name if i == 0 else None)
                if r.get("ci_low") is not None and r.get("ci_high") is not None:
                    ax.errorbar(
                        i + offset,
                        r["value"],
                        yerr=[[r["value"] - r["ci_low"]], [r["ci_high"] - r["value"]]],
                        color="#222222",
                        capsize=3,
                        linewidth=1,
                    )
        names = [_wrap(labels.get(k, k[0]), 24) for k in keys]
        ax.set_xticks(range(len(keys)), names, rotation=20, fontsize=7.5, ha="right", rotation_mode="anchor")
        ax.set_ylabel("mean log-perplexity (nats per token)")
        ax.legend(title="responses", fontsize=8, title_fontsize=8)
        ax.set_title("Own vs other responses under each judge (paper 001 Fig. 5)", fontsize=9)
        fig.tight_layout()
        gap_text = "; ".join(
            f"{labels.get(k, k[0])}: gap {gaps[k]['value']:+.3g}"
            + (f" [{gaps[k]['ci_low']:+.3g}, {gaps[k]['ci_high']:+.3g}]" if gaps[k].get("ci_low") is not None else "")
            for k in keys
            if k in gaps and gaps[k].get("value") is not None
        )
        return [
            _plot(
                "perplexity-own-other",
                "Mean log-perplexity of own vs other responses",
                fig,
                "Bar chart of each judge's mean log-perplexity of its own and of other responses",
                "Red: the judge's own responses; blue: other models' responses; error bars are cluster-bootstrap "
                "intervals over prompts. Lower means more familiar to the judge; paper 001 finds every evaluator's "
                "own responses lower." + (f" Own − other: {gap_text}." if gap_text else ""),
            )
        ]


# ------------------------------------------------------------------------------------ confusion
def confusion_matrices(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The 2×2 human × judge matrices behind equal-opportunity bias, one panel per judge and scope."""
    rows = [r for r in records if r.get("metric") == "equal-opportunity-bias" and r.get("confusion_matrix")]
    if not rows:
        return []
    labels = _judge_labels(records)
    rows = rows[:12]
    cols = min(4, len(rows))
    n_rows = -(-len(rows) // cols)
    with _style():
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(n_rows, cols, figsize=(3.0 * cols, 2.9 * n_rows), squeeze=False)
        for ax in axes.ravel()[len(rows) :]:
            ax.axis("off")
        for ax, r in zip(axes.ravel(), rows):
            m = r["confusion_matrix"]
            counts = np.array(
                [
                    [m["human_own_judge_own"], m["human_own_judge_other"]],
                    [m["human_other_judge_own"], m["human_other_judge_other"]],
                ],
                dtype=float,
            )
            share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
            ax.grid(False)
            ax.imshow(share, cmap="cividis", vmin=0, vmax=1)
            for (i, j), c in np.ndenumerate(counts):
                ax.text(
                    j,
                    i,
                    f"{int(c):,}\n{100 * share[i, j]:.0f}% of row",
                    ha="center",
                    va="center",
                    fontsize=7.5,
                    color="black" if share[i, j] > 0.55 else "white",
                )
            ax.set_xticks([0, 1], ["related", "other"])
            ax.set_yticks([0, 1], ["related", "other"])
            ax.set_xlabel("judge prefers")
            ax.set_ylabel("human prefers")
            ax.set_title(
                _wrap(f"{labels.get((str(r['judge']), str(r.get('condition'))), r['judge'])}", 34) + f"\nscope {r.get('scope')}",
                fontsize=8,
            )
        fig.tight_layout()
        return [
            _plot(
                "confusion",
                "Human × judge confusion matrices",
                fig,
                "Grid of two-by-two confusion matrices of human and judge preferences",
                "Rows: which answer the human label prefers; columns: which the judge prefers (ties left out). "
                "Equal-opportunity bias is the related row's recall minus the other row's (paper 001 Def. 4.1).",
            )
        ]


# ------------------------------------------------------------------------------------ conditions
def _group_key(r: dict[str, Any]) -> tuple[str, ...]:
    v = {k: x for k, x in _variant(r).items() if k not in ("baseline_condition", "condition")}
    return (
        str(r["judge"]),
        r["metric"],
        str(r.get("scope")),
        str(r.get("generator")),
        json.dumps(r.get("pair")),
        json.dumps(v, sort_keys=True, default=str),
    )


def mitigation(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bias metrics per condition: each group of like records measured under two or more conditions,
    or records that already are a change against a baseline condition (``variant.baseline_condition``)."""
    labels = _judge_labels(records)
    out: list[dict[str, Any]] = []
    with _style():
        import matplotlib.pyplot as plt

        for metric, keep, null, scale, xlabel in _BARS:
            rows = [r for r in _defined(records, metric) if keep(r)]
            if metric == "preference-leakage-score":
                rule = pls_tie_rule(records)
                rows = [r for r in rows if _variant(r).get("ties", "half") == rule]
            changes = [r for r in rows if "baseline_condition" in _variant(r)]
            alike: defaultdict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
            for r in rows:
                if "baseline_condition" not in _variant(r):
                    alike[_group_key(r)].append(r)
            groups = {k: v for k, v in alike.items() if len({str(r.get("condition")) for r in v}) >= 2}
            lines: list[tuple[str, dict[str, Any], float | None]] = [
                (_row_label(r, labels, f" — change vs {_variant(r)['baseline_condition']}"), r, 0.0) for r in changes
            ]
            for key, items in sorted(groups.items()):
                for r in sorted(items, key=lambda r: str(r.get("condition"))):
                    lines.append((_row_label(r, labels), r, null))
            if not lines:
                continue
            lines = lines[:_MAX_ROWS]
            conditions = sorted({str(r.get("condition")) for _, r, _ in lines})
            palette = [OKABE_ITO[k] for k in ("blue", "vermillion", "green", "orange", "purple", "sky", "black")]
            colour = {c: palette[i % len(palette)] for i, c in enumerate(conditions)}
            fig, ax = plt.subplots(figsize=(9.5, 1.2 + _pitch([label for label, _, _ in lines], 0.3) * len(lines)))
            for i, (_, r, _) in enumerate(lines):
                c = colour[str(r.get("condition"))]
                ax.plot([scale * r["value"]], [i], "o", color=c)
                if r.get("ci_low") is not None:
                    ax.plot([scale * r["ci_low"], scale * r["ci_high"]], [i, i], color=c, linewidth=2.2)
            if null is not None or changes:
                ax.axvline(null if null is not None else 0.0, color="#444444", linestyle="--", linewidth=1)
            ax.set_yticks(range(len(lines)), [label for label, _, _ in lines], fontsize=7.5)
            ax.set_ylim(len(lines) - 0.5, -0.5)
            ax.set_xlabel(xlabel)
            from matplotlib.lines import Line2D

            ax.legend(
                handles=[Line2D([], [], color=colour[c], marker="o", label=_wrap(c, 30)) for c in conditions],
                title="condition",
                fontsize=7.5,
                title_fontsize=8,
                loc="upper left",
                bbox_to_anchor=(1.01, 1.0),
                frameon=False,
            )
            ax.set_title(f"{metric} per condition")
            out.append(
                _plot(
                    f"conditions-{metric}",
                    f"{metric} per condition",
                    fig,
                    f"Forest plot of {metric} under each condition",
                    "The same metric, judge and scope under each condition, with intervals computed per "
                    "condition (not paired): a difference is reliable only when the conditions judged the same "
                    "items. Records that already hold a paired change against a baseline say so in the label.",
                )
            )
    return out


# ------------------------------------------------------------------------------------ leaderboard
def _not_a_board(generators: list[str]) -> str | None:
    """Why the generators ranked on one board make no leaderboard, or None when they do: it needs at
    least three models, and samples of one model (``m@output_1``, ``m@output_2``) are one model."""
    models = sorted({untagged(g) for g in generators})
    if len(models) == 1 and len(set(generators)) > 1:
        return f"its {len(set(generators))} generators are samples of one model, {models[0]}"
    if len(models) < 3:
        return (
            f"it ranks {len(models)} model{'s' if len(models) > 1 else ''} ({', '.join(models)}), and a ranking "
            "needs at least three: the win rates compare two"
        )
    return None


def leaderboard(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ranks with all judges vs with unrelated judges only, with bootstrap rank intervals: one figure
    per board (generators ranked against the same opponents; `analyses.derived.opponent_boards`), since
    ranks on different boards are not comparable. A board of fewer than three models is not drawn;
    a note ``{id: "leaderboard-left-out", note}`` says which and why."""
    rows = [
        r for r in records if r.get("metric") == "leaderboard-rank" and r.get("value") is not None and "judges" in _variant(r)
    ]  # not the ranks of `nepotism leakage audit` (section_plots)
    boards: defaultdict[str | None, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        boards[_variant(r).get("board")].append(r)
    drawn: list[tuple[str | None, list[dict[str, Any]]]] = []
    left: list[str] = []
    for board, board_rows in sorted(boards.items(), key=lambda kv: (-len(kv[1]), str(kv[0]))):
        why = _not_a_board([str(r["generator"]) for r in board_rows])
        if why:
            left.append(f"“{board or 'the leaderboard'}”: {why}")
        else:
            drawn.append((board, board_rows))
    unranked = {
        str(r["generator"])
        for r in records
        if r.get("metric") == "leaderboard-rank" and _variant(r).get("judges") == "unrelated" and r.get("value") is None
    }
    out = [
        _board_plot(board_rows, board if len(boards) > 1 else None, k if len(drawn) > 1 else None, unranked)
        for k, (board, board_rows) in enumerate(drawn)
    ]
    if left:
        out.append(
            {
                "id": "leaderboard-left-out",
                "note": "Not drawn as a leaderboard: " + "; ".join(left) + ". The table below lists their ranks.",
            }
        )
    return out


def _board_plot(rows: list[dict[str, Any]], board: str | None, number: int | None, unranked: set[str]) -> dict[str, Any]:
    """One board's ranks; the rank axis spans every rank the board has (1 to its number of generators)."""
    from matplotlib.ticker import MaxNLocator

    by: defaultdict[str, dict[str | None, dict[str, Any]]] = defaultdict(dict)
    for r in rows:
        by[str(r["generator"])][_variant(r).get("judges")] = r
    names = sorted(by, key=lambda g: (by[g].get("all", {}).get("value", 1e9), g))
    if len(names) > _MAX_ROWS:

        def change(g: str) -> float:
            first = by[g].get("all", {}).get("value", 0)
            return float(abs(first - by[g].get("unrelated", {}).get("value", first)))

        keep = set(names[: _MAX_ROWS // 2]) | set(sorted(names, key=lambda g: -change(g))[: _MAX_ROWS // 2])
        names = [g for g in names if g in keep]
    where = "" if board is None else f" ({board})"
    shown = [variant for variant in ("all", "unrelated") if any(variant in by[g] for g in names)]
    labels = [_wrap(g) for g in names]
    with _style():
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(9.5, 1.3 + _pitch(labels, 0.28) * len(names)))
        for variant, colour, marker, offset, label in (
            ("all", OKABE_ITO["blue"], "o", -0.17, "all judges"),
            ("unrelated", OKABE_ITO["vermillion"], "D", 0.17, "related judges left out"),
        ):
            if variant not in shown:
                continue
            for i, g in enumerate(names):
                point = by[g].get(variant)
                if point is None:
                    continue
                ax.plot([point["value"]], [i + offset], marker, color=colour, markersize=5)
                if point.get("ci_low") is not None:
                    ax.plot([point["ci_low"], point["ci_high"]], [i + offset] * 2, color=colour, linewidth=2)
            ax.plot([], [], marker, color=colour, label=label)
        ax.set_yticks(range(len(names)), labels, fontsize=7.5)
        ax.set_ylim(len(names) - 0.5, -0.5)
        ax.set_xlim(0.5, len(by) + 0.5)  # every rank the board has: equal ranks never look apart
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        measure = _variant(rows[0]).get("score") or "mean preference"
        ax.set_xlabel(f"rank among {len(by)} (1 = best; {measure})")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        both = shown == ["all", "unrelated"]
        ax.set_title(
            f"Leaderboard{where}: "
            + (
                "all judges vs related judges left out"
                if both
                else "with every judge"
                if shown == ["all"]
                else "related judges left out"
            )
        )
        level = int(round(100 * (rows[0].get("confidence") or 0.95)))
        if both:
            sides = (
                "Each generator's rank with every judge (blue) and with the judges related to either candidate "
                "left out (vermillion)"
            )
        elif shown == ["all"]:
            lost = sorted(set(by) & unranked)
            whose = "this board's comparisons" if len(lost) == len(by) else f"the comparisons of {_names(lost, 4)}"
            sides = "Each generator's rank with every judge. No rank without related judges is drawn: " + (
                f"every judge of {whose} is related to one of the two candidates (the table marks them “lineage only”)"
                if lost
                else "the results hold none for this board"
            )
        else:
            sides = "Each generator's rank with the judges related to either candidate left out"
        return _plot(
            "leaderboard" if number is None else f"leaderboard-{number + 1}",
            f"Leaderboard{where} before and after excluding related judges",
            fig,
            f"Dot plot of each generator's rank{where}" + (" with and without related judges" if both else ""),
            f"{sides}; lines are {level}% bootstrap rank intervals (prompts resampled); the axis spans every "
            f"rank from 1 to {len(by)}."
            + ("" if board is None else " Only generators that met the same opponents are ranked together.")
            + (f" Showing {len(names)} of {len(by)} generators: the best and the most moved." if len(by) > len(names) else ""),
        )
