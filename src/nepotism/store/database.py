"""`Store`: the SQLite file holding runs, instances, responses, model calls, judgments and imports.

Each thread gets its own connection (opened on first use, all closed by `Store.close`); every
write is one transaction, so a killed process leaves the file consistent, and WAL plus a busy
timeout let several processes append to the same file. Open one `Store` per process (do not
share one across ``fork``). What the store leaves out: it never decides whether a failed call
should be retried and never interprets a call — judging and the runner do that.

A store opened read-only (`Store.read_only`: its file or folder cannot be written, a read-only
mount, a shared copy) is read at its own version, and a run can still be served from it whole:
the writes a complete rerun makes change nothing there (its instances, responses, judgments and
references are stored as they are), so each is checked instead of written — nothing to change,
nothing done; anything to add or change is a `StoreWriteError` naming the store, why it cannot be
written and what the run would write. Such a run is not recorded among the runs, and writes no
judge-plan memo rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nepotism import _process
from nepotism.credentials import known_secrets, redact_text, scrub
from nepotism.errors import InputError
from nepotism.records import Instance, Judgment, Reference, Response
from nepotism.store import _codec
from nepotism.store._migrate import StoreFullError, StoreWriteError, connect, describe_disk, migrate, schema_version, unwritable
from nepotism.store.calls import (
    _CALL_COLUMNS,
    CALL_STATUSES,
    CachedCall,
    _call_from_row,
)

__all__ = ["CLAIM_LEASE_S", "InstanceConflict", "RUN_STATUSES", "Store", "TABLES", "default_store_path"]

#: The data tables of a store, in dependency order.
TABLES = ("runs", "instances", "responses", "calls", "judgments", "references", "imports")
#: How a run can end.
RUN_STATUSES = ("done", "failed", "interrupted")
_KEY = re.compile(r"[0-9a-f]{64}")
_BATCH = 500  # keys per SELECT ... IN (...)
#: Seconds a claim on a call being sent lasts unless its owner renews it (see `Store.claim_call`).
CLAIM_LEASE_S = 60.0
#: Bytes set aside beside a store during a run for calls answered when its disk fills up, per
#: concurrency slot (a slot holds at most one answer not yet stored: `nepotism.runner.calls`), with
#: a floor; never more than a quarter of the space free when the run starts.
_RESERVE_PER_SLOT = 64 << 10
_RESERVE_MIN_BYTES = 1 << 20

_FILTERS = {
    "instances": ("id", "category"),
    "responses": ("id", "instance_id", "generator"),
    "judgments": (
        "id",
        "instance_id",
        "judge",
        "protocol",
        "status",
        "reason",
        "verdict",
        "rubric_id",
        "template_id",
        "condition",
        "replicate",
        "call_key",
        "source",
        "run_id",
    ),
    "references": ("id", "instance_id", "kind", "rubric_id", "winner", "source"),
}


def _owner_gone(seen: dict[tuple[int, str | None], bool], pid: int, start: str | None) -> bool:
    """`nepotism._process.gone` of a claim's or a run's owner, asked once per (pid, start) in ``seen``."""
    found = seen.get((pid, start))
    if found is None:
        found = seen[(pid, start)] = _process.gone(pid, start)
    return found


def default_store_path() -> Path:
    """``$NEPOTISM_STORE`` when set, else ``./nepotism.db``."""
    return Path(os.environ.get("NEPOTISM_STORE") or "nepotism.db")


def _where(table: str, filters: Mapping[str, Any]) -> tuple[str, list[Any]]:
    clauses, params = [], []
    for name, value in sorted(filters.items()):
        if name not in _FILTERS[table]:
            raise TypeError(f"cannot filter {table} by {name!r}; use one of {_FILTERS[table]}")
        if value is None:
            clauses.append(f"{name} IS NULL")
        elif isinstance(value, (list, tuple, set, frozenset)):
            values = list(value)
            clauses.append(f"{name} IN ({','.join('?' * len(values))})" if values else "0")
            params.extend(values)
        else:
            clauses.append(f"{name} = ?")
            params.append(value)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


class Store:
    """A nepotism store file; opening it creates it if needed and applies pending migrations."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        #: opened for reading only (`read_only`): nothing is written, not even a migration
        self.readonly = readonly
        #: why (for messages): the store's file or folder cannot be written, or it was asked
        self.readonly_reason = (unwritable(self.path) or "opened for reading only") if readonly else None
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        self._closed = False
        #: True once the disk filled during a run (see `reserve_space`): send no more calls
        self.low_space = False
        #: a run has set space aside (`reserve_space`), until `drop_reserve`
        self._reserving = False
        #: answered calls a full disk kept out of the store: written beside it (`_spill`), or lost
        self.spilled = 0
        self.lost = 0
        self.schema_version = migrate(self._conn(), self.path, readonly=readonly)
        if not readonly and self._spill_path.exists():
            self._store_spilled()

    @classmethod
    def open(cls, path: str | Path | None = None) -> Store:
        """Open ``path``, or `default_store_path` when ``path`` is None."""
        return cls(default_store_path() if path is None else path)

    @classmethod
    def read_only(cls, path: str | Path) -> Store:
        """Open an existing store for reading: read-only when the file or its folder cannot be
        written (a read-only mount, a shared copy), else as usual."""
        path = Path(path)
        return cls(path, readonly=unwritable(path) is not None)

    # -- connections and transactions -------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            with self._guard:
                if self._closed:
                    raise RuntimeError(f"the store {self.path} is closed")
                conn = connect(self.path, readonly=self.readonly)
                self._connections.append(conn)
            self._local.conn = conn
        return conn

    def cannot_write(self, count: int, what: str) -> StoreWriteError:
        """The error of a read-only store asked to add or change ``count`` ``what`` (the runner
        asks it too, for the calls a run on it would have to send)."""
        return StoreWriteError(
            f"the store is read-only ({self.readonly_reason}) and this run would add or change {count} "
            f"{what}: a run on a read-only store must find everything it needs stored already (a complete "
            "rerun); run it where the store can be written, or with another --store",
            path=str(self.path),
        )

    def _stored_ids(self, table: str, ids: Sequence[str], columns: str = "id") -> dict[str, tuple[Any, ...]]:
        """The rows of ``table`` among ``ids`` (its ``columns``, the id first), by id."""
        conn, found = self._conn(), {}
        for start in range(0, len(ids), _BATCH):
            chunk = list(ids[start : start + _BATCH])
            marks = ",".join("?" * len(chunk))
            for row in conn.execute(f'SELECT {columns} FROM "{table}" WHERE id IN ({marks})', chunk):
                found[row[0]] = tuple(row)
        return found

    def _read_only_insert(self, table: str, rows: Iterable[tuple[Any, ...]], what: str) -> int:
        """On a read-only store, ``INSERT OR IGNORE`` of ``rows`` (the id first) into ``table``:
        0 when every id is stored, else `cannot_write`."""
        ids = [row[0] for row in rows]
        missing = len(set(ids) - set(self._stored_ids(table, ids)))
        if missing:
            raise self.cannot_write(missing, what)
        return 0

    def _write_many(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> int:
        """Run ``sql`` for every row in one transaction (known secrets redacted from every text
        value, `_clean`); return the rows changed."""
        rows = map(_clean, rows)
        with self._transaction() as conn:
            before = conn.total_changes
            conn.executemany(sql, rows)
            return conn.total_changes - before

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT`` on this thread's connection; any exception rolls back
        (unless SQLite already has, as after a full disk) and propagates."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _close_thread_connection(self) -> None:
        """Close the calling thread's connection, if it has one (a thread that wrote for a while,
        `nepotism.store.writer.StoreWriter`, ends with it); the store stays open."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            return
        self._local.conn = None
        with self._guard:
            if conn in self._connections:
                self._connections.remove(conn)
        conn.close()

    def close(self) -> None:
        """Close every connection this store opened (from any thread)."""
        with self._guard:
            self._closed = True
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()
        self._local = threading.local()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    # -- the call cache -----------------------------------------------------------------------
    def get_call(self, key: str) -> CachedCall | None:
        """The stored call under ``key`` (ok or failed), or None."""
        sql = f"SELECT {_CALL_COLUMNS} FROM calls WHERE key = ?"
        row = self._conn().execute(sql, (key,)).fetchone()
        return None if row is None else _call_from_row(row)

    def get_calls(self, keys: Sequence[str]) -> dict[str, CachedCall]:
        """The stored calls among ``keys``, by key; missing keys are simply absent."""
        unique = list(dict.fromkeys(keys))
        conn, found = self._conn(), {}
        for start in range(0, len(unique), _BATCH):
            chunk = unique[start : start + _BATCH]
            sql = f"SELECT {_CALL_COLUMNS} FROM calls WHERE key IN ({','.join('?' * len(chunk))})"
            for row in conn.execute(sql, chunk):
                found[row[0]] = _call_from_row(row)
        return found

    def put_call(
        self,
        key: str,
        *,
        request: Mapping[str, Any],
        response: Mapping[str, Any] | None,
        text: str | None,
        logprobs: Any = None,
        usage: Mapping[str, Any] | None = None,
        latency_s: float | None = None,
        status: str = "ok",
        error: str | None = None,
        run_id: str | None = None,
    ) -> None:
        """Store one call, committed before returning; credentials in ``request`` are dropped.

        An existing ok call is never replaced (the second put is a no-op); an existing failed
        call is replaced by the new attempt. ``backend`` and ``model`` are read from ``request``.
        """
        row = _call_row(
            key=key,
            request=request,
            response=response,
            text=text,
            logprobs=logprobs,
            usage=usage,
            latency_s=latency_s,
            status=status,
            error=error,
            run_id=run_id,
        )
        try:
            self._keep_calls(lambda: self._conn().execute(_PUT_CALL, _clean(row)).rowcount, [_clean(row)])
        except sqlite3.IntegrityError as err:
            raise ValueError(f"cannot store call {key[:12]}…: {err} (unknown run_id?)") from err

    def put_calls(self, calls: Iterable[Mapping[str, Any]], *, release_owner: str | None = None) -> int:
        """Store several calls in one transaction (much cheaper per call than `put_call`).

        Each item holds ``key`` and the keyword arguments of `put_call`; the same rules apply.
        Returns how many rows were added or replaced. Nothing is stored if any item is invalid.
        With ``release_owner``, that owner's claims on these calls end in the same transaction
        (see `claim_calls`). A full disk during a run is met by the space set aside
        (`reserve_space`, `_keep_calls`).
        """
        at = _codec.now()  # one time for the rows of one transaction
        rows = [_clean(_call_row(**call, created_at=at)) for call in calls]
        if not rows:
            return 0
        try:
            return self._keep_calls(lambda: self._put_rows(rows, release_owner), rows)
        except sqlite3.IntegrityError as err:
            raise ValueError(f"cannot store calls: {err} (unknown run_id?)") from err

    def _put_rows(self, rows: list[tuple[Any, ...]], release_owner: str | None) -> int:
        with self._transaction() as conn:
            before = conn.total_changes
            conn.executemany(_PUT_CALL, rows)
            changed = conn.total_changes - before
            if release_owner is not None:
                conn.executemany("DELETE FROM call_claims WHERE key = ? AND owner = ?", [(row[0], release_owner) for row in rows])
        return changed

    # -- a full disk during a run -------------------------------------------------------------
    @property
    def _reserve_path(self) -> Path:
        return self.path.with_name(self.path.name + "-reserve")

    def reserve_space(self, slots: int = 1) -> None:
        """Prepare a run for a full disk, which must lose no answer it paid for.

        Sets disk aside beside the store (a ``-reserve`` file) for the answers not yet stored
        when the disk fills up: `_RESERVE_PER_SLOT` for each of the run's ``slots`` (its
        concurrency: the most answers it holds unstored), at least `_RESERVE_MIN_BYTES`, at most a
        quarter of the free space. Until `drop_reserve`, the first write that finds the disk full
        frees it and sets `low_space` (the runner sends nothing more); the calls answered and not
        yet stored are written into that room beside the store (`_keep_calls`), which takes them
        in when it is next opened, while the rows a later run makes again from the stored calls —
        judgments, responses, references, the judge-plan memo, claims — are no longer written
        (`_derived`). A reserve that cannot be written is left out (the disk is full already)."""
        if self.readonly:
            return
        self._reserving = True
        path = self._reserve_path
        try:
            stats = os.statvfs(self.path.parent)
            nbytes = min(max(_RESERVE_MIN_BYTES, slots * _RESERVE_PER_SLOT), stats.f_bavail * stats.f_frsize // 4)
            path.unlink(missing_ok=True)  # (never written through a link left at its name)
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(handle, b"\0" * nbytes)
                os.fsync(handle)
            finally:
                os.close(handle)
        except OSError:
            path.unlink(missing_ok=True)

    def drop_reserve(self) -> None:
        """Remove the reserve file (at the end of a run)."""
        if not self.readonly:
            self._reserve_path.unlink(missing_ok=True)
            self._reserving = False

    def _disk_full(self) -> bool:
        """On a full disk during a run (`reserve_space`): free the reserve, set `low_space`, and
        say so (True); outside a run False (the caller raises)."""
        if not self._reserving:
            return False
        self.low_space = True
        try:
            self._reserve_path.unlink(missing_ok=True)
        except OSError:
            pass
        return True

    def _keep_calls(self, write: Callable[[], int], rows: list[tuple[Any, ...]]) -> int:
        """Run ``write``, which stores the answered calls ``rows``; once the disk is full during a
        run (this write finds it so, or an earlier one did), write them instead as they are beside
        the store (`_spill`, ≈ 1 KB a call, into the room the reserve gave back, where SQLite's
        pages and WAL take ≈ 20), for the store to take in when it is next opened. Only a disk too
        full even for that loses them, counted in `lost` (the next run asks them again), while
        the calls still in flight are kept if they can be: the run ends with `full_disk_error`."""
        if not self.low_space:
            try:
                return write()
            except StoreFullError:
                if not self._disk_full():
                    raise
        try:
            self._spill(rows)
        except OSError:
            self.lost += len(rows)
            return 0
        self.spilled += len(rows)
        return len(rows)

    @property
    def _spill_path(self) -> Path:
        return self.path.with_name(self.path.name + "-unstored.jsonl")

    def _spill(self, rows: list[tuple[Any, ...]]) -> None:
        """Append call ``rows`` (as stored: secrets already redacted) to the spill file beside the
        store, one JSON array a line, flushed to disk before returning."""
        data = "".join(json.dumps(list(row)) + "\n" for row in rows).encode()  # (ASCII: \u escapes)
        handle = os.open(self._spill_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        try:
            os.write(handle, data)
            os.fsync(handle)
        finally:
            os.close(handle)

    def _store_spilled(self) -> None:
        """Store the calls a full disk left beside the store (`_spill`), in one transaction, then
        remove the file; a line cut short by a kill is left out (never acknowledged). A disk still
        full stops here, naming it: free space first."""
        rows = []
        with open(self._spill_path, "rb") as handle:
            for line in handle:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, list) and len(row) == _CALL_FIELDS:
                    rows.append(tuple(row))
        if rows:
            self._put_rows(rows, None)
        self._spill_path.unlink(missing_ok=True)

    def _derived(self, write: Callable[[], int]) -> int:
        """Run ``write``, which stores rows a later run makes again from the stored calls; once the
        disk is full during a run they are not written (0): the room left is for answered calls."""
        if self.low_space:
            return 0
        try:
            return write()
        except StoreFullError:
            if not self._disk_full():
                raise
            return 0

    def full_disk_error(self) -> StoreFullError:
        """The error a run stopped by a full disk ends with: every answer it was paid for stored
        (`spilled` beside the store, stored when it is next opened), or `lost`."""
        kept = "every call it was answered is stored (none lost"
        if self.spilled:
            kept += f"; {self.spilled} of them in {self._spill_path.name} beside it, stored when it is next opened"
        kept += ")"
        if self.lost:
            kept = f"{self.lost} answered calls could not be stored and will be asked again; the others are stored"
        return StoreFullError(
            f"the disk of the store is full ({describe_disk(self.path)}): the run stopped sending, and {kept}; "
            "free space, then run again to go on (no stored call is asked again)",
            path=str(self.path),
        )

    # -- claims on calls being sent ----------------------------------------------------------
    def claim_call(self, key: str, owner: str, *, lease_s: float = CLAIM_LEASE_S) -> str:
        """Claim the call ``key`` for ``owner`` before sending it; returns what to do:

        ``"done"`` — the call is already stored ok (use it, send nothing); ``"busy"`` — another
        owner holds a live claim (wait, then ask again); ``"claimed"`` — it is ``owner``'s for
        ``lease_s`` seconds (renew with `renew_claims`, end with `release_claims`). A claim whose
        lease has run out, or whose owner process no longer runs on this host (see `claim_calls`),
        is taken over.
        """
        return self.claim_calls([key], owner, lease_s=lease_s)[key]

    def claim_calls(self, keys: Sequence[str], owner: str, *, lease_s: float = CLAIM_LEASE_S) -> dict[str, str]:
        """`claim_call` for several calls in one transaction: ``{key: "done" | "busy" | "claimed"}``.

        A claim records its owner's host, pid and start time (`nepotism._process`), so that a claim
        of this host whose owner is gone — no such pid, a zombie, or the pid now another process's
        (another start time) — is taken over at once. A claim without a start time (written
        before migration 0010, or where /proc cannot tell) is held while its pid lives."""
        unique = list(dict.fromkeys(keys))
        if self.low_space:  # a full disk: nothing more is sent
            return dict.fromkeys(unique, "busy")
        try:
            return self._claim(unique, owner, lease_s)
        except StoreFullError:
            if not self._disk_full():
                raise
            return dict.fromkeys(unique, "busy")

    def _claim(self, unique: list[str], owner: str, lease_s: float) -> dict[str, str]:
        conn = self._conn()
        host, pid, start = self._owner()
        marks = ",".join("?" * len(unique))
        with self._transaction():
            done = {k for (k,) in conn.execute(f"SELECT key FROM calls WHERE status = 'ok' AND key IN ({marks})", unique)}
            now = time.time()
            held = {
                row[0]: row[1:]
                for row in conn.execute(
                    f"SELECT key, owner, host, pid, expires_at, owner_start FROM call_claims WHERE key IN ({marks})", unique
                )
            }
            gone: dict[tuple[int, str | None], bool] = {}  # (pid, start) -> gone, once per owner
            states: dict[str, str] = {}
            for key in unique:
                row = held.get(key)
                if key in done:
                    states[key] = "done"
                elif (
                    row is not None
                    and row[0] != owner
                    and row[3] > now
                    and not (row[1] == host and _owner_gone(gone, int(row[2]), row[4]))
                ):
                    states[key] = "busy"
                else:
                    states[key] = "claimed"
            claimed = [(k, owner, host, pid, now + lease_s, start) for k, state in states.items() if state == "claimed"]
            if claimed:
                conn.executemany(
                    "INSERT INTO call_claims (key, owner, host, pid, expires_at, owner_start) "
                    "VALUES (?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, host = excluded.host, "
                    "pid = excluded.pid, expires_at = excluded.expires_at, "
                    "owner_start = excluded.owner_start",
                    claimed,
                )
        return states

    def _owner(self) -> tuple[str, int, str | None]:
        """This process as a claim's or a run's owner: host name, pid and start
        (`nepotism._process.own_start`)."""
        return socket.gethostname(), os.getpid(), _process.own_start()

    def renew_claims(self, owner: str, *, lease_s: float = CLAIM_LEASE_S) -> int:
        """Extend every claim of ``owner`` by ``lease_s`` seconds from now; return how many."""
        return self._derived(
            lambda: (
                self._conn()
                .execute("UPDATE call_claims SET expires_at = ? WHERE owner = ?", (time.time() + lease_s, owner))
                .rowcount
            )
        )

    def release_claims(self, owner: str, keys: Sequence[str] | None = None) -> None:
        """End ``owner``'s claims on ``keys`` (all of them when None)."""
        conn = self._conn()
        if keys is None:
            conn.execute("DELETE FROM call_claims WHERE owner = ?", (owner,))
        elif len(keys) == 1:  # the runner's case, once per call: one statement, no executemany
            conn.execute("DELETE FROM call_claims WHERE key = ? AND owner = ?", (keys[0], owner))
        else:
            conn.executemany("DELETE FROM call_claims WHERE key = ? AND owner = ?", [(k, owner) for k in keys])

    # -- records ------------------------------------------------------------------------------
    def add_instances(self, instances: Iterable[Instance], *, dataset: str | Mapping[str, str] | None = None) -> int:
        """Add instances; return how many were new or changed. ``dataset``: the file they were
        read from (its resolved path; or a path per instance id), recorded with each.

        An id is one item in a store (its responses, judgments and exports are keyed by it, and
        every metric resamples by it). An id already stored with other content (its prompt,
        reference answer, rubric, category or metadata) from the same dataset file — the item
        edited since — or with no file recorded takes the new content, so the store holds the
        instances as the latest run read them: ``dataset.from_store`` reads those, and exports
        give their categories. The calls, responses and judgments of the old content stay (keyed
        by their own requests: a rerun does not reuse an answer to the old prompt). An id stored
        with other content from *another* dataset file is two items under one id: refused
        (`InstanceConflict`, naming the id, the file given and the file stored), nothing written."""
        rows = [_clean(_codec.instance_row(i)) for i in instances]
        source_of: Callable[[str], str | None]
        if dataset is None or isinstance(dataset, str):
            fixed: str | None = dataset
            source_of = lambda _ident: fixed  # noqa: E731
        else:
            source_of = dataset.get
        if self.readonly:
            return self._read_only_instances(rows, source_of)
        changed = " OR ".join(f"instances.{c} IS NOT excluded.{c}" for c in _INSTANCE_CONTENT)
        with self._transaction() as conn:
            self._refuse_other_items(conn, rows, source_of)
            before = conn.total_changes
            conn.executemany(
                f"INSERT INTO instances ({_codec.INSTANCE_COLUMNS}, dataset, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                f"ON CONFLICT (id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _INSTANCE_CONTENT)}, "
                "dataset = COALESCE(excluded.dataset, instances.dataset) "
                f"WHERE {changed} OR (instances.dataset IS NULL AND excluded.dataset IS NOT NULL)",
                ((*row, source_of(row[0]), _codec.now()) for row in rows),
            )
            return conn.total_changes - before

    def _read_only_instances(self, rows: list[tuple[Any, ...]], source_of: Callable[[str], str | None]) -> int:
        """`add_instances` on a read-only store: the conflicts it refuses, then 0 when every row is
        stored as it is (its file recorded), else `cannot_write`."""
        self._refuse_other_items(self._conn(), rows, source_of)
        stored = self._stored_ids("instances", [row[0] for row in rows], f"{_codec.INSTANCE_COLUMNS}, dataset")
        changed = sum(
            1
            for row in rows
            if (known := stored.get(row[0])) is None
            or tuple(known[:-1]) != tuple(row)
            or (known[-1] is None and source_of(row[0]) is not None)
        )
        if changed:
            raise self.cannot_write(changed, "instances (new, or edited in the dataset)")
        return 0

    @staticmethod
    def _refuse_other_items(
        conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]], source_of: Callable[[str], str | None]
    ) -> None:
        """`InstanceConflict` for the first row whose id the store holds with other content from
        another dataset file (both files known)."""
        for start in range(0, len(rows), _BATCH):
            chunk = rows[start : start + _BATCH]
            marks = ",".join("?" * len(chunk))
            stored = {
                r[0]: r[1:]
                for r in conn.execute(
                    f"SELECT {_codec.INSTANCE_COLUMNS}, dataset FROM instances WHERE id IN ({marks}) AND dataset IS NOT NULL",
                    [row[0] for row in chunk],
                )
            }
            for row in chunk:
                known = stored.get(row[0])
                if known is None or tuple(known[:-1]) == tuple(row[1:]):
                    continue
                given = source_of(row[0])
                if given is not None and given != known[-1]:
                    raise InstanceConflict(
                        f"instance {row[0]!r} is in the store already, read from another dataset ({known[-1]}) "
                        "with other content: one id is one item in a store (its judgments and every metric's "
                        "resampling are keyed by it); give this item another id, or use another store",
                        path=given,
                        field="id",
                        instance_id=row[0],
                    )

    def add_responses(self, responses: Iterable[Response]) -> int:
        """Add responses (ignoring ones already stored); return how many were new."""
        rows = (_codec.response_row(r) + (_codec.now(),) for r in responses)
        if self.readonly:
            return self._read_only_insert("responses", list(rows), "responses")
        return self._derived(
            lambda: self._write_many(
                f"INSERT OR IGNORE INTO responses ({_codec.RESPONSE_COLUMNS}, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
        )

    def add_judgments(
        self,
        judgments: Iterable[Judgment],
        *,
        source: str | None = None,
        call_keys: Mapping[str, str] | None = None,
        run_id: str | None = None,
        replace: bool = False,
        ids: Sequence[str] | None = None,
    ) -> int:
        """Add judgments, idempotent on `Judgment.id`; return how many rows were added or changed.

        A stored judgment is kept unless it failed and the new one did not (a successful retry),
        it was read from another call than the new one (both with a call key: the experiment was
        edited in a way its judgment ids do not show, e.g. a judge's ``temperature``, and the
        latest plan's call wins, so an export of that plan finds its judgment), or ``replace`` is
        true. ``call_keys`` maps judgment ids to the call each was read from.
        ``ids``, when given, are the judgments' `Judgment.id` in the same order, already computed
        by the caller (each is a hash; the runner needs them for ``call_keys`` anyway).
        """
        keys = call_keys or {}
        at = _codec.now()  # one time for the rows of one transaction
        # the row's first value is the judgment's id: computed once per judgment (a hash of its
        # canonical JSON), not again for the call-key lookup
        if ids is None:
            rows = ((row := _codec.judgment_row(j)) + (keys.get(row[0]), source, run_id, at) for j in judgments)
        else:
            rows = (_codec.judgment_row(j, i) + (keys.get(i), source, run_id, at) for j, i in zip(judgments, ids, strict=True))
        columns = _codec.JUDGMENT_COLUMNS + ", call_key, source, run_id, created_at"
        if self.readonly:
            return self._read_only_judgments(list(rows), replace)
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns.replace(" ", "").split(",")[1:])
        condition = (
            ""
            if replace
            else (
                " WHERE (judgments.status = 'failed' AND excluded.status != 'failed') OR judgments.call_key != excluded.call_key"
            )
        )  # (false when either is NULL)
        try:
            return self._derived(
                lambda: self._write_many(
                    f"INSERT INTO judgments ({columns}) VALUES ({','.join('?' * len(columns.split(',')))}) "
                    f"ON CONFLICT (id) DO UPDATE SET {updates}{condition}",
                    rows,
                )
            )
        except sqlite3.IntegrityError as err:
            raise ValueError(f"cannot store judgments: {err} (unknown call key or run_id?)") from err

    def _read_only_judgments(self, rows: list[tuple[Any, ...]], replace: bool) -> int:
        """`add_judgments` on a read-only store: 0 when no row would be added or changed (each
        stored, not as a failure the new one is not, from the same call), else `cannot_write`."""
        status = _JUDGMENT_FIELDS.index("status")
        call_key = len(_JUDGMENT_FIELDS)
        stored = self._stored_ids("judgments", [row[0] for row in rows], "id, status, call_key")
        changed = 0
        for row in rows:
            known = stored.get(row[0])
            if (
                known is None
                or replace
                or (known[1] == "failed" and row[status] != "failed")
                or (known[2] is not None and row[call_key] is not None and known[2] != row[call_key])
            ):
                changed += 1
        if changed:
            raise self.cannot_write(changed, "judgments")
        return 0

    def judged_calls(self) -> dict[str, int]:
        """How many parsed or unparsed judgments each call key backs (failed ones not counted).

        The runner uses it to tell a replayed call whose judgments are all stored from one whose
        judgment was lost when a run was killed between storing the call and its judgment.
        """
        rows = self._conn().execute(
            "SELECT call_key, COUNT(*) FROM judgments WHERE call_key IS NOT NULL AND status != 'failed' GROUP BY call_key"
        )
        return dict(rows)

    # -- the judgments of one plan -----------------------------------------------------------
    def open_plan(self) -> str:
        """A new, empty set of judgment ids (a temporary table of this thread's connection, gone
        when it closes); returns its name, for `add_plan_ids`, `export` (``plan=``) and `drop_plan`.

        A run adds the ids of the judgments its plan reads, as it goes, so that its exports hold
        those judgments only (not every judgment in the store: an earlier version of the
        experiment run on the same store left its own), while the ids are kept on disk, not in
        memory. Use it from the thread that opened it."""
        self._plans = getattr(self, "_plans", 0) + 1
        name = f"plan_{self._plans}_{uuid.uuid4().hex[:8]}"
        self._conn().execute(f'CREATE TEMP TABLE "{name}" (id TEXT PRIMARY KEY) WITHOUT ROWID')
        return name

    def add_plan_ids(self, plan: str, ids: Iterable[str]) -> None:
        """Add judgment ``ids`` to the set `open_plan` named ``plan`` (ids already in it are ignored)."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            conn.executemany(f'INSERT OR IGNORE INTO temp."{_plan_name(plan)}" (id) VALUES (?)', ((i,) for i in ids))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def drop_plan(self, plan: str) -> None:
        """Forget the set of judgment ids ``plan`` (`open_plan`)."""
        self._conn().execute(f'DROP TABLE IF EXISTS temp."{_plan_name(plan)}"')

    def add_references(self, refs: Iterable[Reference]) -> int:
        """Add references (ignoring ids already stored); return how many were new."""
        rows = (_codec.reference_row(r) + (_codec.now(),) for r in refs)
        if self.readonly:
            return self._read_only_insert("references", list(rows), "references")
        return self._derived(
            lambda: self._write_many(
                f'INSERT OR IGNORE INTO "references" ({_codec.REFERENCE_COLUMNS}, created_at) '
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
        )

    def _select(self, table: str, columns: str, filters: Mapping[str, Any], order: str) -> list[Any]:
        where, params = _where(table, filters)
        sql = f'SELECT {columns} FROM "{table}"{where} ORDER BY {order}'
        return self._conn().execute(sql, params).fetchall()

    def instances(self, **filters: Any) -> list[Instance]:
        """Stored instances, by id; filter on ``id`` or ``category`` (a value or a list)."""
        rows = self._select("instances", _codec.INSTANCE_COLUMNS, filters, "id")
        return [_codec.instance_from_row(r) for r in rows]

    def responses(self, **filters: Any) -> list[Response]:
        """Stored responses; filter on ``id``, ``instance_id`` or ``generator``."""
        rows = self._select("responses", _codec.RESPONSE_COLUMNS, filters, "instance_id, generator, id")
        return [_codec.response_from_row(r) for r in rows]

    def judgments(self, **filters: Any) -> list[Judgment]:
        """Stored judgments; filter on any of their columns (``judge=[...]``, ``status=...``)."""
        order = "instance_id, judge, protocol, condition, replicate, id"
        rows = self._select("judgments", _codec.JUDGMENT_COLUMNS, filters, order)
        return [_codec.judgment_from_row(r) for r in rows]

    def references(self, **filters: Any) -> list[Reference]:
        """Stored references; filter on ``instance_id``, ``kind``, ``rubric_id``, ``source``, ..."""
        rows = self._select("references", _codec.REFERENCE_COLUMNS, filters, "instance_id, kind, id")
        return [_codec.reference_from_row(r) for r in rows]

    # -- runs and imports ---------------------------------------------------------------------
    def start_run(self, config: Mapping[str, Any]) -> str:
        """Record a new running run with ``config`` (credentials dropped); return its id.

        First ends every run still ``running`` that was started on this host by a process that no
        longer exists (see `abandon_dead_runs`). The run records its process's host, pid and start
        time (`nepotism._process.own_start`, as a claim does).
        """
        run_id = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
        if self.readonly:  # served from a read-only store: not recorded
            return run_id
        self.abandon_dead_runs()
        host, pid, start = self._owner()
        self._conn().execute(
            "INSERT INTO runs (id, started_at, config, status, pid, host, owner_start) VALUES (?, ?, ?, 'running', ?, ?, ?)",
            (run_id, _codec.now(), _codec.dumps(scrub(dict(config))), pid, host, start),
        )
        return run_id

    def abandon_dead_runs(self) -> list[str]:
        """End ``running`` runs of this host whose process is gone; return their ids.

        They become ``interrupted`` with ``end_note`` "abandoned: ...". Gone is `nepotism._process.gone`, as for a
        claim's owner: no such pid, a zombie, or the pid now another process's (its start time
        differs from the run's ``owner_start``, or its boot id). Runs of other hosts or of another
        pid namespace, of a process that still runs, or of a live pid without a recorded start
        (runs before migration 0012, no /proc) are left alone: a run is never ended while it might
        still be going.
        """
        if self.readonly:
            return []
        host = socket.gethostname()
        rows = (
            self._conn()
            .execute("SELECT id, pid, owner_start FROM runs WHERE status = 'running' AND host = ? AND pid IS NOT NULL", (host,))
            .fetchall()
        )
        gone: dict[tuple[int, str | None], bool] = {}
        dead = [run_id for run_id, pid, start in rows if _owner_gone(gone, int(pid), start)]
        pids = {run_id: pid for run_id, pid, _ in rows}
        for run_id in dead:
            note = f"abandoned: process {pids[run_id]} on {host} ended without ending the run"
            self._conn().execute(
                "UPDATE runs SET status = 'interrupted', ended_at = ?, end_note = ? WHERE id = ? AND status = 'running'",
                (_codec.now(), note, run_id),
            )
        return dead

    @contextmanager
    def recording_run(self, config: Mapping[str, Any]) -> Iterator[str]:
        """Record a run around a block: yields its id; ends it ``done`` when the block completes,
        ``interrupted`` on Ctrl-C or cancellation, ``failed`` on any other error (re-raised)."""
        run_id = self.start_run(config)
        status = "failed"
        try:
            yield run_id
            status = "done"
        except (asyncio.CancelledError, KeyboardInterrupt):
            status = "interrupted"
            raise
        finally:
            self.end_run(run_id, status)

    def end_run(self, run_id: str, status: str = "done") -> None:
        """Mark a run finished with ``status`` (``done``, ``failed`` or ``interrupted``)."""
        if status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {RUN_STATUSES}, not {status!r}")
        if self.readonly:  # (`start_run` recorded nothing)
            return
        try:
            cursor = self._conn().execute("UPDATE runs SET status = ?, ended_at = ? WHERE id = ?", (status, _codec.now(), run_id))
        except StoreFullError:
            if not self.low_space:
                raise
            return  # (the disk filled during the run: the next run ends it, its process gone)
        if cursor.rowcount == 0:
            raise InputError(f"no run {run_id!r} in the store", path=str(self.path))

    def runs(self) -> list[dict[str, Any]]:
        """Every run, oldest first, as dicts (``config`` decoded)."""
        rows = self._conn().execute("SELECT id, started_at, ended_at, config, status, end_note FROM runs ORDER BY started_at, id")
        keys = ("id", "started_at", "ended_at", "config", "status", "end_note")
        return [dict(zip(keys, r[:3] + (_codec.loads(r[3]), r[4], r[5]), strict=True)) for r in rows]

    def add_instance_categories(self, categories: Mapping[str, str], *, source: str | None = None) -> int:
        """Record the category of instances the store knows only from a loaded table; return how
        many were new. An instance already recorded under another category (here or among the
        store's instances) is an `InputError` naming it, and nothing is written."""
        if not categories:
            return 0
        conn = self._conn()
        known: dict[str, str] = {}
        ids = list(categories)
        for start in range(0, len(ids), _BATCH):
            chunk = ids[start : start + _BATCH]
            marks = ",".join("?" * len(chunk))
            for table, column in (("instances", "id"), ("instance_categories", "instance_id")):
                rows = conn.execute(
                    f"SELECT {column}, category FROM {table} WHERE {column} IN ({marks}) AND category IS NOT NULL", chunk
                )
                known.update({str(i): str(c) for i, c in rows})
        for instance, category in categories.items():
            if instance in known and known[instance] != category:
                raise InputError(
                    f"instance {instance!r} is already in the store with category {known[instance]!r}, not {category!r}",
                    path=source,
                    field="category",
                )
        now = _codec.now()
        return self._write_many(
            "INSERT OR IGNORE INTO instance_categories (instance_id, category, source, created_at) VALUES (?, ?, ?, ?)",
            [(i, c, source, now) for i, c in categories.items() if i not in known],
        )

    def record_import(self, path: str | Path, *, kind: str, rows: int, sha256: str) -> None:
        """Log that ``path`` (a ``kind`` table of ``rows`` rows, hash ``sha256``) was loaded."""
        self._conn().execute(
            "INSERT INTO imports (path, sha256, kind, rows, imported_at) VALUES (?, ?, ?, ?, ?)",
            (str(path), sha256, kind, int(rows), _codec.now()),
        )

    def imports(self) -> list[dict[str, Any]]:
        """Every logged import, oldest first."""
        rows = self._conn().execute("SELECT path, sha256, kind, rows, imported_at FROM imports ORDER BY id")
        keys = ("path", "sha256", "kind", "rows", "imported_at")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    # -- summaries and export -----------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        """Schema version, path, size on disk, row counts and status breakdowns, as plain data."""
        conn = self._conn()

        def grouped(sql: str) -> dict[str, int]:
            return {str(k): n for k, n in conn.execute(sql)}

        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        return {
            "path": str(self.path.resolve()),
            "schema_version": schema_version(conn),
            "size_bytes": size,
            "counts": {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in TABLES},
            "judgments_per_judge": grouped("SELECT judge, COUNT(*) FROM judgments GROUP BY judge ORDER BY judge"),
            "judgment_status": grouped("SELECT status, COUNT(*) FROM judgments GROUP BY status ORDER BY status"),
            "call_status": grouped("SELECT status, COUNT(*) FROM calls GROUP BY status ORDER BY status"),
            "run_status": grouped("SELECT status, COUNT(*) FROM runs GROUP BY status ORDER BY status"),
        }

    def export(
        self,
        table: str,
        out: str | Path,
        *,
        fmt: str,
        protocol: str | None = None,
        partition_by: str | None = None,
        replace: bool = False,
        plan: str | None = None,
    ) -> int:
        """Write ``table`` to ``out`` atomically as parquet, csv or jsonl; return the row count.

        Judgments are written in the public recorded-judgment format of their protocol (see
        `nepotism.store.export`); pass ``protocol`` when the store holds several. With ``plan``
        (a set of judgment ids, `open_plan`) only those judgments are written.
        ``partition_by="judge"`` writes a Parquet dataset folder instead (one subfolder per judge;
        an existing folder only with ``replace``: `nepotism.store.export.write_partitioned`).
        """
        from nepotism.store.export import export_table

        return export_table(
            self._conn(),
            table,
            Path(out),
            fmt=fmt,
            protocol=protocol,
            partition_by=partition_by,
            replace=replace,
            plan=None if plan is None else _plan_name(plan),
        )


_PLAN_NAME = re.compile(r"plan_[0-9]+_[0-9a-f]{8}")


#: How many values a stored call's row holds (`_call_row`).
_CALL_FIELDS = len(_CALL_COLUMNS.split(","))
#: The columns of a judgment row as `_codec.judgment_row` gives them.
_JUDGMENT_FIELDS = tuple(c.strip() for c in _codec.JUDGMENT_COLUMNS.split(","))
#: The stored columns of an instance's content (all but its id and when it was first stored).
_INSTANCE_CONTENT = ("prompt", "reference_answer", "rubric", "category", "metadata")


def _plan_name(plan: str) -> str:
    """``plan`` checked to be a name `Store.open_plan` makes (it is spliced into SQL)."""
    if not _PLAN_NAME.fullmatch(plan):
        raise ValueError(f"not a plan name: {plan!r}")
    return plan


class InstanceConflict(InputError):
    """An instance id the store holds with other content read from another dataset file
    (`Store.add_instances`); ``instance_id`` names it, ``path`` the file given."""

    def __init__(self, message: str, *, path: str | None, field: str, instance_id: str) -> None:
        super().__init__(message, path=path, field=field)
        self.instance_id = instance_id


def _clean(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """``row`` with every known secret value redacted from its text values (JSON columns
    included, in any JSON spelling); the row itself when no secret is known."""
    if not known_secrets():
        return row
    return tuple(redact_text(v) if type(v) is str else v for v in row)


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


_PUT_CALL = (
    f"INSERT INTO calls ({_CALL_COLUMNS}) VALUES ({','.join('?' * 13)}) "
    "ON CONFLICT (key) DO UPDATE SET backend = excluded.backend, model = excluded.model, "
    "request = excluded.request, response = excluded.response, text = excluded.text, "
    "logprobs = excluded.logprobs, usage = excluded.usage, latency_s = excluded.latency_s, "
    "status = excluded.status, error = excluded.error, created_at = excluded.created_at, "
    "run_id = excluded.run_id WHERE calls.status = 'failed'"
)


def _call_row(
    *,
    key: str,
    request: Mapping[str, Any],
    response: Mapping[str, Any] | None = None,
    text: str | None = None,
    logprobs: Any = None,
    usage: Mapping[str, Any] | None = None,
    latency_s: float | None = None,
    status: str = "ok",
    error: str | None = None,
    run_id: str | None = None,
    created_at: str | None = None,
) -> tuple[Any, ...]:
    if type(key) is not str or not _KEY.fullmatch(key):
        raise ValueError(f"a call key is 64 lowercase hex digits, not {key!r}")
    if status not in CALL_STATUSES:
        raise ValueError(f"call status must be one of {CALL_STATUSES}, not {status!r}")
    if status == "failed" and not error:
        raise ValueError("a failed call needs an error saying why")
    stored = scrub(request)
    return (
        key,
        _str_or_none(stored.get("backend")),
        _str_or_none(stored.get("model")),
        _codec.dumps(stored),
        _codec.dumps(response),
        text,
        _codec.dumps(logprobs),
        _codec.dumps(None if usage is None else dict(usage)),
        latency_s,
        status,
        error,
        created_at or _codec.now(),
        run_id,
    )
