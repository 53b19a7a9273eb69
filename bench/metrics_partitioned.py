"""Benchmark: ``nepotism metrics`` on a partitioned Parquet dataset (a folder of judge=NAME parts),
read whole (in memory) and with ``--stream`` (one partition at a time, `nepotism.analyses.stream`).

Usage: ``python bench/metrics_partitioned.py [--rows 1e7 1e8] [--judges 12] [--data DIR]
[--memory] [--stream] [--compare-file]`` (with neither ``--memory`` nor ``--stream``: ``--memory``).

For each size the bench writes a pairwise dataset one judge at a time, never the whole table in
memory: the package's simulator (`nepotism.simulate`) draws each judge's part (12 generators in
families of three, a planted self and family bias, 10% ties, every pair in both orders: 132 rows
per instance and judge) into ``DIR/ROWS-jJUDGES/data/judge=NAME/part-0.parquet``, as ``nepotism
store export judgments --partition-by judge`` lays a dataset out (generating is not timed; a
second run reuses the data). The first 12 judges are the 12 generators (each judging its own and
its family's answers); ``--judges`` above 12 adds judges of families of their own (unrelated to
every generator), so a 100M-row table is 48 partitions of about 2M rows rather than 12 of 8M.
Then ``nepotism metrics DATA --models REGISTRY --json`` (``--memory``) and/or the same with
``--stream`` run as child processes with the default options (1,000 bootstrap resamples), and the
bench prints each one's wall-clock seconds, CPU seconds and peak resident memory (the child's
``ru_maxrss``). With both, it says whether the streamed records (the metrics ``--stream``
computes) are the in-memory ones, byte for byte in JSON and in order. ``--compare-file`` also
writes the same rows as one Parquet file and runs the in-memory command on it (same JSON as the
dataset?). Nothing is asserted about speed.

Measured on the 2-core, 24 GB team machine while other agents ran test suites (wall seconds are
pessimistic and noisy; CPU seconds and peak RSS much less so): see docs/scale.md for the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODELS = tuple(f"m{i:02d}" for i in range(12))
ROWS_PER_INSTANCE_AND_JUDGE = 66 * 2  # pairs × orders


def make_dataset(rows: int, folder: Path, judges: int = 12) -> tuple[Path, Path, int]:
    """Simulate about ``rows`` pairwise judgments into ``folder/data``, one judge at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nepotism.simulate import SimulationSpec, simulate

    data, registry = folder / "data", folder / "registry.toml"
    names = MODELS[:judges] + tuple(f"j{i:02d}" for i in range(len(MODELS), judges))
    instances = max(1, round(rows / (ROWS_PER_INSTANCE_AND_JUDGE * len(names))))
    families = {m: f"f{int(m[1:]) // 3}" for m in MODELS} | {j: f"family-{j}" for j in names if j not in MODELS}
    if not (data.is_dir() and registry.exists()):
        partial = folder / "data.partial"
        shutil.rmtree(partial, ignore_errors=True)
        for number, judge in enumerate(names):
            spec = SimulationSpec(
                judges=(judge,),
                generators=MODELS,
                families=families,
                students={},
                n_instances=instances,
                self_bias=0.5,
                family_bias=0.3,
                tie_rate=0.1,
            )
            part = simulate(spec, seed=number, kinds=("pairwise",)).pairwise.drop(columns="judge")
            (partial / f"judge={judge}").mkdir(parents=True)
            pq.write_table(pa.Table.from_pandas(part, preserve_index=False), partial / f"judge={judge}" / "part-0.parquet")
            del part
        whole = SimulationSpec(judges=names, generators=MODELS, families=families, students={})
        registry.write_text(whole.registry_toml())
        partial.rename(data)
    return data, registry, instances * ROWS_PER_INSTANCE_AND_JUDGE * len(names)


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


def run_metrics(source: Path, registry: Path, out: Path, *extra: str) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in GB, exit status) of one ``nepotism metrics`` child."""
    beside = Path(sys.executable).with_name("nepotism")  # this interpreter's own executable first
    command = [
        str(beside) if beside.exists() else (shutil.which("nepotism") or "nepotism"),
        "metrics",
        str(source),
        "--models",
        str(registry),
        "--json",
        *extra,
    ]
    start = time.perf_counter()
    with open(out, "wb") as handle:
        child = subprocess.Popen(command, stdout=handle)
        _, status, usage = os.wait4(child.pid, 0)
    return (
        time.perf_counter() - start,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024**2,
        os.waitstatus_to_exitcode(status),
    )


def same_streamed(memory: Path, streamed: Path) -> tuple[bool, int, int]:
    """(the streamed metrics' records equal, byte for byte and in order; how many; records not computed)."""
    from nepotism.analyses.stream import is_streamed

    # the records of the two results documents (`nepotism metrics --json`)
    whole, stream = json.loads(memory.read_bytes())["results"], json.loads(streamed.read_bytes())["results"]
    mine = [r for r in whole if is_streamed(r)]
    theirs = [r for r in stream if is_streamed(r)]
    return json.dumps(mine) == json.dumps(theirs), len(theirs), len(stream) - len(theirs)


def same_document(one: Path, other: Path) -> bool:
    """Whether two results documents are the same but for the source each names (summary.source)."""
    first, second = json.loads(one.read_bytes()), json.loads(other.read_bytes())
    first["summary"].pop("source", None), second["summary"].pop("source", None)
    return json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", type=float, default=[1e7])
    parser.add_argument("--judges", type=int, default=12, help="judges (partitions); the first 12 are the generators")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "nepotism-bench-partitioned")
    parser.add_argument("--memory", action="store_true", help="run the command on the dataset read whole")
    parser.add_argument("--stream", action="store_true", help="run the command with --stream")
    parser.add_argument("--compare-file", action="store_true", help="also run on the same rows as one file")
    args = parser.parse_args()
    memory = args.memory or not args.stream
    for rows in args.rows:
        folder = args.data / f"{int(rows)}-j{args.judges}"
        folder.mkdir(parents=True, exist_ok=True)
        data, registry, n = make_dataset(int(rows), folder, args.judges)
        label = f"rows={n:,} judges={args.judges}"
        if memory:
            wall, cpu, peak, status = run_metrics(data, registry, folder / "dataset.json")
            print(f"{label} in memory: {wall:7.1f} s wall  {cpu:7.1f} s CPU  peak RSS {peak:5.2f} GB  exit {status}", flush=True)
        if args.stream:
            wall, cpu, peak, status = run_metrics(data, registry, folder / "stream.json", "--stream")
            line = f"{label} --stream:  {wall:7.1f} s wall  {cpu:7.1f} s CPU  peak RSS {peak:5.2f} GB  exit {status}"
            if memory and status == 0:
                same, computed, listed = same_streamed(folder / "dataset.json", folder / "stream.json")
                line += f"  ({computed:,} records; same JSON as in memory: {'yes' if same else 'NO'}; {listed} not computed)"
            print(line, flush=True)
        if args.compare_file:
            single = one_file(data, folder / "one.parquet")
            wall, cpu, peak, status = run_metrics(single, registry, folder / "file.json")
            same = status == 0 and same_document(folder / "file.json", folder / "dataset.json")
            print(
                f"{label} file:    {wall:7.1f} s wall  {cpu:7.1f} s CPU  peak RSS {peak:5.2f} GB  exit {status}  "
                f"(same JSON as the dataset: {'yes' if same else 'NO'})",
                flush=True,
            )


if __name__ == "__main__":
    main()
