"""Benchmark: ``nepotism metrics`` (the command users run) on large pairwise tables.

Usage: ``python bench/metrics_pairwise.py [--rows 1e6 1e7] [--before REV] [--data DIR]``.

For each size, the package's simulator (`nepotism.simulate`) draws a pairwise table of 12 judges ×
12 generators (families of three, a planted self and family bias, 10% ties), every pair judged in
both orders (1,584 rows per instance; 1M rows ≈ 631 instances, 10M ≈ 6,313), written as Parquet
with its registry (kept in ``--data`` so a second run reuses it; generating is not timed). Then
``nepotism metrics TABLE --models REGISTRY --json`` runs as a child process, default options
(1,000 bootstrap resamples, both opponent populations), and the bench prints its wall-clock
seconds and peak resident memory (the child's ``ru_maxrss``), the records written, and the
excluded judgments. ``--before REV`` runs the same command with the package as it was at git
revision REV (its ``src`` from ``git archive``, put first on ``PYTHONPATH``) in the same session, and says
whether both printed the same JSON, byte for byte. Nothing is asserted about speed.

Measured on the 2-core, 24 GB team machine on 2026-11-25, with other agents' test runs sharing
the CPU (load average 4-9 on 2 cores, so seconds are pessimistic and noisy; peak RSS is not).
Latest run of this script (``--rows 1e6 --before 77e4e5d``, then ``--rows 1e7``; load ≈ 5):

=====  ================================  ===================================================
rows   main at 77e4e5d (before)          after (main at ac3d70b)
=====  ================================  ===================================================
1M     135.9 s, 1.25 GB                  14.4 s, 0.92 GB — same JSON, byte for byte
10M    not run (the issue: 5M rows        188 s, 6.45 GB (510 s, 10.1 GB with only the audit
       passed 4.8 GB before finishing)    batched)
=====  ================================  ===================================================

Earlier in the session: 100k rows 14.5 s, 0.36 GB before and 6.7 s after the audit alone.
(``matched-bias`` intervals, computed with float32 products of non-integer sums outside the
audit, move in the ninth digit with the number of BLAS threads: compare runs with the same
``OPENBLAS_NUM_THREADS``.) Where the 1M run's time goes now (cProfile, 18 s in all): the rest of
the pairwise suite 8.9 s (position consistency 3.0, matched bias 2.7, order codes 1.0, PLS 0.7,
exclusions 0.7), two `build_comparisons` 2.1, importing scipy 2.3, the audit 1.9, reading and
checking the table 1.7, the leaderboard 0.5. The 10M target (<= 60 s, <= 4 GB) is not reached yet.

Later the same day (load 3-6, same JSON byte for byte as 7772f1f): 1M rows 11.8 s, 0.74 GB; 10M rows
82 s of CPU (143 s wall at load 4-5), 3.90 GB — from 105.8 s, 5.90 GB at 7772f1f measured with the
machine nearly idle. Per-phase figures and what is left: docs/scale.md.

2026-11-26, ``--rows 1e7 --before 319d0fa`` twice at load 1-2 (now with CPU seconds): after (e9000db)
64.5 / 66.7 s wall, 70.5 / 72.9 s CPU, 3.50 / 3.52 GB; before 93.1 / 111.6 s wall, 99.3 / 118.0 s CPU,
3.92 / 3.93 GB; the same JSON. 1M rows: 10.0 / 9.1 s vs 10.7 / 10.1 s, 0.57 vs 0.61 GB.
2026-11-26 04:04, ``--rows 1e7 --before 319d0fa`` at load ≈ 1: after (25c5092) 44.3 s wall, 44.3 s
CPU, 3.50 GB (41.3 s alone just before); before 84.2 s wall, 63.4 s CPU, 3.91 GB; the same JSON.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODELS = tuple(f"m{i:02d}" for i in range(12))
ROWS_PER_INSTANCE = 66 * 2 * 12  # pairs × orders × judges


def make_table(rows: int, folder: Path) -> tuple[Path, Path, int]:
    """Simulate about ``rows`` pairwise judgments into ``folder``; reuse them when present."""
    table, registry = folder / "pairwise.parquet", folder / "registry.toml"
    instances = max(1, round(rows / ROWS_PER_INSTANCE))
    if not (table.exists() and registry.exists()):
        from nepotism.simulate import SimulationSpec, simulate

        spec = SimulationSpec(
            judges=MODELS,
            generators=MODELS,
            families={m: f"f{int(m[1:]) // 3}" for m in MODELS},
            students={},
            n_instances=instances,
            self_bias=0.5,
            family_bias=0.3,
            tie_rate=0.1,
        )
        folder.mkdir(parents=True, exist_ok=True)
        simulate(spec, seed=0, kinds=("pairwise",)).pairwise.to_parquet(table, index=False)
        registry.write_text(spec.registry_toml())
    return table, registry, instances * ROWS_PER_INSTANCE


def run_metrics(table: Path, registry: Path, out: Path, *, source: Path | None = None) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in GiB, exit status) of one ``nepotism metrics`` child process."""
    env = dict(os.environ)
    if source is None:
        command = [shutil.which("nepotism") or str(Path(sys.executable).with_name("nepotism"))]
    else:
        env["PYTHONPATH"] = str(source / "src") + os.pathsep + env.get("PYTHONPATH", "")
        command = [sys.executable, "-c", "from nepotism.cli import main; main()"]
    command += ["metrics", str(table), "--models", str(registry), "--json"]
    start = time.perf_counter()
    with open(out, "wb") as handle:
        child = subprocess.Popen(command, stdout=handle, env=env)
        _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024**2, os.waitstatus_to_exitcode(status)


def _summary(path: Path) -> str:
    import json

    records = json.loads(path.read_text())["results"]  # the results document's records
    excluded = sum(r["n_excluded"] for r in records if r["metric"] == "excluded-verdicts")
    return f"{len(records)} records, {excluded} judgments without a verdict"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", type=float, default=[1e6, 1e7])
    parser.add_argument("--before", metavar="REV", help="also run the package as of this git revision")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "nepotism-bench-pairwise")
    args = parser.parse_args()
    repo = Path(__file__).resolve().parents[1]
    before = None
    if args.before:
        before = Path(tempfile.mkdtemp(prefix="nepotism-before-"))
        archive = subprocess.run(["git", "-C", str(repo), "archive", args.before, "src"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
    try:
        for rows in args.rows:
            table, registry, n = make_table(int(rows), args.data / f"{int(rows)}")
            after_out = args.data / f"{int(rows)}" / "after.json"
            seconds, cpu, peak, status = run_metrics(table, registry, after_out)
            print(
                f"rows={n:,} after:  {seconds:7.1f} s wall {cpu:7.1f} s CPU  peak RSS {peak:5.2f} GB  exit {status}  "
                f"({_summary(after_out) if status == 0 else 'failed'})",
                flush=True,
            )
            if before is not None:
                before_out = args.data / f"{int(rows)}" / "before.json"
                seconds, cpu, peak, status = run_metrics(table, registry, before_out, source=before)
                same = status == 0 and before_out.read_bytes() == after_out.read_bytes()
                print(
                    f"rows={n:,} before: {seconds:7.1f} s wall {cpu:7.1f} s CPU  peak RSS {peak:5.2f} GB  exit {status}  "
                    f"(same JSON as after: {'yes' if same else 'NO'})",
                    flush=True,
                )
    finally:
        if before is not None:
            shutil.rmtree(before, ignore_errors=True)


if __name__ == "__main__":
    main()
