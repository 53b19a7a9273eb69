"""Writing a store table to parquet, CSV or JSON Lines, atomically.

Judgments are written in the public recorded-judgment formats (the ones importers read):

* pairwise: ``instance_id, judge, model_a, model_b, verdict, status, reason, [prob_a, prob_b,
  prob_tie, label_mass,] condition, replicate`` — ``model_a``/``model_b`` are the candidates in
  the order shown, ``verdict`` is ``A``, ``B``, ``tie`` or empty (null) when nothing was read;
  ``status`` (parsed | unparsed | failed) and ``reason`` tell the two apart and say why; the
  probability columns appear only when some judgment has label probabilities or a label mass
  (a verdict unparsed for low label mass has a mass but no probabilities);
* pointwise: ``instance_id, judge, model, score, status, reason, [label_mass,] condition,
  replicate``;
* rubric: ``instance_id, judge, model, rubric_id, met, status, reason, [label_mass,] condition,
  replicate, setup`` (``met`` is a boolean, empty when unparsed; ``setup`` is ``all-rubrics`` for
  verdicts of an all-items template, ``single-rubric`` otherwise);
* recognition ("did you write this?"): ``instance_id, judge, model, claimed, status, reason,
  [label_mass,] condition, replicate`` (``claimed`` a boolean, empty when unparsed);
* recognition-pairwise ("which did you write?"): ``instance_id, judge, model_a, model_b, choice,
  status, reason, [label_mass,] condition, replicate`` (``choice`` ``A`` or ``B``);
* any other protocol (categorise): ``instance_id, judge, protocol, candidates, verdict, score,
  status, reason, [label_mass,] condition, replicate`` with ``candidates`` as a JSON list.

Every judged table ends with ``category``, the instance's category from the store (the instance's
own, else the one a loaded table gave, `Store.add_instance_categories`; empty when the
dataset gave none), so ``nepotism metrics --slice category`` works on what ``run`` wrote.

Other tables are written column for column; JSON columns stay JSON text. In CSV an empty cell is
null, booleans are ``true``/``false``. The output appears under its name only once complete.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from nepotism._files import atomic_write as _atomic_write
from nepotism.errors import InputError
from nepotism.records import PROTOCOLS

__all__ = ["FORMATS", "JUDGMENT_COLUMNS", "atomic_write", "export_table", "format_from_suffix"]

FORMATS = ("parquet", "csv", "jsonl")
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
_STR, _INT, _FLOAT, _BOOL = pa.string(), pa.int64(), pa.float64(), pa.bool_()
_PROBS = (("prob_a", "A"), ("prob_b", "B"), ("prob_tie", "tie"))

#: Public column lists per protocol (pairwise without its optional probability columns).
JUDGMENT_COLUMNS = {
    "pairwise": ("instance_id", "judge", "model_a", "model_b", "verdict", "status", "reason", "condition",
                 "replicate", "category"),
    "pointwise": ("instance_id", "judge", "model", "score", "status", "reason", "condition", "replicate", "category"),
    "rubric": ("instance_id", "judge", "model", "rubric_id", "met", "status", "reason", "condition", "replicate",
               "setup", "category"),
    "recognition": ("instance_id", "judge", "model", "claimed", "status", "reason", "condition", "replicate",
                    "category"),
    "recognition-pairwise": ("instance_id", "judge", "model_a", "model_b", "choice", "status", "reason",
                             "condition", "replicate", "category"),
}
_GENERIC = ("instance_id", "judge", "protocol", "candidates", "verdict", "score", "status", "reason", "condition",
            "replicate", "category")
_TYPES = {"reasoning_tokens": _INT, "replicate": _INT, "score": _FLOAT, "met": _BOOL, "claimed": _BOOL, "prob_a": _FLOAT, "prob_b": _FLOAT,
          "prob_tie": _FLOAT, "label_mass": _FLOAT}
_RAW_TABLES = ("runs", "instances", "responses", "calls", "references", "imports")


def format_from_suffix(path: Path) -> str:
    """``parquet``, ``csv`` or ``jsonl`` from a file name's extension."""
    try:
        return _SUFFIXES[path.suffix.lower()]
    except KeyError:
        raise InputError(
            f"cannot tell the format from the extension {path.suffix!r}; use one of "
            f"{sorted(_SUFFIXES)} or give the format",
            path=str(path),
        ) from None


def atomic_write(out: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file next to ``out``, then move it onto ``out``."""
    if not out.parent.is_dir():
        raise InputError("the output directory does not exist", path=str(out.parent))
    _atomic_write(out, write)


def _judgment_rows(conn: sqlite3.Connection, protocol: str) -> tuple[list[str], list[dict]]:
    # both recognition questions are stored under protocol "recognition": one candidate ("did you
    # write this?") or two ("which did you write?"), exported as two table kinds
    stored, width = {"recognition": ("recognition", 1),
                     "recognition-pairwise": ("recognition", 2)}.get(protocol, (protocol, None))
    query = conn.execute(
        "SELECT j.instance_id, j.judge, j.candidates, j.verdict, j.score, j.label_probs, j.rubric_id, j.condition, "
        "j.replicate, j.protocol, j.template_id, j.status, j.reason, j.label_mass, COALESCE(i.category, c.category), "
        "j.usage "
        "FROM judgments j LEFT JOIN instances i ON i.id = j.instance_id "
        "LEFT JOIN instance_categories c ON c.instance_id = j.instance_id "
        "WHERE j.protocol = ? AND (? IS NULL OR json_array_length(j.candidates) = ?) "
        "ORDER BY j.instance_id, j.judge, j.condition, j.replicate, j.id",
        (stored, width, width),
    )
    rows, has_probs, has_mass, has_tokens = [], False, False, False
    for inst, judge, cands, verdict, score, probs, rubric_id, cond, rep, proto, template, status, reason, mass, \
            category, usage in query:
        candidates = json.loads(cands)
        base = {"instance_id": inst, "judge": judge}
        state = {"status": status, "reason": reason, "label_mass": mass}
        has_mass = has_mass or mass is not None
        tail = {"condition": cond, "replicate": rep, "category": category}
        if protocol == "pairwise":
            probs = json.loads(probs) if probs else {}
            has_probs = has_probs or any(label in probs for _, label in _PROBS)
            extra = {col: probs.get(label) for col, label in _PROBS}
            pair = {"model_a": candidates[0], "model_b": candidates[1], "verdict": verdict}
            tokens = _output_tokens(usage)
            has_tokens = has_tokens or tokens is not None
            rows.append(base | pair | state | extra | tail | {"reasoning_tokens": tokens})
        elif protocol == "pointwise":
            rows.append(base | {"model": candidates[0], "score": score} | state | tail)
        elif protocol == "rubric":
            met = None if verdict is None else verdict.lower() in ("yes", "true", "met", "1")
            setup = "all-rubrics" if (template or "").startswith("rubric-all") else "single-rubric"
            rows.append(base | {"model": candidates[0], "rubric_id": rubric_id, "met": met} | state
                        | {"setup": setup} | tail)
        elif protocol == "recognition":
            claimed = None if verdict is None else verdict.lower() in ("yes", "true", "mine", "1")
            rows.append(base | {"model": candidates[0], "claimed": claimed} | state | tail)
        elif protocol == "recognition-pairwise":
            rows.append(base | {"model_a": candidates[0], "model_b": candidates[1], "choice": verdict} | state | tail)
        else:
            generic = {"protocol": proto, "candidates": cands, "verdict": verdict, "score": score}
            rows.append(base | generic | state | tail)
    columns = list(JUDGMENT_COLUMNS.get(protocol, _GENERIC))
    at = columns.index("reason") + 1
    if protocol == "pairwise" and (has_probs or has_mass):
        columns[at:at] = [col for col, _ in _PROBS] + ["label_mass"]
    elif has_mass:
        columns[at:at] = ["label_mass"]
    if protocol == "pairwise" and has_tokens:
        columns.append("reasoning_tokens")
    return columns, rows


def _output_tokens(usage: str | None) -> int | None:
    """The tokens the judge wrote (its reasoning and verdict) from a call's recorded usage; None
    when the backend did not count them (a label-probability call writes none: 0 is left out too)."""
    if not usage:
        return None
    counted = json.loads(usage)
    value = counted.get("completion_tokens", counted.get("output_tokens")) if isinstance(counted, dict) else None
    return int(value) if isinstance(value, int | float) and value > 0 else None


def _pick_protocol(conn: sqlite3.Connection, protocol: str | None) -> str:
    present = [p for (p,) in conn.execute("SELECT DISTINCT protocol FROM judgments ORDER BY protocol")]
    if protocol is not None:
        if protocol not in PROTOCOLS:
            raise InputError(f"unknown protocol {protocol!r}; use one of {PROTOCOLS}")
        return protocol
    if len(present) > 1:
        raise InputError(
            f"the store holds judgments of several protocols {present}; choose one to export"
        )
    return present[0] if present else "pairwise"


def _raw_rows(conn: sqlite3.Connection, table: str) -> tuple[list[str], list[dict], dict]:
    info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    columns = [row[1] for row in info]
    types = {row[1]: {"INTEGER": _INT, "REAL": _FLOAT}.get(row[2].upper(), _STR) for row in info}
    order = "id" if "id" in columns else "key"
    cursor = conn.execute(f'SELECT {", ".join(columns)} FROM "{table}" ORDER BY {order}')
    return columns, [dict(zip(columns, r, strict=True)) for r in cursor], types


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _write(path: Path, fmt: str, columns: Sequence[str], rows: list[dict], types: dict) -> None:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        arrays = {c: pa.array([r[c] for r in rows], type=types.get(c, _STR)) for c in columns}
        pq.write_table(pa.table(arrays), path)
    elif fmt == "csv":
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(columns)
            writer.writerows([_csv_cell(r[c]) for c in columns] for r in rows)
    else:
        with path.open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps({c: row[c] for c in columns}, ensure_ascii=False) + "\n")


def export_table(
    conn: sqlite3.Connection, table: str, out: Path, *, fmt: str, protocol: str | None = None
) -> int:
    """Write ``table`` (a store table, or ``pairwise``/``pointwise``/``rubric`` for judgments of
    that protocol) to ``out`` in format ``fmt``; return the number of rows written."""
    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}; use one of {FORMATS}")
    if table in JUDGMENT_COLUMNS:
        table, protocol = "judgments", table
    if table == "judgments":
        columns, rows = _judgment_rows(conn, _pick_protocol(conn, protocol))
        types = _TYPES
    elif table in _RAW_TABLES:
        columns, rows, types = _raw_rows(conn, table)
    else:
        choices = ("judgments", *JUDGMENT_COLUMNS, *_RAW_TABLES)
        raise InputError(f"unknown table {table!r}; use one of {choices}")
    atomic_write(out, lambda path: _write(path, fmt, columns, rows, types))
    return len(rows)
