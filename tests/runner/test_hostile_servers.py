"""`nepotism run` against a server misbehaving on purpose (the stand-in's hostile answers): a 512 MiB
body, a 2 MB gzip body inflating to 2 GiB, an answer trickled a byte at a time. Each call fails
with its reason (``response_too_large``, ``timeout``), nothing of the body is stored, the run
exits 3 as for any failed call (no traceback, no crash), and its peak memory is measured by the
kernel (`nepotism.testing.peak.run_measured`: the run's own peak, not the pytest worker's it would
start from)."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from nepotism.testing.experiments import standin_experiment
from nepotism.testing.peak import run_measured
from nepotism.testing.standin import StandinConfig, standin_thread

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "reason"), [("gzip_bomb", "response_too_large"), ("huge_body", "response_too_large"), ("trickle", "timeout")]
)
def test_a_run_against_a_hostile_server_fails_those_calls_with_their_reason_in_bounded_memory(tmp_path, fault, reason):
    config = StandinConfig(latency_s=0.001, fault_rates={fault: 1.0}, trickle_s=0.3)
    with standin_thread(config) as (url, server):
        # (the stand-in makes its 2 GiB bomb once, in seconds: a deadline for the trickle only)
        exp = standin_experiment(
            tmp_path,
            url,
            items=2,
            recognition=False,
            attempts=1,
            timeout=2.0 if fault == "trickle" else 300.0,
            model_options="max_response_mb = 4",
        )
        db = tmp_path / "s.db"
        with open(tmp_path / "run.stdout", "w") as out, open(tmp_path / "run.stderr", "w") as err:
            # the run's own peak, as the kernel counted it (not the worker's, whose size a child starts from)
            proc, peak = run_measured([NEPOTISM, "run", str(exp), "--store", str(db), "--json"], stdout=out, stderr=err)
        stats = dict(server.stats)
    out, err = (tmp_path / "run.stdout").read_text(), (tmp_path / "run.stderr").read_text()
    assert proc.returncode == 3, err
    assert "Traceback" not in err
    peak_mib = peak / 2**20
    print(f"{fault}: peak RSS of nepotism run {peak_mib:.0f} MiB")
    assert peak_mib < 400
    summary = json.loads(out)
    assert summary["generation"]["errors"] == {reason: 4}
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT status, error, length(response) FROM calls").fetchall()
    conn.close()
    assert len(rows) == 4 and all(s == "failed" and e.startswith(reason) for s, e, _ in rows)
    assert max(n for *_, n in rows) < 4096  # the attempts' reasons, nothing of a body
    if reason == "response_too_large":  # the experiment's max_response_mb = 4
        assert all("limit of 4,194,304 bytes" in e for _, e, _ in rows)
    assert db.stat().st_size < 1 << 20
    if fault == "huge_body":
        assert stats["huge_body_sent"] < 64 << 20  # of 512 MiB each: the client stopped reading
    if fault == "trickle":
        assert stats["trickle_sent"] < 100  # of ≈ 300 bytes
