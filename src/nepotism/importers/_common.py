"""Shared helpers of the importers: the `Imported` result, position-aware readers and field checks.

A position is where a row came from: a line number (JSONL, CSV; Parquet rows count as lines) or,
for a file that is one JSON array, a `RecordNo` (the 1-based position of the object in the
array). `fail` and `require` turn a position into an `InputError` that says "line N" or
"record N" accordingly; `provenance` gives the ``source_file`` / ``source_line`` or
``source_record`` columns every importer row carries.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from nepotism._files import parse_json_line
from nepotism.input_limits import open_text  # a text file, UTF-8, gunzipped within the limit (for the importers)
from nepotism.errors import InputError

__all__ = [
    "OPTIONS",
    "Format",
    "Imported",
    "RecordNo",
    "conversation_texts",
    "fail",
    "is_missing",
    "message_text",
    "number_or_none",
    "number_repeats",
    "open_text",
    "provenance",
    "reason_from_reply",
    "read_json_list",
    "read_jsonl",
    "read_records",
    "require",
    "status_counts",
    "votes_import",
]


class RecordNo(int):
    """A 1-based record number in a JSON array (an `int` that reports itself as "record N")."""


def _where(path: Path | str, position: int | None) -> dict[str, Any]:
    if isinstance(position, RecordNo):
        return {"path": str(path), "record": int(position)}
    return {"path": str(path), "line": None if position is None else int(position)}


def fail(message: str, path: Path | str, position: int | None = None, field: str | None = None) -> InputError:
    """An `InputError` at ``position`` of ``path`` (a line, or a `RecordNo`); raise it."""
    return InputError(message, field=field, **_where(path, position))


def provenance(path: Path | str, position: int) -> dict[str, Any]:
    """The provenance columns of a row read at ``position`` of ``path``."""
    key = "source_record" if isinstance(position, RecordNo) else "source_line"
    return {"source_file": str(path), key: int(position)}


@dataclass
class Imported:
    """What an importer yields: tables by kind, the main kind, texts and counts for the report."""

    tables: dict[str, pd.DataFrame]
    main: str
    texts: pd.DataFrame | None = None
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    source: str = ""
    #: generator name -> family, read from a column of the source (``--format table``'s ``family``
    #: mappings), for the models file ``nepotism import --models-out`` writes
    families: dict[str, str] = field(default_factory=dict)
    #: the column that numbers the main table's rows repeating a key (several votes of one pair:
    #: ``annotator``; several gradings of one answer: ``replicate``), numbered in file order across
    #: every source by `nepotism.importers.merge`; None: a repeated row is the same judgment again
    numbered: str | None = None


#: Every option a format may accept (the ``nepotism import`` flags of the same names).
OPTIONS = ("judge", "instructions", "verdicts", "baseline", "benchmark", "generator", "mapping", "map", "values", "kind")


@dataclass(frozen=True)
class Format:
    """One importable source format.

    ``read(path, **options) -> Imported`` reads one file; ``tables`` lists the table kinds it can
    produce (the main kind first); ``options`` the keyword options it accepts (a subset of
    `OPTIONS`); ``upstream`` names the harness and the code that defines the schema.
    """

    name: str
    summary: str
    read: Callable[..., Imported]
    tables: tuple[str, ...]
    upstream: str
    options: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = set(self.options) - set(OPTIONS)
        if unknown:
            raise ValueError(f"format {self.name!r} declares unknown options {sorted(unknown)}")


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Return ``(line number, object)`` for each non-blank line; `InputError` on bad JSON."""
    from nepotism.tables import read_rows

    return read_rows(path)


def _load_json(path: Path) -> Any:
    """A whole JSON file, checked as every JSON Lines line is (`nepotism._files.parse_json_line`:
    a key given twice or a lone-surrogate escape is an `InputError`, not the last value or a
    traceback later)."""
    try:
        with open_text(path) as handle:
            text = handle.read()
    except (UnicodeDecodeError, OSError, EOFError) as err:
        raise InputError(f"cannot read the file ({err})", path=str(path)) from None
    return parse_json_line(text, str(path), None)


def _array_records(value: Any, path: Path) -> list[tuple[int, dict[str, Any]]]:
    if not isinstance(value, list):
        raise InputError("expected a JSON list of objects", path=str(path))
    for number, item in enumerate(value, start=1):
        if not isinstance(item, dict):
            raise InputError("each record must be a JSON object", path=str(path), record=number)
    return [(RecordNo(number), item) for number, item in enumerate(value, start=1)]


def read_json_list(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Read a JSON array of objects; return ``(RecordNo, object)`` pairs (1-based numbers)."""
    return _array_records(_load_json(path), path)


def _columns_to_records(value: dict[str, Any], path: Path) -> list[tuple[int, dict[str, Any]]]:
    """A dict of equal-length lists (one list per column, scalars shared by all rows) as records."""
    lists = {k: v for k, v in value.items() if isinstance(v, list)}
    if not lists:
        raise InputError("expected a JSON list of objects or an object of column lists", path=str(path))
    lengths = {len(v) for v in lists.values()}
    if len(lengths) != 1:
        raise InputError(f"the column lists differ in length ({sorted(lengths)})", path=str(path))
    shared = {k: v for k, v in value.items() if not isinstance(v, list)}
    size = lengths.pop()
    return [(RecordNo(i + 1), {**shared, **{k: v[i] for k, v in lists.items()}}) for i in range(size)]


def read_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(position, object)`` for every record of a JSONL, CSV, Parquet or JSON file.

    A ``.json`` file is either one JSON array of objects (positions are `RecordNo`) or one object
    of column lists, as ``datasets.Dataset.to_dict()`` writes it (scalar members are shared by
    every row). Other suffixes go through `nepotism.tables.read_rows` (line numbers).
    """
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    if not suffixes or suffixes[-1] != ".json":
        return read_jsonl(path)
    value = _load_json(path)
    if isinstance(value, dict):
        return _columns_to_records(value, path)
    return _array_records(value, path)


def is_missing(value: Any) -> bool:
    """True for None, NaN and blank strings."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def require(record: dict[str, Any], key: str, path: Path, line: int, *, allow_missing: bool = False) -> Any:
    """Return ``record[key]``; `InputError` naming file, line (or record) and field when absent or empty."""
    if key not in record:
        raise fail("missing field", path, line, key)
    value = record[key]
    if not allow_missing and is_missing(value):
        raise fail("empty value where one is required", path, line, key)
    return value


def number_or_none(value: Any, path: Path, line: int, field: str) -> float | None:
    """A finite JSON number as float, None for null; `InputError` for text, booleans, NaN or infinity."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(f"{json.dumps(value)[:40]} is not a number", path, line, field)
    if not math.isfinite(value):
        raise fail(f"{value} is not a finite number", path, line, field)
    return float(value)


def number_repeats(kind: str, frame: pd.DataFrame, column: str) -> int:
    """Number the rows of a ``kind`` table that repeat a key (its other key columns) in ``column``,
    in file order: annotators ``#1``, ``#2``, ... or replicates 0, 1, ...; return how many rows came
    after the first of their key (`Imported.numbered`)."""
    from nepotism.tables import key_columns

    present = [k for k in key_columns(kind) if k in frame and k != column]
    if not present or frame.empty:
        return 0
    order = frame.groupby(present, dropna=False, sort=False).cumcount()
    frame[column] = [f"#{i + 1}" for i in order] if column == "annotator" else order.astype("int64")
    return int((order > 0).sum())


def status_counts(frame: pd.DataFrame) -> dict[str, int]:
    """How many rows of an importer's table are ``unparsed`` and ``failed`` (its ``status`` column)."""
    return {status: int((frame["status"] == status).sum()) for status in ("unparsed", "failed")}


def message_text(conversation: Any, role: str, turn: int = 1) -> str | None:
    """The ``turn``-th message of ``role`` in a chat (a list of ``{role, content}``), None when absent."""
    if conversation is None or isinstance(conversation, str):
        return None
    messages = [m for m in list(conversation) if isinstance(m, dict) and m.get("role") == role]
    return str(messages[turn - 1].get("content")) if len(messages) >= turn else None


def conversation_texts(record: dict[str, Any], instance: str, models: tuple[str, str], turn: int = 1) -> list[dict[str, Any]]:
    """Texts rows (prompt = the turn's user message, text = the answer) of ``conversation_a`` / ``_b``."""
    rows = []
    for side, model in zip("ab", models):
        conversation = record.get(f"conversation_{side}")
        answer = message_text(conversation, "assistant", turn)
        if answer is not None:
            rows.append(
                {
                    "instance_id": instance,
                    "prompt": message_text(conversation, "user", turn),
                    "tests": None,
                    "model": model,
                    "text": answer,
                }
            )
    return rows


def votes_import(
    pairs: list[dict[str, Any]],
    refs: list[dict[str, Any]],
    texts: list[dict[str, Any]],
    *,
    counts: dict[str, int],
    notes: list[str],
    path: Path,
) -> Imported:
    """A votes file's import: model-judged rows → pairwise (the main table when present), human votes →
    preference-ref; texts kept once per (instance, model)."""
    if not pairs and not refs:
        raise InputError("no votes or judgments in the file", path=str(path))
    tables: dict[str, pd.DataFrame] = {}
    if pairs:
        tables["pairwise"] = pd.DataFrame(pairs)
    if refs:
        tables["preference-ref"] = pd.DataFrame(refs)
    frame = pd.DataFrame(texts).drop_duplicates(["instance_id", "model"]).reset_index(drop=True) if texts else None
    return Imported(
        tables=tables, main="pairwise" if pairs else "preference-ref", texts=frame, counts=counts, notes=notes, source=str(path)
    )


def reason_from_reply(reply: Any, pattern: re.Pattern[str]) -> str:
    """Why the source found no verdict in ``reply``, by the source's own marker ``pattern``:
    ``conflicting`` when the reply holds several different markers, else ``no_verdict`` (the
    reasons of docs/verdicts.md)."""
    found = {m for m in pattern.findall(reply if isinstance(reply, str) else "") if m}
    return "conflicting" if len(found) > 1 else "no_verdict"
