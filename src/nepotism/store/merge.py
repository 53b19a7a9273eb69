"""Merging stores: the stores of an experiment's shards (or of separate runs) into one new store.

`merge_stores` copies every table of each input into a new store file: runs, instances,
responses, calls, judgments, references, imports and the annotation tables (claims on calls
being sent are leases of live processes and are not copied). Rows are matched by their key; a
row already present with the same *content* is a duplicate and is skipped, a row with the same
key but different content is a conflict: nothing is written and an `InputError` names the
input, the table, the key and the differing column. What counts as content, per table:

* runs: every column (run ids are unique per run);
* instances: prompt, reference answer, rubric, category, metadata (not when it was added);
* responses: instance, generator, text (their id is a hash of these);
* calls: backend, model, request, text, log-probabilities, status and error — not the raw
  response body (servers stamp ids and times into it), usage, latency, time or run. A failed call
  and an ok call under one key are no conflict: the ok one is kept, as `Store.put_call` does;
  of two failed calls the first is kept;
* judgments: every column read from the call (status, verdict, score, raw output, label
  probabilities, mass, log-probabilities, top-k, warnings, reason, template) — not usage,
  latency, call key, source, run or time. A failed judgment gives way to a parsed or unparsed one
  under the same id, as `Store.add_judgments` does;
* references: models, winner, correct, score, met (not the source or time);
* imports and annotation labels (logs without a natural key): a row equal in every column but its
  row number is a duplicate; annotation items and orders: every column but the time.

The judge-plan memo (``judge_memo`` and ``judge_memo_pairs``, `nepotism.store.memo`) is not
copied: it is a cache of what a chunk or window of judge tasks needs, which the merged store's first rerun of the experiment writes again.

Every input must be a nepotism store at this package's schema version (open an older one once
with this version, e.g. ``nepotism store info --store OLD.db``, to migrate it). The output must
not exist yet; the merged store is built in a temporary file beside it and appears under its name
only when complete (a hard link, which never replaces a file; then the temporary name is removed).
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from nepotism.errors import InputError
from nepotism.store._migrate import SCHEMA_VERSION

__all__ = ["MergeSummary", "merge_stores"]


@dataclass(frozen=True)
class _Table:
    name: str
    key: tuple[str, ...]  # () = no natural key: every column but `id` is the key
    content: tuple[str, ...] = ()  # compared when the key matches ("*" = every column)
    ignored: tuple[str, ...] = ()  # with content "*": columns left out of the comparison
    upgrade: str | None = None  # a stored row with this status gives way to a row without it


_TABLES = (
    _Table("runs", ("id",), ("*",)),
    _Table("instances", ("id",), ("prompt", "reference_answer", "rubric", "category", "metadata")),
    _Table("responses", ("id",), ("instance_id", "generator", "text")),
    _Table("calls", ("key",), ("backend", "model", "request", "text", "logprobs", "status", "error"), upgrade="failed"),
    _Table(
        "judgments",
        ("id",),
        ("*",),
        ignored=("usage", "latency_s", "call_key", "source", "run_id", "created_at"),
        upgrade="failed",
    ),
    _Table("references", ("id",), ("instance_id", "kind", "models", "winner", "correct", "score", "rubric_id", "met")),
    _Table("imports", ()),
    _Table("instance_categories", ("instance_id",), ("category",)),
    _Table("annotation_items", ("collection", "item_id"), ("*",), ignored=("created_at",)),
    _Table("annotation_orders", ("collection", "item_id", "annotator"), ("*",), ignored=("created_at",)),
    _Table("annotation_labels", ()),
)


@dataclass(frozen=True)
class MergeSummary:
    """What `merge_stores` wrote: the output, its inputs, and per table the rows added from the
    inputs (``added``), the duplicates skipped (``duplicates``) and the failed rows replaced by
    successful ones (``upgraded``). ``unfinished_runs`` lists runs still ``running`` in an input
    (a shard that had not ended when its store was copied)."""

    out: str
    inputs: tuple[str, ...]
    added: dict[str, int] = field(default_factory=dict)
    duplicates: dict[str, int] = field(default_factory=dict)
    upgraded: dict[str, int] = field(default_factory=dict)
    unfinished_runs: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "out": self.out,
            "inputs": list(self.inputs),
            "added": dict(self.added),
            "duplicates": dict(self.duplicates),
            "upgraded": dict(self.upgraded),
            "unfinished_runs": list(self.unfinished_runs),
        }


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _columns(conn: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA {schema}.table_info({_q(table)})")]


def _check_input(conn: sqlite3.Connection, path: str) -> None:
    names = {row[0] for row in conn.execute("SELECT name FROM src.sqlite_master WHERE type = 'table'")}
    if "_migrations" not in names or "calls" not in names:
        raise InputError("not a nepotism store (no migration log or calls table)", path=path)
    (version,) = conn.execute("SELECT MAX(version) FROM src._migrations").fetchone()
    if version != SCHEMA_VERSION:
        raise InputError(
            f"the store is at schema version {version}, this nepotism writes {SCHEMA_VERSION}: "
            "open it once with this version (nepotism store info --store FILE) to migrate "
            "it, then merge",
            path=path,
        )


def _same(columns: Sequence[str]) -> str:
    return " AND ".join(f"m.{_q(c)} IS s.{_q(c)}" for c in columns) or "1"


def _merge_table(conn: sqlite3.Connection, table: _Table, path: str, summary: MergeSummary) -> None:
    columns = _columns(conn, "main", table.name)
    if not columns:
        return
    if _columns(conn, "src", table.name) != columns:
        raise InputError(f"table {table.name} has other columns than this nepotism's", path=path)
    names = ", ".join(_q(c) for c in columns)
    src, main = f"src.{_q(table.name)}", f"main.{_q(table.name)}"
    total = conn.execute(f"SELECT COUNT(*) FROM {src}").fetchone()[0]
    if not table.key:  # a log: the same row twice is one row
        data = [c for c in columns if c != "id"]
        picked = ", ".join(_q(c) for c in data)
        before = conn.total_changes
        conn.execute(
            f"INSERT INTO {main} ({picked}) SELECT {picked} FROM {src} s "
            f"WHERE NOT EXISTS (SELECT 1 FROM {main} m WHERE {_same(data)})"
        )
        added = conn.total_changes - before
        summary.added[table.name] = summary.added.get(table.name, 0) + added
        summary.duplicates[table.name] = summary.duplicates.get(table.name, 0) + total - added
        return
    content = (
        [c for c in columns if c not in table.key and c not in table.ignored] if table.content == ("*",) else list(table.content)
    )
    join = " AND ".join(f"m.{_q(k)} IS s.{_q(k)}" for k in table.key)
    differs = " OR ".join(f"m.{_q(c)} IS NOT s.{_q(c)}" for c in content)
    exempt = f" AND m.status != '{table.upgrade}' AND s.status != '{table.upgrade}'" if table.upgrade else ""
    keys = ", ".join(f"s.{_q(k)}" for k in table.key)
    pairs = ", ".join(f"m.{_q(c)}, s.{_q(c)}" for c in content)
    row = conn.execute(
        f"SELECT {keys}, {pairs} FROM {src} s JOIN {main} m ON {join} WHERE ({differs}){exempt} LIMIT 1"
    ).fetchone()
    if row is not None:
        key = "/".join(str(v) for v in row[: len(table.key)])
        values = row[len(table.key) :]
        column = next(c for i, c in enumerate(content) if values[2 * i] != values[2 * i + 1])
        raise InputError(
            f"conflict in table {table.name}, key {key}: the stores hold different {column} "
            "under the same key; nothing was written",
            path=path,
        )
    upgraded = 0
    if table.upgrade:
        before = conn.total_changes
        settable = [c for c in columns if c not in table.key]
        conn.execute(
            f"UPDATE {main} AS m SET ({', '.join(_q(c) for c in settable)}) = "
            f"(SELECT {', '.join('s.' + _q(c) for c in settable)} FROM {src} s WHERE {join}) "
            f"WHERE m.status = '{table.upgrade}' AND EXISTS "
            f"(SELECT 1 FROM {src} s WHERE {join} AND s.status != '{table.upgrade}')"
        )
        upgraded = conn.total_changes - before
        summary.upgraded[table.name] = summary.upgraded.get(table.name, 0) + upgraded
    before = conn.total_changes
    try:
        conn.execute(
            f"INSERT INTO {main} ({names}) SELECT {names} FROM {src} s WHERE NOT EXISTS (SELECT 1 FROM {main} m WHERE {join})"
        )
    except sqlite3.IntegrityError as err:  # e.g. two annotation collections of one name
        raise InputError(f"conflict in table {table.name}: {err}; nothing was written", path=path) from None
    added = conn.total_changes - before
    summary.added[table.name] = summary.added.get(table.name, 0) + added
    summary.duplicates[table.name] = summary.duplicates.get(table.name, 0) + total - added - upgraded


def merge_stores(inputs: Sequence[str | Path], out: str | Path) -> MergeSummary:
    """Merge the stores ``inputs`` into the new store ``out`` (see the module docstring).

    Raises `InputError` (nothing written) when ``out`` exists or its folder does not, when an
    input is missing, not a store or at another schema version, and on the first conflict.
    """
    from nepotism.store.database import Store

    out = Path(out)
    if not inputs:
        raise InputError("give at least one store to merge", field="STORES")
    if out.exists():
        raise InputError("the output exists; merge writes a new store only (choose another --out)", path=str(out))
    if not out.parent.is_dir():
        raise InputError("the output's folder does not exist", path=str(out.parent))
    paths = [Path(p) for p in inputs]
    for path in paths:
        if not path.is_file():
            raise InputError("no store file here", path=str(path))
    summary = MergeSummary(out=str(out), inputs=tuple(str(p) for p in paths))
    tmp = out.with_name(f".{out.name}.merge-{uuid.uuid4().hex[:8]}.tmp")
    unfinished: list[str] = []
    try:
        Store(tmp).close()  # the current schema, every migration applied
        conn = sqlite3.connect(f"file:{quote(str(tmp.resolve()))}", uri=True, isolation_level=None)
        try:
            conn.execute("PRAGMA foreign_keys = OFF")  # rows arrive table by table
            for path in paths:
                # a cleanly closed store (no -wal) is read as immutable: no -wal/-shm file appears
                # beside it; one with a WAL is read through it
                flags = "mode=ro" if Path(f"{path}-wal").exists() else "mode=ro&immutable=1"
                uri = f"file:{quote(str(path.resolve()))}?{flags}"
                try:
                    conn.execute("ATTACH DATABASE ? AS src", (uri,))
                    _check_input(conn, str(path))
                except sqlite3.DatabaseError as err:
                    raise InputError(f"cannot read the store ({err})", path=str(path)) from None
                conn.execute("BEGIN IMMEDIATE")
                unfinished += [r for (r,) in conn.execute("SELECT id FROM src.runs WHERE status = 'running'")]
                for table in _TABLES:
                    _merge_table(conn, table, str(path), summary)
                conn.execute("COMMIT")
                conn.execute("DETACH DATABASE src")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
        for suffix in ("-wal", "-shm"):
            Path(f"{tmp}{suffix}").unlink(missing_ok=True)
        try:
            os.link(tmp, out)  # never replaces a file that appeared meanwhile
        except FileExistsError:
            raise InputError("the output appeared while merging; nothing was replaced", path=str(out)) from None
        except OSError:
            if out.exists():
                raise
            os.replace(tmp, out)
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{tmp}{suffix}").unlink(missing_ok=True)
    return MergeSummary(
        out=summary.out,
        inputs=summary.inputs,
        added=summary.added,
        duplicates=summary.duplicates,
        upgraded=summary.upgraded,
        unfinished_runs=tuple(unfinished),
    )
