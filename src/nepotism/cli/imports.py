"""``nepotism import``: convert published judge outputs into recorded-judgment tables."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from nepotism._files import temp_beside

__all__ = ["command"]

_FORMATS = ("alpaca-eval-compact", "alpaca-eval", "mbpp-selfpref", "judgebench")
_REFERENCE_KINDS = ("preference-ref", "correctness-ref", "rubric-ref")


def _write_texts(texts, path: Path, *, gz: bool) -> None:
    """One JSON object per line; NaN and None become null."""
    import gzip

    opener = (lambda: gzip.open(path, "wt", encoding="utf-8")) if gz else (lambda: open(path, "w", encoding="utf-8"))
    with opener() as handle:
        for record in texts.astype(object).where(texts.notna(), None).to_dict(orient="records"):
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def _canonicalise(imported) -> int:
    """Replace model and judge names with registry ids, keeping @tags; return how many stayed unknown."""
    from nepotism.errors import InputError

    try:
        from nepotism.models import default_registry
    except ImportError:
        raise InputError("--canonical needs the model registry (nepotism.models.default_registry)") from None
    registry = default_registry()
    unknown: set[str] = set()

    def one(name):
        if not isinstance(name, str):
            return name
        base, sep, tag = name.partition("@")
        try:
            return registry.resolve(base) + sep + tag
        except KeyError:
            unknown.add(base)
            return name

    for frame in imported.tables.values():
        for column in ("judge", "model", "model_a", "model_b", "winner"):
            if column in frame:
                frame[column] = frame[column].map(one)
    if imported.texts is not None:
        imported.texts["model"] = imported.texts["model"].map(one)
    return len(unknown)


@click.command("import")
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--format", "fmt", required=True, type=click.Choice(_FORMATS), help="Source format.")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Main table (.csv, .jsonl or .parquet; .gz allowed for CSV/JSONL).")
@click.option("--reference-out", type=click.Path(dir_okay=False, path_type=Path),
              help="Companion reference table (preference-ref or correctness-ref), when the source has one.")
@click.option("--texts-out", type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL of texts: instance_id, prompt, tests, model, text.")
@click.option("--judge", default=None, help="Judge model name for every row (AlpacaEval: overrides the annotator map).")
@click.option("--instructions", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="AlpacaEval instructions.json (instruction_id, instruction) for matching instance ids.")
@click.option("--verdicts", type=click.Choice(["reply", "probabilities"]), default=None,
              help="mbpp-selfpref only: read each verdict from the judge's reply (default) or as the most "
                   "probable of the recorded [A, T, B] probabilities.")
@click.option("--canonical", is_flag=True, help="Write canonical model-registry ids instead of the source's names.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def command(sources, fmt, out, reference_out, texts_out, judge, instructions, verdicts, canonical, as_json):
    """Import published judgments in SOURCE files into recorded tables.

    Formats: alpaca-eval-compact (this project's annotations_compact.csv.gz), alpaca-eval
    (AlpacaEval annotations.json), mbpp-selfpref (paper 004's <judge>_<other>_eval.jsonl),
    judgebench (JudgeBench data or judge-output .jsonl). Every table is validated by reading it back
    before any output replaces its target: nothing is written if anything fails.
    """
    from nepotism.errors import InputError
    from nepotism.importers import import_source
    from nepotism.tables import read_table, write_table

    options = {}
    if judge is not None:
        options["judge"] = judge
    if instructions is not None:
        options["instructions"] = instructions
    if verdicts is not None:
        if fmt != "mbpp-selfpref":
            raise InputError("--verdicts is only for --format mbpp-selfpref", field="--verdicts")
        options["verdicts"] = verdicts
    imported = import_source(fmt, sources, **options)
    unknown = _canonicalise(imported) if canonical else 0

    references = [k for k in imported.tables if k in _REFERENCE_KINDS and k != imported.main]
    plan: list[tuple[str, Path]] = [(imported.main, out)]
    if reference_out is not None:
        if not references:
            raise InputError(f"the {fmt} source has no companion reference table (its main table is {imported.main})",
                             field="--reference-out")
        plan.append((references[0], reference_out))
    if texts_out is not None and imported.texts is None:
        raise InputError(f"the {fmt} source carries no texts (use --format alpaca-eval for AlpacaEval texts)", field="--texts-out")
    targets = [p.resolve() for _, p in plan] + ([texts_out.resolve()] if texts_out is not None else [])
    if len(set(targets)) != len(targets):
        raise InputError("two outputs name the same file", field="--out")

    temps: list[tuple[Path, Path]] = []
    summary = {"format": fmt, "sources": [str(s) for s in sources], "outputs": {}, "counts": imported.counts,
               "notes": imported.notes}
    try:
        for kind, target in plan:
            tmp = temp_beside(target)
            temps.append((tmp, target))
            write_table(imported.tables[kind], tmp)
            try:
                table = read_table(tmp, kind=kind)
            except InputError as err:
                raise InputError(f"the importer produced an invalid {kind} table: {err.message}",
                                 path=str(target), line=err.line, field=err.field) from None
            summary["outputs"][str(target)] = {"kind": kind, "rows": len(table)}
        if texts_out is not None:
            tmp = temp_beside(texts_out)
            temps.append((tmp, texts_out))
            _write_texts(imported.texts, tmp, gz=texts_out.suffix == ".gz")
            summary["outputs"][str(texts_out)] = {"kind": "texts", "rows": len(imported.texts)}
        for tmp, target in temps:
            os.replace(tmp, target)
    finally:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
    skipped = [k for k in references if reference_out is None]
    if canonical:
        summary["unknown_models"] = unknown
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    for path, info in summary["outputs"].items():
        click.echo(f"wrote {info['rows']} {info['kind']} rows to {path}")
    for key, value in imported.counts.items():
        click.echo(f"  {key}: {value}")
    for note in imported.notes:
        click.echo(f"  note: {note}")
    for kind in skipped:
        click.echo(f"  not written: the {kind} table (pass --reference-out FILE)")
    if canonical and unknown:
        click.echo(f"  {unknown} model names are not in the registry and were kept as they are")
