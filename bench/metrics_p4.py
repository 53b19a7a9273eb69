"""P4 benchmark: the full rubric suite with 1,000 resamples on 12 judges × 12 generators × 5,000
instances × 10 rubrics (7.2M rubric verdicts). Prints seconds (data generation, suite), records,
and the peak resident memory of the process (``ru_maxrss``; run under ``/usr/bin/time -v`` for an
outside view). ``--baseline`` also times, on ONE judge, the same rubric-level records computed the
naive way — one standalone metric call (string instance ids, its own bootstrap) per record — next
to the batched suite's time per judge.

``--cli`` instead runs the command users run on the same verdicts written as Parquet (rubric table,
its reference and points, the registry; kept in ``--data`` so a second run reuses them):
``nepotism metrics rubric.parquet --reference rubric-ref.parquet --reference rubric-items.parquet
--models registry.toml --json``, as a child process whose peak resident memory is read from a small
parent (`nepotism.testing.peak.run_measured`); ``--before REV`` also runs it with the package's
``src`` as of git revision REV in the same session and says whether both printed the same JSON, byte
for byte. Issue 37's goal: <= 20 s and <= 4 GB.

Run: python bench/metrics_p4.py [--instances N] [--resamples B] [--baseline] [--cli [--before REV]]"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from nepotism.analyses.suite import SuiteOptions, run_suite
from nepotism.metrics import rubric
from nepotism.models import load_registry
from nepotism.simulate import SimulationSpec, simulate
from nepotism.metrics import Bootstrap


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def _baseline(sim, resamples: int) -> tuple[float, int]:
    """Naive: per generator one `overestimation_rate` call, plus `mra` and `score_delta`, for one judge."""
    judged = sim.rubric[sim.rubric["judge"] == sim.spec.judges[0]].reset_index(drop=True)
    truth = sim.rubric_ref["met"].to_numpy(dtype=float)  # same row order as one judge's rows
    met = judged["met"].to_numpy(dtype=float)
    ids = judged["instance_id"].astype(str).to_numpy()
    gens = judged["model"].astype(str).to_numpy()
    start = time.perf_counter()
    count = 1
    rubric.mra(met, truth, ids, n_resamples=resamples)
    for g in np.unique(gens):
        sel = gens == g
        rubric.overestimation_rate(2 * met[sel] - 1, 2 * truth[sel] - 1, ids[sel], n_resamples=resamples)
        count += 1
    count += len(rubric.score_delta(met, truth, gens, ids, n_resamples=resamples))
    return time.perf_counter() - start, count


def _cli(spec: SimulationSpec, data: Path, before: str | None) -> None:
    """The suite as users run it: ``nepotism metrics`` on Parquet files, now and at ``before``."""
    from nepotism.testing.peak import run_measured

    folder = data / f"rubric-{spec.n_instances}"
    files = {name: folder / f"{name}.parquet" for name in ("rubric", "rubric-ref", "rubric-items")}
    if not all(f.exists() for f in files.values()):
        sim = simulate(spec, seed=0, kinds=("rubric",))
        folder.mkdir(parents=True, exist_ok=True)
        sim.rubric.to_parquet(files["rubric"], index=False)
        sim.rubric_ref.to_parquet(files["rubric-ref"], index=False)
        sim.rubric_items.to_parquet(files["rubric-items"], index=False)
        (folder / "registry.toml").write_text(spec.registry_toml())
    argv = [
        "metrics",
        str(files["rubric"]),
        "--reference",
        str(files["rubric-ref"]),
        "--reference",
        str(files["rubric-items"]),
        "--models",
        str(folder / "registry.toml"),
        "--json",
    ]
    sides = {"after": None}
    source = None
    if before:
        source = Path(tempfile.mkdtemp(prefix="nepotism-before-"))
        repo = Path(__file__).resolve().parents[1]
        archive = subprocess.run(["git", "-C", str(repo), "archive", before, "src"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
        sides["before"] = source
    try:
        outputs = {}
        for side, src in sides.items():
            env = dict(os.environ)
            if src is not None:
                env["PYTHONPATH"] = str(src / "src") + os.pathsep + env.get("PYTHONPATH", "")
            start = time.perf_counter()
            done, peak = run_measured(
                [sys.executable, "-c", "from nepotism.cli import main; main()", *argv], capture_output=True, env=env
            )
            outputs[side] = done.stdout
            print(
                f"{side:6s} nepotism metrics on {len(spec.judges) * len(spec.generators) * spec.n_rubrics * spec.n_instances:,} rubric verdicts: "
                f"{time.perf_counter() - start:6.1f} s wall, peak RSS {peak / 1024**3:.2f} GB, exit {done.returncode}",
                flush=True,
            )
        if before:
            print(f"same JSON before and after: {'yes' if outputs['before'] == outputs['after'] else 'NO'}")
    finally:
        if source is not None:
            shutil.rmtree(source, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=5000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--baseline", action="store_true")
    parser.add_argument("--cli", action="store_true", help="time `nepotism metrics` on the verdicts as Parquet")
    parser.add_argument("--before", metavar="REV", help="with --cli: also run the package as of this revision")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "nepotism-bench-rubric")
    args = parser.parse_args()
    models = tuple(f"m{i:02d}" for i in range(12))
    spec = SimulationSpec(
        judges=models,
        generators=models,
        families={m: f"f{int(m[1:]) // 3}" for m in models},
        students={},
        n_instances=args.instances,
        n_rubrics=10,
        self_bias=0.5,
        family_bias=0.3,
    )
    if args.cli:
        _cli(spec, args.data, args.before)
        return
    start = time.perf_counter()
    sim = simulate(spec, seed=0, kinds=("rubric",))
    generated = time.perf_counter() - start
    peak_after_data = _peak_gb()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "registry.toml")
        with open(path, "w") as handle:
            handle.write(spec.registry_toml())
        registry = load_registry([path])
    start = time.perf_counter()
    result = run_suite(
        sim.rubric,
        "rubric",
        registry,
        references={"rubric-ref": sim.rubric_ref, "rubric-items": sim.rubric_items},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=args.resamples)),
    )
    seconds = time.perf_counter() - start
    print(
        f"verdicts={len(sim.rubric):,} judges={len(models)} generators={len(models)} instances={args.instances:,} "
        f"rubrics=10 resamples={args.resamples} records={len(result.records)} generate_s={generated:.1f} "
        f"suite_s={seconds:.1f} peak_rss_gb_after_data={peak_after_data:.2f} peak_rss_gb={_peak_gb():.2f}"
    )
    if args.baseline:
        naive, count = _baseline(sim, args.resamples)
        per_judge = seconds / len(models)
        print(
            f"one judge, {count} rubric-level records: naive_s={naive:.2f} (one standalone call each); "
            f"batched suite per judge (all {len(result.records) // len(models)} records)={per_judge:.2f}s"
        )


if __name__ == "__main__":
    main()
