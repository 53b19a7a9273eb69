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
user waits for; the CPU time is the child's user + system time (resource.getrusage), per call,
and split between the thread running the event loop and the others (the store writer) from
``/proc/PID/task/*/stat`` sampled every 0.2 s (so the last fraction of a second is not counted).

While the run goes on, the child's resident memory (``/proc/PID/status``) and the number of calls
stored so far (``MAX(rowid)`` of the store's calls table, read-only) are sampled every 0.2 s; after
the round table, the last round's timeline is printed per 10% of the calls sent: the time each
tenth was stored, the calls/s within it and the resident memory then (flat calls/s and flat
memory are what a large run needs), with ``--baseline-src`` the baseline's too, and when the
first call was stored and how long the process ran after the last one (the fixed costs). ``--no-bare`` skips the bare client (a memory run at 200k).
``--rerun`` then times ``nepotism run`` again on the last round's store: every call cached (the
end-to-end cached rerun, process start and exports included), counted from the judge-plan memo
the run wrote, then once more with the memo's rows deleted first (the normal path). ``--baseline-src DIR`` also times, in each round, ``nepotism run`` importing the package from
``DIR`` (the ``src`` folder of another checkout, e.g. ``git archive <commit> src | tar -x -C
/tmp/base``) through ``PYTHONPATH``: a change measured side by side with what it replaces.

Usage: python bench/run_p1.py [--calls 5000] [--concurrency 256] [--latency 0.1] [--rounds 3]
       [--no-bare] [--rerun] [--baseline-src DIR]
Nothing is asserted; read the figures as ratios (the machine is shared).

Measured 2026-11-26 (docs/scale.md, "Run throughput"): at the start of the session (319d0fa,
load < 1) 4,328 calls ran at 0.48-0.55 of the bare client with 0.65-0.68 ms of CPU per call
(bare 0.16); 43,328 calls side by side at load 10-12 (``--baseline-src``): 93 calls/s before,
161 after the store writer thread and the per-call savings (1.7x); ``--no-bare --rerun`` at 50k:
resident memory flat at 221-228 MB while judging (peak 231 MB), the cached rerun 3,715 calls/s.
Second session, ``--calls 58000 --rounds 1 --baseline-src`` (25c5092's src), 50,196 calls, load
6-10: 763 calls/s and 0.575 ms CPU/call before, 910 calls/s and 0.497 ms with the claims on the
store writer thread and the cheaper encoders (bc32ad5); bare client 1,654 calls/s, 0.176 ms: ratio
0.46 -> 0.55 at that load. Again at load 3.5-6: 862 -> 1,034 calls/s (1.20x), 0.636 -> 0.546 ms
CPU/call, bare 1,476 calls/s: ratio 0.58 -> 0.70.
With the judge plan rendered a window at a time (``--no-bare --rerun``, load ≈ 8.6): 167-174 MB
resident while judging at 50k, 219-280 MB at 200k (173,192 calls; peak 396 MB after the last call
was stored), and the cached rerun at 0.085 ms of CPU per call at 50k, 0.064 ms at 200k (0.112 at
the start of the session). docs/scale.md "Run throughput" has the details.

End of the second session (9185b59, docs/scale.md): ``--calls 58000 --rounds 2 --baseline-src``
25c5092 at load 1.2-3: 0.65 / 0.62 of the bare client against 0.69 / 0.69 for 25c5092 (faster only
under load); ``--calls 1000000 --rounds 1 --no-bare --rerun`` at load 3-8: 867,068 calls, peak
637 MB resident (flat 546-595 MB while judging), cached rerun 9,897 calls/s.

Third session (docs/scale.md, "Third session"): ``nepotism run`` on uvloop with answers parsed by
orjson; each round also times the bare client on uvloop ("ours": the limit on the same loop).
``--calls 58000 --rounds 2 --baseline-src`` 4921a88 (the commit before), 50,196 calls, load 3.9-5.2:
906 / 961 calls/s, 0.659 / 0.657 ms CPU per call (before: 1,031 / 839, 0.646 / 0.728); bare
1,488 / 1,804 calls/s on asyncio, 1,674 / 1,848 on uvloop: ratios 0.61 / 0.53 (0.54 / 0.52 to the
bare client on uvloop) -- no change the load lets a side by side resolve.

Third session, judging while generating (docs/scale.md "Judging while generating"), ``--calls
58000 --rounds 1 --baseline-src`` main c1b0810 at load 6-8: 637 -> 716 calls/s (1.12x; 0.44 ->
0.49 of the bare client at that load), peak RSS 220 -> 143 MB, calls/s per tenth 1111 980 610 452
555 ... (main: the dip at the switch) against 812 858 886 816 871 625 ... (no dip); first call
stored by 2.2 -> 1.6 s, the process ran 2.1 -> 1.6 s after the last one (no pandas or pyarrow
imported by a run with a JSON Lines dataset and CSV exports).
Once landed (f5bfc36 against b9b39af, with ``--rerun``, load 6-7): 552 -> 705 calls/s, ratio
0.53 -> 0.68 (0.77 to the bare client on uvloop), peak 227 -> 144 MB, first call stored by 3.5 ->
1.4 s.

End of the third session, idle (load 0.6-1.0, no other agent): ``--calls 58000 --rounds 2 --rerun
--baseline-src`` 43654a5 (the session's start) with main at 5c056b4: 1,902 / 1,889 calls/s, 0.424
/ 0.423 ms CPU per call (start: 1,793 / 1,832, 0.477 / 0.456); bare 2,347 / 2,362 on asyncio,
2,362 / 2,349 on uvloop: ratios **0.81 / 0.80** (start 0.76 / 0.78); peak RSS 143 MB (218); the
cached rerun 22,223 calls/s, 0.045 ms CPU per call from the judge-plan memo (15,934, 0.063 ms
without).

Fourth session (docs/scale.md, "Fourth session"): the collector resumed without walking the
frozen plan and its live young threshold 20k -> 100k. ``--calls 58000 --rounds 1 --baseline-src``
3c1ae1c at load 5.3-5.7 (a full test suite running): 1,110 -> 1,329 calls/s, 0.422 -> 0.379 ms
CPU per call; bare 1,780 calls/s (2,112 on uvloop), 0.130 ms: ratio 0.62 -> 0.75 at that load.
With the orjson request bodies and no httpx import too (dc713d0), ``--calls 58000 --rounds 2
--baseline-src`` 3c1ae1c, twice, load 3.9-7.6: 0.414 / 0.426 / 0.411 / 0.436 ms CPU per call
against 0.446 / 0.434 / 0.449 / 0.465, the loop's thread 0.276-0.295 against 0.313-0.326 and the
others (the store writer) 0.134-0.139 on both; calls/s and ratios moved with the load (0.54-0.78
against 0.48-0.63).

Fifth session (docs/scale.md, "Fifth session"), load 4-11 throughout: the stored JSON columns
through orjson where it writes the same bytes (3de2962; a label call's row 48.5 -> 27.0 µs in
process) against main 96afd5e, ``--calls 58000 --rounds 1 --baseline-src``: 914 against 828
calls/s, 0.555 against 0.544 ms CPU per call (not resolvable at that load). An opt-in pyreqwest
transport (side branch runcpu4-pyreqwest, ``NEPOTISM_HTTP_CLIENT=pyreqwest`` with pyreqwest on
``PYTHONPATH``) against main's aiohttp, three rounds at load 6.6-11: 965 / 743 / 985 calls/s
against 701 / 670 / 667, the loop's thread 0.266 / 0.220 / 0.229 ms per call against 0.400 /
0.356 / 0.370, the other threads 0.264 / 0.212 / 0.222 against 0.182 / 0.155 / 0.167.

Sixth session's start, idle (load 0.5-1.3, no other agent; docs/scale.md "Idle again"):
``--calls 58000 --rounds 3 --rerun --baseline-src`` 5c056b4 (the third session's 0.80 / 0.81)
with main at 329fec4: 1,945 / 2,006 / 1,882 calls/s, 0.437 / 0.418 / 0.465 ms CPU per call
(5c056b4: 1,790 / 1,857 / 1,674, 0.468 / 0.444 / 0.528); bare 2,352 / 2,342 / 2,343: ratios
**0.83 / 0.86 / 0.80** (5c056b4 0.76 / 0.79 / 0.71); cached rerun 31,983 calls/s.

Seventh session, idle (load 0.1-1, no other agent; docs/scale.md "Seventh session"): one group
of calls committing at a time and claims 256 ahead (e836b7a), ``--calls 58000 --rounds 3 --rerun
--baseline-src`` 0756fca with main at d8fa7bf: 2,150 / 2,168 / 2,187 calls/s, 0.335 / 0.322 /
0.313 ms CPU per call (0756fca: 2,094 / 2,094 / 2,131, 0.346 / 0.344 / 0.340); bare 2,330 /
2,342 / 2,328: ratios **0.92 / 0.93 / 0.94** (0756fca 0.90 / 0.89 / 0.92); cached rerun 41,066
calls/s. ``--calls 1000000 --rounds 1 --no-bare --rerun``: 867,068 calls at 1,958 calls/s, peak
605 MB resident; ``--calls 1160000 --rounds 1 --no-bare``: 1,005,924 calls, peak 656 MB. The timeline's request and answer bytes show the step at half the run is the
call mix (generation calls mixed in early), not the store's growth.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from backends_p1 import _bare_aiohttp, _server_cpu  # noqa: E402

from nepotism._loop import loop_name, run as run_on_our_loop  # noqa: E402
from nepotism.testing.experiments import standin_experiment  # noqa: E402
from nepotism.testing.standin import StandinConfig, standin_process  # noqa: E402

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))
CALLS_PER_ITEM = 10  # 2 generations, 4 pairwise verdicts (2 judges x both orders), 4 recognition


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


_TICK = os.sysconf("SC_CLK_TCK")


def _thread_cpu(pid: int) -> tuple[float, float] | None:
    """CPU seconds so far of the process's first thread (the event loop's) and of all its other
    threads together, ended ones included (the store writer; aiohttp's resolver threads idle):
    ``/proc/PID/task/PID/stat`` and the whole process's ``/proc/PID/stat`` minus it; None once
    the process is gone."""

    def seconds(path: str) -> float:
        with open(path) as handle:
            fields = handle.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime

    try:
        loop, everything = seconds(f"/proc/{pid}/task/{pid}/stat"), seconds(f"/proc/{pid}/stat")
    except (OSError, ValueError, IndexError):
        return None
    return loop, max(0.0, everything - loop)


def _stored(db: Path) -> int:
    """Calls stored so far (rowids only grow: a failed call replaced is not counted twice here)."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.1)
        try:
            return conn.execute("SELECT MAX(rowid) FROM calls").fetchone()[0] or 0
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def _mix(db: Path) -> list[tuple[float, float]]:
    """Per tenth of the stored calls (in the order they were stored): the mean request and
    answer (text, response and logprobs) in bytes — what each call costs to build, store and read
    changes with them (the judge calls, which show two responses and read their verdict's
    logprobs, are larger than the generation calls mixed in early)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT length(request), coalesce(length(response), 0) + coalesce(length(text), 0)"
            " + coalesce(length(logprobs), 0) FROM calls ORDER BY rowid"
        ).fetchall()
    conn.close()
    n = len(rows)
    out = []
    for tenth in range(10):
        part = rows[tenth * n // 10 : (tenth + 1) * n // 10] or [(0, 0)]
        out.append((sum(r[0] for r in part) / len(part), sum(r[1] for r in part) / len(part)))
    return out


def _nepotism_run(
    url: str, folder: Path, items: int, concurrency: int, src: str | None = None
) -> tuple[float, int, float, list[tuple[float, int, float]], tuple[float, float]]:
    exp = standin_experiment(folder, url, items=items, concurrency=concurrency, timeout=60.0)
    db = folder / "s.db"
    cpu0, t0 = _children_cpu(), time.perf_counter()
    env = dict(os.environ, PYTHONPATH=src) if src else None
    child = subprocess.Popen(
        [NEPOTISM, "run", str(exp), "--store", str(db), "--no-progress", "--json"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    samples: list[tuple[float, int, float]] = []  # (seconds, calls stored, RSS MB)
    threads = (0.0, 0.0)  # CPU seconds of the loop's thread and the others, at the last sample
    while child.poll() is None:
        rss = _rss_mb(child.pid)
        if rss is not None:
            samples.append((time.perf_counter() - t0, _stored(db), rss))
        threads = _thread_cpu(child.pid) or threads
        time.sleep(0.2)
    out, err = child.communicate()
    secs, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if samples:  # the calls stored by the end (the last ones may come after the last sample)
        samples.append((secs, _stored(db), samples[-1][2]))
    if child.returncode != 0:
        raise SystemExit(f"nepotism run failed ({child.returncode}): {err[-2000:]}")
    summary = json.loads(out)
    sent = summary["generation"]["sent"] + summary["judging"]["sent"]
    failed = summary["generation"]["failed"] + summary["judging"]["failed"]
    if failed:
        raise SystemExit(f"nepotism run: {failed} calls failed")
    return secs, sent, cpu, samples, threads


def _cached_rerun(folder: Path, *, forget_memo: bool = False) -> tuple[float, int, float]:
    """``nepotism run`` again on ``folder``'s store: (seconds, calls planned, CPU seconds). With
    ``forget_memo`` the judge-plan memo's rows are deleted first (the rerun takes the normal path
    and writes them again)."""
    if forget_memo:
        with sqlite3.connect(folder / "s.db") as conn:
            conn.execute("DELETE FROM judge_memo_pairs")
            conn.execute("DELETE FROM judge_memo")
        conn.close()
    cpu0, t0 = _children_cpu(), time.perf_counter()
    done = subprocess.run(
        [NEPOTISM, "run", str(folder / "exp.toml"), "--store", str(folder / "s.db"), "--no-progress", "--json"],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    secs, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"cached rerun failed ({done.returncode}): {done.stderr[-2000:]}")
    summary = json.loads(done.stdout)
    if summary["generation"]["sent"] + summary["judging"]["sent"]:
        raise SystemExit("the rerun sent calls: it was not fully cached")
    return secs, summary["generation"]["total"] + summary["judging"]["total"], cpu


def _timeline(
    samples: list[tuple[float, int, float]],
    sent: int,
    secs: float,
    what: str = "the last round",
    mix: list[tuple[float, float]] | None = None,
) -> None:
    """Per tenth of the calls sent: when it was stored, its calls/s, the RSS then; peak RSS; when
    the first call was stored (process start, reading, planning) and how long the process ran
    after the last one (exports), to the 0.2 s of the sampling."""
    if not samples:
        return
    print(
        f"timeline of {what} ({secs:.1f} s wall, peak RSS {max(s[2] for s in samples):.0f} MB; "
        f"first sample {samples[0][0]:.1f} s, {samples[0][2]:.0f} MB)"
    )
    first = next((s[0] for s in samples if s[1] > 0), None)
    last = next((s[0] for s in samples if s[1] >= samples[-1][1]), None)
    if first is not None and last is not None:
        print(f"first call stored by {first:.1f} s, the last by {last:.1f} s; the process ran {secs - last:.1f} s after it")
    print(
        f"{'stored':>8}{'at s':>8}{'calls/s in tenth':>18}{'RSS MB':>8}" + (f"{'request B':>11}{'answer B':>10}" if mix else "")
    )
    prev_t, prev_n = None, 0
    for tenth in range(1, 11):
        goal = sent * tenth // 10
        hit = next((s for s in samples if s[1] >= goal), None)
        if hit is None:
            break
        if prev_t is None:  # the first tenth: from the first call stored
            first = next(s for s in samples if s[1] > 0)
            prev_t = first[0] - 0.2
        rate = (hit[1] - prev_n) / max(hit[0] - prev_t, 1e-9)
        print(
            f"{tenth * 10:>7}%{hit[0]:>8.1f}{rate:>18.0f}{hit[2]:>8.0f}"
            + (f"{mix[tenth - 1][0]:>11.0f}{mix[tenth - 1][1]:>10.0f}" if mix else "")
        )
        prev_t, prev_n = hit[0], hit[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-bare", action="store_true", help="time nepotism run only (memory runs)")
    parser.add_argument("--rerun", action="store_true", help="time a fully cached rerun of the last round")
    parser.add_argument("--baseline-src", help="also time nepotism run with the package from this src folder")
    args = parser.parse_args()
    items = max(1, args.calls // CALLS_PER_ITEM)
    rows = []
    baseline: list[tuple[float, float]] = []
    base_samples: list[tuple[float, int, float]] = []
    base_secs, base_n = 0.0, 0
    with (
        standin_process(StandinConfig(latency_s=args.latency)) as url,
        tempfile.TemporaryDirectory(prefix="nepotism-p1-") as scratch,
    ):
        for r in range(args.rounds):
            if args.baseline_src:
                base_s, base_sent, base_cpu, base_samples, base_threads = _nepotism_run(
                    url, Path(scratch) / f"base{r}", items, args.concurrency // 2, args.baseline_src
                )
                base_secs, base_n = base_s, base_sent
                baseline.append((base_sent / base_s, base_cpu / base_sent * 1e3, *(t / base_sent * 1e3 for t in base_threads)))
            server0 = _server_cpu(url)
            run_s, sent, run_cpu, samples, threads = _nepotism_run(url, Path(scratch) / f"round{r}", items, args.concurrency // 2)
            mix = _mix(Path(scratch) / f"round{r}" / "s.db")
            server1 = _server_cpu(url)
            if args.rerun and r == args.rounds - 1:
                # the run wrote the judge-plan memo: the rerun counts from it, then one without it
                rerun = _cached_rerun(Path(scratch) / f"round{r}")
                rerun_plain = _cached_rerun(Path(scratch) / f"round{r}", forget_memo=True)
            if args.no_bare:
                bare_s, ok, bare_cpu = float("nan"), sent, float("nan")
                fast_s, fast_ok, fast_cpu = float("nan"), sent, float("nan")
            else:
                bare_s, ok, bare_cpu = asyncio.run(_bare_aiohttp(url, args.concurrency, sent))
                # the same client on the loop `nepotism run` uses (uvloop): a second, higher limit
                fast_s, fast_ok, fast_cpu = run_on_our_loop(_bare_aiohttp(url, args.concurrency, sent))
            server2 = _server_cpu(url)
            if ok != sent or fast_ok != sent:
                raise SystemExit(f"bare aiohttp: only {min(ok, fast_ok)}/{sent} calls succeeded")
            rows.append(
                (
                    sent / run_s,
                    sent / bare_s,
                    run_cpu / sent * 1e3,
                    bare_cpu / sent * 1e3,
                    sent,
                    (server1 - server0) / sent * 1e3,
                    (server2 - server1) / sent / 2 * 1e3,
                    sent / fast_s,
                    fast_cpu / sent * 1e3,
                    *(t / sent * 1e3 for t in threads),
                )
            )
    print(
        f"calls sent per run {rows[0][4]}, concurrency {args.concurrency}, stand-in latency "
        f"{args.latency * 1e3:.0f} ms, rounds {args.rounds}"
    )
    print(
        f"nepotism run's event loop: {loop_name()}; the bare client runs on asyncio's default loop, "
        f"and again on {loop_name().split()[0]} ('bare on our loop': the limit for the same loop)"
    )
    print(
        f"{'round':<7}{'nepotism run/s':>16}{'bare aiohttp/s':>16}{'ratio':>8}{'run ms CPU/call':>17}"
        f"{'bare ms CPU/call':>18}{'stand-in ms/call (run, bare)':>30}"
    )
    for i, (run_rate, bare_rate, run_cpu, bare_cpu, _, srv_run, srv_bare, fast_rate, fast_cpu, run_loop, run_others) in enumerate(
        rows, 1
    ):
        print(
            f"{i:<7}{run_rate:>16.0f}{bare_rate:>16.0f}{run_rate / bare_rate:>8.2f}{run_cpu:>17.3f}{bare_cpu:>18.3f}"
            f"{srv_run:>20.3f}, {srv_bare:.3f}"
        )
        print(
            f"{'':<7}{'':>16}{'':>16}{'':>8}{'':>17}   of which the loop's thread {run_loop:.3f}, "
            f"the others (store writer) {run_others:.3f} ms/call (to the last 0.2 s sample)"
        )
        print(
            f"{'  ours':<7}{'':>16}{fast_rate:>16.0f}{run_rate / fast_rate:>8.2f}{'':>17}{fast_cpu:>18.3f}"
            f"   (bare client on our loop; ratio of nepotism run to it)"
        )
        if baseline:
            base_rate, base_cpu, base_loop, base_others = baseline[i - 1]
            print(
                f"{'  base':<7}{base_rate:>16.0f}{'':>16}{base_rate / bare_rate:>8.2f}{base_cpu:>17.3f}"
                f"   (nepotism run from {args.baseline_src}; loop's thread {base_loop:.3f}, others "
                f"{base_others:.3f})"
            )
    ratios = sorted(r[0] / r[1] for r in rows)
    fast = sorted(r[0] / r[7] for r in rows)
    print(f"median ratio {ratios[len(ratios) // 2]:.2f} (to the bare client on our loop: {fast[len(fast) // 2]:.2f})")
    if base_samples:
        _timeline(base_samples, base_n, base_secs, f"the last round from {args.baseline_src}")
    _timeline(samples, rows[-1][4], run_s, mix=mix)
    if args.rerun:
        for label, (secs, planned, cpu) in (("", rerun), (" without the judge-plan memo", rerun_plain)):
            print(
                f"cached rerun of the last round{label}: {secs:.2f} s wall = {planned / secs:,.0f} calls/s, "
                f"{cpu / planned * 1e3:.3f} ms CPU/call ({planned:,} calls planned, 0 sent)"
            )


if __name__ == "__main__":
    main()
