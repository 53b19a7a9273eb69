"""Shared helpers of the importers: the `Imported` result and line-aware JSON readers."""

from __future__ import annotations

import gzip
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from nepotism.errors import InputError

__all__ = ["Imported", "is_missing", "open_text", "read_json_list", "read_jsonl", "require"]


@dataclass
class Imported:
    """What an importer yields: tables by kind, the main kind, texts and counts for the report."""

    tables: dict[str, pd.DataFrame]
    main: str
    texts: pd.DataFrame | None = None
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    source: str = ""


def open_text(path: Path) -> io.TextIOBase:
    """Open a text file, transparently gunzipping ``.gz``."""
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Return ``(line number, object)`` for each non-blank line; `InputError` on bad JSON."""
    from nepotism.tables import read_rows

    return read_rows(path)


def read_json_list(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Read a JSON array of objects; return ``(record number, object)`` (1-based numbers)."""
    try:
        with open_text(path) as handle:
            value = json.load(handle)
    except json.JSONDecodeError as err:
        raise InputError(f"not valid JSON ({err.msg})", path=str(path), line=err.lineno) from None
    except (UnicodeDecodeError, OSError) as err:
        raise InputError(f"cannot read the file ({err})", path=str(path)) from None
    if not isinstance(value, list):
        raise InputError("expected a JSON list of objects", path=str(path))
    for number, item in enumerate(value, start=1):
        if not isinstance(item, dict):
            raise InputError("each record must be a JSON object", path=str(path), line=number)
    return list(enumerate(value, start=1))


def is_missing(value: Any) -> bool:
    """True for None, NaN and blank strings."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def require(record: dict[str, Any], key: str, path: Path, line: int, *, allow_missing: bool = False) -> Any:
    """Return ``record[key]``; `InputError` naming file, line and field when absent or empty."""
    if key not in record:
        raise InputError("missing field", path=str(path), line=line, field=key)
    value = record[key]
    if not allow_missing and is_missing(value):
        raise InputError("empty value where one is required", path=str(path), line=line, field=key)
    return value
