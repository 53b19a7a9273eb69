"""Several threads, several processes and a killed process writing to one store file."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import nepotism
from nepotism.records import Judgment
from nepotism.store import Store
from tests.store.keys import opaque_key

_SRC = str(Path(nepotism.__file__).resolve().parents[1])

_WRITER = textwrap.dedent(
    """
    import hashlib
    import sys
    from nepotism.records import Judgment
    from nepotism.store import Store

    path, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with Store(path) as store:
        for i in range(n):
            # keys 0..49 are shared by both writers, the rest are their own
            tag = f"shared-{i}" if i < 50 else f"{name}-{i}"
            key = hashlib.sha256(tag.encode()).hexdigest()
            store.put_call(key, request={"model": "m", "tag": tag}, response={"by": name},
                           text=tag)
            if i % 20 == 0:
                store.add_judgments([
                    Judgment(tag, name, "pointwise", ("g",), "parsed", score=float(i))
                ], source=name)
            if i == 5:
                print("ready", flush=True)
    """
)


def _env():
    return {**os.environ, "PYTHONPATH": _SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def test_threads_share_one_store(store):
    errors = []

    def work(t: int) -> None:
        try:
            for i in range(100):
                key = opaque_key(f"{t}-{i}")
                store.put_call(key, request={"t": t}, response=None, text=str(i))
                assert store.get_call(key).text == str(i)
            store.add_judgments([Judgment(f"q{i}", f"judge{t}", "pointwise", ("g",), "parsed", score=1.0) for i in range(50)])
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    counts = store.info()["counts"]
    assert counts["calls"] == 400 and counts["judgments"] == 200
    assert len(store._connections) >= 4


def test_two_processes_append_to_one_file(tmp_path):
    path = tmp_path / "shared.db"  # created by the racing writers themselves
    n = 300
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), name, str(n)],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("w1", "w2")
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert _integrity(path) == "ok"
    with Store(path) as store:
        info = store.info()
        assert info["counts"]["calls"] == 50 + 2 * (n - 50)
        assert info["judgments_per_judge"] == {"w1": n // 20, "w2": n // 20}
        shared = opaque_key("shared-7")
        assert store.get_call(shared).response["by"] in ("w1", "w2")
        for name in ("w1", "w2"):
            key = opaque_key(f"{name}-299")
            assert store.get_call(key).response == {"by": name}


def test_a_killed_writer_leaves_a_consistent_file(tmp_path):
    path = tmp_path / "killed.db"
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), "w1", "1000000"], env=_env(), stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    assert _integrity(path) == "ok"
    with Store(path) as store:
        n = store.info()["counts"]["calls"]
        assert n >= 6
        rows = store._conn().execute("SELECT key FROM calls").fetchall()
        calls = store.get_calls([k for (k,) in rows])
        assert len(calls) == n
        assert all(c.ok and c.text == c.request["tag"] for c in calls.values())
