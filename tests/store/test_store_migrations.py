"""Opening a store: pragmas, numbered migrations, idempotent reopen, newer schemas refused."""

from __future__ import annotations

import sqlite3

import pytest

import nepotism.store as store_pkg
from nepotism.errors import InputError
from nepotism.store import SCHEMA_VERSION, TABLES, Store, StoreSchemaError, default_store_path
from nepotism.store._migrate import MIGRATIONS, _statements


def test_public_names():
    assert set(store_pkg.__all__) == {
        "CLAIM_LEASE_S",
        "RUN_STATUSES",
        "SCHEMA_VERSION",
        "TABLES",
        "CachedCall",
        "Store",
        "StoreFullError",
        "StoreSchemaError",
        "StoreWriteError",
        "default_store_path",
    }
    for name in store_pkg.__all__:
        assert hasattr(store_pkg, name)


def test_fresh_store_has_every_table_and_records_its_migrations(tmp_path):
    path = tmp_path / "fresh.db"
    with Store(path) as store:
        assert store.schema_version == SCHEMA_VERSION
    conn = sqlite3.connect(path)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert set(TABLES) | {"_migrations"} <= names
    applied = conn.execute("SELECT version, name FROM _migrations ORDER BY version").fetchall()
    assert applied == [(m.version, m.name) for m in MIGRATIONS]
    assert applied[0] == (1, "initial")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_connection_pragmas(store):
    conn = store._conn()
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000


def test_reopening_is_idempotent_and_keeps_data(tmp_path):
    path = tmp_path / "again.db"
    for _ in range(3):
        with Store(path) as store:
            store.record_import("x.csv", kind="pairwise", rows=3, sha256="ab" * 32)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM _migrations").fetchone()[0] == len(MIGRATIONS)
    assert conn.execute("SELECT COUNT(*) FROM imports").fetchone()[0] == 3
    conn.close()


def test_newer_schema_is_refused_with_a_clear_error(tmp_path):
    path = tmp_path / "future.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO _migrations VALUES (?, 'from_the_future', '00', '2100-01-01')",
        (SCHEMA_VERSION + 1,),
    )
    conn.commit()
    conn.close()
    with pytest.raises(StoreSchemaError, match=f"schema version {SCHEMA_VERSION + 1}.*upgrade"):
        Store(path)
    assert issubclass(StoreSchemaError, InputError)


def test_a_file_that_is_not_sqlite_is_an_input_error(tmp_path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(InputError, match="cannot open the store"):
        Store(path)


def test_default_path_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("NEPOTISM_STORE", raising=False)
    assert default_store_path().name == "nepotism.db"
    monkeypatch.setenv("NEPOTISM_STORE", str(tmp_path / "env.db"))
    assert default_store_path() == tmp_path / "env.db"
    with Store.open() as store:
        assert store.path == tmp_path / "env.db"
    assert (tmp_path / "env.db").is_file()


def test_statement_splitter_keeps_triggers_whole():
    sql = (
        "-- comment\nCREATE TABLE t (a INTEGER);\n"
        "CREATE TRIGGER tr AFTER INSERT ON t BEGIN\n  UPDATE t SET a = 1;\n  SELECT 1;\nEND;\n"
    )
    statements = list(_statements(sql))
    assert len(statements) == 2
    assert "END;" in statements[1]
    with pytest.raises(RuntimeError):
        list(_statements("CREATE TABLE t (a INTEGER)"))


def test_closed_store_refuses_use(tmp_path):
    store = Store(tmp_path / "closed.db")
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.info()
