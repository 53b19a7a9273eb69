"""Rebuild ``items.jsonl`` for the verifiable-task example from the shared data copies.

The items are a seeded random sample, drawn without looking at any model output: six MATH-500
problems of difficulty level 1 or 2 (problems with an Asymptote figure left out, since a text-only
judge cannot see the figure) and six HumanEval problems. Each line is one instance (``id``,
``prompt``, ``reference_answer``, ``category``, ``metadata``) together with a recorded answer of
the non-model generator ``human-written``: the MATH reference solution, or the HumanEval prompt
followed by its canonical solution in a Python code block.

Truth for the graders: math → ``reference_answer`` (the final answer of MATH-500); code →
``metadata.tests`` (HumanEval's ``check(candidate)`` module), ``metadata.entry_point`` and
``metadata.code_prompt`` (the function header, prepended when a response is a bare body).

    python examples/verifiable/make_items.py              # rewrites items.jsonl next to this file
    python examples/verifiable/make_items.py --check      # exit 1 if items.jsonl would change

The output is byte-for-byte reproducible from the two source files (see ATTRIBUTION.md).
Left out: anything about the models; the run itself is ``verifiable.toml``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from pathlib import Path

__all__ = ["DEFAULT_DATA", "SEED", "build_items", "main", "render"]

HERE = Path(__file__).resolve().parent
#: /work/shared/data when this file sits at /work/main/examples/verifiable/.
DEFAULT_DATA = HERE.parents[2] / "shared" / "data"
SEED = 4
N_MATH = 6
N_CODE = 6
HUMAN = "human-written"

_MATH_PROMPT = (
    "Solve the following maths problem. Work through it briefly, step by step, and finish by "
    "writing the final answer inside \\boxed{{}}.\n\nProblem:\n{problem}"
)
_CODE_PROMPT = (
    "Complete the Python function below so that it does what its docstring describes. Reply "
    "with the complete function (signature, any imports it needs, and body) in a single "
    "```python code block.\n\n```python\n{header}```"
)


def _math_rows(data: Path) -> list[dict]:
    with open(data / "math500" / "test.jsonl", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [dict(r, _index=i) for i, r in enumerate(rows)]


def _code_rows(data: Path) -> list[dict]:
    with gzip.open(data / "humaneval" / "HumanEval.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def build_items(data: Path = DEFAULT_DATA, seed: int = SEED) -> list[dict]:
    """The example's instance rows (math first, then code), each with its recorded answer."""
    rng = random.Random(seed)
    eligible = [r for r in _math_rows(data) if int(r["level"]) <= 2 and "[asy]" not in r["problem"]]
    math = sorted(rng.sample(eligible, N_MATH), key=lambda r: r["_index"])
    code_all = _code_rows(data)
    code = sorted(rng.sample(code_all, N_CODE), key=lambda r: int(r["task_id"].split("/")[1]))
    items: list[dict] = []
    for r in math:
        items.append(
            {
                "id": f"math500-{r['_index']:03d}",
                "prompt": _MATH_PROMPT.format(problem=r["problem"].strip()),
                "reference_answer": r["answer"],
                "category": "math",
                "metadata": {"source": "MATH-500", "row": r["_index"], "subject": r["subject"], "level": int(r["level"])},
                "model": HUMAN,
                "text": r["solution"],
            }
        )
    for r in code:
        number = int(r["task_id"].split("/")[1])
        items.append(
            {
                "id": f"humaneval-{number:03d}",
                "prompt": _CODE_PROMPT.format(header=r["prompt"]),
                "category": "code",
                "metadata": {
                    "source": "HumanEval",
                    "task_id": r["task_id"],
                    "entry_point": r["entry_point"],
                    "code_prompt": r["prompt"],
                    "tests": r["test"],
                },
                "model": HUMAN,
                "text": f"```python\n{r['prompt']}{r['canonical_solution']}```",
            }
        )
    return items


def render(items: list[dict]) -> str:
    """The JSON Lines text of ``items`` (stable key order, UTF-8, one trailing newline)."""
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--out", type=Path, default=HERE / "items.jsonl")
    parser.add_argument("--check", action="store_true", help="only compare with --out")
    args = parser.parse_args(argv)
    text = render(build_items(args.data))
    if args.check:
        same = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        print("items.jsonl is up to date" if same else "items.jsonl differs from a fresh build")
        return 0 if same else 1
    tmp = args.out.with_suffix(".jsonl.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(args.out)
    print(f"wrote {len(text.splitlines())} items to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
