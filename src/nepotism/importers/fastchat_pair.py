"""Import FastChat pairwise judgments (MT-Bench ``gpt-4_pair.jsonl``), both games of each pair.

Upstream: lm-sys/FastChat ``fastchat/llm_judge/common.py`` (``play_a_match_pair``). Each pair is
judged twice: game 1 shows ``model_1``'s answer as Assistant A, game 2 swaps the two. FastChat
writes the winner of each game already mapped back to the model slot: ``g1_winner`` /
``g2_winner`` are ``model_1``, ``model_2``, ``tie`` or ``error`` (no ``[[A]]``/``[[B]]``/``[[C]]``
verdict found in the reply).

==================  ================================================================================
field               becomes
==================  ================================================================================
``question_id``     ``instance_id`` = ``<benchmark>/<question_id>`` (``.../turn2`` for turn 2)
``model_1/2``       game 1 row: ``model_a`` = model_1, ``model_b`` = model_2; game 2 row: swapped
``g1/g2_winner``    ``verdict`` in the shown order: the model shown first → A, the other → B,
                    ``tie`` → tie; ``error`` → empty verdict, ``status`` unparsed, ``reason``
                    ``no_verdict``; a reply of ``$ERROR$`` → ``status`` failed, ``call_failed``
``judge``           ``judge`` = its first element; prompt name (``pair-v2`` ...) → ``judge_prompt``
``turn``            ``turn``; ``game`` (1 or 2) is kept too
==================  ================================================================================

Not read: the judges' replies and prompts, ``tstamp``. Records made by FastChat's single-answer
mode inside pairwise mode (``m1_score`` / ``m2_score``: one winner derived from two grades, not two
presentation orders) are refused with a pointer to ``fastchat-single``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from nepotism.errors import InputError
from nepotism.importers._common import Format, Imported, fail, provenance, read_records, require, status_counts
from nepotism.importers._fastchat import API_ERROR, DEFAULT_BENCHMARK, instance_id, judge_of, note_assumed, turn_of

__all__ = ["FORMATS", "import_fastchat_pair"]

_WINNERS = ("model_1", "model_2", "tie", "error")


def _game_row(
    winner: Any, reply: Any, shown: tuple[str, str], slots: tuple[str, str], path: Path, line: int, field: str
) -> dict[str, Any]:
    """verdict/status/reason of one game; ``slots`` = the FastChat slot names of (first, second) shown."""
    if winner not in _WINNERS:
        raise fail(f"unknown winner {winner!r}: expected one of {', '.join(_WINNERS)}", path, line, field)
    if reply == API_ERROR:
        return {"model_a": shown[0], "model_b": shown[1], "verdict": None, "status": "failed", "reason": "call_failed"}
    if winner == "error":
        return {"model_a": shown[0], "model_b": shown[1], "verdict": None, "status": "unparsed", "reason": "no_verdict"}
    verdict = "tie" if winner == "tie" else ("A" if winner == slots[0] else "B")
    return {"model_a": shown[0], "model_b": shown[1], "verdict": verdict, "status": "parsed", "reason": None}


def import_fastchat_pair(path: str | Path, *, judge: str | None = None, benchmark: str = DEFAULT_BENCHMARK, **_: Any) -> Imported:
    """Import one FastChat pairwise ``.jsonl`` file: two pairwise rows (games) per record."""
    path = Path(path)
    rows = []
    assumed = 0
    for line, record in read_records(path):
        if "m1_score" in record or "m2_score" in record:
            raise fail(
                "this pair was decided from two single-answer grades (m1_score/m2_score), not judged in "
                "two orders; import the single grades with --format fastchat-single",
                path,
                line,
                "m1_score",
            )
        question = require(record, "question_id", path, line)
        first, second = (str(require(record, k, path, line)).strip() for k in ("model_1", "model_2"))
        if first == second:
            first, second = f"{first}@1", f"{second}@2"
        name, prompt, guessed = judge_of(record, path, line, judge)
        assumed += guessed
        turn = turn_of(record, path, line)
        common = {
            "instance_id": instance_id(benchmark, question, turn),
            "judge": name,
            "condition": "default",
            "replicate": 0,
            "turn": turn,
            "judge_prompt": prompt,
            **provenance(path, line),
        }
        for game, shown, slots in ((1, (first, second), ("model_1", "model_2")), (2, (second, first), ("model_2", "model_1"))):
            winner = require(record, f"g{game}_winner", path, line)
            row = _game_row(winner, record.get(f"g{game}_judgment"), shown, slots, path, line, f"g{game}_winner")
            rows.append({**common, **row, "game": game})
    if not rows:
        raise InputError("no judgments in the file", path=str(path))
    frame = pd.DataFrame(rows)
    counts = {"pairs": len(frame) // 2, "judgments": len(frame), **status_counts(frame)}
    notes = ["each pair is judged in both orders: game 1 shows model_1 first, game 2 model_2"]
    note_assumed(assumed, counts, notes)
    return Imported(tables={"pairwise": frame}, main="pairwise", counts=counts, notes=notes, source=str(path))


FORMATS = (
    Format(
        name="fastchat-pair",
        summary="FastChat / MT-Bench pairwise judgments, both games (model_1, model_2, g1_winner, g2_winner)",
        read=import_fastchat_pair,
        tables=("pairwise",),
        upstream="lm-sys/FastChat fastchat/llm_judge/common.py play_a_match_pair",
        options=("judge", "benchmark"),
    ),
)
