"""Benchmark: the audit's per-prompt sums on an embedded columnar engine, side by side in one run.

Usage: ``python bench/engine_pairwise.py [--rows 1e6 1e7] [--dataset [--judges 12] [--no-file]]
[--only duckdb polars pandas metrics] [--data DIR]`` (100M rows: ``--rows 1e8 --no-file --judges 48
--only duckdb polars``, the dataset written one judge at a time).

The workload is the one ``nepotism metrics`` starts from on a pairwise table: combine each
comparison's two presentation orders (paper 004 Eq. 1, the ``consistent`` rule of
`nepotism.metrics.pairwise.aggregate_orders`: for the verdict codes c1, c2 ∈ {-1, 0, +1} of the same
candidate, the comparison's outcome is sign(c1 + c2); a single order is used as it is; an order
without a verdict excludes the comparison), then per (judge, condition, instance, candidate) count
the wins, ties, decided comparisons and excluded comparisons — the per-prompt (cluster) sums every
win-rate, self-preference ratio and parity gap of the audit is a ratio of. Four ways, each a child
process started from a small parent (`nepotism.testing.peak.run_measured`: its peak resident memory;
CPU seconds from this process's ``RUSAGE_CHILDREN``, which includes the small parent, about 0.05 s):

(a) ``duckdb``: `nepotism.analyses.engine.per_prompt_sums` — the package's one SQL query over
    ``read_parquet`` (2 threads, its 3 GB ``memory_limit``, spilling to a temporary folder), the
    result written as Parquet by DuckDB;
(b) ``polars``: the same as a lazy query on ``scan_parquet``, ``collect(engine="streaming")``;
(c) ``pandas``: ``read_parquet`` into memory and ``groupby`` (the bare in-memory baseline);
(d) ``metrics``: ``nepotism metrics TABLE --models REGISTRY --json`` as users run it (every metric,
    1,000 bootstrap resamples) — the ratio column is each one's wall seconds over (a)'s. For
(a)-(c) the child also prints the seconds of the work alone (without starting Python and importing:
(a) imports the package, about 2 s of CPU for scipy, which ``nepotism metrics`` pays too).

The tables are `bench/metrics_pairwise.py`'s (``make_table``: 12 judges × 12 generators in
families of three, planted self and family bias, 10% ties, every pair in both orders) and, with
``--dataset``, `bench/metrics_partitioned.py`'s 12 ``judge=NAME`` partitions of the same size
(``make_dataset``); generating is not timed and a second run reuses the data. After (a)-(c) the
bench checks that they wrote the same sums (every row, after sorting) and prints the row count.
Nothing is asserted about speed; tests never run this file.

Measured on the 2-core, 24 GB team machine on 2026-12-07 with four other agents sharing it (load
average given per run; wall seconds are noisy, CPU seconds and peak RSS much less so). duckdb
2.0.1, polars 2.1.0, pandas 3.1.1. Figures: see docs/scale.md, "An embedded engine for the
per-prompt sums".
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ENGINES = ("duckdb", "polars", "pandas")
KEYS = ["judge", "condition", "instance_id", "candidate"]
SUMS = ["wins", "ties", "comparisons", "excluded"]


def _source_glob(source: Path) -> str:
    return str(source / "**" / "*.parquet") if source.is_dir() else str(source)


def run_duckdb(source: Path, out: Path) -> None:
    """(a): the package's own query (`nepotism.analyses.engine.per_prompt_sums`), written by DuckDB."""
    from nepotism.analyses.engine import per_prompt_sums

    per_prompt_sums(source, threads=2, out=out)


def run_polars(source: Path, out: Path) -> None:
    import polars as pl

    rows = pl.scan_parquet(_source_glob(source), hive_partitioning=True)
    flip = pl.when(pl.col("model_a") < pl.col("model_b")).then(1).otherwise(-1)
    verdict = pl.col("verdict").replace_strict({"A": 1, "B": -1, "tie": 0}, default=None, return_dtype=pl.Int8)
    coded = rows.select(
        "judge",
        "condition",
        "instance_id",
        "replicate",
        pl.min_horizontal("model_a", "model_b").alias("x"),
        pl.max_horizontal("model_a", "model_b").alias("y"),
        (verdict * flip).alias("code"),
    )
    comparisons = coded.group_by("judge", "condition", "instance_id", "replicate", "x", "y").agg(
        pl.when(pl.col("code").count() == pl.len()).then(pl.col("code").sum().sign()).otherwise(None).alias("outcome")
    )
    sides = pl.concat(
        [
            comparisons.select("judge", "condition", "instance_id", pl.col("x").alias("candidate"), "outcome"),
            comparisons.select(
                "judge", "condition", "instance_id", pl.col("y").alias("candidate"), (-pl.col("outcome")).alias("outcome")
            ),
        ]
    )
    sums = sides.group_by(KEYS).agg(
        (pl.col("outcome") > 0).sum().alias("wins"),
        (pl.col("outcome") == 0).sum().alias("ties"),
        pl.col("outcome").count().alias("comparisons"),
        pl.col("outcome").null_count().alias("excluded"),
    )
    sums.collect(engine="streaming").write_parquet(out)


def run_pandas(source: Path, out: Path) -> None:
    import numpy as np
    import pandas as pd

    rows = pd.read_parquet(source, columns=["judge", "condition", "instance_id", "replicate", "model_a", "model_b", "verdict"])
    rows["judge"] = rows["judge"].astype(str)  # a partition column arrives as a category
    a_first = (rows["model_a"] < rows["model_b"]).to_numpy()
    code = rows["verdict"].map({"A": 1.0, "B": -1.0, "tie": 0.0}).to_numpy(dtype=float) * np.where(a_first, 1, -1)
    frame = pd.DataFrame(
        {
            "judge": rows["judge"],
            "condition": rows["condition"],
            "instance_id": rows["instance_id"],
            "replicate": rows["replicate"],
            "x": np.where(a_first, rows["model_a"], rows["model_b"]),
            "y": np.where(a_first, rows["model_b"], rows["model_a"]),
            "code": code,
        }
    )
    del rows
    grouped = frame.groupby(["judge", "condition", "instance_id", "replicate", "x", "y"], sort=False)["code"]
    combined = grouped.agg(["sum", "count", "size"]).reset_index()
    del frame, grouped
    outcome = np.where(combined["count"] == combined["size"], np.sign(combined["sum"]), np.nan)
    sides = pd.DataFrame(
        {
            "judge": np.concatenate([combined["judge"], combined["judge"]]),
            "condition": np.concatenate([combined["condition"], combined["condition"]]),
            "instance_id": np.concatenate([combined["instance_id"], combined["instance_id"]]),
            "candidate": np.concatenate([combined["x"], combined["y"]]),
            "outcome": np.concatenate([outcome, -outcome]),
        }
    )
    del combined
    value = sides["outcome"].to_numpy()
    sides["wins"], sides["ties"] = value > 0, value == 0
    sides["comparisons"], sides["excluded"] = ~np.isnan(value), np.isnan(value)
    sums = sides.groupby(KEYS, sort=False)[SUMS].sum().reset_index()
    sums.to_parquet(out, index=False)


def measure(argv: list[str], out: Path | None = None) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak RSS GiB, exit status) of one child run through `run_measured`."""
    from nepotism.testing.peak import run_measured

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(out or os.devnull, "wb") as handle:
        done, peak = run_measured(argv, stdout=handle)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, peak / 1024**3, done.returncode


def same_sums(paths: dict[str, Path]) -> str:
    """Whether every engine's output holds the same rows (sorted by the keys); a one-line verdict."""
    import pandas as pd

    frames = {}
    for name, path in paths.items():
        frame = pd.read_parquet(path)
        frame = frame.astype({k: str for k in KEYS} | {s: "int64" for s in SUMS})
        frames[name] = frame[KEYS + SUMS].sort_values(KEYS, kind="stable").reset_index(drop=True)
    names = list(frames)
    first = frames[names[0]]
    differ = [n for n in names[1:] if not first.equals(frames[n])]
    totals = {s: int(first[s].sum()) for s in SUMS}
    return f"{len(first):,} per-prompt rows {totals}; " + (
        "the same sums from " + ", ".join(names) if not differ else "DIFFERENT sums: " + ", ".join(differ)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", type=float, default=[1e6, 1e7])
    parser.add_argument("--dataset", action="store_true", help="also the same rows as judge= partitions")
    parser.add_argument("--judges", type=int, default=12, help="the dataset's judges (partitions; 12: the generators)")
    parser.add_argument("--no-file", action="store_true", help="the dataset only (a 100M-row file is not made in memory)")
    parser.add_argument("--only", nargs="+", choices=[*ENGINES, "metrics"], default=[*ENGINES, "metrics"])
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--engine", choices=ENGINES, help=argparse.SUPPRESS)  # the child's side
    parser.add_argument("--source", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.engine:
        run = {"duckdb": run_duckdb, "polars": run_polars, "pandas": run_pandas}[args.engine]
        importlib.import_module({"duckdb": "nepotism.analyses.engine"}.get(args.engine, args.engine))
        start = time.perf_counter()
        run(args.source, args.out)
        print(f"{time.perf_counter() - start:.1f}")  # the work alone, without starting Python and imports
        return
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    from metrics_pairwise import make_table
    from metrics_partitioned import make_dataset

    beside = Path(sys.executable).with_name("nepotism")
    nepotism = str(beside) if beside.exists() else (shutil.which("nepotism") or "nepotism")
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    for rows in args.rows:
        sources = (
            [] if args.no_file else [("file",) + make_table(int(rows), args.data / "nepotism-bench-pairwise" / f"{int(rows)}")]
        )
        if args.dataset or args.no_file:
            sources.append(
                ("dataset",)
                + make_dataset(int(rows), args.data / "nepotism-bench-partitioned" / f"{int(rows)}-j{args.judges}", args.judges)
            )
        for label, source, registry, n in sources:
            work = Path(tempfile.mkdtemp(prefix="engine-bench-"))
            outputs: dict[str, Path] = {}
            base = None
            try:
                for engine in args.only:
                    if engine == "metrics":
                        argv = [nepotism, "metrics", str(source), "--models", str(registry), "--json"]
                        wall, cpu, peak, status = measure(argv, work / "metrics.json")
                    else:
                        outputs[engine] = work / f"{engine}.parquet"
                        argv = [
                            sys.executable,
                            __file__,
                            "--engine",
                            engine,
                            "--source",
                            str(source),
                            "--out",
                            str(outputs[engine]),
                        ]
                        wall, cpu, peak, status = measure(argv, work / f"{engine}.txt")
                    alone = (work / f"{engine}.txt").read_text().strip() if engine != "metrics" else ""
                    base = wall if engine == "duckdb" and status == 0 else base
                    ratio = f"  {wall / base:6.1f}x duckdb" if base else ""
                    print(
                        f"rows={n:,} {label:7s} {engine:7s} {wall:7.1f} s wall {cpu:7.1f} s CPU  "
                        f"peak RSS {peak:5.2f} GB  exit {status}{ratio}{f'  (the query alone {alone} s)' if alone else ''}  (load {os.getloadavg()[0]:.1f})",
                        flush=True,
                    )
                done = {k: v for k, v in outputs.items() if v.exists()}
                if len(done) >= 2:
                    print(f"rows={n:,} {label:7s} {same_sums(done)}", flush=True)
            finally:
                shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
