"""``nepotism import``: convert published judge outputs into recorded-judgment tables."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

from nepotism.cli._common import echo_json, models_option, unknown_names_lines

from nepotism._files import temp_beside

if TYPE_CHECKING:
    import pandas as pd

    from nepotism.errors import InputError
    from nepotism.importers import Imported
    from nepotism.models import Registry

__all__ = ["command"]

_REFERENCE_KINDS = ("preference-ref", "correctness-ref", "rubric-ref", "rubric-items", "rubric-labels")


def _write_texts(texts: pd.DataFrame, path: Path, *, gz: bool) -> None:
    """One JSON object per line; NaN and None become null."""
    import gzip

    handle: TextIO
    with gzip.open(path, "wt", encoding="utf-8") if gz else open(path, "w", encoding="utf-8") as handle:
        for record in texts.astype(object).where(texts.notna(), None).to_dict(orient="records"):
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


_TABLE_SUFFIXES = (".csv", ".jsonl", ".parquet", ".csv.gz", ".jsonl.gz")


def _check_suffix(path: Path | None, option: str, allowed: tuple[str, ...]) -> None:
    """An output whose name does not say its format is an error naming the user's path and the allowed suffixes."""
    from nepotism.errors import InputError

    if path is None:
        return
    name = path.name.lower()
    if not any(name.endswith(s) and len(name) > len(s) for s in allowed):
        raise InputError(f"unknown output type (the name must end in {', '.join(allowed)})", path=str(path), field=option)


_NAME_COLUMNS = ("judge", "model", "model_a", "model_b", "winner")


def _unknown_names(imported: Imported, registry: Registry) -> list[str]:
    """The judge and generator names of the main table the registry does not know (``@tags`` dropped)."""
    frame = imported.tables[imported.main]
    names = {
        str(v).split("@", 1)[0]
        for c in ("judge", "model", "model_a", "model_b")
        if c in frame
        for v in frame[c].dropna().unique()
    }
    return sorted(n for n in names if n.strip() and not registry.knows(n))


def _canonicalise(imported: Imported, registry: Registry) -> int:
    """Replace model and judge names with registry ids, keeping @tags; return how many stayed unknown."""
    unknown: set[str] = set()

    def one(name: object) -> object:
        if not isinstance(name, str):
            return name
        base, sep, tag = name.partition("@")
        try:
            return registry.resolve(base) + sep + tag
        except KeyError:
            unknown.add(base)
            return name

    for frame in imported.tables.values():
        for column in _NAME_COLUMNS:
            if column in frame:
                frame[column] = frame[column].map(one)
    if imported.texts is not None:
        imported.texts["model"] = imported.texts["model"].map(one)
    return len(unknown)


def _print_formats(as_json: bool) -> None:
    from nepotism.importers import formats

    rows = [
        {
            "format": f.name,
            "tables": list(f.tables),
            "options": [f"--{o}" for o in f.options],
            "summary": f.summary,
            "upstream": f.upstream,
        }
        for f in formats().values()
    ]
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        click.echo(
            f"{row['format']}\n  {row['summary']}\n  tables: {', '.join(row['tables'])}"
            + (f"; options: {' '.join(row['options'])}" if row["options"] else "")
            + f"\n  upstream: {row['upstream']}"
        )


def _invalid(err: InputError, kind: str, target: Path, tmp: Path) -> InputError:
    """The read-back error of a written table, pointing at the upstream row it came from when known."""
    from nepotism.errors import InputError
    from nepotism.tables import read_rows

    origin = ""
    if err.line is not None:
        try:
            row = dict(read_rows(tmp)).get(err.line)
        except InputError:
            row = None
        if row and row.get("source_file") is not None:
            line, record = row.get("source_line"), row.get("source_record")
            at = f"line {line}" if line is not None else f"record {record}"
            origin = f" (it came from {row['source_file']} {at})"
    return InputError(
        f"the importer produced an invalid {kind} table{origin}: {err.message}", path=str(target), line=err.line, field=err.field
    )


def _reference_targets(values: Iterable[str]) -> list[tuple[str | None, Path]]:
    """``--reference-out`` values as (kind or None, path): ``KIND=FILE`` names the companion table."""
    out: list[tuple[str | None, Path]] = []
    for value in values:
        kind, sep, rest = str(value).partition("=")
        out.append((kind, Path(rest)) if sep and kind in _REFERENCE_KINDS else (None, Path(value)))
    return out


def _assign_references(targets: list[tuple[str | None, Path]], references: list[str]) -> list[tuple[str, Path]]:
    """Each ``--reference-out`` with its companion table: named ones first, the rest in order."""
    from nepotism.errors import InputError

    named = {kind for kind, _ in targets if kind is not None}
    unknown = sorted(named - set(references))
    if unknown:
        raise InputError(
            f"the source has no {unknown[0]} table (its companions: {', '.join(references) or 'none'})", field="--reference-out"
        )
    if len(named) != sum(kind is not None for kind, _ in targets):
        raise InputError("a companion table is named twice", field="--reference-out")
    free = [k for k in references if k not in named]
    unnamed = [path for kind, path in targets if kind is None]
    if len(unnamed) > len(free):
        raise InputError(
            f"{len(targets)} --reference-out files for {len(references)} companion tables ({', '.join(references)})",
            field="--reference-out",
        )
    pairs = dict(zip(free, unnamed))
    return [(kind, path) for kind, path in targets if kind is not None] + list(pairs.items())


@click.command("import")
@click.argument("sources", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--format", "fmt", help="Source format (see --list).")
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Main table (.csv, .jsonl or .parquet; .gz allowed for CSV/JSONL).",
)
@click.option(
    "--reference-out",
    "reference_outs",
    multiple=True,
    metavar="[KIND=]FILE",
    help="Companion reference table(s), when the source has them; repeat for several (JudgeBench has a "
    "preference-ref and a correctness-ref): in the order --list gives, or named as KIND=FILE.",
)
@click.option(
    "--texts-out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSONL of texts: instance_id, prompt, tests, model, text.",
)
@click.option("--judge", default=None, help="Judge model for every row (overrides what the file says).")
@click.option("--baseline", default=None, help="arena-hard: the baseline model, when the records do not name it.")
@click.option("--benchmark", default=None, help="Prefix of the instance ids (<benchmark>/<question id>).")
@click.option("--generator", default=None, help="reward-pairs: name for responses whose generator the file omits.")
@click.option(
    "--instructions",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="AlpacaEval instructions.json (instruction_id, instruction) for matching instance ids.",
)
@click.option(
    "--verdicts",
    type=click.Choice(["reply", "probabilities"]),
    default=None,
    help="mbpp-selfpref only: read each verdict as the most probable of the recorded [A, T, B] "
    "probabilities (default: paper 004's reading; an exact tie takes the first in that order) "
    "or from the judge's reply.",
)
@click.option(
    "--map",
    "map_items",
    multiple=True,
    metavar="RECORDED=COLUMN",
    help="table: recorded column RECORDED is read from the file's COLUMN (e.g. model_a=left); repeatable.",
)
@click.option(
    "--values",
    "value_items",
    multiple=True,
    metavar="RECORDED:RAW=VALUE,...",
    help="table: how the raw values of a recorded column read (e.g. verdict:left=A,right=B,tie=tie); repeatable.",
)
@click.option(
    "--mapping",
    type=click.Path(dir_okay=False, path_type=Path),
    help="table: a TOML mapping file (kind, judge, [columns], [values.COLUMN]); --map and --values add to it.",
)
@click.option(
    "--kind",
    type=click.Choice(
        [
            "pairwise",
            "pointwise",
            "rubric",
            "recognition",
            "recognition-pairwise",
            "preference-ref",
            "correctness-ref",
            "rubric-ref",
            "rubric-items",
        ]
    ),
    default=None,
    help="table: the table kind, when the mapped columns do not tell.",
)
@models_option
@click.option(
    "--models-out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="table: write the families read with --map family=COLUMN (family_a, family_b) as a models file "
    "([families]) for the names the registry does not know; pass it to metrics with --models.",
)
@click.option("--canonical", is_flag=True, help="Write canonical model-registry ids instead of the source's names.")
@click.option("--list", "list_formats", is_flag=True, help="List the formats, their tables and options, and exit.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def command(
    sources: tuple[Path, ...],
    fmt: str | None,
    out: Path | None,
    reference_outs: tuple[str, ...],
    texts_out: Path | None,
    judge: str | None,
    baseline: str | None,
    benchmark: str | None,
    generator: str | None,
    instructions: Path | None,
    verdicts: str | None,
    map_items: tuple[str, ...],
    value_items: tuple[str, ...],
    mapping: Path | None,
    kind: str | None,
    models_files: tuple[str, ...],
    models_out: Path | None,
    canonical: bool,
    list_formats: bool,
    as_json: bool,
) -> None:
    """Import published judgments in SOURCE files into recorded tables.

    `nepotism import --list` shows every format (FastChat single and pair grades, MT-Bench human
    judgments, Arena-Hard-Auto, Chatbot Arena battles, reward-model pairs, AlpacaEval, JudgeBench,
    paper 004's MBPP file, Inspect AI eval logs, and `table`: any file by mapping its columns with
    --map / --values / --mapping), the tables each yields and its options; docs/importers.md gives
    each column mapping. Several SOURCE files of one format become one table (a judgment repeated
    exactly is kept once). Every table is validated by reading it back before any output replaces
    its target: nothing is written if anything fails, and a malformed source is named with its
    line (or record) and field, exit status 2. Names the model registry does not know (with the
    --models files) are listed, with how to name them in a models file ([aliases], [families]).
    """
    from nepotism.errors import InputError
    from nepotism.importers import get_format, import_source
    from nepotism.tables import read_table, write_table

    if list_formats:
        _print_formats(as_json)
        return
    if not sources:
        raise InputError("give one or more SOURCE files (or --list)", field="SOURCES")
    if fmt is None:
        raise InputError("--format is required (see nepotism import --list)", field="--format")
    if out is None:
        raise InputError("--out is required", field="--out")
    get_format(fmt)
    _check_suffix(out, "--out", _TABLE_SUFFIXES)
    reference_out = _reference_targets(reference_outs)
    for _, path in reference_out:
        _check_suffix(path, "--reference-out", _TABLE_SUFFIXES)
    _check_suffix(texts_out, "--texts-out", (".jsonl", ".jsonl.gz"))
    options = {
        "judge": judge,
        "baseline": baseline,
        "benchmark": benchmark,
        "generator": generator,
        "instructions": instructions,
        "verdicts": verdicts,
        "map": map_items or None,
        "values": value_items or None,
        "mapping": mapping,
        "kind": kind,
    }
    from nepotism.models import load_registry

    registry = load_registry(list(models_files))
    imported = import_source(fmt, sources, **options)
    unknown = _canonicalise(imported, registry) if canonical else 0
    names = _unknown_names(imported, registry)
    families = {n: f for n, f in imported.families.items() if n in names}
    if models_out is not None and not imported.families:
        raise InputError(
            "no families to write: map a column to family (family_a, family_b) with --format table", field="--models-out"
        )
    _check_suffix(models_out, "--models-out", (".toml",))

    references = [k for k in imported.tables if k in _REFERENCE_KINDS and k != imported.main]
    plan: list[tuple[str, Path]] = [(imported.main, out)]
    if reference_out and not references:
        raise InputError(
            f"the {fmt} source has no companion reference table (its main table is {imported.main})", field="--reference-out"
        )
    plan += _assign_references(reference_out, references)
    if texts_out is not None and imported.texts is None:
        raise InputError(f"the {fmt} source carries no texts", field="--texts-out")
    targets = [p.resolve() for _, p in plan] + [p.resolve() for p in (texts_out, models_out) if p is not None]
    if len(set(targets)) != len(targets):
        raise InputError("two outputs name the same file", field="--out")

    temps: list[tuple[Path, Path]] = []
    summary: dict[str, Any] = {
        "format": fmt,
        "sources": [str(s) for s in sources],
        "outputs": {},
        "counts": imported.counts,
        "notes": imported.notes,
    }
    try:
        for kind, target in plan:
            tmp = temp_beside(target)
            temps.append((tmp, target))
            write_table(imported.tables[kind], tmp)
            try:
                table = read_table(tmp, kind=kind)
            except InputError as err:
                raise _invalid(err, kind, target, tmp) from None
            summary["outputs"][str(target)] = {"kind": kind, "rows": len(table)}
        if texts_out is not None and imported.texts is not None:  # (checked above: --texts-out needs texts)
            tmp = temp_beside(texts_out)
            temps.append((tmp, texts_out))
            _write_texts(imported.texts, tmp, gz=texts_out.suffix == ".gz")
            summary["outputs"][str(texts_out)] = {"kind": "texts", "rows": len(imported.texts)}
        if models_out is not None:
            tmp = temp_beside(models_out)
            temps.append((tmp, models_out))
            tmp.write_text(_families_toml(families, sources), encoding="utf-8")
            summary["outputs"][str(models_out)] = {"kind": "models", "rows": len(families)}
            names = [n for n in names if n not in families]
        for tmp, target in temps:
            os.replace(tmp, target)
    finally:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
    skipped = [k for k in references if k not in {kind for kind, _ in plan}]
    summary["names_not_in_registry"] = names
    if families and models_out is None:
        imported.notes.append(
            f"{len(families)} of these names have a family in the source: --models-out FILE writes them as a models file"
        )
    if canonical:
        summary["unknown_models"] = unknown
    if as_json:
        echo_json(summary)
        return
    for path, info in summary["outputs"].items():
        click.echo(
            f"wrote families of {info['rows']} names to {path}"
            if info["kind"] == "models"
            else f"wrote {info['rows']} {info['kind']} rows to {path}"
        )
    for key, value in imported.counts.items():
        click.echo(f"  {key}: {value}")
    for note in imported.notes:
        click.echo(f"  note: {note}")
    for kind in skipped:
        hint = f"add --reference-out {kind}=FILE"
        click.echo(f"  not written: the {kind} table ({hint})")
    if canonical and unknown:
        click.echo(f"  {unknown} model names are not in the registry and were kept as they are")
    for line in unknown_names_lines(
        names, ("name is not in the model registry", "names are not in the model registry"), indent="  "
    ):
        click.echo(line)


def _families_toml(families: dict[str, str], sources: Iterable[Path]) -> str:
    """A models file giving each name its family (`nepotism.models.loading`'s ``[families]``)."""
    by_family: dict[str, list[str]] = {}
    for name, family in sorted(families.items()):
        by_family.setdefault(family, []).append(name)
    lines = [
        f"# written by nepotism import from {', '.join(str(s) for s in sources)}: the family of each name the",
        "# model registry did not know, as the source's family column gives it (pass with --models)",
        "",
        "[families]",
    ]
    lines += [
        f"{json.dumps(family, ensure_ascii=False)} = [{', '.join(json.dumps(n, ensure_ascii=False) for n in names)}]"
        for family, names in sorted(by_family.items())
    ]
    return "\n".join(lines) + "\n"
