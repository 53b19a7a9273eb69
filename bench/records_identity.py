"""Are the records the same as at another revision? Byte for byte, on every dataset we can run offline.

Usage: ``python bench/records_identity.py --before REV [--data DIR] [--rows 1e6] [--only NAME ...]``.

A refactor of the metrics or the audit must not move a number. This runs, twice in one session —
once with the package as it is, once with its ``src`` as of git revision ``REV`` (``git archive``, put
first on ``PYTHONPATH``) — the commands whose output is the results document, and compares the bytes:

- every gallery page's commands (``scripts/gallery.py``'s pages, on the public files under ``--data``,
  ``../shared/data`` beside the repository; a page whose files are absent is listed as skipped), each
  saved output (``metrics --json`` documents and ``explain`` texts) compared;
- ``nepotism demo --json`` (the bundled AlpacaEval judgments);
- planted tables of every kind the simulator draws (`nepotism.simulate`: pairwise with a preference and
  a correctness reference, pointwise with the correctness reference, rubric with its reference and
  points), each through ``metrics --json --models``;
- a planted pairwise table of about ``--rows`` rows (1M by default; ``bench/metrics_pairwise.py``'s
  table, 12 judges × 12 generators, both orders), ``metrics --json``.

Both runs use the same working folder, so a path a command prints is the same. Prints one line per
output (``same`` / ``DIFFERS`` with the first differing byte offset) and wall seconds of each side;
exits 1 when any output differs or a command's exit status differs. Nothing is asserted about speed.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "bench")]

import gallery  # noqa: E402  (scripts/gallery.py: the pages and their commands)
import metrics_pairwise  # noqa: E402  (the planted large pairwise table)

EXE = Path(sys.executable).with_name("nepotism")
Case = tuple[str, list[list[str]], list[str]]  # name, commands (argv after `nepotism`), saved outputs


def _env(source: Path | None) -> dict[str, str]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    if source is not None:
        env["PYTHONPATH"] = str(source / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _run(case: Case, work: Path, source: Path | None) -> tuple[dict[str, bytes], list[int], float]:
    """Run a case's commands in ``work`` (emptied first); the bytes of each saved output."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    _, commands, saved = case
    statuses, outputs = [], {}
    start = time.perf_counter()
    for k, argv in enumerate(commands):
        done = subprocess.run([str(EXE), *argv], cwd=work, capture_output=True, env=_env(source))
        statuses.append(done.returncode)
        outputs[saved[k] if k < len(saved) and saved[k] else f"step{k}.stdout"] = done.stdout
    return outputs, statuses, time.perf_counter() - start


def gallery_cases(data: Path) -> list[Case]:
    cases = []
    for name, page in gallery.PAGES.items():
        if gallery.absent(page, data):
            print(f"{name:28s} skipped: its files are not under {data}", flush=True)
            continue
        commands = [step.argv(data.resolve())[1:] for step in page.steps]
        cases.append((f"gallery/{name}", commands, [step.save or "" for step in page.steps]))
    return cases


def planted_cases(folder: Path) -> list[Case]:
    """Small planted tables of every kind, with their references (written once into ``folder``)."""
    from nepotism.simulate import SimulationSpec, simulate

    spec = SimulationSpec(n_instances=120, self_bias=0.6, family_bias=0.3, student_bias=0.4, tie_rate=0.1, position_bias=0.2)
    folder.mkdir(parents=True, exist_ok=True)
    sim = simulate(spec, seed=3, kinds=("pairwise", "rubric", "pointwise"))
    files = {
        "pairwise.csv": sim.pairwise,
        "preference-ref.csv": sim.preference_ref,
        "correctness-ref.csv": sim.correctness_ref,
        "rubric.csv": sim.rubric,
        "rubric-ref.csv": sim.rubric_ref,
        "rubric-items.csv": sim.rubric_items,
        "pointwise.csv": sim.pointwise,
    }
    for file, frame in files.items():
        frame.to_csv(folder / file, index=False)
    (folder / "models.toml").write_text(spec.registry_toml())
    p = str(folder)
    models = ["--models", f"{p}/models.toml", "--json"]
    return [
        (
            "planted/pairwise",
            [
                [
                    "metrics",
                    f"{p}/pairwise.csv",
                    "--reference",
                    f"{p}/preference-ref.csv",
                    "--reference",
                    f"{p}/correctness-ref.csv",
                    *models,
                ]
            ],
            ["metrics.json"],
        ),
        (
            "planted/pointwise",
            [["metrics", f"{p}/pointwise.csv", "--reference", f"{p}/correctness-ref.csv", *models]],
            ["metrics.json"],
        ),
        (
            "planted/rubric",
            [
                [
                    "metrics",
                    f"{p}/rubric.csv",
                    "--reference",
                    f"{p}/rubric-ref.csv",
                    "--reference",
                    f"{p}/rubric-items.csv",
                    *models,
                ]
            ],
            ["metrics.json"],
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", required=True, help="the git revision to compare with")
    parser.add_argument("--data", type=Path, default=gallery.DEFAULT_DATA, help="the gallery's public data folder")
    parser.add_argument("--rows", type=float, default=1e6, help="rows of the planted large table (0: leave it out)")
    parser.add_argument("--only", nargs="*", help="run only the cases whose name starts with one of these")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "nepotism-bench-pairwise",
        help="where the planted tables are kept between runs",
    )
    args = parser.parse_args()
    before = Path(tempfile.mkdtemp(prefix="nepotism-before-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
    work = Path(tempfile.mkdtemp(prefix="nepotism-identity-"))
    cases = gallery_cases(args.data) + [("demo", [["demo", "--json", "--out", "demo"]], ["demo.json"])]
    cases += planted_cases(args.cache / "planted-kinds")
    if args.rows:
        table, registry, n = metrics_pairwise.make_table(int(args.rows), args.cache / f"{int(args.rows)}")
        cases.append(
            (f"planted/pairwise-{n:,}-rows", [["metrics", str(table), "--models", str(registry), "--json"]], ["metrics.json"])
        )
    if args.only:
        cases = [c for c in cases if c[0].startswith(tuple(args.only))]
    differ = 0
    try:
        for case in cases:
            old, old_status, old_s = _run(case, work / "run", before)
            new, new_status, new_s = _run(case, work / "run", None)
            for output in new:
                a, b = old.get(output, b""), new[output]
                if a == b:
                    verdict = f"same ({len(b):,} bytes)"
                else:
                    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                    verdict = f"DIFFERS at byte {at:,} ({len(a):,} before, {len(b):,} after)"
                    differ += 1
                print(f"{case[0]:28s} {output:22s} {verdict}", flush=True)
            if old_status != new_status:
                differ += 1
            print(
                f"{case[0]:28s} exit {old_status} before, {new_status} after; {old_s:.1f} s before, {new_s:.1f} s after",
                flush=True,
            )
    finally:
        shutil.rmtree(before, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    print("all outputs the same, byte for byte" if not differ else f"{differ} outputs or exit statuses differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
