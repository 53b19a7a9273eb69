"""P1 end to end: `nepotism run` (the command users run) against the loopback stand-in, as a
ratio to the simplest aiohttp client in the same session.

The stand-in runs in a child process and answers after ``--latency`` seconds. Each round times
(a) the bare aiohttp loop (the same number of calls at the same total concurrency, from
``bench/backends_p1.py``) and (b) ``nepotism run EXP --no-progress --json`` as a subprocess on a
fresh store: a stand-in experiment (`nepotism.testing.experiments.standin_experiment`, two
generators, two judges, pairwise label verdicts in both orders and recognition) sized to about
``--calls`` calls, every model at concurrency ``--concurrency / 2`` (two models are busy at a
time, so the total in flight is ``--concurrency``). For (b) the wall time includes the process
start, reading the dataset, planning, generation, judging, the store and the exports — what a
user waits for; the CPU time is the child's user + system time (resource.getrusage), per call.

Usage: python bench/run_p1.py [--calls 5000] [--concurrency 256] [--latency 0.1] [--rounds 3]
Nothing is asserted; read the figures as ratios (the machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from backends_p1 import _bare_aiohttp, _server_cpu  # noqa: E402

from nepotism.testing.experiments import standin_experiment  # noqa: E402
from nepotism.testing.standin import StandinConfig, standin_process  # noqa: E402

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))
CALLS_PER_ITEM = 10  # 2 generations, 4 pairwise verdicts (2 judges x both orders), 4 recognition


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _nepotism_run(url: str, folder: Path, items: int, concurrency: int) -> tuple[float, int, float]:
    exp = standin_experiment(folder, url, items=items, concurrency=concurrency, timeout=60.0)
    cpu0, t0 = _children_cpu(), time.perf_counter()
    done = subprocess.run([NEPOTISM, "run", str(exp), "--store", str(folder / "s.db"), "--no-progress", "--json"],
                          cwd=folder, capture_output=True, text=True)
    secs, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"nepotism run failed ({done.returncode}): {done.stderr[-2000:]}")
    summary = json.loads(done.stdout)
    sent = summary["generation"]["sent"] + summary["judging"]["sent"]
    failed = summary["generation"]["failed"] + summary["judging"]["failed"]
    if failed:
        raise SystemExit(f"nepotism run: {failed} calls failed")
    return secs, sent, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    items = max(1, args.calls // CALLS_PER_ITEM)
    rows = []
    with standin_process(StandinConfig(latency_s=args.latency)) as url, \
            tempfile.TemporaryDirectory(prefix="nepotism-p1-") as scratch:
        for r in range(args.rounds):
            server0 = _server_cpu(url)
            run_s, sent, run_cpu = _nepotism_run(url, Path(scratch) / f"round{r}", items, args.concurrency // 2)
            server1 = _server_cpu(url)
            bare_s, ok, bare_cpu = asyncio.run(_bare_aiohttp(url, args.concurrency, sent))
            server2 = _server_cpu(url)
            if ok != sent:
                raise SystemExit(f"bare aiohttp: only {ok}/{sent} calls succeeded")
            rows.append((sent / run_s, sent / bare_s, run_cpu / sent * 1e3, bare_cpu / sent * 1e3, sent,
                         (server1 - server0) / sent * 1e3, (server2 - server1) / sent * 1e3))
    print(f"calls sent per run {rows[0][4]}, concurrency {args.concurrency}, stand-in latency "
          f"{args.latency * 1e3:.0f} ms, rounds {args.rounds}")
    print(f"{'round':<7}{'nepotism run/s':>16}{'bare aiohttp/s':>16}{'ratio':>8}{'run ms CPU/call':>17}"
          f"{'bare ms CPU/call':>18}{'stand-in ms/call (run, bare)':>30}")
    for i, (run_rate, bare_rate, run_cpu, bare_cpu, _, srv_run, srv_bare) in enumerate(rows, 1):
        print(f"{i:<7}{run_rate:>16.0f}{bare_rate:>16.0f}{run_rate / bare_rate:>8.2f}{run_cpu:>17.3f}{bare_cpu:>18.3f}"
              f"{srv_run:>20.3f}, {srv_bare:.3f}")
    ratios = sorted(r[0] / r[1] for r in rows)
    print(f"median ratio {ratios[len(ratios) // 2]:.2f}")


if __name__ == "__main__":
    main()
