"""The loss bound of a SIGKILL: a killed run re-pays at most the calls it had in flight, its
models' concurrency summed (docs/scale.md, "What a kill or a full disk can cost").

A call is paid once the server answers it; it is kept once its row is committed to the store. The
runner holds an endpoint's slot from sending a call until its answer is committed, so at any
moment the calls answered or being answered and not yet stored are at most the slots. Here the
stand-in logs every answer it gives (including those to a client killed meanwhile), the run is
killed at random points through the installed executable, and each kill's loss is counted as the
answers the server gave during that run less the calls the store gained: each of those is paid
again by the next run."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, standin_thread
from tests.runner.conftest import count_calls

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))
CONCURRENCY = 16  # per model; two models: at most 32 calls in flight
SLOTS = 2 * CONCURRENCY


def _stored(db: Path) -> int:
    return count_calls(db, "status = 'ok'")


def _answered(server) -> int:
    return sum(1 for _t, _f, status in list(server.log) if status == 200)


def _settled(server, latency: float) -> int:
    """The answers given once the killed client's last requests are answered too (the server
    answers a request after ``latency`` whether or not its client is still there)."""
    seen = -1
    while (now := _answered(server)) != seen:
        seen = now
        time.sleep(max(0.2, 4 * latency))
    return seen


@pytest.mark.slow
def test_each_kill_re_pays_at_most_the_calls_in_flight(tmp_path):
    rng = random.Random(39)
    latency = 0.01
    losses: list[int] = []
    with standin_thread(StandinConfig(latency_s=latency, log_requests=True)) as (url, server):
        exp = standin_experiment(
            tmp_path,
            url,
            items=150,
            concurrency=CONCURRENCY,
            conditions='["default", {name = "impartial", options = {impartial = true}}]',
        )
        db = tmp_path / "s.db"
        for _attempt in range(40):
            before_answered, before_stored = _answered(server), _stored(db)
            proc = subprocess.Popen(
                [NEPOTISM, "run", str(exp), "--store", str(db), "--no-progress"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            # kill once the run has stored some more calls (a random number), or answered some
            target = rng.randint(20, 400)
            while proc.poll() is None and _answered(server) - before_answered < target:
                time.sleep(0.002)
            if proc.poll() is not None:
                break
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            answered = _settled(server, latency) - before_answered
            stored = _stored(db) - before_stored
            losses.append(answered - stored)
            if len(losses) >= 12:
                break
        final = subprocess.run([NEPOTISM, "run", str(exp), "--store", str(db), "--no-progress"], capture_output=True, text=True)
        assert final.returncode == 0, final.stderr
        total_answered = _answered(server)
    distinct = _stored(db)
    print(f"lost (paid again) per kill, at most {SLOTS} in flight: {losses}; {total_answered} answers for {distinct} calls")
    assert len(losses) >= 10, f"the run finished after {len(losses)} kills"
    assert all(0 <= lost <= SLOTS for lost in losses), losses
    # every answer the server gave more than once was one a kill lost
    assert total_answered - distinct == sum(losses)
