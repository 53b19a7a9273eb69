"""``nepotism store``: look inside a store file and export its tables.

Only argument handling and printing live here; the work is done by `nepotism.store`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from nepotism.cli._common import echo_json

from nepotism.errors import InputError

if TYPE_CHECKING:
    from nepotism.records import Judgment, Reference
    from nepotism.store import Store

__all__ = ["command"]

_STORE_HELP = "Store file (default: $NEPOTISM_STORE, else ./nepotism.db)."


def _open_existing(path: Path | None) -> Store:
    from nepotism.store import Store, default_store_path

    path = default_store_path() if path is None else path
    if not path.is_file():
        raise InputError("no store file here", path=str(path))
    return Store.read_only(path)  # read-only where it cannot be written (info and export only read)


@click.group("store")
def command() -> None:
    """Inspect and export the SQLite store of runs, model calls and judgments."""


@command.command("info")
@click.argument("path", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--store", "store_path", type=click.Path(path_type=Path), default=None, help=_STORE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def info(path: Path | None, store_path: Path | None, as_json: bool) -> None:
    """Show the schema version, size and row counts of a store: PATH, or --store (the same)."""
    if path is not None and store_path is not None and path != store_path:
        raise InputError(f"two stores named: {path} and --store {store_path}; give one", field="--store")
    with _open_existing(path or store_path) as store:
        summary = store.info()
    if as_json:
        echo_json(summary)
        return
    click.echo(f"store           {summary['path']}")
    click.echo(f"schema version  {summary['schema_version']}")
    click.echo(f"size            {summary['size_bytes'] / 1e6:.2f} MB")
    click.echo("rows")
    for table, count in summary["counts"].items():
        click.echo(f"  {table:<14}{count:>10,}")
    for title, key in (
        ("calls by status", "call_status"),
        ("judgments by status", "judgment_status"),
        ("judgments by judge", "judgments_per_judge"),
        ("runs by status", "run_status"),
    ):
        if summary[key]:
            click.echo(title)
            for name, count in summary[key].items():
                click.echo(f"  {name:<40}{count:>10,}")


@command.command("export")
@click.argument("table")
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path),
    required=True,
    help="File to write (replaced atomically); with --partition-by, the dataset folder to create.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "csv", "jsonl"]),
    default=None,
    help="Output format (default: from the file extension; parquet with --partition-by).",
)
@click.option("--protocol", default=None, help="With TABLE=judgments: which protocol's judgments to write.")
@click.option(
    "--partition-by",
    "partition_by",
    type=click.Choice(["judge"]),
    default=None,
    help="Write judgments as a Parquet dataset folder with one judge=NAME subfolder per judge "
    "(for `nepotism metrics FOLDER`). The folder appears only when complete.",
)
@click.option("--replace", is_flag=True, help="With --partition-by: replace an existing dataset folder.")
@click.option("--store", "store_path", type=click.Path(path_type=Path), default=None, help=_STORE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def export(
    table: str,
    out: Path,
    fmt: str | None,
    protocol: str | None,
    partition_by: str | None,
    replace: bool,
    store_path: Path | None,
    as_json: bool,
) -> None:
    """Write TABLE to a parquet, CSV or JSON Lines file, or judgments to a partitioned Parquet dataset.

    TABLE is judgments (public recorded-judgment format; pairwise, pointwise and rubric can be
    named directly), or one of runs, instances, responses, calls, references, imports.
    With --partition-by judge, --out is a new folder (an existing one is refused, exit 2, unless
    --replace).
    """
    from nepotism.store.export import format_from_suffix

    if replace and partition_by is None:
        raise InputError("--replace goes with --partition-by (a file export always replaces its file)", field="--replace")
    fmt = fmt or ("parquet" if partition_by else format_from_suffix(out))
    with _open_existing(store_path) as store:
        rows = store.export(table, out, fmt=fmt, protocol=protocol, partition_by=partition_by, replace=replace)
    summary = {"table": table, "out": str(out), "format": fmt, "rows": rows}
    if as_json:
        echo_json(summary | ({"partition_by": partition_by} if partition_by else {}))
    else:
        what = f" as a dataset partitioned by {partition_by}" if partition_by else ""
        click.echo(f"wrote {rows:,} rows of {table} to {out}{what}")


@command.command("load")
@click.argument("table", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--kind", default=None, help="Table kind, when the columns do not tell.")
@click.option("--store", "store_path", type=click.Path(path_type=Path), default=None, help=_STORE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print what was loaded as JSON.")
def load(table: Path, kind: str | None, store_path: Path | None, as_json: bool) -> None:
    """Load a recorded table (judgments or references) into the store.

    The table is validated completely before anything is written; loading the same file twice adds
    nothing the second time (records are keyed by their content ids). A judged table's ``category``
    column is kept per instance, so `nepotism store export` writes it back.
    """
    import hashlib

    from nepotism.store import Store, default_store_path
    from nepotism.table_records import instance_categories, table_records
    from nepotism.tables import JUDGED_KINDS, read_table

    parsed = read_table(table, kind=kind)
    records = table_records(parsed)
    categories = instance_categories(parsed) if parsed.kind in JUDGED_KINDS else {}
    digest = hashlib.sha256(table.read_bytes()).hexdigest()
    with Store(default_store_path() if store_path is None else store_path) as store:
        if parsed.kind in JUDGED_KINDS:
            store.add_instance_categories(categories, source=str(table))  # checked before any judgment is written
            # table_records gives a judged kind's rows as Judgments and a reference kind's as References
            added = store.add_judgments(cast("list[Judgment]", records), source=str(table))
        else:
            added = store.add_references(cast("list[Reference]", records))
        store.record_import(table, kind=parsed.kind, rows=len(parsed), sha256=digest)
    summary = {"file": str(table), "kind": parsed.kind, "rows": len(parsed), "added": added}
    if as_json:
        echo_json(summary)
    else:
        click.echo(f"loaded {summary['rows']:,} {parsed.kind} rows from {table} ({added:,} new)")


@command.command("merge")
@click.argument("stores", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="New store file to write (refused if it exists; appears only when complete).",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was merged as JSON.")
def merge(stores: tuple[Path, ...], out: Path, as_json: bool) -> None:
    """Merge STORES (e.g. the stores of an experiment's shards) into the new store --out.

    Every table is copied (runs, instances, responses, calls, judgments, references, imports,
    annotations); rows present in several stores with the same content are kept once. The same
    key with different content (two answers to one call, two verdicts under one judgment id) is
    a conflict: exit 2 naming the store, table and key, and nothing is written.
    """
    from nepotism.store.merge import merge_stores

    summary = merge_stores(stores, out)
    if as_json:
        echo_json(summary.as_dict())
        return
    click.echo(f"merged {len(summary.inputs)} stores into {summary.out}")
    for table, added in summary.added.items():
        extra = []
        if summary.duplicates.get(table):
            extra.append(f"{summary.duplicates[table]:,} duplicates skipped")
        if summary.upgraded.get(table):
            extra.append(f"{summary.upgraded[table]:,} failed rows replaced by successful ones")
        click.echo(f"  {table:<18}{added:>10,} rows" + (f" ({', '.join(extra)})" if extra else ""))
    if summary.unfinished_runs:
        click.echo(
            f"warning: {len(summary.unfinished_runs)} run(s) had not ended in their store "
            f"({', '.join(summary.unfinished_runs)}): the merge holds what they had stored",
            err=True,
        )
