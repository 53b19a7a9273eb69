"""Benchmark: ``nepotism metrics`` on a partitioned Parquet dataset (a folder of judge=NAME parts).

Usage: ``python bench/metrics_partitioned.py [--rows 1e7] [--data DIR] [--compare-file]``.

For each size the bench writes a pairwise dataset one judge at a time, never the whole table in
memory: the package's simulator (`nepotism.simulate`) draws each judge's part (12 generators in
families of three, a planted self and family bias, 10% ties, every pair in both orders: 132 rows
per instance and judge) into ``DIR/ROWS/data/judge=NAME/part-0.parquet``, as ``nepotism store
export judgments --partition-by judge`` lays a dataset out (generating is not timed; a second
run reuses the data). Then ``nepotism metrics DIR/ROWS/data --models REGISTRY --json`` runs as a
child process with the default options (1,000 bootstrap resamples), and the bench prints its
wall-clock seconds, CPU seconds and peak resident memory (the child's ``ru_maxrss``).
``--compare-file`` also writes the same rows as one Parquet file (in partition order) and runs
the command on it, and says whether both printed the same JSON, byte for byte. Nothing is
asserted about speed.

What this measures is the dataset *reader*: the metrics then hold the whole table in memory, as
for one file (docs/scale.md). Out-of-core metrics (per-prompt sums kept instead of rows) are not
built, so 100M rows are not attempted: at the 10M figure below they would need about ten times
its memory.

Measured on the 2-core, 24 GB team machine on 2026-11-25 with the other agents' test suites
sharing the CPU (load average 5-7 on 2 cores: wall seconds are pessimistic, CPU seconds and peak
RSS less so): see docs/scale.md for the figures.
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
ROWS_PER_INSTANCE_AND_JUDGE = 66 * 2  # pairs × orders


def make_dataset(rows: int, folder: Path) -> tuple[Path, Path, int]:
    """Simulate about ``rows`` pairwise judgments into ``folder/data``, one judge at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nepotism.simulate import SimulationSpec, simulate

    data, registry = folder / "data", folder / "registry.toml"
    instances = max(1, round(rows / (ROWS_PER_INSTANCE_AND_JUDGE * len(MODELS))))
    families = {m: f"f{int(m[1:]) // 3}" for m in MODELS}
    if not (data.is_dir() and registry.exists()):
        partial = folder / "data.partial"
        shutil.rmtree(partial, ignore_errors=True)
        for number, judge in enumerate(MODELS):
            spec = SimulationSpec(judges=(judge,), generators=MODELS, families=families, students={},
                                  n_instances=instances, self_bias=0.5, family_bias=0.3, tie_rate=0.1)
            part = simulate(spec, seed=number, kinds=("pairwise",)).pairwise.drop(columns="judge")
            (partial / f"judge={judge}").mkdir(parents=True)
            pq.write_table(pa.Table.from_pandas(part, preserve_index=False),
                           partial / f"judge={judge}" / "part-0.parquet")
            del part
        registry.write_text(spec.registry_toml())
        partial.rename(data)
    return data, registry, instances * ROWS_PER_INSTANCE_AND_JUDGE * len(MODELS)


def one_file(data: Path, out: Path) -> Path:
    """The dataset's rows as one Parquet file, in partition order (written one part at a time)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if out.exists():
        return out
    writer = None
    for part in sorted(data.iterdir()):
        table = pq.read_table(part / "part-0.parquet")
        judge = part.name.split("=", 1)[1]
        table = table.add_column(1, "judge", pa.array([judge] * len(table), type=pa.string()))
        writer = writer or pq.ParquetWriter(out.with_suffix(".partial"), table.schema)
        writer.write_table(table)
    writer.close()
    out.with_suffix(".partial").rename(out)
    return out


def run_metrics(source: Path, registry: Path, out: Path) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in GB, exit status) of one ``nepotism metrics`` child."""
    beside = Path(sys.executable).with_name("nepotism")  # this interpreter's own executable first
    command = [str(beside) if beside.exists() else (shutil.which("nepotism") or "nepotism"),
               "metrics", str(source), "--models", str(registry), "--json"]
    start = time.perf_counter()
    with open(out, "wb") as handle:
        child = subprocess.Popen(command, stdout=handle)
        _, status, usage = os.wait4(child.pid, 0)
    return (time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024**2,
            os.waitstatus_to_exitcode(status))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", type=float, default=[1e7])
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "nepotism-bench-partitioned")
    parser.add_argument("--compare-file", action="store_true", help="also run on the same rows as one file")
    args = parser.parse_args()
    for rows in args.rows:
        folder = args.data / f"{int(rows)}"
        folder.mkdir(parents=True, exist_ok=True)
        data, registry, n = make_dataset(int(rows), folder)
        wall, cpu, peak, status = run_metrics(data, registry, folder / "dataset.json")
        print(f"rows={n:,} dataset: {wall:7.1f} s wall  {cpu:7.1f} s CPU  peak RSS {peak:5.2f} GB  exit {status}",
              flush=True)
        if args.compare_file:
            single = one_file(data, folder / "one.parquet")
            wall, cpu, peak, status = run_metrics(single, registry, folder / "file.json")
            same = status == 0 and (folder / "file.json").read_bytes() == (folder / "dataset.json").read_bytes()
            print(f"rows={n:,} file:    {wall:7.1f} s wall  {cpu:7.1f} s CPU  peak RSS {peak:5.2f} GB  exit {status}  "
                  f"(same JSON as the dataset: {'yes' if same else 'NO'})", flush=True)


if __name__ == "__main__":
    main()
