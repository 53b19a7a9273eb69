"""Opening a store's SQLite connection and bringing its schema up to date.

Migrations are the package-data files ``migrations/NNNN_name.sql``, numbered from 1 without gaps.
The ``_migrations`` table records each one applied (version, name, SHA-256 of its text, time).
Applying is idempotent and safe when several processes open a fresh file at once: the check and
the migration run inside one ``BEGIN IMMEDIATE`` transaction. A file whose schema is newer than
this package knows is refused. Down-migrations are deliberately not supported.

Some migrations change only what writers use (`WRITERS_ONLY`: the owner process of a claim on a
call being sent or of a run, which only a writing run looks at; an instance's dataset file): a store
opened read-only (`nepotism store info`, ``export``) that lacks only such migrations is read at
the version it has, since it cannot be migrated.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from nepotism.errors import InputError

__all__ = ["StoreFullError", "StoreSchemaError", "StoreWriteError", "describe_disk", "unwritable"]

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
#: Seconds a connection waits for another writer's lock before giving up.
BUSY_TIMEOUT_S = 60.0


class StoreSchemaError(InputError):
    """The store file was written by a newer nepotism (or its migration log is inconsistent)."""


class StoreWriteError(InputError):
    """The store cannot be written: its disk is full, it is read-only, or the disk failed.

    One line naming the store and SQLite's cause; everything committed before stays in the file.
    """


class StoreFullError(StoreWriteError):
    """The disk holding the store is full (SQLite's ``SQLITE_FULL``, the system's ``ENOSPC``).

    Not a bad input: the command line exits with `EXIT_STATUS` (``EX_IOERR``), after a run has
    stored every answer it was paid for (`nepotism.store.Store.reserve_space`). The message names
    the disk (`describe_disk`)."""

    #: the exit status of the command line (sysexits' EX_IOERR: an input/output error)
    EXIT_STATUS = 74
    exit_status = EXIT_STATUS


# SQLite's messages for a store that cannot be written, whatever the statement
_FULL = "database or disk is full"
_WRITE_FAILURES = (
    _FULL,
    "disk i/o error",
    "attempt to write a readonly database",
    "unable to open database file",
    "database disk image is malformed",
)


def describe_disk(path: str | Path) -> str:
    """The file system holding ``path``, for messages: its mount point, size and free space
    (``/data: 3.0 MB, 0 B free``); the folder alone where the system cannot say."""
    where = Path(path).absolute()
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        device = where.stat().st_dev
        mount = where
        while mount != mount.parent and mount.parent.stat().st_dev == device:
            mount = mount.parent
        stats = os.statvfs(where)
    except OSError:
        return str(where)
    return f"{mount}: {_size(stats.f_blocks * stats.f_frsize)}, {_size(stats.f_bavail * stats.f_frsize)} free"


def _size(nbytes: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if nbytes < 1000 or unit == "GB":
            return f"{nbytes:.0f} B" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1000
    raise AssertionError("unreachable")


def _write_failure(err: sqlite3.OperationalError, path: str) -> Exception:
    cause = str(err)
    if not any(text in cause.lower() for text in _WRITE_FAILURES):
        return err
    if _FULL in cause.lower():
        return StoreFullError(
            f"cannot write the store: the disk is full ({describe_disk(path)}); everything committed before is kept", path=path
        )
    return StoreWriteError(f"cannot write the store ({cause}); everything committed before is kept", path=path)


class _Connection(sqlite3.Connection):
    """A connection whose write failures (full disk, read-only file, I/O error) are
    `StoreWriteError` values naming the store, instead of bare ``OperationalError``."""

    store_path = ""

    def execute(self, *args: Any) -> sqlite3.Cursor:
        try:
            return super().execute(*args)
        except sqlite3.OperationalError as err:
            raise _write_failure(err, self.store_path) from None

    def executemany(self, *args: Any) -> sqlite3.Cursor:
        try:
            return super().executemany(*args)
        except sqlite3.OperationalError as err:
            raise _write_failure(err, self.store_path) from None


#: Versions of the migrations a read-only reader does without: 0010 and 0012, the start time of the
#: owner process of a claim and of a run, read only by a run (to take over a claim or end a run
#: whose process is gone); 0011, the dataset file an instance was read from, read only by
#: `Store.add_instances`.
WRITERS_ONLY = frozenset({10, 11, 12})


@dataclass(frozen=True)
class _Migration:
    version: int
    name: str
    sql: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _known_migrations() -> tuple[_Migration, ...]:
    found = []
    for entry in resources.files("nepotism.store").joinpath("migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(_Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise RuntimeError(f"store migrations are not numbered 1..n: {[m.version for m in found]}")
    return tuple(found)


MIGRATIONS = _known_migrations()
SCHEMA_VERSION = MIGRATIONS[-1].version


def _statements(sql: str) -> Iterator[str]:
    """Split a migration script into complete statements (triggers included)."""
    buffer = ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer
            buffer = ""
    if buffer.strip() and not all(not ln.strip() or ln.strip().startswith("--") for ln in buffer.splitlines()):
        raise RuntimeError("incomplete SQL statement at the end of a migration")


def unwritable(path: Path) -> str | None:
    """Why the store ``path`` cannot be written — created, or given the ``-wal`` and ``-shm`` files
    SQLite keeps beside it — or None when it can: its folder is missing or cannot be written (a
    read-only file system, no permission), or the file itself cannot be."""
    folder = path.parent
    if not folder.is_dir():
        return f"its folder {folder} does not exist"
    if not os.access(folder, os.W_OK):
        return f"its folder {folder} cannot be written: {_why(folder)}"
    if path.exists() and not os.access(path, os.W_OK):
        return f"the file cannot be written: {_why(path)}"
    return None


def _why(path: Path) -> str:
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "a read-only file system"
    except OSError:
        pass
    return "no write permission"


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open ``path`` in autocommit mode with WAL, ``synchronous=NORMAL`` and foreign keys on.

    ``readonly`` opens it for reading only, so that nothing is ever written: ``immutable=1`` for a
    cleanly closed store (no ``-wal`` file), else ``mode=ro`` (which reads the WAL; on a read-only
    file system, where SQLite cannot create the ``-shm`` file, immutable after all)."""
    if readonly:
        return _connect_readonly(path)
    try:
        conn = sqlite3.connect(
            str(path),
            timeout=BUSY_TIMEOUT_S,
            isolation_level=None,
            check_same_thread=False,
            factory=_Connection,
        )
        conn.store_path = str(path)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        mode = _journal_wal(conn)
    except (sqlite3.DatabaseError, StoreWriteError) as err:
        why = unwritable(path)  # (SQLite says "unable to open database file" for all of these)
        cause = why if why is not None else err.message if isinstance(err, StoreWriteError) else err
        raise InputError(f"cannot open the store: {cause}", path=str(path)) from None
    if str(mode).lower() != "wal":
        conn.close()
        raise InputError(f"the store needs WAL journaling but SQLite chose {mode!r}", path=str(path))
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _connect_readonly(path: Path) -> sqlite3.Connection:
    from urllib.parse import quote

    last: Exception | None = None
    # without a WAL (a cleanly closed store) nothing needs SQLite's shared memory: immutable,
    # which creates no -wal/-shm file; with one, read it through mode=ro
    wal = Path(f"{path}-wal").exists()
    for flags in ("mode=ro", "mode=ro&immutable=1") if wal else ("mode=ro&immutable=1",):
        try:
            conn = sqlite3.connect(
                f"file:{quote(str(path.resolve()))}?{flags}",
                uri=True,
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
                factory=_Connection,
            )
            conn.store_path = str(path)
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return conn  # (temporary tables stay possible: a run's plan, `Store.open_plan`)
        except (sqlite3.DatabaseError, StoreWriteError) as err:
            last = err
    raise InputError(f"cannot open the store for reading: {getattr(last, 'message', last)}", path=str(path)) from None


def _journal_wal(conn: sqlite3.Connection) -> str:
    """Switch to WAL, retrying while another process holds the lock: SQLite does not call the busy
    handler for a journal-mode change, so two processes creating one file at once would otherwise
    fail at once with "database is locked"."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            mode: str = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            return mode
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def schema_version(conn: sqlite3.Connection) -> int:
    """The highest applied migration (0 for an empty file)."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'").fetchone()
    if not exists:
        return 0
    version: int = conn.execute("SELECT COALESCE(MAX(version), 0) FROM _migrations").fetchone()[0]
    return version


def _check_not_newer(version: int, path: Path) -> None:
    if version > SCHEMA_VERSION:
        raise StoreSchemaError(
            f"the store has schema version {version} but this nepotism knows only up to "
            f"{SCHEMA_VERSION}; upgrade nepotism to open it",
            path=str(path),
        )


def migrate(conn: sqlite3.Connection, path: Path, *, readonly: bool = False) -> int:
    """Apply every pending migration; return the schema version afterwards. A ``readonly``
    store cannot be migrated: it must already be up to date, or lack only migrations a reader
    does without (`WRITERS_ONLY`), and is then read at its own version."""
    version = schema_version(conn)
    _check_not_newer(version, path)
    if version == SCHEMA_VERSION:
        return version
    if readonly and all(m.version in WRITERS_ONLY for m in MIGRATIONS[version:]):
        return version  # only writers' migrations are missing: read it as it is
    if readonly:
        raise StoreSchemaError(
            f"the store has schema version {version} and needs upgrading to "
            f"{SCHEMA_VERSION}, but it is read-only; open it once where it can be "
            "written",
            path=str(path),
        )
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS _migrations (version INTEGER PRIMARY KEY, "
            "name TEXT NOT NULL, sha256 TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        version = schema_version(conn)  # another process may have migrated meanwhile
        _check_not_newer(version, path)
        for migration in MIGRATIONS[version:]:
            for statement in _statements(migration.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO _migrations (version, name, sha256, applied_at) VALUES (?, ?, ?, ?)",
                (migration.version, migration.name, migration.sha256, _now()),
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return SCHEMA_VERSION
