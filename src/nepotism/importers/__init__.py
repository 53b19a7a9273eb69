"""Importers: turn published judge outputs into nepotism's recorded-judgment tables.

The registry of formats is built from the modules of this package: every public module (a name
without a leading underscore) declares ``FORMATS``, a tuple of `Format` records, each naming a
pure function ``path -> Imported`` (the tables it yields by kind, which one is the main table, the
texts needed to re-run or re-judge the items, counts and notes worth reporting). Adding a format
is one module with its ``FORMATS`` and its test; nothing else needs editing. `formats()` lists
them (``nepotism import --list``), `import_source` reads one or more files of one format and
`merge` joins them.

Nothing here writes files: ``nepotism import`` validates every table and writes them atomically.
Every row keeps its provenance (``source_file``, ``source_line``), so a row of an output table can
be traced to the upstream line (or record) it came from.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from typing import Any
from pathlib import Path

import pandas as pd

from nepotism.errors import InputError
from nepotism.importers._common import Format, Imported, number_repeats

__all__ = ["Format", "Imported", "formats", "get_format", "import_source", "merge"]


def _discover() -> dict[str, Format]:
    found: dict[str, Format] = {}
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
        for fmt in importlib.import_module(f"{__name__}.{module}").FORMATS:
            if fmt.name in found:
                raise ValueError(f"format {fmt.name!r} is declared twice (module {module})")
            found[fmt.name] = fmt
    return dict(sorted(found.items()))


_REGISTRY: dict[str, Format] | None = None


def formats() -> dict[str, Format]:
    """Every registered format by name (sorted), discovered from this package's modules once."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = _discover()
    return dict(_REGISTRY)


def get_format(name: str) -> Format:
    """The format called ``name``; `InputError` (field ``--format``) listing the known names otherwise."""
    known = formats()
    if name not in known:
        raise InputError(f"unknown format '{name}'; formats are {', '.join(known)}", field="--format")
    return known[name]


def _key_columns(kind: str, frame: pd.DataFrame) -> list[str]:
    from nepotism.tables import key_columns

    return [c for c in key_columns(kind) if c in frame]


_PROVENANCE = ("source_file", "source_line", "source_record")


def _drop_repeats(kind: str, frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Drop rows that repeat an earlier row exactly (provenance aside); `InputError` when a repeated
    key carries different values, naming both source lines."""
    keys = _key_columns(kind, frame)
    if not keys or frame.empty:
        return frame, 0
    content = [c for c in frame.columns if c not in _PROVENANCE]
    hashed = pd.util.hash_pandas_object(frame[content].astype(str), index=False)
    exact = hashed.duplicated(keep="first").to_numpy()
    kept = frame[~exact]
    group = kept.groupby(keys, dropna=False, sort=False).ngroup()
    clash = group.duplicated(keep=False)
    if clash.any():
        members = kept[group == group[clash].iloc[0]]
        first, second = members.iloc[0], members.iloc[1]
        raise InputError(
            f"repeats the {kind} judgment at {_place(first)} ({', '.join(f'{k}={first[k]}' for k in keys)}) "
            "with different values; keep one of them",
            path=second.get("source_file"),
            line=_number(second, "source_line"),
            record=_number(second, "source_record"),
            field=",".join(keys),
        )
    return kept.reset_index(drop=True), int(exact.sum())


def _number(row: pd.Series, column: str) -> int | None:
    value = row.get(column)
    return None if value is None or pd.isna(value) else int(value)


def _place(row: pd.Series) -> str:
    """Where a row came from, in words: "file line N" / "file record N"."""
    line, record = _number(row, "source_line"), _number(row, "source_record")
    where = f"line {line}" if line is not None else (f"record {record}" if record is not None else "an earlier row")
    return f"{row.get('source_file')} {where}" if row.get("source_file") is not None else where


def merge(parts: Sequence[Imported]) -> Imported:
    """Join the imports of several source files of one format (same main kind).

    Rows that repeat an earlier row exactly (the same judgment found in two files, or twice in
    one) are kept once and counted as ``repeats_dropped``; a repeated key with different values is
    an `InputError` naming both places. When the parts name a column that numbers repeats
    (`Imported.numbered`: several votes of one pair), the rows repeating a key are numbered in that
    column instead, across all the files, and counted as ``repeated_keys_numbered``.
    """
    if not parts:
        raise InputError("no source file given")
    main = parts[0].main
    for part in parts[1:]:
        if part.main != main:
            raise InputError(
                f"the sources give different table kinds ({main} and {part.main}); import them separately",
                path=part.source,
            )
    tables: dict[str, pd.DataFrame] = {}
    dropped = numbered = 0
    for kind in dict.fromkeys(k for p in parts for k in p.tables):
        frame = pd.concat([p.tables[kind] for p in parts if kind in p.tables], ignore_index=True)
        if kind == main and parts[0].numbered:
            numbered = number_repeats(kind, frame, parts[0].numbered)
        tables[kind], repeats = _drop_repeats(kind, frame)
        if kind == main:
            dropped = repeats
    texts = [p.texts for p in parts if p.texts is not None]
    counts: dict[str, int] = {}
    for part in parts:
        for key, value in part.counts.items():
            counts[key] = counts.get(key, 0) + value
    if dropped:
        counts["repeats_dropped"] = counts.get("repeats_dropped", 0) + dropped
        if "status" in tables[main]:  # what the written table holds, not what the files held
            for status in ("unparsed", "failed"):
                if status in counts:
                    counts[status] = int((tables[main]["status"] == status).sum())
    families: dict[str, str] = {}
    for part in parts:
        for name, family in part.families.items():
            if families.setdefault(name, family) != family:
                raise InputError(
                    f"'{name}' is of family '{families[name]}' in one source and '{family}' in another",
                    path=part.source,
                    field="family",
                )
    notes = list(dict.fromkeys(n for p in parts for n in p.notes))
    if dropped:
        notes.append(
            f"{dropped} {main} rows repeated an earlier row exactly (same judgment in two files or "
            "twice in one) and were kept once"
        )
    if numbered:
        counts["repeated_keys_numbered"] = numbered
        what = "annotators #1, #2, ..." if parts[0].numbered == "annotator" else "replicates 0, 1, ..."
        notes.append(
            f"{numbered} rows repeat the key of an earlier row (several votes or gradings of one item): "
            f"numbered as {what} in file order"
        )
    return Imported(
        tables=tables,
        main=main,
        texts=pd.concat(texts, ignore_index=True).drop_duplicates(["instance_id", "model"]) if texts else None,
        counts=counts,
        notes=notes,
        source=", ".join(p.source for p in parts),
        families=families,
    )


def import_source(fmt: str, paths: Sequence[str | Path], **options: Any) -> Imported:
    """Import one or more files of format ``fmt`` (see `formats`); ``options`` go to its reader.

    An option the format does not take is an `InputError` naming the flag, so a user never
    believes an option had an effect it cannot have.
    """
    spec = get_format(fmt)
    for name, value in options.items():
        if value is not None and name not in spec.options:
            takes = f"it takes {', '.join('--' + o for o in spec.options)}" if spec.options else "it takes none"
            raise InputError(f"--{name} is not an option of --format {fmt} ({takes})", field=f"--{name}")
    given = {k: v for k, v in options.items() if v is not None}
    parts = []
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise InputError("no such file", path=str(path))
        parts.append(spec.read(path, **given))
    return merge(parts)
