"""Claims on calls being sent: one owner at a time, leases that expire, dead owners taken over; and
runs whose owner process is gone (killed, or its pid reused) ended by the next run."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time

import json
import shutil
from pathlib import Path

import pytest

from nepotism import _process
from nepotism.store import SCHEMA_VERSION, Store, StoreSchemaError
from nepotism.store._migrate import MIGRATIONS, _statements
from nepotism.store.merge import merge_stores

KEY = "a" * 64


def _ok(store: Store, key: str = KEY) -> None:
    store.put_call(key, request={"backend": "b", "model": "m"}, response=None, text="A")


def test_one_owner_at_a_time_and_release(tmp_path):
    with Store(tmp_path / "s.db") as store:
        assert store.claim_call(KEY, "one") == "claimed"
        assert store.claim_call(KEY, "one") == "claimed"  # its own claim: renewed
        assert store.claim_call(KEY, "two") == "busy"
        store.release_claims("one", [KEY])
        assert store.claim_call(KEY, "two") == "claimed"
        store.release_claims("two")
        assert store._conn().execute("SELECT COUNT(*) FROM call_claims").fetchone()[0] == 0


def test_a_stored_ok_call_needs_no_claim(tmp_path):
    with Store(tmp_path / "s.db") as store:
        assert store.claim_call(KEY, "one") == "claimed"
        _ok(store)
        assert store.claim_call(KEY, "two") == "done"


def test_an_expired_lease_is_taken_over_and_renewal_keeps_it(tmp_path):
    with Store(tmp_path / "s.db") as store:
        assert store.claim_call(KEY, "one", lease_s=0.05) == "claimed"
        assert store.claim_call("b" * 64, "one", lease_s=0.05) == "claimed"
        assert store.renew_claims("one", lease_s=3600) == 2
        time.sleep(0.1)
        assert store.claim_call(KEY, "two") == "busy"  # renewed past the first lease
        store._conn().execute("UPDATE call_claims SET expires_at = 0")
        assert store.claim_call(KEY, "two") == "claimed"


def test_a_dead_owner_on_this_host_is_taken_over_at_once(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with Store(tmp_path / "s.db") as store:
        store._conn().execute(
            "INSERT INTO call_claims (key, owner, host, pid, expires_at) VALUES (?, ?, ?, ?, ?)",
            (KEY, "gone", socket.gethostname(), dead.pid, time.time() + 3600),
        )
        store._conn().execute(
            "INSERT INTO call_claims (key, owner, host, pid, expires_at) VALUES (?, ?, ?, ?, ?)",
            ("c" * 64, "far", "another-host", dead.pid, time.time() + 3600),
        )
        assert store.claim_call(KEY, "me") == "claimed"
        assert store.claim_call("c" * 64, "me") == "busy"  # another host's process may be alive


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="tells a zombie from /proc")
def test_a_killed_owner_not_yet_reaped_is_taken_over_at_once(tmp_path):
    """A run killed with SIGKILL whose parent has not waited for it (a zombie) keeps its pid but
    sends nothing more: its claims are taken over at once, not after their lease. Before, the
    surviving run of two waited the lease out (71 s measured)."""
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with Store(tmp_path / "s.db") as store:
            store._conn().execute(
                "INSERT INTO call_claims (key, owner, host, pid, expires_at) VALUES (?, ?, ?, ?, ?)",
                (KEY, "killed", socket.gethostname(), owner.pid, time.time() + 3600),
            )
            assert store.claim_call(KEY, "me") == "busy"  # alive: its lease holds
            owner.send_signal(signal.SIGKILL)
            while open(f"/proc/{owner.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
                time.sleep(0.01)  # (not waited for: a zombie)
            assert store.claim_call(KEY, "me") == "claimed"
    finally:
        owner.kill()
        owner.wait()


def _hold(store: Store, key: str, pid: int, start: str | None, owner: str = "other") -> None:
    store._conn().execute(
        "INSERT INTO call_claims (key, owner, host, pid, expires_at, owner_start) VALUES (?, ?, ?, ?, ?, ?)",
        (key, owner, socket.gethostname(), pid, time.time() + 3600, start),
    )


LINUX = pytest.mark.skipif(
    not os.path.exists("/proc/sys/kernel/random/boot_id"), reason="a process's start time is read from /proc (Linux)"
)


def _start(pid: int) -> str:
    """ "<boot id>:<pid namespace>:<field 22 of /proc/PID/stat>", read here independently of the
    store."""
    boot = open("/proc/sys/kernel/random/boot_id").read().strip()
    namespace = os.stat("/proc/self/ns/pid").st_ino
    return f"{boot}:{namespace}:{open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[19]}"


@LINUX
def test_a_claim_records_its_owner_process_start(tmp_path):
    with Store(tmp_path / "s.db") as store:
        assert store.claim_call(KEY, "me") == "claimed"
        (start,) = store._conn().execute("SELECT owner_start FROM call_claims").fetchone()
    assert start == _start(os.getpid())


@LINUX
def test_a_reused_pid_is_taken_over_at_once_a_live_owner_never(tmp_path):
    """A killed run's pid now used by another live process: the claim names that pid with the
    dead run's start time, and is taken over at once instead of after its lease (60 s). The live
    process's own claim (its true start time), or one written before migration 0010 (no start
    time), holds for its lease."""
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = _start(live.pid)
        boot, namespace, ticks = start.split(":")
        with Store(tmp_path / "s.db") as store:
            _hold(store, "b" * 64, live.pid, start)
            _hold(store, "c" * 64, live.pid, None)  # an older nepotism's claim
            _hold(store, "d" * 64, live.pid, f"{boot}:{namespace}:{int(ticks) - 1}")  # the pid's earlier process
            _hold(store, "e" * 64, live.pid, f"{'0' * 8}-{boot[9:]}:{namespace}:{ticks}")  # before a reboot
            _hold(store, "f" * 64, live.pid, f"{boot}:{namespace}:{int(ticks) - 1}", owner="far")
            store._conn().execute("UPDATE call_claims SET host = 'another-host' WHERE owner = 'far'")
            assert store.claim_calls(["b" * 64, "c" * 64, "d" * 64, "e" * 64, "f" * 64], "me") == {
                "b" * 64: "busy",
                "c" * 64: "busy",
                "d" * 64: "claimed",
                "e" * 64: "claimed",
                "f" * 64: "busy",
            }  # (another host's pids are not ours to read)
            rows = dict(store._conn().execute("SELECT key, owner FROM call_claims"))
            assert rows == {"b" * 64: "other", "c" * 64: "other", "d" * 64: "me", "e" * 64: "me", "f" * 64: "far"}
    finally:
        live.kill()
        live.wait()


@LINUX
def test_a_claim_from_another_pid_namespace_waits_out_its_lease(tmp_path):
    """Two containers with one host name (host networking) sharing a store: a pid recorded in the
    other container's pid namespace means nothing here, gone or living, so its claim is never
    taken before its lease ends. One of this namespace whose pid is gone is taken at once."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    boot, namespace, ticks = _start(os.getpid()).split(":")
    with Store(tmp_path / "s.db") as store:
        _hold(store, "b" * 64, gone.pid, f"{boot}:{int(namespace) + 1}:{ticks}")
        _hold(store, "c" * 64, os.getpid(), f"{boot}:{int(namespace) + 1}:{int(ticks) + 1}")
        _hold(store, "d" * 64, gone.pid, f"{boot}:{namespace}:{ticks}")
        _hold(store, "e" * 64, os.getpid(), f"{boot}:{ticks}")  # (a record of no known shape: held)
        _hold(store, "f" * 64, gone.pid, f"{'0' * 8}-{boot[9:]}:{int(namespace) + 1}:{ticks}")
        assert store.claim_calls(["b" * 64, "c" * 64, "d" * 64, "e" * 64, "f" * 64], "me") == {
            "b" * 64: "busy",
            "c" * 64: "busy",
            "d" * 64: "claimed",
            "e" * 64: "busy",
            "f" * 64: "busy",
        }  # (another namespace's boot id is no proof of a reboot here)
        store._conn().execute("UPDATE call_claims SET expires_at = 0")
        assert set(store.claim_calls(["b" * 64, "c" * 64, "f" * 64], "me").values()) == {"claimed"}


def test_an_owner_hidden_from_proc_but_signalable_is_alive(tmp_path, monkeypatch):
    """/proc mounted with hidepid hides another user's processes, which kill(pid, 0) still finds
    (EPERM): such an owner is alive, its claims are not taken."""

    def denied(pid, sig):
        raise PermissionError(1, "Operation not permitted")

    with Store(tmp_path / "s.db") as store:
        monkeypatch.setattr(_process.os, "kill", denied)
        _hold(store, KEY, 5_000_000, None)  # above any pid_max: no /proc entry
        assert store.claim_call(KEY, "me") == "busy"


def _store_at_version(path, version: int) -> None:
    """A store as an older nepotism left it: the first ``version`` migrations applied."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(
        "CREATE TABLE _migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
        "sha256 TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    for migration in MIGRATIONS[:version]:
        for statement in _statements(migration.sql):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO _migrations VALUES (?, ?, ?, '2026-11-26')", (migration.version, migration.name, migration.sha256)
        )
    conn.close()


def test_a_store_of_schema_9_migrates_its_claims_keep_the_old_rule_and_it_merges(tmp_path):
    old = tmp_path / "old.db"
    _store_at_version(old, 9)
    conn = sqlite3.connect(old, isolation_level=None)
    conn.execute(
        "INSERT INTO call_claims (key, owner, host, pid, expires_at) VALUES (?, ?, ?, ?, ?)",
        (KEY, "older", socket.gethostname(), os.getpid(), time.time() + 3600),
    )
    conn.close()
    with Store(old) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert store._conn().execute("SELECT owner, owner_start FROM call_claims").fetchall() == [("older", None)]
        assert store.claim_call(KEY, "me") == "busy"  # its pid lives: the lease holds, as before
        store._conn().execute("UPDATE call_claims SET expires_at = 0")
        assert store.claim_call(KEY, "me") == "claimed"
        _ok(store, "b" * 64)
    with Store(tmp_path / "new.db") as store:
        assert store.claim_call("c" * 64, "busy-run") == "claimed"
        _ok(store, "d" * 64)
    summary = merge_stores([old, tmp_path / "new.db"], tmp_path / "merged.db")
    assert summary.added["calls"] == 2
    with Store(tmp_path / "merged.db") as merged:  # claims are leases: never copied
        assert merged._conn().execute("SELECT COUNT(*) FROM call_claims").fetchone()[0] == 0


def test_claim_calls_answers_each_key_in_one_transaction(tmp_path):
    keys = ["b" * 64, "c" * 64, "d" * 64]
    with Store(tmp_path / "s.db") as store:
        _ok(store, keys[0])
        assert store.claim_call(keys[1], "other") == "claimed"
        assert store.claim_calls(keys + [keys[2]], "me") == {keys[0]: "done", keys[1]: "busy", keys[2]: "claimed"}
        assert store.claim_call(keys[2], "other") == "busy"
        # storing calls with release_owner ends that owner's claims in the same transaction
        store.put_calls(
            [{"key": keys[2], "request": {"backend": "b", "model": "m"}, "response": None, "text": "A"}], release_owner="me"
        )
        rows = store._conn().execute("SELECT key, owner FROM call_claims ORDER BY key").fetchall()
        assert rows == [(keys[1], "other")]
        assert store.claim_call(keys[2], "other") == "done"


def test_a_read_only_store_lacking_only_writers_migrations_is_read_as_it_is(tmp_path):
    """`nepotism store info` / ``export`` of a store an older nepotism wrote, on a read-only mount:
    it cannot be migrated, and the start time of a claim's or a run's owner (0010, 0012) or an
    instance's dataset file (0011) is no reader's business, so it is read at schema 11 (before
    0012) or 9 (before 0010). A store lacking a
    migration readers need is still refused."""
    path = tmp_path / "old.db"
    with Store(path) as store:
        _ok(store)
        store.end_run(store.start_run({"who": "old"}))
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("ALTER TABLE runs DROP COLUMN owner_start")
    conn.execute("DELETE FROM _migrations WHERE version = 12")
    conn.close()
    with Store(path, readonly=True) as store:
        assert store.schema_version == 11 and store.info()["run_status"] == {"done": 1}
        assert store.export("runs", tmp_path / "runs.jsonl", fmt="jsonl") == 1
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("ALTER TABLE call_claims DROP COLUMN owner_start")
    conn.execute("DELETE FROM _migrations WHERE version >= 10")  # (0011 too: a writers' migration as well)
    conn.close()
    with Store(path, readonly=True) as store:
        assert store.schema_version == 9 and store.info()["counts"]["calls"] == 1
        assert store.export("calls", tmp_path / "calls.jsonl", fmt="jsonl") == 1
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DELETE FROM _migrations WHERE version = 9")
    conn.close()
    with pytest.raises(StoreSchemaError, match="read-only"):
        Store(path, readonly=True)


# -- runs: a run whose process is gone is ended by the next run ---------------------------------


def _running(store: Store, run_id: str, pid: int, start: str | None, host: str | None = None) -> None:
    """A ``running`` row as a run of process ``pid`` (started at ``start``) left it."""
    store._conn().execute(
        "INSERT INTO runs (id, started_at, config, status, pid, host, owner_start) "
        "VALUES (?, '2026-11-26T00:00:00+00:00', '{}', 'running', ?, ?, ?)",
        (run_id, pid, host or socket.gethostname(), start),
    )


@LINUX
def test_a_run_records_its_process_start(tmp_path):
    with Store(tmp_path / "s.db") as store:
        run = store.start_run({"who": "me"})
        row = store._conn().execute("SELECT pid, host, owner_start FROM runs WHERE id = ?", (run,)).fetchone()
    assert row == (os.getpid(), socket.gethostname(), _start(os.getpid()))


@LINUX
def test_a_run_whose_pid_was_reused_is_abandoned_a_live_run_never(tmp_path):
    """A killed run's pid now used by another live process: the run names that pid with the dead
    run's start time, and the next run ends it as abandoned instead of leaving it ``running``
    while the pid lives. The live process's own run (its true start time), one recorded before
    migration 0012 (no start time), another host's and another pid namespace's stay running."""
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = _start(live.pid)
        boot, namespace, ticks = start.split(":")
        with Store(tmp_path / "s.db") as store:
            _running(store, "true", live.pid, start)
            _running(store, "older", live.pid, None)
            _running(store, "reused", live.pid, f"{boot}:{namespace}:{int(ticks) - 1}")
            _running(store, "reboot", live.pid, f"{'0' * 8}-{boot[9:]}:{namespace}:{ticks}")
            _running(store, "far", live.pid, f"{boot}:{namespace}:{int(ticks) - 1}", host="another-host")
            _running(store, "container", live.pid, f"{boot}:{int(namespace) + 1}:{int(ticks) - 1}")
            assert sorted(store.abandon_dead_runs()) == ["reboot", "reused"]
            runs = {r["id"]: r for r in store.runs()}
    finally:
        live.kill()
        live.wait()
    assert {k: r["status"] for k, r in runs.items()} == {
        "true": "running",
        "older": "running",
        "reused": "interrupted",
        "reboot": "interrupted",
        "far": "running",
        "container": "running",
    }
    assert runs["reused"]["end_note"].startswith(f"abandoned: process {live.pid} ")


def test_a_store_of_schema_11_migrates_its_runs_keep_the_old_rule_and_it_merges(tmp_path):
    """A run an older nepotism recorded (no start time) whose pid lives stays running, as before;
    one whose pid is gone is ended; the migrated store merges with a new one."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    old = tmp_path / "old.db"
    _store_at_version(old, 11)
    conn = sqlite3.connect(old, isolation_level=None)
    for run_id, pid in (("alive", os.getpid()), ("dead", dead.pid)):
        conn.execute(
            "INSERT INTO runs (id, started_at, config, status, pid, host) "
            "VALUES (?, '2026-11-26T00:00:00+00:00', '{}', 'running', ?, ?)",
            (run_id, pid, socket.gethostname()),
        )
    conn.close()
    with Store(old) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert store.abandon_dead_runs() == ["dead"]
        store.end_run("alive")
    with Store(tmp_path / "new.db") as store:
        mine = store.start_run({"who": "new"})
    summary = merge_stores([old, tmp_path / "new.db"], tmp_path / "merged.db")
    assert summary.added["runs"] == 3 and summary.unfinished_runs == (mine,)
    with Store(tmp_path / "merged.db") as merged:
        starts = dict(merged._conn().execute("SELECT id, owner_start FROM runs"))
    assert starts["alive"] is None and starts["dead"] is None and starts[mine] == _process.process_start(os.getpid())


def _exe() -> str:
    found = shutil.which("nepotism", path=str(Path(sys.executable).parent))
    assert found, "the nepotism executable is not installed next to this Python"
    return found


@LINUX
def test_a_killed_run_whose_pid_was_reused_is_interrupted_after_the_next_run(tmp_path):
    """Where a user meets it: after the next ``nepotism run``, ``nepotism store info`` counts the
    killed run (its pid now another live process's) as interrupted, and the live process's own
    run as running. Before, both stayed running while the pid lived."""
    from nepotism.testing.experiments import standin_experiment
    from nepotism.testing.standin import StandinConfig, standin_thread

    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    db = tmp_path / "s.db"
    try:
        boot, namespace, ticks = _start(live.pid).split(":")
        with Store(db) as store:
            _running(store, "killed-earlier", live.pid, f"{boot}:{namespace}:{int(ticks) - 1}")
            _running(store, "still-going", live.pid, f"{boot}:{namespace}:{ticks}")
        with standin_thread(StandinConfig(latency_s=0.001)) as (url, _server):
            exp = standin_experiment(tmp_path, url, items=1, recognition=False)
            run = subprocess.run(
                [_exe(), "run", str(exp), "--store", str(db), "--no-progress"], capture_output=True, text=True, timeout=600
            )
        assert run.returncode == 0, run.stderr[-3000:]
        info = subprocess.run(
            [_exe(), "store", "info", "--store", str(db), "--json"], capture_output=True, text=True, timeout=600
        )
    finally:
        live.kill()
        live.wait()
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["run_status"] == {"done": 1, "interrupted": 1, "running": 1}
