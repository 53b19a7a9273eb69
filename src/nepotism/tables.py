"""The recorded-judgment table formats: the public input format of nepotism.

One file holds one *kind* of table. Kinds and their columns (required, then optional):

================  =========================================  ==========================================
kind              required columns                           optional columns
================  =========================================  ==========================================
pairwise          instance_id, judge, model_a, model_b,      prob_a, prob_b, prob_tie, condition,
                  verdict (A | B | tie | empty = unparsed)   replicate, category, perplexity_a,
                                                             perplexity_b (the judge's perplexity of
                                                             each response given the prompt),
                                                             presentation (a-first: model_a was shown
                                                             first, the default | unknown: the order
                                                             was randomised or not recorded),
                                                             reasoning_tokens (GPT-2 tokens the judge wrote
                                                             in its reply, paper 004 Fig. 5)
pointwise         instance_id, judge, model, score           condition, replicate, category
                  (number or empty = unparsed)
rubric            instance_id, judge, model, rubric_id,      condition, replicate, category, setup
                  met (true | false | empty = unparsed)      (single-rubric | all-rubrics: one item
                                                             per call or all items in one call)
recognition       instance_id, judge, model, claimed         condition, replicate, category
                  ("did you write this?": true | false |
                  empty = unparsed)
recognition-      instance_id, judge, model_a, model_b,      condition, replicate, category
pairwise          choice ("which did you write?": A | B |
                  empty = unparsed)
preference-ref    instance_id, model_a, model_b, winner      category, annotator (who gave the label:
                  (model_a, model_b or tie)                  several annotators of one pair are
                                                             rows of their own)
correctness-ref   instance_id, model, and correct and/or     category
                  score
rubric-ref        instance_id, model, rubric_id, met
rubric-labels     instance_id, model, rubric_id, met,        category
                  annotator (people's labels of rubric
                  items, one row per annotator: paper 002
                  App. C's physician labels)
rubric-items      instance_id, rubric_id, text, points       category
perplexity        instance_id, scorer, model, perplexity     log_perplexity, tokens, status (ok |
                  (the scorer's perplexity of the model's    failed), reason (why a failed row has no
                  response given the prompt; empty =         perplexity), category
                  failed; written by ``nepotism run``'s
                  ``[perplexity]`` step)
================  =========================================  ==========================================

Every judged kind also takes ``status`` (parsed | unparsed | failed; by default parsed where the
verdict column holds a value, unparsed where it is empty; a failed row is a call that got no answer),
``reason`` (why a row has no verdict: ``conflicting``, ``low_label_mass``, ``timeout``, ...; see
docs/verdicts.md) and ``label_mass`` (0-1: how much of the judge's next-token probability its
labels held); after validation these three columns are always present.

Files are CSV, TSV, JSONL or Parquet (by extension; ``.gz`` allowed for all but Parquet; a file with no
rows is an error), UTF-8 with or
without a byte-order mark. Extra columns are kept but ignored. Numbers must be finite (``nan`` and
infinities are errors; an empty cell, or ``null``, is no value); a JSON key given twice in one
object, or a column name twice in a header or schema, is an error naming it; a table without a
kind's columns is an error naming the columns the nearest kinds lack. A file is read within the
limits of `nepotism.input_limits`: a ``.gz`` inflating past 1 GiB, a line longer than 64 Mi
characters, a value longer than 16 Mi (a CSV cell: usually a broken quote, named by the line where
its record starts) or JSON nested deeper than 100 levels is an error naming the limit and its
option. Model names may carry an ``@tag`` suffix (``gpt-4o@sample2``) to tell apart two
responses of one model; relations use the part before ``@``.

The validated frame carries a ``_line`` column (the source line of each row) so that later checks
can point at the right line too.

Validation stops at the first problem with an `InputError` naming the file, the line (the physical
line for CSV and JSONL, counting the CSV header as line 1; the 1-based row for Parquet) and the field.
This module reads and checks tables; it computes nothing.
"""

from __future__ import annotations

import csv
import math
import os
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NoReturn, cast
from pathlib import Path

import numpy as np
import pandas as pd

from nepotism import input_limits
from nepotism._files import atomic_write, parse_json_line, unreadable
from nepotism._files import base_suffix as _base_suffix
from nepotism._files import jsonl_rows as _jsonl_rows
from nepotism.errors import InputError, ValidationError

__all__ = [
    "JUDGED_KINDS",
    "KINDS",
    "PRESENTATIONS",
    "RUBRIC_SETUPS",
    "Table",
    "VERDICT_COLUMN",
    "columns_of",
    "detect_kind",
    "first_rows",
    "group_codes",
    "key_columns",
    "kind_unknown",
    "name_codes",
    "parse_json_line",
    "read_raw",
    "read_rows",
    "read_table",
    "row_keys",
    "text_values",
    "validate",
    "write_table",
]

#: Optional columns of every judged kind: why a row has no verdict (see `_Validator.verdict_status`).
_STATUS_COLUMNS = ("status", "reason", "label_mass")
_COLUMNS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "pairwise": (
        ("instance_id", "judge", "model_a", "model_b", "verdict"),
        (
            "prob_a",
            "prob_b",
            "prob_tie",
            "condition",
            "replicate",
            "category",
            "perplexity_a",
            "perplexity_b",
            "presentation",
            "reasoning_tokens",
            *_STATUS_COLUMNS,
        ),
    ),
    "pointwise": (
        ("instance_id", "judge", "model", "score"),
        ("condition", "replicate", "category", *_STATUS_COLUMNS),
    ),
    "rubric": (
        ("instance_id", "judge", "model", "rubric_id", "met"),
        ("condition", "replicate", "category", "setup", *_STATUS_COLUMNS),
    ),
    "recognition": (
        ("instance_id", "judge", "model", "claimed"),
        ("condition", "replicate", "category", *_STATUS_COLUMNS),
    ),
    "recognition-pairwise": (
        ("instance_id", "judge", "model_a", "model_b", "choice"),
        ("condition", "replicate", "category", *_STATUS_COLUMNS),
    ),
    "preference-ref": (("instance_id", "model_a", "model_b", "winner"), ("category", "annotator")),
    "correctness-ref": (("instance_id", "model"), ("correct", "score", "category")),
    "rubric-ref": (("instance_id", "model", "rubric_id", "met"), ()),
    "rubric-labels": (("instance_id", "model", "rubric_id", "met", "annotator"), ("category",)),
    "rubric-items": (("instance_id", "rubric_id", "text", "points"), ("category",)),
    "perplexity": (
        ("instance_id", "scorer", "model", "perplexity"),
        ("log_perplexity", "tokens", "status", "reason", "category"),
    ),
}
KINDS = tuple(_COLUMNS)
_KNOWN_COLUMNS = frozenset(c for required, optional in _COLUMNS.values() for c in (*required, *optional))
#: the table kinds whose rows are judgments (the others are references)
JUDGED_KINDS = ("pairwise", "pointwise", "rubric", "recognition", "recognition-pairwise")
#: The column holding each judged kind's verdict (empty = no verdict).
VERDICT_COLUMN = {
    "pairwise": "verdict",
    "pointwise": "score",
    "rubric": "met",
    "recognition": "claimed",
    "recognition-pairwise": "choice",
}
_KEYS = {
    "pairwise": ("instance_id", "judge", "model_a", "model_b", "condition", "replicate"),
    "pointwise": ("instance_id", "judge", "model", "condition", "replicate"),
    "rubric": ("instance_id", "judge", "model", "rubric_id", "condition", "replicate", "setup"),
    "recognition": ("instance_id", "judge", "model", "condition", "replicate"),
    "recognition-pairwise": ("instance_id", "judge", "model_a", "model_b", "condition", "replicate"),
    "preference-ref": ("instance_id", "model_a", "model_b", "annotator"),
    "correctness-ref": ("instance_id", "model"),
    "rubric-ref": ("instance_id", "model", "rubric_id"),
    "rubric-labels": ("instance_id", "model", "rubric_id", "annotator"),
    "rubric-items": ("instance_id", "rubric_id"),
    "perplexity": ("instance_id", "scorer", "model"),
}
#: How rubric verdicts were asked for (paper 002): one rubric item per call, or all in one call.
RUBRIC_SETUPS = ("single-rubric", "all-rubrics")
#: Whether a pairwise row knows which answer the judge saw first: ``a-first`` (model_a was shown
#: first) or ``unknown`` (the harness randomised the order and kept only the preference, as
#: AlpacaEval does). Position metrics use ``a-first`` rows only.
PRESENTATIONS = ("a-first", "unknown")
_VERDICTS = {"a": "A", "b": "B", "tie": "tie"}
_STATUSES = ("parsed", "unparsed", "failed")
_TRUE = {"true", "1", "yes", "t", "y"}
_FALSE = {"false", "0", "no", "f", "n"}
#: `_truth` of a value that is neither true, false nor empty
_NOT_TRUE_FALSE: Any = object()


def _truth(value: object) -> Any:
    """One cell of a true/false column: True, False, None (empty: None, NaN, blank text) or
    `_NOT_TRUE_FALSE`."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    word = str(value).strip().lower()
    return True if word in _TRUE else False if word in _FALSE else _NOT_TRUE_FALSE


@dataclass(frozen=True)
class Table:
    """A validated table: its kind, its rows (normalised), where it came from."""

    kind: str
    frame: pd.DataFrame
    path: str | None  # None for a validated DataFrame (``_line`` then holds each row's index label)

    def where(self, position: int, field: str | None = None) -> dict[str, Any]:
        """Keywords of a `ValidationError` pointing at a row: file and line, or the frame's row."""
        origin = self.frame["_line"].iloc[position]
        origin = origin.item() if hasattr(origin, "item") else origin  # numpy scalar → int or str
        if self.path is None:
            return {"row": origin, "field": field}
        return {"path": self.path, "line": int(origin), "field": field}

    def __len__(self) -> int:
        return len(self.frame)


def columns_of(kind: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The required and the optional columns of a ``kind`` table (the table in this module's docstring)."""
    if kind not in _COLUMNS:
        raise InputError(f"unknown kind '{kind}'; kinds are {', '.join(KINDS)}", field="--kind")
    return _COLUMNS[kind]


def key_columns(kind: str) -> tuple[str, ...]:
    """The columns that identify one row of a ``kind`` table (two rows may not share them all)."""
    if kind not in _KEYS:
        raise InputError(f"unknown kind '{kind}'; kinds are {', '.join(KINDS)}", field="--kind")
    return _KEYS[kind]


def detect_kind(columns: Iterable[str]) -> str | None:
    """Return the kind implied by a set of column names, or None when no kind fits.

    Raises `InputError` when the columns fit two judged kinds at once (mixed kinds).
    """
    cols = set(columns)
    if "judge" in cols:
        fits = [k for k in JUDGED_KINDS if set(_COLUMNS[k][0]) <= cols]
        if len(fits) > 1:
            raise InputError(
                f"columns fit several kinds ({', '.join(fits)}); one file holds one kind — split it or pass --kind",
                field="columns",
            )
        return fits[0] if fits else None
    if {"model_a", "model_b", "winner"} <= cols:
        return "preference-ref"
    if {"model", "rubric_id", "met", "annotator"} <= cols:
        return "rubric-labels"
    if {"model", "rubric_id", "met"} <= cols:
        return "rubric-ref"
    if {"rubric_id", "text", "points"} <= cols:
        return "rubric-items"
    if "model" in cols and ({"correct", "score"} & cols):
        return "correctness-ref"
    if {"scorer", "model", "perplexity"} <= cols:
        return "perplexity"
    return None


def kind_unknown(columns: Iterable[str]) -> tuple[str, str | None]:
    """Why `detect_kind` found no kind for ``columns``, and the missing column when one kind is
    nearest: the message names the columns each nearest kind (fewest required columns missing,
    then most of its columns present; at least two required ones) still needs."""
    names = [str(c) for c in columns]
    present = set(names)
    near = []
    for kind, (required, optional) in _COLUMNS.items():
        need = [[c] for c in required if c not in present]
        if kind == "correctness-ref" and not {"correct", "score"} & present:
            need.append(["correct", "score"])  # one of them
        if need and len(set(required) & present) >= 2:
            near.append((len(need), -len({*required, *optional} & present), kind, need))
    message = f"cannot tell the table kind from its columns ({', '.join(names) or 'none'})"
    if not near:
        return message, None
    best = [entry for entry in sorted(near) if entry[:2] == min(near)[:2]]
    needs = "; ".join(
        f"a {kind} table needs " + ", ".join(" or ".join(f"'{c}'" for c in one) for one in need) for _, _, kind, need in best
    )
    column = None  # named as the field when one kind is nearest and it lacks one column
    if len(best) == 1 and len(best[0][3]) == 1 and len(best[0][3][0]) == 1:
        column = best[0][3][0][0]
    return f"{message}: a column is missing? {needs}", column


# --------------------------------------------------------------------------------------- reading


def _refuse_nan(pairs: list[tuple[int, dict[str, Any]]], path: Path) -> None:
    """A ``NaN`` in a JSON Lines table is an error (naming line and field), not a missing value:
    pandas would make it one, and an empty value means *unparsed* (write ``null`` for that)."""
    for line, row in pairs:
        for key, value in row.items():
            if type(value) is float and value != value:
                raise InputError(
                    "'NaN' is not a finite number (NaN and infinities are not values; write null for no value)",
                    path=str(path),
                    line=line,
                    field=key,
                )


def _refuse_parquet_nan(table: Any, path: Path) -> None:
    """A NaN in a float column of a recorded table's Parquet file is an error (naming the row and
    field), as in JSON Lines: pandas would read it as a null, i.e. an empty cell. Columns no table
    kind reads are left alone (extra columns are ignored)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for name, column in zip(table.column_names, table.columns):
        if name in _KNOWN_COLUMNS and pa.types.is_floating(column.type) and pc.any(pc.is_nan(column)).as_py():
            row = int(pc.index(pc.fill_null(pc.is_nan(column), False), True).as_py())
            raise InputError(
                "'NaN' is not a finite number (NaN and infinities are not values; write null for no value)",
                path=str(path),
                line=row + 1,
                field=name,
            )


def _refuse_repeated_columns(names: list[str], path: Path, line: int | None) -> None:
    """A column name given twice (in a CSV header, ``line`` 1, or a Parquet schema) is an error
    naming it: which of the two a reader would take is anyone's guess."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputError(f"the column '{name}' appears twice", path=str(path), line=line, field=name)
        seen.add(name)


def _refuse_long_parquet_cells(table: Any, path: Path) -> None:
    """A text or bytes value of a Parquet file longer than the cell limit (`nepotism.input_limits`)
    is an error naming its row and column, as a CSV cell or a JSON string is. A dictionary column
    is measured once per distinct value."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cell = input_limits.current().cell
    for name, column in zip(table.column_names, table.columns):
        start = 0
        for chunk in column.chunks:
            dictionary = pa.types.is_dictionary(chunk.type)
            kind = chunk.type.value_type if dictionary else chunk.type
            if pa.types.is_string(kind) or pa.types.is_large_string(kind):
                measure = pc.utf8_length
            elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
                measure = pc.binary_length
            else:
                break  # not text: every chunk of the column has the same type
            long = pc.fill_null(pc.greater(measure(chunk.dictionary if dictionary else chunk), cell), False)
            if dictionary and pc.any(long).as_py():
                long = pc.fill_null(pc.array_take(long, chunk.indices), False)
            if pc.any(long).as_py():
                raise InputError(
                    f"a value longer than {cell:,} characters ({input_limits.raise_with('cell')})",
                    path=str(path),
                    line=start + int(pc.index(long, True).as_py()) + 1,
                    field=name,
                )
            start += len(chunk)


class _Lines:
    """Row → source line: ``lines[i]`` (CSV, JSONL) or ``i + 1`` (Parquet); `all` gives every row's at once."""

    def __init__(self, lines: list[int] | None = None):
        self.lines = lines

    def __call__(self, i: int) -> int:
        return self.lines[i] if self.lines is not None else i + 1

    def all(self, n: int) -> np.ndarray:
        return np.asarray(self.lines[:n], dtype=np.int64) if self.lines is not None else np.arange(1, n + 1)


def _shared_objects(column: pd.Series) -> pd.Series:
    """A column as Python objects (None where missing); a text column holds one object per
    distinct value, not one per row (a 10M-row table of a few hundred names stays small)."""
    if isinstance(column.dtype, pd.CategoricalDtype):  # e.g. a Parquet dictionary column
        table = np.array([*column.cat.categories.astype(object), None], dtype=object)
        return pd.Series(table[column.cat.codes.to_numpy()], index=column.index, dtype=object)
    if pd.api.types.is_string_dtype(column.dtype) and not pd.api.types.is_object_dtype(column.dtype):
        codes, uniques = pd.factorize(column, use_na_sentinel=True)
        table = np.append(np.asarray(uniques, dtype=object), np.array([None], dtype=object))
        return pd.Series(table[codes], index=column.index, dtype=object)
    return column.astype(object).where(column.notna(), None)


def read_raw(path: Path) -> tuple[pd.DataFrame, Callable[[int], int]]:
    """Read a file into string/object columns and return a row → line-number function."""
    suffix = _base_suffix(path)
    if suffix in (".csv", ".tsv"):
        reader, started = None, 1
        cell = input_limits.current().cell
        limit = csv.field_size_limit(cell)
        try:
            with input_limits.open_text(path, newline="") as handle:
                source = input_limits.bounded_lines(handle, path)
                reader = csv.reader(source, delimiter="\t" if suffix == ".tsv" else ",")
                header = next(reader, None)
                if header is None:
                    raise InputError("the file is empty (no header line)", path=str(path), line=1)
                if suffix == ".csv" and len(header) == 1:
                    for sep, what in ((";", "semicolon"), ("\t", "tab")):
                        if sep in header[0]:
                            raise InputError(
                                f"the header is one column holding '{sep}': the file looks {what}-separated "
                                "(a spreadsheet's regional export?); save it as comma-separated CSV"
                                + ("" if sep == ";" else ", or name it .tsv"),
                                path=str(path),
                                line=1,
                            )
                rows, lines = [], []
                started = reader.line_num + 1  # where the record being read began
                for record in reader:
                    if not record or all(not cell.strip() for cell in record):
                        started = reader.line_num + 1
                        continue
                    if len(record) != len(header):
                        raise InputError(
                            f"{len(record)} fields where the header has {len(header)}",
                            path=str(path),
                            line=reader.line_num,
                        )
                    rows.append(record)
                    lines.append(reader.line_num)
                    started = reader.line_num + 1
        except csv.Error as err:
            line = started if reader is not None and reader.line_num else 1
            if "field larger than field limit" in str(err):
                raise InputError(
                    f"a cell longer than {cell:,} characters (a broken quote? {input_limits.raise_with('cell')})",
                    path=str(path),
                    line=line,
                ) from None
            raise InputError(f"not readable as CSV ({err})", path=str(path), line=line) from None
        except (UnicodeDecodeError, OSError, EOFError, zlib.error) as err:
            raise unreadable(path, err, "CSV") from None
        finally:
            csv.field_size_limit(limit)
        header = [h.strip() for h in header]
        _refuse_repeated_columns(header, path, 1)
        frame = pd.DataFrame(rows, columns=header, dtype=object)
        frame = frame.replace({"": None})
        return frame, _Lines(lines)
    if suffix in (".jsonl", ".ndjson"):
        pairs = _jsonl_rows(path)
        _refuse_nan(pairs, path)
        lines = [line for line, _ in pairs]
        frame = pd.DataFrame.from_records([row for _, row in pairs]) if pairs else pd.DataFrame()
        frame = frame.astype(object).where(frame.notna(), None) if len(frame) else frame
        return frame, _Lines(lines)
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(path)
        except Exception as err:  # pyarrow raises several unrelated types for a bad file
            raise InputError(f"not readable as Parquet ({err})", path=str(path)) from None
        _refuse_repeated_columns(schema.names, path, None)
        try:  # text columns read as codes and distinct values (dictionaries): no string per row
            text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
            table = pq.read_table(path, read_dictionary=text, use_pandas_metadata=True)
        except Exception as err:
            raise InputError(f"not readable as Parquet ({err})", path=str(path)) from None
        _refuse_parquet_nan(table, path)
        _refuse_long_parquet_cells(table, path)
        frame = table.to_pandas()
        del table
        frame = pd.DataFrame({column: _shared_objects(frame[column]) for column in frame.columns}, index=frame.index)
        pa.default_memory_pool().release_unused()  # the file's buffers, kept by Arrow's allocator otherwise
        return frame, _Lines()
    raise InputError(
        f"unknown file type '{suffix or path.name}': use .csv, .tsv, .jsonl or .parquet (optionally .gz)",
        path=str(path),
    )


def _check_jsonl_kinds(frame: pd.DataFrame, line_of: Callable[[int], int], path: Path) -> None:
    first_kind = None
    for i, record in enumerate(frame.to_dict("records")):
        line = line_of(i)
        try:
            kind = detect_kind(k for k, v in record.items() if v is not None)
        except InputError as err:
            raise InputError(err.message, path=str(path), line=line, field=err.field) from None
        if kind is None:
            continue
        if first_kind is None:
            first_kind = kind
        elif kind != first_kind:
            raise InputError(
                f"this row is a {kind} row but earlier rows are {first_kind}: one file holds one kind",
                path=str(path),
                line=line,
            )


def read_rows(path: str | os.PathLike[str]) -> list[tuple[int, dict[str, Any]]]:
    """``(line, row)`` for every row of a CSV, JSONL or Parquet file, without any kind checks.

    For readers of other row formats (importers, graders, annotation files) that want the same
    file handling and line numbers as `read_table`. CSV values are strings (empty = None); JSONL
    rows are the parsed objects as they are; Parquet rows keep their types (nulls = None).
    """
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", path=str(path))
    if _base_suffix(path) in (".jsonl", ".ndjson"):
        return _jsonl_rows(path)
    frame, line_of = read_raw(path)
    return [(line_of(i), row) for i, row in enumerate(frame.to_dict("records"))]


def read_table(path: str | os.PathLike[str], *, kind: str | None = None) -> Table:
    """Read and validate a recorded table; ``kind`` overrides detection from the columns."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", path=str(path))
    frame, line_of = read_raw(path)
    if len(frame) == 0:  # an audit of nothing is an input error, not an empty report
        header = _base_suffix(path) in (".csv", ".tsv")
        raise InputError(
            "the table has no rows" + (" (only a header)" if header else ""), path=str(path), line=2 if header else 1
        )
    if _base_suffix(path) in (".jsonl", ".ndjson"):
        _check_jsonl_kinds(frame, line_of, path)
    if kind is not None and kind not in KINDS:
        raise InputError(f"unknown kind '{kind}'; kinds are {', '.join(KINDS)}", field="--kind")
    if kind is None:
        try:
            kind = detect_kind(frame.columns)
        except InputError as err:
            raise InputError(err.message, path=str(path), line=1, field=err.field) from None
        if kind is None:
            message, column = kind_unknown(frame.columns)
            raise InputError(f"{message}; see the formats in the README or pass --kind", path=str(path), line=1, field=column)
    return _validated(frame, kind, str(path), line_of)


def validate(frame: pd.DataFrame, kind: str | None = None) -> Table:
    """Check and normalise a DataFrame exactly as `read_table` checks a file of the same rows.

    Kinds, values, verdicts, duplicates: the same rules, the same messages; a `ValidationError`
    names the row (the frame's index label) and the column instead of a file, line and field.
    ``frame`` is not modified.

    >>> import pandas as pd
    >>> validate(pd.DataFrame({"instance_id": ["q1"], "judge": ["gpt-4"], "model_a": ["gpt-4"],
    ...                        "model_b": ["claude-2"], "verdict": ["X"]}))
    Traceback (most recent call last):
    ...
    nepotism.errors.ValidationError: row 0, column 'verdict': unknown verdict 'X': use A, B, tie, or leave empty for unparsed
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame, not {type(frame).__name__}")
    if kind is not None and kind not in KINDS:
        raise ValidationError(f"unknown kind '{kind}'; kinds are {', '.join(KINDS)}", field="kind")
    labels = list(frame.index)
    raw = frame.drop(columns=[c for c in ("_line",) if c in frame.columns]).reset_index(drop=True).copy()
    if kind is None:
        try:
            kind = detect_kind(raw.columns)
        except ValidationError:
            raise
        except InputError as err:
            raise ValidationError(err.message, field=err.field) from None
        if kind is None:
            message, column = kind_unknown(raw.columns)
            raise ValidationError(f"{message}; pass kind=", field=column)
    return _validated(raw, kind, None, lambda i: labels[i])


def _validated(frame: pd.DataFrame, kind: str, path: str | None, locate: Callable[[int], object]) -> Table:
    """The one validation of a table, for a file (``path`` and ``locate`` giving the line of a row)
    and for a frame (no path; ``locate`` giving the row's index label)."""
    line = 1 if path is not None else None
    required, optional = _COLUMNS[kind]
    for column in required:
        if column not in frame.columns:
            raise ValidationError(f"missing required column for a {kind} table", field=column, path=path, line=line)
    if kind == "correctness-ref" and not ({"correct", "score"} & set(frame.columns)):
        raise ValidationError("a correctness table needs 'correct' or 'score'", field="correct", path=path, line=line)
    frame = _Validator(frame, kind, path, locate).run()
    return Table(kind=kind, frame=frame, path=path)


def text_values(column: pd.Series) -> np.ndarray:
    """A column's values as an object array of str: the column's own objects when they are all
    text already (as in a validated table), else each value turned into its text. The key columns of the
    analyses are read this way: grouping objects needs no Arrow copy (pandas 3 makes one per
    ``astype(str)``: 14 s for five key columns of 7.2M rubric verdicts)."""
    values: np.ndarray = np.asarray(column.to_numpy(dtype=object))
    if pd.api.types.infer_dtype(values, skipna=False) == "string":
        return values
    return np.array([str(v) for v in values], dtype=object)


def name_codes(*columns: pd.Series) -> tuple[list[np.ndarray], np.ndarray]:
    """Key columns that share one name space (``model_x`` and ``model_y``; or a single column) as int64
    codes into their sorted names, each value read as its text (`text_values`): a code's order is its
    name's order, so sorting, grouping and ``x < y`` read the same on codes as on names. Returns
    (the codes of each column, the names). The analyses code their key columns here once and then
    group integers (a group-by of 7.2M rubric verdicts on five text keys took 25 s)."""
    texts = [text_values(column) for column in columns]
    codes, names = pd.factorize(np.concatenate(texts) if len(texts) > 1 else texts[0], sort=True)
    codes = np.asarray(codes, dtype=np.int64)
    bounds = np.cumsum([0] + [len(text) for text in texts])
    return [codes[a:b] for a, b in zip(bounds[:-1], bounds[1:])], np.asarray(names, dtype=object)


def group_codes(*codes: np.ndarray) -> np.ndarray:
    """One int64 per distinct combination of the code columns (`row_keys`), numbered 0, 1, … in order of
    first appearance: what ``groupby(columns, sort=False).ngroup()`` numbers, without the group-by."""
    return np.asarray(pd.factorize(row_keys(list(codes)))[0], dtype=np.int64)


def first_rows(group: np.ndarray) -> np.ndarray:
    """The position of each group's first row; for `group_codes` numbers, the i-th is group i's."""
    return np.flatnonzero(~pd.Series(group).duplicated(keep="first").to_numpy())


def _distinct_texts(column: pd.Series) -> tuple[np.ndarray, list[str]] | None:
    """(codes, distinct values) of a column whose values are all str or missing (code -1 = the
    missing ones), so that a rule runs once per distinct value; None for any other column."""
    try:
        codes, uniques = pd.factorize(column, use_na_sentinel=True)
    except TypeError:
        return None
    uniques = list(np.asarray(uniques, dtype=object))
    if not all(type(u) is str for u in uniques):
        return None
    return np.asarray(codes, dtype=np.int64), uniques


def _plain_numbers(column: pd.Series) -> np.ndarray | None:
    """The column as floats (NaN = None) when it holds only ints, floats and None, else None."""
    if column.dtype.kind in "iu":
        return np.asarray(column.to_numpy(dtype=float))
    if column.dtype.kind == "f":
        values = column.to_numpy(dtype=float)
        return None if np.isnan(values).any() else values  # a frame's NaN is refused, which the loop says
    kind = pd.api.types.infer_dtype(column, skipna=True)
    if kind not in ("integer", "floating", "mixed-integer-float", "empty"):
        return None
    values = column.to_numpy(dtype=object)
    none = np.equal(values, np.array(None, dtype=object)).astype(bool)
    numbers = np.full(values.size, np.nan)
    numbers[~none] = values[~none].astype(float)
    if np.isnan(numbers[~none]).any():
        return None  # a NaN value (not an empty cell): refused by the loop
    return numbers


def row_keys(columns: list[np.ndarray | pd.Series]) -> np.ndarray:
    """One int64 per row, equal for two rows exactly when every column is (missing values equal):
    non-negative integer arrays are taken as codes, anything else is coded with `pandas.factorize`; the codes
    are combined in mixed radix, made dense again before the key could overflow."""
    key = np.zeros(len(columns[0]) if columns else 0, dtype=np.int64)
    size = 1  # key < size
    for column in columns:
        codes = (
            column
            if isinstance(column, np.ndarray) and column.dtype.kind in "iu"
            else pd.factorize(column, use_na_sentinel=False)[0]
        )
        width = int(codes.max()) + 1 if len(codes) else 1
        if size * width >= 2**62:
            key, _ = pd.factorize(key)
            key, size = key.astype(np.int64), int(key.max()) + 1
        key = key * width + codes
        size *= width
    return key


def _duplicated(columns: list[np.ndarray | pd.Series]) -> np.ndarray:
    """Per row: whether an earlier row has the same values in every column (as
    `pandas.DataFrame.duplicated`, missing values equal)."""
    return np.asarray(pd.Series(row_keys(columns)).duplicated(keep="first").to_numpy(), dtype=bool)


class _Validator:
    """Normalise and check one raw frame column by column, failing at the first bad cell."""

    def __init__(self, frame: pd.DataFrame, kind: str, path: str | None, line_of: Callable[[int], object]):
        self.frame = frame.reset_index(drop=True)
        self.kind = kind
        self.path = path
        self.line_of = line_of  # a row's source line (file) or index label (frame)
        self.codes: dict[str, np.ndarray] = {}  # a column's integer codes, equal values equal codes (`text`)

    def fail(self, row: int, field: str, message: str) -> NoReturn:
        if self.path is None:
            raise ValidationError(message, row=self.line_of(row), field=field)
        raise ValidationError(message, path=self.path, line=cast(int, self.line_of(row)), field=field)

    def run(self) -> pd.DataFrame:
        frame = self.frame
        required, optional = _COLUMNS[self.kind]
        for column in ("instance_id", "judge", "model", "model_a", "model_b", "rubric_id", "scorer", "annotator"):
            if column in required:
                frame[column] = self.text(column)
        for column in ("condition",):
            if column in optional:
                frame[column] = self.text(column, default="default") if column in frame else "default"
        if "replicate" in optional:
            frame["replicate"] = self.integer("replicate") if "replicate" in frame else 0
        for column in ("category", "annotator"):
            if column in frame and column not in required:
                frame[column] = frame[column].map(lambda v: None if v is None else str(v))
        getattr(self, "kind_" + self.kind.replace("-", "_"))()
        if self.kind in VERDICT_COLUMN:
            self.verdict_status()
        self.unique()
        frame["_line"] = (
            self.line_of.all(len(frame)) if isinstance(self.line_of, _Lines) else [self.line_of(i) for i in range(len(frame))]
        )
        return frame

    # ---- cell types
    def text(self, column: str, *, default: str | None = None) -> pd.Series:
        found = _distinct_texts(self.frame[column])
        if found is not None:  # the same rule, applied once per distinct value
            codes, uniques = found
            cleaned = np.array([u.strip() or None for u in uniques] + [None], dtype=object)
            missing = pd.isna(cleaned)[codes]
            if missing.any():
                if default is None:
                    self.fail(int(np.argmax(missing)), column, "empty value where one is required")
                cleaned[-1] = default
                codes = np.where(missing, len(uniques), codes)
            same, _ = pd.factorize(cleaned, use_na_sentinel=False)  # " a" and "a" are one value once stripped
            self.codes[column] = same[codes]
            return pd.Series(cleaned[codes], dtype=object, index=self.frame.index)
        values = self.frame[column].tolist()
        out = []
        for i, value in enumerate(values):
            if value is None or (isinstance(value, float) and np.isnan(value)) or str(value).strip() == "":
                if default is None:
                    self.fail(i, column, "empty value where one is required")
                out.append(default)
                continue
            out.append(str(value).strip() if not isinstance(value, str) else value.strip())
        return pd.Series(out, dtype=object, index=self.frame.index)

    def number(self, column: str, *, allow_empty: bool, low: float | None = None, high: float | None = None) -> pd.Series:
        fast = _plain_numbers(self.frame[column])
        if fast is not None:  # ints and floats only (None: empty): checked at once; any problem → the loop below
            empty = np.isnan(fast)
            with np.errstate(invalid="ignore"):
                bad = (empty & (not allow_empty)) | np.isinf(fast)
                if low is not None:
                    bad |= fast < low
                if high is not None:
                    bad |= fast > high
            if not bad.any():
                return pd.Series(fast, index=self.frame.index)
        out = np.empty(len(self.frame), dtype=float)
        for i, value in enumerate(self.frame[column].tolist()):
            if value is None or (isinstance(value, str) and value.strip() == ""):
                if not allow_empty:
                    self.fail(i, column, "empty value where a number is required")
                out[i] = np.nan
                continue
            if isinstance(value, bool):
                self.fail(i, column, f"'{value}' is not a number")
            try:
                number = float(value)
            except (TypeError, ValueError):
                self.fail(i, column, f"'{value}' is not a number")
            if not math.isfinite(number):
                self.fail(
                    i,
                    column,
                    f"'{value}' is not a finite number (NaN and infinities are not values; leave the cell empty for no value)",
                )
            if (low is not None and number < low) or (high is not None and number > high):
                span = f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"
                self.fail(i, column, f"{number} is outside {span}")
            out[i] = number
        return pd.Series(out, index=self.frame.index)

    def counts(self, column: str) -> pd.Series:
        """A column of non-negative whole numbers below 2**63 (a count, a replicate), as floats: NaN
        where empty; a fraction, a negative, a non-finite or a too large value fails its row."""
        values = self.number(column, allow_empty=True)
        numbers = values.to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            bad = ~np.isnan(numbers) & ((numbers != np.floor(numbers)) | (numbers < 0) | (numbers >= 2**63))
        if bad.any():
            i = int(np.argmax(bad))
            self.fail(i, column, f"'{self.frame[column].iloc[i]}' is not a non-negative integer")
        return values

    def integer(self, column: str) -> pd.Series:
        """`counts` with an empty cell as 0, as int64."""
        numbers = self.counts(column).to_numpy(dtype=float)
        return pd.Series(np.where(np.isnan(numbers), 0.0, numbers).astype(np.int64), index=self.frame.index, dtype="int64")

    def boolean(self, column: str) -> pd.Series:
        """True / False / None (empty) per row, as objects (`_truth`); a value of neither kind fails at
        its row. A column of bools and missing cells is taken as it is, a text column read once per
        distinct value (7.2M rubric verdicts: 18 s read row by row, as a column of mixed types still is)."""
        series = self.frame[column]
        if series.dtype == np.bool_:
            return pd.Series(series.to_numpy(dtype=object), index=self.frame.index, dtype=object)
        if pd.api.types.infer_dtype(series, skipna=True) == "boolean":
            # bools and missing cells only (a nullable Parquet column, pandas' "boolean" dtype): no cell
            # can fail, each reads as `_truth` reads it — None, False, True — without a loop
            values = series.to_numpy(dtype=object)
            present = ~pd.isna(values)
            pick = np.zeros(values.size, dtype=np.int64)
            pick[present] = 1 + values[present].astype(bool)
            return pd.Series(np.array([None, False, True], dtype=object)[pick], index=self.frame.index, dtype=object)
        found = _distinct_texts(series)
        if found is not None:
            codes, uniques = found
            read = [_truth(u) for u in uniques] + [None]  # code -1: missing
            bad = np.array([r is _NOT_TRUE_FALSE for r in read])
            if bad[codes].any():
                row = int(np.argmax(bad[codes]))
                self.fail(row, column, f"'{uniques[codes[row]]}' is not true/false")
            return pd.Series(np.array(read, dtype=object)[codes], index=self.frame.index, dtype=object)
        out: list[bool | None] = []
        for i, value in enumerate(series.tolist()):
            truth = _truth(value)
            if truth is _NOT_TRUE_FALSE:
                self.fail(i, column, f"'{value}' is not true/false")
            out.append(truth)
        return pd.Series(out, index=self.frame.index, dtype=object)

    # ---- kinds
    def distinct_models(self) -> None:
        same = (self.frame["model_a"] == self.frame["model_b"]).to_numpy()
        if same.any():
            self.fail(
                int(np.argmax(same)), "model_b", "model_b is the same as model_a; tag two responses of one model as NAME@tag"
            )

    def kind_pairwise(self) -> None:
        frame = self.frame
        self.distinct_models()
        found = _distinct_texts(frame["verdict"])
        if found is not None:  # once per distinct value: the loop's rule
            codes, uniques = found
            labels = [_VERDICTS.get(u.strip().lower()) if u.strip() else None for u in uniques]
            unknown = np.array([bool(u.strip()) and label is None for u, label in zip(uniques, labels)] + [False])
            if unknown[codes].any():
                row = int(np.argmax(unknown[codes]))
                self.fail(row, "verdict", f"unknown verdict '{uniques[codes[row]]}': use A, B, tie, or leave empty for unparsed")
            frame["verdict"] = pd.Series(np.array(labels + [None], dtype=object)[codes], dtype=object, index=frame.index)
            self._pairwise_numbers()
            return
        verdicts: list[str | None] = []
        for i, value in enumerate(frame["verdict"].tolist()):
            if value is None or (isinstance(value, float) and np.isnan(value)) or str(value).strip() == "":
                verdicts.append(None)
                continue
            label = _VERDICTS.get(str(value).strip().lower())
            if label is None:
                self.fail(i, "verdict", f"unknown verdict '{value}': use A, B, tie, or leave empty for unparsed")
            verdicts.append(label)
        frame["verdict"] = pd.Series(verdicts, dtype=object, index=frame.index)
        self._pairwise_numbers()

    def _pairwise_numbers(self) -> None:
        frame = self.frame
        for column in ("prob_a", "prob_b", "prob_tie"):
            if column in frame:
                frame[column] = self.number(column, allow_empty=True, low=0.0, high=1.0)
        for column in ("perplexity_a", "perplexity_b"):
            if column in frame:
                frame[column] = self.number(column, allow_empty=True, low=1.0)
        if "reasoning_tokens" in frame:
            frame["reasoning_tokens"] = self.counts("reasoning_tokens")
        if "presentation" in frame:
            shown = self.text("presentation", default="a-first")
            bad = ~shown.isin(PRESENTATIONS)
            if bad.any():
                row = int(np.argmax(bad.to_numpy()))
                self.fail(row, "presentation", f"presentation '{shown.iloc[row]}' is not one of {', '.join(PRESENTATIONS)}")
            frame["presentation"] = shown

    def kind_recognition(self) -> None:
        self.frame["claimed"] = self.boolean("claimed")

    def kind_recognition_pairwise(self) -> None:
        self.distinct_models()
        choices: list[str | None] = []
        for i, value in enumerate(self.frame["choice"].tolist()):
            if value is None or (isinstance(value, float) and np.isnan(value)) or str(value).strip() == "":
                choices.append(None)
            elif str(value).strip().upper() in ("A", "B"):
                choices.append(str(value).strip().upper())
            else:
                self.fail(i, "choice", f"unknown choice '{value}': use A, B, or leave empty for unparsed")
        self.frame["choice"] = pd.Series(choices, dtype=object, index=self.frame.index)

    def kind_pointwise(self) -> None:
        self.frame["score"] = self.number("score", allow_empty=True)

    def kind_rubric(self) -> None:
        self.frame["met"] = self.boolean("met")
        if "setup" in self.frame:
            setups = self.text("setup", default="single-rubric")
            bad = ~setups.isin(RUBRIC_SETUPS)
            if bad.any():
                row = int(np.argmax(bad.to_numpy()))
                self.fail(row, "setup", f"setup '{setups.iloc[row]}' is not one of {', '.join(RUBRIC_SETUPS)}")
            self.frame["setup"] = setups

    def kind_preference_ref(self) -> None:
        frame = self.frame
        self.distinct_models()
        winners = self.text("winner")
        for i, (winner, a, b) in enumerate(zip(winners, frame["model_a"], frame["model_b"])):
            if winner.lower() == "tie":
                winners.iloc[i] = "tie"
            elif winner not in (a, b):
                self.fail(i, "winner", f"winner '{winner}' is neither model_a '{a}' nor model_b '{b}' nor 'tie'")
        frame["winner"] = winners

    def kind_correctness_ref(self) -> None:
        frame = self.frame
        if "correct" in frame:
            frame["correct"] = self.boolean("correct")
        if "score" in frame:
            frame["score"] = self.number("score", allow_empty=True)
        has_correct = frame["correct"].notna() if "correct" in frame else pd.Series(False, index=frame.index)
        has_score = frame["score"].notna() if "score" in frame else pd.Series(False, index=frame.index)
        empty = ~(has_correct | has_score)
        if empty.any():
            self.fail(int(np.argmax(empty.to_numpy())), "correct", "neither 'correct' nor 'score' is given")

    def kind_rubric_ref(self) -> None:
        self.frame["met"] = self.boolean("met")
        missing = self.frame["met"].isna().to_numpy()
        if missing.any():
            self.fail(int(np.argmax(missing)), "met", "rubric truth must be true or false")

    def kind_rubric_labels(self) -> None:
        self.frame["met"] = self.boolean("met")
        missing = self.frame["met"].isna().to_numpy()
        if missing.any():
            self.fail(int(np.argmax(missing)), "met", "a rubric label must be true or false")

    def kind_perplexity(self) -> None:
        frame = self.frame
        frame["perplexity"] = self.number("perplexity", allow_empty=True, low=1.0)
        if "log_perplexity" in frame:
            frame["log_perplexity"] = self.number("log_perplexity", allow_empty=True, low=0.0)
        if "tokens" in frame:
            frame["tokens"] = self.counts("tokens")
        status = self.text("status", default="ok") if "status" in frame else pd.Series("ok", index=frame.index)
        bad = ~status.isin(("ok", "failed"))
        if bad.any():
            row = int(np.argmax(bad.to_numpy()))
            self.fail(row, "status", f"status '{status.iloc[row]}' is not ok or failed")
        empty = (status == "ok").to_numpy() & frame["perplexity"].isna().to_numpy()
        if empty.any():
            self.fail(
                int(np.argmax(empty)),
                "perplexity",
                "an ok row needs a perplexity (mark a row without one status=failed with a reason)",
            )
        frame["status"] = status

    def kind_rubric_items(self) -> None:
        self.frame["text"] = self.text("text")
        self.frame["points"] = self.number("points", allow_empty=False)

    def verdict_status(self) -> None:
        """``status`` (parsed | unparsed | failed; default: parsed where the verdict is given, else
        unparsed), ``reason`` (why there is no verdict; only on rows without one) and ``label_mass``
        (the labels' next-token probability, 0-1), always present after validation."""
        frame = self.frame
        has = frame[VERDICT_COLUMN[self.kind]].notna().to_numpy()
        if "status" in frame:  # each distinct status checked once; the first bad row is the one reported
            codes, distinct = pd.factorize(self.text("status", default="").to_numpy(dtype=object))
            table = np.array([str(v).lower() for v in distinct] + ["parsed", "unparsed"], dtype=object)
            empty = np.append(table[:-2] == "", [False, False])
            codes = np.where(empty[codes], np.where(has, len(table) - 2, len(table) - 1), codes)
            unknown = np.array([v not in _STATUSES for v in table], dtype=bool)[codes]
            mismatch = (table == "parsed")[codes] != has
            if (unknown | mismatch).any():
                i = int(np.argmax(unknown | mismatch))
                value = table[codes[i]]
                if unknown[i]:
                    self.fail(i, "status", f"unknown status '{value}': use {', '.join(_STATUSES)}")
                self.fail(
                    i,
                    "status",
                    f"status '{value}' but the {VERDICT_COLUMN[self.kind]} is "
                    f"{'given' if has[i] else 'empty'}: parsed rows, and only they, carry a verdict",
                )
            status = table[codes]
        else:
            status = np.array(["unparsed", "parsed"], dtype=object)[np.asarray(has, dtype=np.intp)]  # two str objects, shared
        frame["status"] = pd.Series(status, dtype=object, index=frame.index)
        if "reason" in frame:
            reasons = self.text("reason", default="").to_numpy(dtype=object)
            given = reasons != ""
            wrong = given & (status == "parsed")
            if wrong.any():
                self.fail(int(np.argmax(wrong)), "reason", "a parsed row has no reason (a reason says why there is no verdict)")
            frame["reason"] = pd.Series(np.where(given, reasons, None), dtype=object, index=frame.index)
        else:
            frame["reason"] = pd.Series(np.full(len(frame), None, dtype=object), dtype=object, index=frame.index)
        frame["label_mass"] = self.number("label_mass", allow_empty=True, low=0.0, high=1.0) if "label_mass" in frame else np.nan

    def unique(self) -> None:
        keys = [k for k in _KEYS[self.kind] if k in self.frame]
        duplicated = _duplicated([self.codes[k] if k in self.codes else self.frame[k] for k in keys])
        if duplicated.any():
            row = int(np.argmax(duplicated))
            group = self.frame.groupby(keys, dropna=False, sort=False).ngroup().to_numpy()
            first = int(np.flatnonzero(group == group[row])[0])
            self.fail(
                row,
                ",".join(keys),
                f"duplicate row: the same ({', '.join(keys)}) as {'line' if self.path else 'row'} {self.line_of(int(first))}",
            )


# --------------------------------------------------------------------------------------- writing


def write_table(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write ``frame`` to ``path`` (CSV, JSONL or Parquet by extension), atomically.

    The file appears complete or not at all: the rows go to a temporary file in the same folder
    that replaces the target only once fully written.
    """
    path = Path(path)
    suffix = _base_suffix(path)
    if suffix not in (".csv", ".jsonl", ".parquet"):
        raise InputError(f"unknown output type '{suffix or path.name}': use .csv, .jsonl or .parquet", path=str(path))
    compression = "gzip" if path.suffix == ".gz" else None

    def write(tmp: Path) -> None:
        if suffix == ".csv":
            frame.to_csv(tmp, index=False, compression=compression)
        elif suffix == ".jsonl":
            frame.to_json(tmp, orient="records", lines=True, force_ascii=False, compression=compression)
        else:
            frame.to_parquet(tmp, index=False)

    atomic_write(path, write)
    return path
