"""Importers: turn published judge outputs into nepotism's recorded-judgment tables.

Each supported source format has a small module with a pure function ``path -> Imported``: the
tables it yields (kind -> DataFrame, in the columns of `nepotism.tables`), which of them is the
main one, the texts needed to re-run or re-judge the items (optional), and counts worth reporting.
Nothing here writes files; `nepotism import` validates and writes the tables atomically.

Formats: ``alpaca-eval-compact``, ``alpaca-eval``, ``mbpp-selfpref``, ``judgebench``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from nepotism.errors import InputError
from nepotism.importers._common import Imported

__all__ = ["FORMATS", "Imported", "import_source", "merge"]


def _alpaca_compact(path: Path, **options) -> Imported:
    from nepotism.importers.alpaca_eval import import_alpaca_eval_compact

    return import_alpaca_eval_compact(path, **options)


def _alpaca_json(path: Path, **options) -> Imported:
    from nepotism.importers.alpaca_eval import import_alpaca_eval

    return import_alpaca_eval(path, **options)


def _mbpp(path: Path, **options) -> Imported:
    from nepotism.importers.mbpp_selfpref import import_mbpp_selfpref

    return import_mbpp_selfpref(path, **options)


def _judgebench(path: Path, **options) -> Imported:
    from nepotism.importers.judgebench import import_judgebench

    return import_judgebench(path, **options)


#: Format name -> importer of one source file.
FORMATS: dict[str, Callable[..., Imported]] = {
    "alpaca-eval-compact": _alpaca_compact,
    "alpaca-eval": _alpaca_json,
    "mbpp-selfpref": _mbpp,
    "judgebench": _judgebench,
}


def merge(parts: Sequence[Imported]) -> Imported:
    """Concatenate the imports of several source files of one format (same main kind)."""
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
    for kind in dict.fromkeys(k for p in parts for k in p.tables):
        tables[kind] = pd.concat([p.tables[kind] for p in parts if kind in p.tables], ignore_index=True)
    texts = [p.texts for p in parts if p.texts is not None]
    counts: dict[str, int] = {}
    for part in parts:
        for key, value in part.counts.items():
            counts[key] = counts.get(key, 0) + value
    notes = list(dict.fromkeys(n for p in parts for n in p.notes))
    return Imported(
        tables=tables,
        main=main,
        texts=pd.concat(texts, ignore_index=True).drop_duplicates(["instance_id", "model"]) if texts else None,
        counts=counts,
        notes=notes,
        source=", ".join(p.source for p in parts),
    )


def import_source(fmt: str, paths: Sequence[str | Path], **options) -> Imported:
    """Import one or more files of format ``fmt``; see `FORMATS` for the names."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format '{fmt}'; formats are {', '.join(FORMATS)}", field="--format")
    parts = []
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise InputError("no such file", path=str(path))
        parts.append(FORMATS[fmt](path, **options))
    return merge(parts)
