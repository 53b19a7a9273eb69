"""Import any table by mapping its columns and values onto a recorded table's (``--format table``).

For a file no other format knows: a CSV, TSV, JSONL, JSON (an array of objects) or Parquet file
whose columns hold judgments or labels under names of their own. Say which of its columns is which
recorded column, and how its values read, on the command line::

    nepotism import votes.csv --format table --map instance_id=question --map model_a=left \\
        --map model_b=right --map verdict=winner --values verdict:left=A,right=B,tie=tie \\
        --judge gpt-4 --out pairwise.csv

or in a small TOML file given with ``--mapping FILE`` (the command line adds to it and wins)::

    kind = "pairwise"          # optional: detected from the mapped columns otherwise
    judge = "gpt-4"            # optional: one judge for every row (as --judge)
    [columns]                  # recorded column = the file's column
    instance_id = "question"
    model_a = "left"
    model_b = "right"
    verdict = "winner"
    [values.verdict]           # the file's value = the recorded value ("" = no verdict)
    left = "A"
    right = "B"
    tie = "tie"

==================  ================================================================================
rule                what it does
==================  ================================================================================
``--map T=S``       recorded column ``T`` is read from the file's column ``S``; a column the file already
                    names as the table does (``instance_id``, ``model``...) needs no ``--map``. Any
                    column of `nepotism.tables` may be mapped (``category``, ``condition``,
                    ``replicate``, ``annotator``, ``prob_a``...); the file's other columns are left out
``--values``        ``T:RAW=VALUE,RAW=VALUE``: the raw values of recorded column ``T`` (compared as text,
                    exactly, then ignoring case); once given, a value it does not list is an error
                    naming the file, line and column. ``RAW=`` (nothing after ``=``) means no verdict
kind                the table kind the mapped columns make (as `nepotism.tables` detects it: a
                    ``judge`` makes a judgment table, ``winner`` without one a preference-ref), or
                    ``kind`` / ``--kind``: pairwise, pointwise, rubric, recognition, recognition-pairwise,
                    preference-ref, correctness-ref, rubric-ref, rubric-items
names               a pairwise ``verdict`` may also be the winning model's name (read as A or B); a
                    preference-ref ``winner`` may be ``A`` / ``B`` / ``model_a`` / ``model_b`` (read as that
                    side's model) or a model's name; a row comparing a model with itself gets ``@a`` /
                    ``@b`` tags. Names are kept as spelled: give them registry names with a models file's
                    ``[aliases]`` and ``[families]`` (``--models``), not by renaming the data
families            ``--map family=COLUMN`` (``family_a`` / ``family_b`` for pairwise and preference-ref
                    tables) reads each generator's family from a column; ``nepotism import --models-out
                    FILE`` writes them as a models file's ``[families]``, for the names the registry does
                    not know (a name given two families is an error naming the line)
``--benchmark``     prefixes every instance id (``<benchmark>/<id>``)
repeated keys       rows repeating a key (several crowd votes of one pair, several gradings of one
                    answer) without a mapped ``annotator`` (preference-ref) or ``replicate`` (judged
                    kinds) are numbered in file order (``annotator`` ``#1``, ``#2``...; ``replicate``
                    0, 1...) and counted (``repeated_keys_numbered``)
no verdict          an empty verdict (or one mapped to ``""``) is an unparsed judgment, ``reason``
                    ``no_verdict``, never a tie; an empty ``winner`` of a preference-ref is no vote:
                    left out and counted (``votes_missing``)
==================  ================================================================================

The table then goes through the same validation as every recorded table (file, line and field in
every error, exit status 2, nothing written). Left out: every column not mapped; texts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from nepotism.errors import InputError
from nepotism.input_limits import read_toml
from nepotism.importers._common import (
    Format,
    Imported,
    RecordNo,
    fail,
    is_missing,
    number_repeats,
    provenance,
    read_records,
    status_counts,
)

__all__ = ["FORMATS", "import_table", "read_mapping"]

_KINDS_HELP = (
    "pairwise, pointwise, rubric, recognition, recognition-pairwise, preference-ref, correctness-ref, rubric-ref, rubric-items"
)


class _Spec:
    """A parsed mapping: recorded column → the file's column, value maps, the kind and a fixed judge."""

    def __init__(self) -> None:
        self.columns: dict[str, str] = {}
        self.values: dict[str, dict[str, str]] = {}
        self.kind: str | None = None
        self.judge: str | None = None


def _known_columns() -> frozenset[str]:
    from nepotism.tables import KINDS, columns_of

    return frozenset(c for kind in KINDS for group in columns_of(kind) for c in group)


#: Mapped columns that are no table column: the family of ``model`` / ``model_a`` / ``model_b``.
_FAMILY_COLUMNS = {"family": "model", "family_a": "model_a", "family_b": "model_b"}


def _target(name: str, field: str, path: str | None = None) -> str:
    name = name.strip()
    if name not in _known_columns() and name not in _FAMILY_COLUMNS:
        raise InputError(
            f"'{name}' is no column of a recorded table (see `nepotism import --help` and the README's table formats)",
            field=field,
            path=path,
        )
    return name


def _parse_map(items: Sequence[str], spec: _Spec) -> None:
    for item in items:
        target, sep, source = str(item).partition("=")
        if not sep or not target.strip() or not source.strip():
            raise InputError(f"--map takes RECORDED=COLUMN (e.g. model_a=left), got '{item}'", field="--map")
        spec.columns[_target(target, "--map")] = source.strip()


def _parse_values(items: Sequence[str], spec: _Spec) -> None:
    for item in items:
        target, sep, pairs = str(item).partition(":")
        if not sep or not target.strip() or "=" not in pairs:
            raise InputError(
                f"--values takes COLUMN:RAW=VALUE,RAW=VALUE (e.g. verdict:left=A,right=B,tie=tie), got '{item}'", field="--values"
            )
        table = spec.values.setdefault(_target(target, "--values"), {})
        for pair in pairs.split(","):
            raw, eq, value = pair.partition("=")
            if not eq or not raw.strip():
                raise InputError(f"--values: '{pair}' is not RAW=VALUE", field="--values")
            table[raw.strip()] = value.strip()


def read_mapping(path: str | Path) -> dict[str, Any]:
    """A ``--mapping`` TOML file as ``{"kind", "judge", "columns", "values"}``; `InputError` naming
    the file and key on anything else."""
    path = Path(path)
    data = read_toml(path, what="the mapping file")  # invalid, too deep or too long: an InputError
    unknown = sorted(set(data) - {"kind", "judge", "columns", "values"})
    if unknown:
        raise InputError(
            "unknown key; a mapping file holds kind, judge, [columns] and [values.COLUMN]", path=str(path), field=unknown[0]
        )
    for key in ("kind", "judge"):
        if key in data and (not isinstance(data[key], str) or not data[key].strip()):
            raise InputError("expected a non-empty string", path=str(path), field=key)
    columns = data.get("columns", {})
    if not isinstance(columns, dict) or not all(isinstance(v, str) and v.strip() for v in columns.values()):
        raise InputError('expected a [columns] table of recorded = "file column"', path=str(path), field="columns")
    values = data.get("values", {})
    if not isinstance(values, dict) or not all(isinstance(v, dict) for v in values.values()):
        raise InputError('expected [values.COLUMN] tables of "raw" = "value"', path=str(path), field="values")
    for column, table in values.items():
        for raw, value in table.items():
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise InputError("expected a string or a number", path=str(path), field=f"values.{column}.{raw}")
    for target in list(columns) + list(values):
        _target(target, "columns" if target in columns else "values", str(path))
    return {
        "kind": data.get("kind"),
        "judge": data.get("judge"),
        "columns": columns,
        "values": {c: {str(r).strip(): str(v).strip() for r, v in t.items()} for c, t in values.items()},
    }


def _spec(
    mapping: str | Path | None, map_items: Sequence[str], value_items: Sequence[str], kind: str | None, judge: str | None
) -> _Spec:
    spec = _Spec()
    if mapping is not None:
        found = read_mapping(mapping)
        spec.columns.update({t.strip(): s.strip() for t, s in found["columns"].items()})
        spec.values.update(found["values"])
        spec.kind, spec.judge = found["kind"], found["judge"]
    _parse_map(map_items, spec)
    _parse_values(value_items, spec)
    spec.kind = kind or spec.kind
    spec.judge = judge or spec.judge
    if spec.judge is not None:
        if "judge" in spec.columns:
            raise InputError("a judge column is mapped and a judge named (--judge / judge =): keep one", field="--judge")
        spec.judge = spec.judge.strip()
    return spec


def _kind(spec: _Spec, columns: set[str]) -> str:
    from nepotism.tables import KINDS, detect_kind

    if spec.kind is not None:
        if spec.kind not in KINDS:
            raise InputError(f"unknown kind '{spec.kind}'; kinds are {_KINDS_HELP}", field="--kind")
        return spec.kind
    found = detect_kind(columns | ({"judge"} if spec.judge else set()))
    if found is None:
        raise InputError(
            f"the mapped columns ({', '.join(sorted(columns)) or 'none'}) make no table: map instance_id and, for "
            "pairwise judgments, model_a, model_b and verdict with a judge (--judge or --map judge=COLUMN); for "
            "pointwise, model and score; for human votes (preference-ref), model_a, model_b and winner; or name "
            f"--kind ({_KINDS_HELP})",
            field="--map",
        )
    return found


def _value(raw: Any, table: Mapping[str, str] | None, path: Path, position: int, source: str) -> Any:
    """A cell through its value map (None for an empty cell or a value mapped to "")."""
    if is_missing(raw):
        return None
    if table is None:
        return raw.strip() if isinstance(raw, str) else raw
    text = str(raw).strip()
    if isinstance(raw, float) and raw.is_integer():
        text = str(int(raw))
    if text in table:
        value = table[text]
    else:
        folded = {k.casefold(): v for k, v in table.items()}
        if text.casefold() not in folded:
            listed = ", ".join(table)
            raise fail(f"value '{text}' is not in the value map ({listed}); add it to --values", path, position, source)
        value = folded[text.casefold()]
    return value if value != "" else None


def _sides(row: dict[str, Any], kind: str, path: Path, position: int, spec: _Spec) -> int:
    """Tag a model compared with itself (``@a`` / ``@b``), then read a pairwise verdict or a
    preference winner given as a side or as a model's name. Returns 1 when the row was tagged."""
    a, b = row.get("model_a"), row.get("model_b")
    if a is None or b is None:
        return 0
    a, b = str(a), str(b)
    same = a == b
    if same:
        row["model_a"], row["model_b"] = f"{a}@a", f"{b}@b"
    column = "verdict" if kind == "pairwise" else "winner" if kind == "preference-ref" else None
    if column is None or row.get(column) is None:
        return int(same)
    value = str(row[column]).strip()
    if kind == "pairwise" and value.lower() not in ("a", "b", "tie") and value in (a, b):
        if same:
            raise fail(
                f"the verdict names '{value}', the model on both sides: say A, B or tie",
                path,
                position,
                spec.columns.get(column, column),
            )
        row[column] = "A" if value == a else "B"
    elif kind == "preference-ref":
        side = {"a": "model_a", "b": "model_b", "model_a": "model_a", "model_b": "model_b"}.get(value.lower())
        if side is not None:
            row[column] = row[side]
        elif same and value == a:
            raise fail(
                f"the winner names '{value}', the model on both sides: say A, B or tie",
                path,
                position,
                spec.columns.get(column, column),
            )
    return int(same)


def import_table(
    path: str | Path,
    *,
    mapping: str | Path | None = None,
    map: Sequence[str] | None = None,
    values: Sequence[str] | None = None,
    kind: str | None = None,
    judge: str | None = None,
    benchmark: str | None = None,
    **_: Any,
) -> Imported:
    """Import one table by mapping (see the module docstring)."""
    path = Path(path)
    spec = _spec(mapping, map or (), values or (), kind, judge)
    records = read_records(path)
    if not records:
        raise InputError("the file holds no rows", path=str(path))
    present = set().union(*(r.keys() for _, r in records[:1000]))
    for target, source in spec.columns.items():
        if source not in present:
            raise InputError(
                f"no column '{source}' in the file (its columns: {', '.join(sorted(str(c) for c in present))})",
                path=str(path),
                line=1,
                field=f"--map {target}={source}",
            )
    columns = dict(spec.columns)
    for name in sorted(_known_columns()):  # a column already named as the table names it needs no --map
        if name in present and name not in columns and name not in columns.values():
            columns[name] = name
    if spec.judge is not None:
        columns.pop("judge", None)
    for target in spec.values:
        if target not in columns:
            raise InputError(f"--values names '{target}', which no column is mapped to", field="--values")
    table_kind = _kind(spec, set(columns) - set(_FAMILY_COLUMNS))
    for family_column, model_column in _FAMILY_COLUMNS.items():
        if family_column in columns and model_column not in columns:
            raise InputError(f"{family_column} is the family of {model_column}, which no column is mapped to", field="--map")
    from nepotism.tables import VERDICT_COLUMN, key_columns

    verdict = VERDICT_COLUMN.get(table_kind)
    rows, tagged, missing_votes = [], 0, 0
    families: dict[str, tuple[str, int]] = {}  # name -> (family, where first said)
    for position, record in records:
        row = {
            target: _value(record.get(source), spec.values.get(target), path, position, source)
            for target, source in columns.items()
        }
        for family_column, model_column in _FAMILY_COLUMNS.items():
            given_family, given_name = row.pop(family_column, None), row.get(model_column)
            if given_family is None or given_name is None:
                continue
            family, name = str(given_family).strip(), str(given_name).strip()
            first = families.setdefault(name, (family, position))
            if first[0] != family:
                raise fail(
                    f"'{name}' is of family '{family}' here and '{first[0]}' at "
                    f"{'record' if isinstance(first[1], RecordNo) else 'line'} {int(first[1])}",
                    path,
                    position,
                    columns[family_column],
                )
        if spec.judge is not None:
            row["judge"] = spec.judge
        if benchmark and row.get("instance_id") is not None:
            row["instance_id"] = f"{benchmark}/{row['instance_id']}"
        tagged += _sides(row, table_kind, path, position, spec)
        if table_kind == "preference-ref" and row.get("winner") is None:
            missing_votes += 1
            continue
        if verdict is not None and "status" not in columns:
            row["status"] = "parsed" if row.get(verdict) is not None else "unparsed"
            row["reason"] = None if row.get(verdict) is not None else "no_verdict"
        rows.append({**row, **provenance(path, position)})
    if not rows:
        raise InputError("no row with a vote in the file (every winner is empty)", path=str(path))
    frame = pd.DataFrame(rows, dtype=object)
    frame = frame.where(frame.notna(), None)  # an empty cell is no value (None), as the tables read it
    number = "annotator" if table_kind == "preference-ref" else "replicate" if "replicate" in key_columns(table_kind) else None
    _check(frame, table_kind, columns, path, None if number in columns else number)
    counts = {"rows": len(records), "written": len(frame)}
    if verdict is not None and "status" in frame:
        counts.update(status_counts(frame))
    counts.update({k: v for k, v in (("self_pairs_tagged", tagged), ("votes_missing", missing_votes)) if v})
    notes = [
        f"columns: {', '.join(f'{t} <- {s}' for t, s in columns.items())}" + (f"; judge = {spec.judge}" if spec.judge else "")
    ]
    return Imported(
        tables={table_kind: frame},
        main=table_kind,
        counts=counts,
        notes=notes,
        source=str(path),
        families={name: family for name, (family, _) in families.items()},
        numbered=None if number in columns else number,
    )


def _check(frame: pd.DataFrame, kind: str, columns: Mapping[str, str], path: Path, number: str | None) -> None:
    """`nepotism.tables.validate` on the mapped rows (repeated keys numbered in ``number`` as the
    merge will number them), its error pointing at the source's line (or record) and column, and,
    for a value the table does not take, at ``--values``."""
    from nepotism.errors import ValidationError
    from nepotism.tables import validate

    content = frame.drop(columns=[c for c in ("source_file", "source_line", "source_record") if c in frame])
    if number is not None:
        number_repeats(kind, content, number)
    try:
        validate(content, kind)
    except ValidationError as err:
        row = frame.iloc[int(err.row)] if isinstance(err.row, int) else None
        position = None
        if row is not None:
            line = row.get("source_line")
            position = RecordNo(int(row["source_record"])) if line is None or pd.isna(line) else int(line)
        source = columns.get(err.field or "", err.field)
        hint = f" (map the file's values with --values {err.field}:RAW=VALUE,...)" if err.field in _VALUE_COLUMNS else ""
        raise fail(f"{err.message}{hint}", path, position, source) from None


#: Recorded columns whose values come from a fixed vocabulary (a --values map is the usual fix).
_VALUE_COLUMNS = ("verdict", "choice", "winner", "met", "claimed", "correct", "status", "presentation", "setup")


FORMATS = (
    Format(
        name="table",
        summary="any table by mapping: --map RECORDED=COLUMN, --values COLUMN:RAW=VALUE,... or --mapping FILE.toml",
        read=import_table,
        tables=(
            "pairwise",
            "pointwise",
            "rubric",
            "recognition",
            "recognition-pairwise",
            "preference-ref",
            "correctness-ref",
            "rubric-ref",
            "rubric-items",
        ),
        upstream="none: the mapping says what each column is",
        options=("mapping", "map", "values", "kind", "judge", "benchmark"),
    ),
)
