"""Sharded planning at scale: `nepotism run EXP --dry-run` of a ≥ 1M-call experiment, whole and as
8 shards, through the installed executable (issue 21: "the benchmark at ≥ 1M planned calls,
dry-run or stand-in").

The experiment: ``--prompts`` prompts, each with recorded answers of ``--generators`` models (in
the dataset file: nothing is generated), judged by ``--judges`` judges on every pair of answers in
both orders (pairwise label verdicts) — prompts × C(generators, 2) × 2 × judges judge calls
(defaults: 660 × 190 × 2 × 4 = 1,003,200). The judges point at an address nothing listens on, so
the dry run prices the plan without sending anything (a plain HTTP server on loopback answers
the dry run's reachability check with 404s, which counts as reachable). Each command runs in its own process; the
table gives its wall time, CPU time and peak resident memory, and checks that the 8 shards'
planned calls add up to the whole plan's, per model and in total, with no shard empty (the split
is by a stable hash of the instance, `nepotism.runner.shards`). That the shards' *results* merge
byte-identically is tested on the stand-in (tests/runner/test_shards.py); this measures that the
planning itself splits at a million calls.

Usage: python bench/shards_plan.py [--prompts 660] [--generators 20] [--judges 4] [--shards 8]
Nothing is asserted about time (the machine is shared); the sums are checked.

Measured 2026-11-25 on the 2-core machine under load (three other jobs running): the whole plan,
1,003,200 calls, 39.0 s wall / 26.1 s CPU / 3.30 GB peak; each of the 8 shards 104,880–145,920
calls in 5.3–6.9 s / 3.6–4.5 s CPU / 0.47–0.60 GB; the shards' calls add up to the whole plan's,
per model and in total. (Those prompts and answers repeated every 18 items, so most judge calls
were one call planned many times; since 2026-11-26 every text holds its item and generator
number, and the table checks that no call is shared.)

2026-11-26, the dry run planned 32 instances at a time (load 7-9, ``--shards 2``, the package
before it through ``PYTHONPATH``): the whole plan 3.30 → 0.45 GB peak, 19.6 → 14.6 s CPU; each
half 1.67-1.69 → 0.40 GB. ``--prompts 6600`` (10,032,000 calls, load 5-6): 1.57 GB, 220.9 s wall, 153.1 s CPU; halves 1.06-1.29 GB.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))
WORDS = (
    "river",
    "stone",
    "policy",
    "market",
    "quietly",
    "seven",
    "because",
    "garden",
    "signal",
    "under",
    "method",
    "careful",
    "winter",
    "reason",
    "number",
    "across",
    "light",
    "value",
)


def _text(seed: int, words: int) -> str:
    return " ".join(WORDS[(seed * 7 + k * 13) % len(WORDS)] for k in range(words))


def write_experiment(folder: Path, *, prompts: int, generators: int, judges: int, base_url: str) -> Path:
    """The dataset (prompts with recorded answers), a registry of the models and the experiment file."""
    gens = [f"gen-{g:02d}" for g in range(generators)]
    judge_ids = [f"judge-{j}" for j in range(judges)]
    with open(folder / "items.jsonl", "w", encoding="utf-8") as fh:
        for p in range(prompts):
            # the item number in every text: no two prompts or answers alike, so no call is shared
            prompt = f"Item {p}: {_text(p, 25)}?"
            fh.write(json.dumps({"id": f"item-{p}", "prompt": prompt}) + "\n")
            for g, name in enumerate(gens):
                fh.write(
                    json.dumps(
                        {"id": f"item-{p}", "prompt": prompt, "model": name, "text": f"({p}.{g}) {_text(p * 31 + g, 120)}"}
                    )
                    + "\n"
                )
    (folder / "models.toml").write_text("".join(f'[models."{m}"]\nfamily = "fam-{m}"\n' for m in gens + judge_ids))
    models = "".join(f'[models."{j}"]\nbackend = "openai"\nbase_url = "{base_url}"\n' for j in judge_ids)
    (folder / "exp.toml").write_text(f"""
[experiment]
name = "shards-plan"
registry = ["models.toml"]
[dataset]
path = "items.jsonl"
{models}
[judging]
judges = {json.dumps(judge_ids)}
[[judging.protocols]]
protocol = "pairwise"
pairs = "all"
options = {{ mode = "labels", ways = 2 }}
[output]
dir = "out"
""")
    return folder / "exp.toml"


class _NotFound(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the http.server hook's name
        self.send_error(404)

    def log_message(self, *args: object) -> None:
        return None


def _measured(argv: list[str], cwd: Path) -> tuple[dict, float, float, float]:
    """Run one command in its own process: (its JSON, wall s, CPU s, peak RSS GB)."""
    wrapper = (
        "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "sys.stdout.write(done.stdout); sys.stderr.write(done.stderr); "
        "use = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(f'@@{use.ru_maxrss} {use.ru_utime + use.ru_stime}', file=sys.stderr); sys.exit(done.returncode)"
    )
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", wrapper, *argv], cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    rss_kb, cpu = done.stderr.rsplit("@@", 1)[1].split()
    return json.loads(done.stdout), wall, float(cpu), int(rss_kb) / 1024**2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=660)
    parser.add_argument("--generators", type=int, default=20)
    parser.add_argument("--judges", type=int, default=4)
    parser.add_argument("--shards", type=int, default=8)
    args = parser.parse_args()
    expected = args.prompts * math.comb(args.generators, 2) * 2 * args.judges
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        exp = write_experiment(folder, prompts=args.prompts, generators=args.generators, judges=args.judges, base_url=base_url)
        rows = []
        whole, wall, cpu, rss = _measured(
            [NEPOTISM, "run", str(exp), "--dry-run", "--json", "--store", str(folder / "whole.db")], folder
        )
        rows.append(("whole plan", whole["totals"]["calls"], wall, cpu, rss))
        distinct = whole["totals"]["to_send"]
        parts = []
        for k in range(args.shards):
            part, wall, cpu, rss = _measured(
                [
                    NEPOTISM,
                    "run",
                    str(exp),
                    "--dry-run",
                    "--json",
                    "--shard",
                    f"{k}/{args.shards}",
                    "--store",
                    str(folder / f"s{k}.db"),
                ],
                folder,
            )
            parts.append(part)
            rows.append((f"shard {k}/{args.shards}", part["totals"]["calls"], wall, cpu, rss))
    print(f"{'command (nepotism run --dry-run)':<34} {'planned calls':>14} {'wall s':>8} {'CPU s':>8} {'peak GB':>8}")
    for name, calls, wall, cpu, rss in rows:
        print(f"{name:<34} {calls:>14,} {wall:>8.1f} {cpu:>8.1f} {rss:>8.2f}")
    total = sum(p["totals"]["calls"] for p in parts)
    per_model = {m: sum(p["models"].get(m, {}).get("calls", 0) for p in parts) for m in whole["models"]}
    print(f"\nexpected {expected:,} judge calls; whole plan {whole['totals']['calls']:,}; shards sum {total:,}")
    checks = {
        "whole plan = prompts x pairs x 2 orders x judges": whole["totals"]["calls"] == expected,
        "shards add up to the whole plan": total == whole["totals"]["calls"],
        "and per model": all(per_model[m] == whole["models"][m]["calls"] for m in whole["models"]),
        "no shard is empty": all(p["totals"]["calls"] > 0 for p in parts),
        "every planned call is distinct (none shared: memory holds every key)": distinct == expected,
    }
    for name, ok in checks.items():
        print(f"  {'ok ' if ok else 'FAIL'} {name}")
    if not all(checks.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
