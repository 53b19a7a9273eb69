"""Batched reads for replaying a run from the cache: only the columns a replay uses, as tuples.

`Store.get_calls` returns full `CachedCall` records (13 columns, the stored request included);
a rerun that finds every call cached needs only what rebuilds each completion, so `call_rows`
selects those columns and leaves the JSON undecoded. `judged_counts` is `Store.judged_calls`
restricted to given call keys (an index lookup per key rather than a scan of every judgment), and
`judged` the judgments themselves (call key, id and status) read from given calls.
Both read; nothing here writes. When the keys asked for are a large share of the table (a rerun
of the experiment that filled it), one sequential scan of the table is cheaper than an index seek
per key, so the table is scanned and filtered (the size comes from ``MAX(rowid)``, an O(log n)
upper bound); otherwise keys are looked up sorted, ``_BATCH`` at a time, so each batch walks one
stretch of the key index; a connection that does not memory-map the file yet is given
``PRAGMA mmap_size`` (each call row is most of a page, read at random: mapping the file saves a
read system call and a copy per row; SQLite falls back to ordinary reads where mapping is not
possible).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from nepotism.store.database import Store

__all__ = ["ROW_FIELDS", "call_rows", "call_statuses", "judged", "judged_counts"]

#: The fields of each `call_rows` tuple, in order.
ROW_FIELDS = ("text", "logprobs", "usage", "response", "latency_s", "status", "error")
_BATCH = 500
_MMAP_BYTES = 1 << 30
_SCAN_SHARE = 0.6  # scan the whole table when the keys are at least this share of its rows
_CALL_COLUMNS = "key, text, logprobs, usage, response, latency_s, status, error"


def _scan(conn: sqlite3.Connection, table: str, wanted: int) -> bool:
    most = conn.execute(f"SELECT MAX(rowid) FROM {table}").fetchone()[0] or 0
    return wanted >= _SCAN_SHARE * most


def _connection(store: Store) -> sqlite3.Connection:
    conn = store._conn()
    if conn.execute("PRAGMA mmap_size").fetchone()[0] == 0:
        conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
    return conn


def _chunks(keys: set[str]) -> Iterator[tuple[list[str], str]]:
    unique = sorted(keys)
    for start in range(0, len(unique), _BATCH):
        chunk = unique[start : start + _BATCH]
        yield chunk, ",".join("?" * len(chunk))


def call_rows(store: Store, keys: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """``{key: (text, logprobs JSON, usage JSON, response JSON, latency_s, status, error)}`` for
    the stored calls among ``keys`` (ok and failed); missing keys are absent."""
    conn = _connection(store)
    found: dict[str, tuple[Any, ...]] = {}
    wanted = set(keys)
    if wanted and _scan(conn, "calls", len(wanted)):
        for row in conn.execute(f"SELECT {_CALL_COLUMNS} FROM calls"):
            if row[0] in wanted:
                found[row[0]] = row[1:]
        return found
    for chunk, marks in _chunks(wanted):
        for row in conn.execute(f"SELECT {_CALL_COLUMNS} FROM calls WHERE key IN ({marks})", chunk):
            found[row[0]] = row[1:]
    return found


def judged_counts(store: Store, keys: Sequence[str]) -> dict[str, int]:
    """How many parsed or unparsed judgments each of ``keys`` backs (keys with none are absent),
    counted as `Store.judged_calls` counts them."""
    conn = _connection(store)
    out: dict[str, int] = {}
    wanted = set(keys)
    if wanted and _scan(conn, "judgments", len(wanted)):
        # one pass in table order (grouping by the index would visit the rows in key order)
        rows = conn.execute("SELECT call_key FROM judgments NOT INDEXED WHERE call_key IS NOT NULL AND status != 'failed'")
        for (key,) in rows:
            if key in wanted:
                out[key] = out.get(key, 0) + 1
        return out
    for chunk, marks in _chunks(wanted):
        sql = f"SELECT call_key, COUNT(*) FROM judgments WHERE call_key IN ({marks}) AND status != 'failed' GROUP BY call_key"
        out.update(conn.execute(sql, chunk))
    return out


def judged(store: Store, keys: Sequence[str]) -> dict[tuple[str, str], str]:
    """``{(call key, judgment id): status}`` of the parsed or unparsed judgments read from the
    calls ``keys`` (a judgment stored failed, or read from another call, is absent)."""
    conn = _connection(store)
    out: dict[tuple[str, str], str] = {}
    wanted = set(keys)
    if wanted and _scan(conn, "judgments", len(wanted)):
        rows = conn.execute(
            "SELECT call_key, id, status FROM judgments NOT INDEXED WHERE call_key IS NOT NULL AND status != 'failed'"
        )
        for key, ident, status in rows:
            if key in wanted:
                out[key, ident] = status
        return out
    for chunk, marks in _chunks(wanted):
        sql = f"SELECT call_key, id, status FROM judgments WHERE call_key IN ({marks}) AND status != 'failed'"
        for key, ident, status in conn.execute(sql, chunk):
            out[key, ident] = status
    return out


def call_statuses(store: Store, keys: Sequence[str]) -> dict[str, str]:
    """``{key: status}`` (``ok`` or ``failed``) of the stored calls among ``keys``; missing keys
    are absent. Reads only the key and status columns."""
    conn = _connection(store)
    found: dict[str, str] = {}
    for chunk, marks in _chunks(set(keys)):
        for key, status in conn.execute(f"SELECT key, status FROM calls WHERE key IN ({marks})", chunk):
            found[key] = status
    return found
