"""A partitioned Parquet dataset read as one recorded table.

A *dataset* is a folder of hive-style partitions — ``judge=NAME/part-0.parquet`` per judge, as
``nepotism store export judgments --partition-by judge`` writes it (Spark, DuckDB and pyarrow
write the same layout) — or a glob pattern naming Parquet files (``"out/judge=*/*.parquet"``).
A folder segment ``column=value`` (value percent-encoded) gives every row of the files below it
that column; a column both in a file and in its path is refused.

Each file is checked with `nepotism.tables.validate` (kinds, values, verdicts, duplicate keys:
the rules and messages of a single table), and an error names the file, its line (row) and field
and the partition; then the files are checked against each other for duplicate keys. The table
is the files' rows in file-name order (partition folders sorted by name), each file in its own
order, with a ``_file`` column naming each row's file (so that a later error, such as a judge
the registry lacks, names the file and its line). `read_dataset` reads the whole dataset into
memory: the metrics then run as on one file.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pandas as pd

from nepotism.errors import InputError, ValidationError
from nepotism.tables import KINDS, Table, read_raw, detect_kind, key_columns, kind_unknown, validate

__all__ = ["dataset_files", "dataset_partitions", "is_dataset", "is_pattern", "read_dataset", "read_files"]


def _partitions(parts: Iterable[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in parts:
        if "=" in part and not part.startswith("."):
            column, value = part.split("=", 1)
            if column:
                found[unquote(column)] = unquote(value)
    return found


def is_pattern(source: object) -> bool:
    """Whether ``source`` is a glob pattern (a string with ``*``, ``?`` or ``[``) naming no existing path."""
    return isinstance(source, str) and glob.has_magic(source) and not Path(source).exists()


def is_dataset(path: Path) -> bool:
    """Whether ``path`` is a folder holding hive-style partition folders (``column=value``)."""
    return path.is_dir() and any(p.is_dir() and "=" in p.name and not p.name.startswith(".") for p in path.iterdir())


def dataset_files(source: str | Path) -> list[tuple[Path, dict[str, str]]]:
    """(file, {column: value} from its path) for every Parquet file of a dataset folder or glob, sorted."""
    if is_pattern(source):
        files = sorted(Path(p) for p in glob.glob(str(source), recursive=True) if Path(p).is_file())
        return [(f, _partitions(f.parts[:-1])) for f in files]
    root = Path(source)
    files = sorted(
        p for p in root.rglob("*.parquet") if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    return [(f, _partitions(f.relative_to(root).parts[:-1])) for f in files]


def _where(partitions: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in partitions.items()) or "no partition"


def _read_file(path: Path, partitions: dict[str, str]) -> pd.DataFrame:
    frame, _ = read_raw(path)  # as `read_table` reads one Parquet file
    for column, value in partitions.items():
        if column in frame.columns:
            raise InputError(
                f"column '{column}' is both in the file and in its folder name ({column}={value})", path=str(path), field=column
            )
        frame[column] = pd.Series(np.full(len(frame), value, dtype=object), index=frame.index, dtype=object)
    frame.index = pd.RangeIndex(1, len(frame) + 1)  # a row's label is its line in the file (as for one Parquet file)
    return frame


def dataset_partitions(source: str | Path) -> list[tuple[dict[str, str], list[Path]]]:
    """The files of a dataset folder or glob grouped by partition (the same ``column=value`` folders),
    in file order: ``[({column: value}, [file, ...]), ...]`` (a partition's files may be several)."""
    groups: dict[tuple[tuple[str, str], ...], list[Path]] = {}
    for path, partitions in dataset_files(source):
        groups.setdefault(tuple(partitions.items()), []).append(path)
    return [(dict(key), files) for key, files in groups.items()]


def read_dataset(source: str | Path, *, kind: str | None = None) -> Table:
    """Read and validate every file of a dataset folder or glob (module docstring) as one `Table`."""
    files = dataset_files(source)
    if not files:
        raise InputError("the dataset holds no Parquet file (.parquet)", path=str(source))
    table = read_files(files, kind=kind, source=source)
    if table is None:
        raise InputError("the dataset has no rows", path=str(source))
    return table


def read_files(
    files: list[tuple[Path, dict[str, str]]], *, kind: str | None = None, source: str | Path | None = None
) -> Table | None:
    """Read and validate ``files`` ((file, partition values), as `dataset_files` gives them) as one
    `Table` (None when they hold no row): each file checked with `nepotism.tables.validate`, then
    the files against each other for duplicate keys. `read_dataset` reads every file of a dataset
    this way; the streaming metrics (`nepotism.analyses.stream`) one partition at a time."""
    if kind is not None and kind not in KINDS:
        raise InputError(f"unknown kind '{kind}'; kinds are {', '.join(KINDS)}", field="--kind")
    frames, owner = [], []
    for number, (path, partitions) in enumerate(files):
        try:
            raw = _read_file(path, partitions)
        except ValidationError:
            raise
        except InputError as err:
            raise InputError(
                f"{err.message} (partition {_where(partitions)})", path=err.path, line=err.line, field=err.field
            ) from None
        if not len(raw):
            continue
        if kind is None:
            try:
                kind = detect_kind(raw.columns)
            except InputError as err:
                raise InputError(err.message, path=str(path), line=1, field=err.field) from None
            if kind is None:
                message, column = kind_unknown(raw.columns)
                raise InputError(f"{message}; pass --kind", path=str(path), line=1, field=column)
        try:
            table = validate(raw, kind)
        except ValidationError as err:
            raise ValidationError(
                f"{err.message} (partition {_where(partitions)})",
                path=str(path),
                line=err.row if isinstance(err.row, int) else None,
                field=err.field,
            ) from None
        frames.append(table.frame.assign(_file=str(path)))
        owner.append(np.full(len(table.frame), number))
    if not frames:
        return None
    assert kind is not None  # given, or detected from the first file with rows
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if len(frames) > 1:
        keys = [k for k in key_columns(kind) if k in frame]
        duplicated = frame.duplicated(subset=keys, keep=False).to_numpy()
        if duplicated.any():
            rows = np.flatnonzero(duplicated)
            file_of = np.concatenate(owner)
            first, second = (
                rows[0],
                rows[1:][(frame.iloc[rows[1:]][keys].to_numpy() == frame.iloc[[rows[0]]][keys].to_numpy()).all(axis=1)][0],
            )
            (path, partitions), other = files[file_of[second]], files[file_of[first]][0]
            raise ValidationError(
                f"duplicate row: the same ({', '.join(keys)}) as {other} line "
                f"{frame['_line'].iloc[first]} (partition {_where(partitions)})",
                path=str(path),
                line=int(frame["_line"].iloc[second]),
                field=",".join(keys),
            )
    return Table(kind=kind, frame=frame, path=str(source if source is not None else files[0][0]))
