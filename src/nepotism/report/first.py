"""The first report: the same audit records as JSON, CSV and one self-contained HTML page.

The HTML page needs no network when viewed: styles are inline and the figure is an embedded PNG.
Every model-provided string is escaped by jinja2's autoescape. Files are written only after all
results exist, each atomically (temporary file, then rename). The full report with every plot and
the judge card is `nepotism report` (a later module); this one keeps to what the audit computes.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape

from nepotism._files import write_files

__all__ = ["write_first_report"]


def _figure(records: list[dict[str, Any]]) -> str | None:
    rows = [r for r in records if r["metric"] == "self-preference-ratio" and r["value"] is not None]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"self": "#0072B2", "family": "#E69F00", "student": "#009E73", "family-student": "#CC79A7"}
    labels = [f"{r['judge']}\n{r['condition']}\n{r['scope']}" for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.2), dpi=100)
    for i, r in enumerate(rows):
        value, low, high = 100 * r["value"], 100 * (r["ci_low"] or r["value"]), 100 * (r["ci_high"] or r["value"])
        ax.barh(i, value, color=colours.get(r["scope"], "#999999"))
        ax.errorbar(value, i, xerr=[[value - low], [high - value]], color="black", capsize=3)
    ax.axvline(50, color="#555555", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.set_xlim(0, 100)
    ax.set_xlabel("related candidate preferred (% of comparisons vs unrelated models)")
    ax.invert_yaxis()
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def _win_rate_matrix(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Generators × (judge, condition) win rates, with each cell's relation to the judge."""
    rows = [r for r in records if r["metric"] == "win-rate" and r["value"] is not None]
    if not rows:
        return None
    columns = sorted({(r["judge"], r["condition"]) for r in rows})
    cells: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
    for r in rows:
        cells.setdefault(r["generator"], {})[(r["judge"], r["condition"])] = r
    ordered = sorted(cells, key=lambda g: -max(c["value"] for c in cells[g].values()))
    table = []
    for generator in ordered:
        line: list[dict[str, Any] | None] = []
        for column in columns:
            cell = cells[generator].get(column)
            if cell is None:
                line.append(None)
            else:
                opponents = cell["variant"].get("opponents")
                line.append(
                    {
                        "value": cell["value"],
                        "relation": cell.get("relation", ""),
                        "n": cell["n"],
                        "opponents": ", ".join(opponents) if isinstance(opponents, list) else opponents,
                    }
                )
        table.append((generator, line))
    return {"columns": columns, "rows": table}


def _variant_text(variant: dict[str, Any]) -> str:
    return "; ".join(f"{k}={v}" for k, v in sorted(variant.items()))


def write_first_report(
    records: list[dict[str, Any]],
    summary: dict[str, Any],
    lines: list[str],
    out_dir: str | Path,
    *,
    title: str = "nepotism audit",
    attribution: str | None = None,
) -> dict[str, Path]:
    """Write ``results.json``, ``results.csv`` and ``report.html`` into ``out_dir``; return their paths."""
    environment = Environment(loader=PackageLoader("nepotism.report", "templates"), autoescape=select_autoescape(["html", "j2"]))
    shown = [{**r, "variant_text": _variant_text(r.get("variant") or {})} for r in records]
    html = environment.get_template("first_report.html.j2").render(
        title=title,
        summary=summary,
        lines=lines,
        records=shown,
        figure=_figure(records),
        matrix=_win_rate_matrix(records),
        attribution=attribution,
    )
    document = {"summary": summary, "findings": lines, "results": records}
    flat = pd.DataFrame.from_records(records)
    for column in ("variant", "excluded", "pair", "generators"):
        if column in flat:
            flat[column] = flat[column].map(lambda v: json.dumps(v, sort_keys=True) if v is not None else "")
    payloads = {
        "results.json": json.dumps(document, indent=2, sort_keys=True, default=str).encode(),
        "results.csv": flat.to_csv(index=False).encode(),
        "report.html": html.encode(),
    }
    return write_files(out_dir, payloads)
