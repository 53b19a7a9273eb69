"""Claims on calls being sent: one owner at a time, leases that expire, dead owners taken over."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from nepotism.store import Store

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
            (KEY, "gone", socket.gethostname(), dead.pid, time.time() + 3600))
        store._conn().execute(
            "INSERT INTO call_claims (key, owner, host, pid, expires_at) VALUES (?, ?, ?, ?, ?)",
            ("c" * 64, "far", "another-host", dead.pid, time.time() + 3600))
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
                (KEY, "killed", socket.gethostname(), owner.pid, time.time() + 3600))
            assert store.claim_call(KEY, "me") == "busy"  # alive: its lease holds
            owner.send_signal(signal.SIGKILL)
            while open(f"/proc/{owner.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
                time.sleep(0.01)  # (not waited for: a zombie)
            assert store.claim_call(KEY, "me") == "claimed"
    finally:
        owner.kill()
        owner.wait()


def test_claim_calls_answers_each_key_in_one_transaction(tmp_path):
    keys = ["b" * 64, "c" * 64, "d" * 64]
    with Store(tmp_path / "s.db") as store:
        _ok(store, keys[0])
        assert store.claim_call(keys[1], "other") == "claimed"
        assert store.claim_calls(keys + [keys[2]], "me") == {keys[0]: "done", keys[1]: "busy", keys[2]: "claimed"}
        assert store.claim_call(keys[2], "other") == "busy"
        # storing calls with release_owner ends that owner's claims in the same transaction
        store.put_calls([{"key": keys[2], "request": {"backend": "b", "model": "m"}, "response": None,
                          "text": "A"}], release_owner="me")
        rows = store._conn().execute("SELECT key, owner FROM call_claims ORDER BY key").fetchall()
        assert rows == [(keys[1], "other")]
        assert store.claim_call(keys[2], "other") == "done"
