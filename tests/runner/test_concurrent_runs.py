"""Two processes running the same experiment on one store never send the same call twice: each
claims a call in the store before sending it (a renewed lease), and waits for the other's."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, standin_thread

pytestmark = pytest.mark.slow


def _exe() -> str:
    found = shutil.which("nepotism", path=str(Path(sys.executable).parent))
    assert found, "the nepotism executable is not installed next to this Python"
    return found


def test_two_concurrent_identical_runs_send_every_call_once(tmp_path):
    with standin_thread(StandinConfig(latency_s=0.03, log_requests=True)) as (url, server):
        exp = standin_experiment(tmp_path, url, items=5, concurrency=4)
        db = tmp_path / "s.db"
        procs = [
            subprocess.Popen(
                [_exe(), "run", str(exp), "--store", str(db), "--no-progress", "--json"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        outs = [p.communicate(timeout=600) for p in procs]
        log = list(server.log)
    for proc, (out, err) in zip(procs, outs):
        assert proc.returncode == 0, err[-3000:]
    summaries = [json.loads(out) for out, _ in outs]
    answered = Counter(fingerprint for _t, fingerprint, status in log if status == 200)
    assert answered and max(answered.values()) == 1, answered.most_common(3)
    assert len(log) == len(answered)  # no failures, so nothing else was asked either
    # both runs delivered every call: one sent it, the other read it from the store
    sent = sum(s["generation"]["sent"] + s["judging"]["sent"] for s in summaries)
    assert sent == len(answered)
    assert all(s["status"] == "done" and s["judging"]["failed"] == 0 for s in summaries)
    assert summaries[0]["judging"]["total"] == summaries[1]["judging"]["total"]
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM call_claims").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM calls WHERE status = 'ok'").fetchone()[0] == len(answered)
    conn.close()
