"""Disk faults: a full store disk loses no answered call and says so in one line; a failed export
fails the run; stale temporary files of killed exports are removed."""

from __future__ import annotations

import asyncio
import errno
import sqlite3
import subprocess
import sys
from collections import Counter

import pytest
from click.testing import CliRunner

from nepotism._files import atomic_write_bytes
from nepotism.cli import main
from nepotism.errors import InputError
from nepotism.experiment import load_experiment
from nepotism.runner.experiment_run import run_experiment
from nepotism.store import Store, StoreFullError, StoreWriteError
from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, standin_thread


def _fill_after(monkeypatch, calls: int) -> dict:
    """After ``calls`` stored calls, the store's disk is full: SQLite may use no new page (its
    ``max_page_count``, set on every connection of the store: the writer thread's and any opened
    later), until the reserve file is freed, which gives the space back."""
    state = {"stored": 0, "full": False, "freed": False, "pages": 0}
    original_put = Store.put_call
    original_puts = Store.put_calls
    original_full = Store._disk_full
    original_conn = Store._conn
    # the connections limited so far, held (not their ids: a closed connection's id is reused by
    # the next one opened, e.g. the judging phase's writer thread's, which then went unlimited)
    limited: list = []

    def limit(conn, pages):
        conn.execute(f"PRAGMA max_page_count = {pages}")

    def conn(self):
        opened = original_conn(self)
        if state["full"] and not state["freed"] and not any(c is opened for c in limited):
            limited.append(opened)
            limit(opened, state["pages"])
        return opened

    def filled(self, n):
        state["stored"] += n
        if state["stored"] >= calls and not state["full"]:
            state["full"] = True
            state["pages"] = original_conn(self).execute("PRAGMA page_count").fetchone()[0]
            for opened in list(self._connections):
                limited.append(opened)
                limit(opened, state["pages"])

    def put_call(self, key, **kwargs):
        original_put(self, key, **kwargs)
        filled(self, 1)

    def put_calls(self, calls_, **kwargs):  # the runner's group commit
        calls_ = list(calls_)
        changed = original_puts(self, calls_, **kwargs)
        filled(self, len(calls_))
        return changed

    def release(self):  # the reserve given back: there is room again
        freed = original_full(self)
        if freed:
            state["freed"] = True
            for opened in list(self._connections):
                limit(opened, 1073741823)
        return freed

    monkeypatch.setattr(Store, "put_call", put_call)
    monkeypatch.setattr(Store, "put_calls", put_calls)
    monkeypatch.setattr(Store, "_disk_full", release)
    monkeypatch.setattr(Store, "_conn", conn)
    return state


def _answered(log) -> Counter:
    return Counter(f for _t, f, status in log if status == 200)


@pytest.mark.slow
def test_a_full_store_disk_loses_no_answered_call(tmp_path, monkeypatch):
    # long answers so that the rows soon need new pages
    with standin_thread(StandinConfig(latency_s=0.01, log_requests=True)) as (url, server):
        exp = load_experiment(standin_experiment(tmp_path, url, items=12, concurrency=4))
        state = _fill_after(monkeypatch, 6)
        db = tmp_path / "s.db"
        with Store(db) as store:
            with pytest.raises(StoreWriteError) as err:
                asyncio.run(run_experiment(exp, store))
            assert store.low_space
        log = list(server.log)
    assert state["full"]
    message = str(err.value)
    assert str(db) in message and "full" in message and "\n" not in message and "none lost" in message
    assert isinstance(err.value, StoreFullError)
    Store(db).close()  # (takes in the answers the full disk left beside it)
    conn = sqlite3.connect(db)
    stored = conn.execute("SELECT COUNT(*) FROM calls WHERE status = 'ok'").fetchone()[0]
    runs = conn.execute("SELECT status FROM runs").fetchall()
    conn.close()
    answered = _answered(log)
    assert max(answered.values()) == 1
    assert stored == len(answered) > 6  # every answered call was kept (0 lost)
    assert runs == [("failed",)]
    assert not (tmp_path / "s.db-reserve").exists() and not (tmp_path / "s.db-unstored.jsonl").exists()


def test_without_a_reserve_the_full_disk_is_one_line_naming_the_store(tmp_path, monkeypatch):
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, _server):
        exp = standin_experiment(tmp_path, url, items=2)
        _fill_after(monkeypatch, 1)
        monkeypatch.setattr(Store, "reserve_space", lambda self, slots=1: None)
        db = tmp_path / "s.db"
        result = CliRunner().invoke(main, ["run", str(exp), "--store", str(db), "--no-progress"])
    assert result.exit_code == StoreFullError.EXIT_STATUS == 74, result.output
    line = result.output.strip()
    assert len(line.splitlines()) == 1 and str(db) in line and "the disk of the store is full (/" in line
    assert "answered calls could not be stored and will be asked again" in line  # (no room was set aside)
    assert "rollback" not in line and "Traceback" not in line


def test_a_failed_export_fails_the_run_with_one_line(tmp_path, monkeypatch):
    def full(self, table, out, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(out))

    monkeypatch.setattr(Store, "export", full)
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, _server):
        exp = standin_experiment(tmp_path, url, items=2)
        db = tmp_path / "s.db"
        result = CliRunner().invoke(main, ["run", str(exp), "--store", str(db), "--no-progress"])
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert len(line.splitlines()) == 1 and "No space left on device" in line and "pairwise.csv" in line
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT status FROM runs").fetchall() == [("failed",)]
    conn.close()


def test_stale_temporary_files_of_killed_writers_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        target = tmp_path / "pairwise.csv"
        stale = tmp_path / f".pairwise.csv.{dead.pid}.k1ll3d.csv"
        live = tmp_path / f".pairwise.csv.{alive.pid}.wr1t1n.csv"
        other = tmp_path / f".other.csv.{dead.pid}.x.csv"
        for path in (stale, live, other):
            path.write_text("partial")
        atomic_write_bytes(target, b"a,b\n")
        assert target.read_bytes() == b"a,b\n"
        assert not stale.exists() and live.exists() and other.exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, live.name, other.name])
    finally:
        alive.kill()
        alive.wait()


def test_store_write_error_is_an_input_error():
    assert issubclass(StoreWriteError, InputError)


def _bytes(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_a_store_that_cannot_be_written_opens_read_only_for_info_and_export(tmp_path, monkeypatch):
    db = tmp_path / "store" / "s.db"
    db.parent.mkdir()
    with Store(db) as store:
        store.put_call("a" * 64, request={"backend": "b", "model": "m"}, response=None, text="A")
    before = _bytes(db.parent)
    assert set(before) == {"s.db"}  # closed cleanly: no WAL left
    real_access = __import__("os").access
    # (tests run as root, for whom chmod is no obstacle: the check for writability is what varies)
    monkeypatch.setattr("os.access", lambda p, mode, **kw: False if mode == __import__("os").W_OK else real_access(p, mode, **kw))
    runner = CliRunner()
    info = runner.invoke(main, ["store", "info", "--store", str(db), "--json"])
    assert info.exit_code == 0, info.output
    out = tmp_path / "calls.jsonl"
    export = runner.invoke(main, ["store", "export", "calls", "--out", str(out), "--store", str(db)])
    assert export.exit_code == 0, export.output
    assert out.read_text().count("\n") == 1
    assert _bytes(db.parent) == before  # nothing written beside the store, not even a -shm
    with Store.read_only(db) as store:
        assert store.readonly
        with pytest.raises(StoreWriteError):
            store.put_call("b" * 64, request={"backend": "b", "model": "m"}, response=None, text="B")


@pytest.mark.slow
@pytest.mark.parametrize(("size", "concurrency"), [("3m", 16), ("2m", 64)])
def test_a_full_real_disk_loses_no_paid_answer_and_a_rerun_pays_none_twice(tmp_path, small_disk, size, concurrency):
    """The store on a small tmpfs that fills up during the run (through the executable): the run
    stops sending, keeps every answer it was paid for (in the store, or beside it in
    ``s.db-unstored.jsonl`` when the disk has no room left for SQLite's pages), exits 74 naming the
    disk; once the disk is larger, the rerun takes those answers in and finishes without asking
    the server anything twice. Before, 65 of 210 answered calls were lost (the 8 MB reserve could
    not even be made on a small disk) and the exit status was 2."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    disk = small_disk(size)
    db = disk.path / "s.db"
    exe = str(Path(sys.executable).with_name("nepotism"))
    with standin_thread(StandinConfig(latency_s=0.005, log_requests=True)) as (url, server):
        exp = standin_experiment(tmp_path / "exp", url, items=300, concurrency=concurrency)
        first = subprocess.run(
            [exe, "run", str(exp), "--store", str(db), "--no-progress"], capture_output=True, text=True, timeout=900
        )
        answered = _answered(list(server.log))
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        stored = conn.execute("SELECT COUNT(*) FROM calls WHERE status = 'ok'").fetchone()[0]
        conn.close()
        beside = db.with_name("s.db-unstored.jsonl")
        spilled = len(beside.read_text().splitlines()) if beside.exists() else 0
        print(
            f"{size}, {2 * concurrency} slots: answered {sum(answered.values())}, stored {stored}, "
            f"kept beside the store {spilled}, lost {sum(answered.values()) - stored - spilled}"
        )
        assert first.returncode == 74, first.stderr
        line = first.stderr.strip()
        assert len(line.splitlines()) == 1 and "Traceback" not in line
        assert f"the disk of the store is full ({disk.path}: " in line and "none lost" in line
        assert max(answered.values()) == 1 and stored + spilled == len(answered)  # 0 lost
        disk.remount("size=64m")
        again = subprocess.run(
            [exe, "run", str(exp), "--store", str(db), "--no-progress", "--json"], capture_output=True, text=True, timeout=900
        )
        assert again.returncode == 0, again.stderr
        log = list(server.log)
    assert max(_answered(log).values()) == 1  # no answer paid twice
    assert json.loads(again.stdout)["judging"]["failed"] == 0 and not beside.exists()
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM calls WHERE status = 'ok'").fetchone()[0] == len(_answered(log))
    conn.close()
