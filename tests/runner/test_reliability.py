"""Reliability of the runner against the loopback stand-in: injected faults, SIGKILLs, secrets."""

from __future__ import annotations

import json
import os
from collections import Counter
import random
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from nepotism.experiment import load_experiment
from nepotism.runner.experiment_run import run_experiment
from nepotism.store import Store
from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, StandinServer, standin_thread
from tests.runner.conftest import count_calls

KEY = "sk-nepotism-planted-4f1c9e7a2b"


def _experiment(tmp: Path, url: str, *, items: int, extra_model: str = "", **options) -> Path:
    """The stand-in experiment of `nepotism.testing.experiments` (generated items, both stand-in models)."""
    return standin_experiment(tmp, url, items=items, model_options=extra_model, name="reliability", **options)


@pytest.fixture
def served(monkeypatch):
    """Record every successful answer the stand-in gives: (model, messages JSON, time)."""
    answers: list[tuple[str, str, float]] = []
    original = StandinServer._chat

    def chat(self, body, model, text):
        answers.append((model, json.dumps(body["messages"], sort_keys=True), time.time()))
        return original(self, body, model, text)

    monkeypatch.setattr(StandinServer, "_chat", chat)
    return answers


def _invariants(store: Store) -> None:
    calls = store._conn().execute("SELECT key, status, error FROM calls").fetchall()
    status = {k: (s, e) for k, s, e in calls}
    assert all(s == "ok" or (s == "failed" and e) for s, e in status.values())
    rows = store._conn().execute("SELECT call_key, status, verdict, score FROM judgments").fetchall()
    assert rows
    for key, jstatus, verdict, score in rows:
        assert key in status
        if status[key][0] == "failed":
            assert jstatus == "failed" and verdict is None and score is None
        else:
            assert jstatus != "failed"


def test_fault_injection_every_call_resolved_or_failed_with_reason(tmp_path, served):
    faults = {"http_500": 0.05, "http_503": 0.05, "hang": 0.05, "malformed": 0.02}
    config = StandinConfig(latency_s=0.002, fault_rates=faults, seed=7, hang_s=2.0)
    with standin_thread(config) as (url, server):
        exp = load_experiment(
            _experiment(
                tmp_path,
                url,
                items=6,
                timeout=0.25,
                attempts=2,
                conditions='["default", {name = "impartial", options = {impartial = true}}]',
            )
        )
        with Store(tmp_path / "s.db") as store:
            summary = asyncio_run(run_experiment(exp, store))
            stats = dict(server.stats)
            _invariants(store)
            calls = store._conn().execute("SELECT key, status, error, response FROM calls").fetchall()
            failed = [c for c in calls if c[1] == "failed"]
            retried = [c for c in calls if json.loads(c[3])["attempts"] > 1]
            judgments = store.judgments()
    assert stats.get("fault_hang", 0) and stats.get("fault_malformed", 0) and stats.get("fault_http_500", 0)
    assert retried, "faults at these rates must cause retries"
    # the store holds every judgment planned: those of the calls made, and those a failed
    # generation prevented (failed, reason "generation:<error>", never left out)
    prevented = [j for j in judgments if (j.reason or "").startswith("generation:")]
    assert summary.generation_failures and summary.prevented == dict(Counter(j.reason for j in prevented))
    assert summary.judging["total"] + len(prevented) == len(judgments)
    assert summary.judging["failed"] + len(prevented) == sum(1 for j in judgments if j.status == "failed")
    for _key, _status, error, response in failed:
        attempts = json.loads(response)
        assert attempts["attempts"] == len(attempts["errors"]) and attempts["errors"][-1] == error
    # no ok call was answered twice: retries only follow failures
    seen: dict[tuple[str, str], int] = {}
    for model, messages, _t in served:
        seen[(model, messages)] = seen.get((model, messages), 0) + 1
    ok_requests = sum(1 for c in calls if c[1] == "ok")
    assert sum(seen.values()) <= ok_requests + len(failed)
    # a rerun against a healthy server resolves what failed and repeats no ok call
    before = _committed(tmp_path / "s.db")
    served.clear()
    with standin_thread(StandinConfig(latency_s=0.002)) as (url2, _server):
        # a generous timeout: on a loaded machine a healthy answer can take longer than 0.25 s
        exp2 = load_experiment(
            _experiment(
                tmp_path,
                url2,
                items=6,
                timeout=60,
                attempts=2,
                conditions='["default", {name = "impartial", options = {impartial = true}}]',
            )
        )
        with Store(tmp_path / "s.db") as store:
            asyncio_run(run_experiment(exp2, store))
            _invariants(store)
            after = store._conn().execute("SELECT status, COUNT(*) FROM calls GROUP BY status").fetchall()
    assert dict(after).get("failed", 0) == 0
    assert served, "the failed calls were sent again"
    assert not [m for m, msgs, _t in served if (m, msgs) in before]


def asyncio_run(coro):
    import asyncio

    return asyncio.run(coro)


def _committed(db: Path) -> dict[tuple[str, str], float]:
    conn = sqlite3.connect(db)
    out = {}
    for request, created in conn.execute("SELECT request, created_at FROM calls WHERE status = 'ok'"):
        req = json.loads(request)
        messages = json.dumps(req["messages"], sort_keys=True)
        stamp = datetime.fromisoformat(created).timestamp()
        key = (req["served_model"], messages)
        out[key] = max(out.get(key, 0.0), stamp)
    conn.close()
    return out


CLI = [sys.executable, "-c", "import sys; from nepotism.cli import main; sys.exit(main())"]


def _cli(exp: Path, db: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [*CLI, "run", str(exp), "--store", str(db), "--no-progress", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _judgments(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT id, status, verdict, score, raw_output FROM judgments ORDER BY id").fetchall()
    conn.close()
    return rows


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume_matches_uninterrupted_run(tmp_path, served):
    rng = random.Random(2024)
    # calls slow enough that a loaded machine still gets 10 kills in before the run completes
    with standin_thread(StandinConfig(latency_s=0.25)) as (url, _server):
        # enough calls (72) for 10 kills however many calls each run commits before its kill
        exp = _experiment(tmp_path, url, items=12, recognition=False, concurrency=2)
        clean = tmp_path / "clean.db"
        done = subprocess.run([*CLI, "run", str(exp), "--store", str(clean), "--no-progress"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        served.clear()
        db = tmp_path / "killed.db"
        kills = 0
        for attempt in range(30):
            proc = _cli(exp, db)
            if attempt < 3:  # a few blind kills, possibly during start-up
                time.sleep(rng.uniform(0.05, 1.5))
            else:  # then kill right after some more calls were committed
                target = count_calls(db) + rng.randint(1, 2)
                while proc.poll() is None and count_calls(db) < target:
                    time.sleep(0.005)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills += 1
            else:
                proc.wait()
                break
            if kills >= 10:
                break
        final = subprocess.run([*CLI, "run", str(exp), "--store", str(db), "--no-progress"], capture_output=True, text=True)
        assert final.returncode == 0, final.stderr
    assert kills >= 10, f"the run finished after {kills} kills"
    assert _judgments(db) == _judgments(clean)
    # no completed (committed) call was ever requested again after its commit
    committed = _committed(db)
    late = [(m, t) for m, msgs, t in served if (m, msgs) in committed and t > committed[(m, msgs)]]
    assert late == []
    runs = sqlite3.connect(db).execute("SELECT status, end_note FROM runs ORDER BY started_at, id").fetchall()
    # a killed run never ends itself: the next run ends it as interrupted, saying it was abandoned
    abandoned = [r for r in runs if r[0] == "interrupted" and (r[1] or "").startswith("abandoned: process ")]
    assert abandoned and runs[-1] == ("done", None)  # (a kill during start-up may precede the run)
    assert all(status != "running" for status, _ in runs)


def test_api_key_never_reaches_store_logs_exports_or_reports(tmp_path):
    env = os.environ | {"NEPOTISM_TEST_PLANTED_KEY": KEY}
    with standin_thread(StandinConfig(latency_s=0.001, expected_api_key=KEY, fault_rates={"http_500": 0.3})) as (url, server):
        exp = _experiment(tmp_path, url, items=2, extra_model='api_key_env = "NEPOTISM_TEST_PLANTED_KEY"')
        db = tmp_path / "s.db"
        outputs = []
        for args in (["--json"], ["--dry-run"]):
            r = subprocess.run(
                [*CLI, "run", str(exp), "--store", str(db), "--progress", *args], capture_output=True, text=True, env=env
            )
            assert r.returncode == 0, r.stderr
            outputs += [r.stdout, r.stderr]
        assert server.stats["auth_ok"] > 0 and server.stats.get("auth_missing", 0) == 0
        assert server.stats.get("fault_http_500", 0) > 0  # error paths were exercised too
    with Store(db) as store:
        for table in ("calls", "runs", "responses", "pairwise"):
            store.export(table, tmp_path / f"{table}.jsonl", fmt="jsonl")
        store.export("judgments", tmp_path / "recognition.jsonl", fmt="jsonl", protocol="recognition")
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".csv" for p in files)
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path
    for text in outputs:
        assert KEY not in text


@pytest.mark.parametrize(
    ("flags", "signum", "code"),
    [((), signal.SIGINT, 130), (("--json",), signal.SIGINT, 130), ((), signal.SIGTERM, 143), (("--json",), signal.SIGTERM, 143)],
)
def test_ctrl_c_marks_the_run_interrupted_and_keeps_the_store_consistent(tmp_path, flags, signum, code):
    """With --json, stdout still holds exactly one JSON document (it was empty). SIGTERM (how
    Slurm and Kubernetes stop a job) stops the run as Ctrl-C does, exit 143: it killed the process
    at once, with no message, leaving its run "running" in the store."""
    with standin_thread(StandinConfig(latency_s=1.0)) as (url, _server):
        exp = _experiment(tmp_path, url, items=6, recognition=False, concurrency=1)
        db = tmp_path / "s.db"
        # the child gets the default SIGINT disposition: a pytest worker may have inherited or set
        # SIG_IGN, which a child would inherit and which Python (rightly) respects
        proc = subprocess.Popen(
            [*CLI, "run", str(exp), "--store", str(db), "--no-progress", *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        # 36 calls at 1 s latency through 2 single-slot models take >= 18 s: interrupt once two
        # calls are stored (on a loaded machine the start-up alone can take several seconds, so the
        # deadline only guards against a hang; the run cannot finish before two calls are stored)
        deadline = time.monotonic() + 60.0
        while proc.poll() is None and count_calls(db) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "the run finished before it could be interrupted"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert "run again to resume" in err and signal.Signals(signum).name in err
    if flags:
        assert json.loads(out)["status"] == "interrupted" and json.loads(out)["signal"] == signal.Signals(signum).name
    else:
        assert out == ""
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
    assert conn.execute("SELECT COUNT(*) FROM calls WHERE status = 'ok' AND text IS NOT NULL").fetchone()[0] >= 1
    conn.close()
