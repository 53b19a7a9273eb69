"""Batch files at scale: `nepotism run EXP --batch-out DIR`, then `--batch-in RESULTS --batch-out DIR2`
(store the answers; nothing left to write), then `--batch-in RESULTS` (finish the run offline,
0 calls sent), through the installed executable, with the wall time, CPU time and peak resident
memory of each step (issue 21: batch APIs; memory independent of the number of calls).

The experiment is `shards_plan.py`'s (``--prompts`` prompts with recorded answers of
``--generators`` models, every pair judged in both orders by ``--judges`` judges: no generation
round, one judge round of prompts × C(generators, 2) × 2 × judges calls, every call distinct). The
results file is what a batch provider returns, made here without a server: each request answered
by a label verdict ("A" or "B" by the parity of its line, with the top log-probabilities a label
verdict is read from) in an OpenAI chat completion body.
With ``--baseline-src DIR`` each step also runs on another copy of the package (``PYTHONPATH``)
side by side, on its own folder and store. Checked: the requests written equal the planned calls,
every answer is stored, the finishing run sends nothing and counts every judge call cached.
Nothing is asserted about time or memory (the machine is shared).

Usage: python bench/batch_files.py [--prompts 66] [--generators 20] [--judges 4] [--baseline-src DIR]

Measured 2026-11-26 13:32-13:41 (load 7-8, other agents' tests running), ``--prompts 132``
(200,640 judge calls), against d8ccc6e (every round held in memory), peak resident / anonymous GB:
``--batch-out`` 1.26 / 1.24 → 0.10 / 0.09; ``--batch-in`` + ``--batch-out`` 3.02 / 2.22 → 0.91 /
0.11; finishing offline 1.52 / 0.84 → 0.93 / 0.26; CPU s 8.9 → 8.3, 34.2 → 33.3, 41.3 → 40.8
(docs/scale.md, "Batch APIs").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shards_plan import NEPOTISM, write_experiment  # noqa: E402


def _measured(argv: list[str], cwd: Path) -> tuple[dict, float, float, float, float]:
    """Run one command: (its JSON, wall s, CPU s, peak resident GB, peak anonymous GB; both read
    from /proc every 20 ms, so a peak of the last 20 ms may be missed). The store is read
    through a memory map (`nepotism.store.fastread`), whose pages count as resident but are the
    file's, given back when memory is short: the anonymous peak (``RssAnon``) is what the
    process itself holds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        anon = peak = 0
        while proc.poll() is None:
            try:
                for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                    if line.startswith("RssAnon:"):
                        anon = max(anon, int(line.split()[1]))
                    elif line.startswith("VmHWM:"):  # the kernel's own peak of the resident set
                        peak = max(peak, int(line.split()[1]))
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        out, err = proc.communicate()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{err[-2000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return json.loads(out), wall, cpu, peak / 1024**2, anon / 1024**2


_BODY = {"id": "cmpl", "object": "chat.completion", "model": "judge", "usage": {"prompt_tokens": 400, "completion_tokens": 1}}


def answer(folder: Path, out: Path) -> int:
    """Answer every request line of ``folder``'s files, streamed: one result line each."""
    n = 0
    with out.open("w", encoding="utf-8") as sink:
        for path in sorted(folder.glob("*.jsonl")):
            with path.open(encoding="utf-8") as source:
                for line in source:
                    custom_id = json.loads(line)["custom_id"]
                    pick, other = "AB"[n % 2], "BA"[n % 2]
                    top = [{"token": pick, "logprob": -0.2}, {"token": other, "logprob": -1.8}]
                    body = _BODY | {
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": pick},
                                "logprobs": {"content": [{"token": pick, "logprob": -0.2, "top_logprobs": top}]},
                            }
                        ]
                    }
                    sink.write(
                        json.dumps(
                            {"id": f"r{n}", "custom_id": custom_id, "error": None, "response": {"status_code": 200, "body": body}}
                        )
                        + "\n"
                    )
                    n += 1
    return n


def steps(folder: Path, exp: Path, env_src: str | None) -> tuple[list[tuple], dict]:
    """The three commands in ``folder``; their (name, wall, CPU, peak GB, peak anonymous GB) and
    the checked figures."""
    if env_src is not None:
        os.environ["PYTHONPATH"] = env_src
    try:
        store = ["--store", str(folder / "b.db")]
        rows = []
        out, *use = _measured([NEPOTISM, "run", str(exp), *store, "--batch-out", str(folder / "r1"), "--json"], folder)
        rows.append(("--batch-out (write the requests)", *use))
        answered = answer(folder / "r1", folder / "results.jsonl")
        back, *use = _measured(
            [
                NEPOTISM,
                "run",
                str(exp),
                *store,
                "--batch-in",
                str(folder / "results.jsonl"),
                "--batch-out",
                str(folder / "r2"),
                "--json",
            ],
            folder,
        )
        rows.append(("--batch-in + --batch-out (store them)", *use))
        done, *use = _measured(
            [NEPOTISM, "run", str(exp), *store, "--batch-in", str(folder / "results.jsonl"), "--no-progress", "--json"], folder
        )
        rows.append(("--batch-in (finish offline)", *use))
    finally:
        os.environ.pop("PYTHONPATH", None)
    return rows, {
        "requests": out["batch"]["requests"],
        "answered": answered,
        "stored": back["stored"],
        "left": back["batch"]["requests"],
        "sent": done["judging"]["sent"],
        "cached": done["judging"]["cached"],
        "judge_total": done["judging"]["total"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=66)
    parser.add_argument("--generators", type=int, default=20)
    parser.add_argument("--judges", type=int, default=4)
    parser.add_argument("--baseline-src", help="another copy of the package's src, run side by side")
    args = parser.parse_args()
    expected = args.prompts * math.comb(args.generators, 2) * 2 * args.judges
    versions = [("this package", None)] + ([("baseline", args.baseline_src)] if args.baseline_src else [])
    print(f"{'step':<40} {'version':<14} {'wall s':>8} {'CPU s':>8} {'peak GB':>8} {'anon GB':>8}")
    ok = True
    for name, src in versions:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            exp = write_experiment(
                folder, prompts=args.prompts, generators=args.generators, judges=args.judges, base_url="http://127.0.0.1:9/v1"
            )  # nothing listens: nothing is sent
            rows, seen = steps(folder, exp, src)
        for step, wall, cpu, rss, anon in rows:
            print(f"{step:<40} {name:<14} {wall:>8.1f} {cpu:>8.1f} {rss:>8.2f} {anon:>8.2f}")
        checks = {
            f"{expected:,} requests written, one per planned call": seen["requests"] == seen["answered"] == expected,
            "every answer stored, nothing left to write": seen["stored"] == {"ok": expected, "failed": 0, "already": 0}
            and seen["left"] == 0,
            "the finishing run sent nothing and found every judge call stored": seen["sent"] == 0
            and seen["cached"] == seen["judge_total"] == expected,
        }
        for check, good in checks.items():
            print(f"  {'ok ' if good else 'FAIL'} {check} ({name})")
        ok = ok and all(checks.values())
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
