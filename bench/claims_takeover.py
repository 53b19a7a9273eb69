"""How long a run waits for the calls a killed run on the same store had claimed, when the killed
run's pid now belongs to another live process (a reused pid).

Run A (`nepotism run` on the loopback stand-in, every answer ``--latency`` seconds late) is
SIGKILLed and reaped while it has calls claimed; its claims are then pointed at a live process
(``sleep``), which is what a reused pid looks like to the store. Run B, the same experiment on the
same store, is timed to the end. ``reused``: the claims keep A's recorded start time
(``owner_start``, migration 0010), so B takes them over at once. ``older``: ``owner_start``
cleared, the rule for a claim without a start time (written before 0010, or no /proc): B waits
out the lease (60 s). Checked: B exits 0, every call of the plan is stored ok, no claim is left.
Nothing is asserted about time.

Usage: python bench/claims_takeover.py [--rule reused|older|both] [--items 5] [--latency 1.0]

Measured 2026-11-26 16:11 and 16:14 (load 2.0-3.7), 5 items, latency 1 s, 10 claims of the killed
run: reused 7.7 / 7.6 s, older 67.4 / 67.6 s (the 60 s lease).
"""

from __future__ import annotations

import argparse
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, standin_thread

EXE = str(Path(sys.executable).with_name("nepotism"))


def _claims(db: Path) -> int:
    try:
        conn = sqlite3.connect(db, timeout=30)
        try:
            return conn.execute("SELECT COUNT(*) FROM call_claims").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.OperationalError:  # not created yet
        return 0


def measure(rule: str, items: int, latency: float) -> bool:
    with tempfile.TemporaryDirectory() as tmp, standin_thread(StandinConfig(latency_s=latency)) as (url, _server):
        exp = standin_experiment(tmp, url, items=items, concurrency=4)
        db = Path(tmp) / "s.db"
        run = [EXE, "run", str(exp), "--store", str(db), "--no-progress"]
        killed = subprocess.Popen(run, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not (db.exists() and _claims(db)):
            if killed.poll() is not None:
                print(f"{rule}: FAIL the first run ended before it claimed a call")
                return False
            time.sleep(0.05)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        reuser = subprocess.Popen(["sleep", "600"])  # the pid's new owner, alive
        try:
            conn = sqlite3.connect(db, timeout=30)
            with conn:
                conn.execute("UPDATE call_claims SET pid = ?", (reuser.pid,))
                if rule == "older":
                    conn.execute("UPDATE call_claims SET owner_start = NULL")
            held = conn.execute("SELECT COUNT(*) FROM call_claims").fetchone()[0]
            conn.close()
            start = time.monotonic()
            survivor = subprocess.run([*run, "--json"], capture_output=True, text=True)
            took = time.monotonic() - start
        finally:
            reuser.kill()
            reuser.wait()
        conn = sqlite3.connect(db)
        left = conn.execute("SELECT COUNT(*) FROM call_claims").fetchone()[0]
        failed = conn.execute("SELECT COUNT(*) FROM calls WHERE status != 'ok'").fetchone()[0]
        conn.close()
        ok = survivor.returncode == 0 and left == 0 and failed == 0
        print(
            f"{rule}: {held} claims of the killed run, pid reused; the surviving run took {took:.1f} s "
            f"(exit {survivor.returncode}, claims left {left}, calls not ok {failed})  {'ok' if ok else 'FAIL'}"
        )
        if not ok:
            print(survivor.stderr[-3000:])
        return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rule", choices=("reused", "older", "both"), default="both")
    parser.add_argument("--items", type=int, default=5)
    parser.add_argument("--latency", type=float, default=1.0)
    args = parser.parse_args()
    rules = ("reused", "older") if args.rule == "both" else (args.rule,)
    return 0 if all([measure(rule, args.items, args.latency) for rule in rules]) else 1


if __name__ == "__main__":
    sys.exit(main())
