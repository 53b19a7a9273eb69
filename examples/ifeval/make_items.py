"""Rebuild ``items.jsonl`` (the IFEval example's dataset) from the shared IFEval copy, deterministically.

    python examples/ifeval/make_items.py                     # writes examples/ifeval/items.jsonl
    python examples/ifeval/make_items.py --data DIR --out FILE

Selection (never by outcome): the IFEval prompts that have a recorded GPT-4 response and whose
every instruction type the project's checker always decides (True/False, never "cannot tell":
everything but ``language:response_language``), then a seeded random sample of ``N_ITEMS`` of
them, kept in IFEval key order. Each row holds the prompt, one rubric item per instruction (id and
wording from `nepotism.grading.ifeval`, so judge verdicts and the graded truth join on the id),
IFEval's own ``instruction_id_list``/``kwargs`` under ``metadata``, and GPT-4's recorded response
(``model`` = ``gpt-4``, see ATTRIBUTION.md). Left out: IFEval's loose mode, any model call.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from nepotism.grading.ifeval import INSTRUCTION_TYPES, ifeval_rubric_items

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[2] / "shared" / "data" / "ifeval"
INPUT_FILE = "input_data.jsonl"
RESPONSE_FILE = "input_response_data_gpt4_20231107_145030.jsonl"
SEED = 20231107
N_ITEMS = 10
RECORDED_MODEL = "gpt-4"
#: Instruction types whose checker can answer "cannot tell" (None): left out of the sample.
UNDECIDED_TYPES = frozenset({"language:response_language"})
DECIDED_TYPES = frozenset(INSTRUCTION_TYPES) - UNDECIDED_TYPES


def _read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def build_rows(data_dir: Path) -> list[dict]:
    """The example's rows, in IFEval key order."""
    prompts = _read_jsonl(data_dir / INPUT_FILE)
    recorded = {r["prompt"]: r["response"] for r in _read_jsonl(data_dir / RESPONSE_FILE)}
    eligible = sorted(
        (p for p in prompts if p["prompt"] in recorded and set(p["instruction_id_list"]) <= DECIDED_TYPES),
        key=lambda p: p["key"],
    )
    chosen = sorted(random.Random(SEED).sample(eligible, N_ITEMS), key=lambda p: p["key"])
    rows = []
    for p in chosen:
        instance_id = f"ifeval-{p['key']}"
        items = ifeval_rubric_items(
            {"instance_id": instance_id, "instruction_id_list": p["instruction_id_list"], "kwargs": p["kwargs"]}
        )
        rows.append(
            {
                "id": instance_id,
                "prompt": p["prompt"],
                "category": "ifeval",
                "rubric": [
                    {"id": it["rubric_id"], "text": it["text"], "points": it["points"], "category": it["category"]}
                    for it in items
                ],
                "metadata": {"key": p["key"], "instruction_id_list": p["instruction_id_list"], "kwargs": p["kwargs"]},
                "model": RECORDED_MODEL,
                "text": recorded[p["prompt"]],
            }
        )
    return rows


def render(rows: list[dict]) -> str:
    """The JSON Lines text (one row per line, keys in the order built, UTF-8 kept as is)."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="directory holding IFEval's two files")
    parser.add_argument("--out", type=Path, default=HERE / "items.jsonl")
    args = parser.parse_args(argv)
    text = render(build_rows(args.data))
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
