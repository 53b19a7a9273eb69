"""What FastChat's ``llm_judge`` files share: judge names, question/turn instance ids, failed calls.

FastChat (lm-sys/FastChat, ``fastchat/llm_judge/common.py``) writes one JSON object per line with
``question_id``, ``judge`` = ``[judge model, prompt name]`` (e.g. ``["gpt-4", "single-v1"]``),
``turn`` (1, or 2 for the multi-turn prompts that grade the second answer) and the judge's reply in
``judgment``; a call that failed after every retry leaves the reply ``$ERROR$`` (its
``API_ERROR_OUTPUT``). Arena-Hard-Auto's early ``arena-bench`` stage wrote the same rows without
``judge`` and ``turn`` (its judge, ``gpt-4``, was set in the run's configuration).

Instance ids: ``<benchmark>/<question_id>`` for the first turn and ``<benchmark>/<question_id>/turn2``
for the second (the second turn is a prompt of its own, asked after the first answer). The
benchmark prefix is ``fastchat`` unless the user names it, and is the same for every FastChat
format, so single grades, pair judgments and human judgments of one benchmark share ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nepotism.importers._common import fail, is_missing

__all__ = ["API_ERROR", "DEFAULT_BENCHMARK", "DEFAULT_JUDGE", "instance_id", "judge_of", "note_assumed", "turn_of"]

#: FastChat's ``API_ERROR_OUTPUT``: the judgment text of a call that failed after every retry.
API_ERROR = "$ERROR$"
#: FastChat's ``gen_judgment.py --judge-model`` default and Arena-Hard-Auto's arena-bench judge.
DEFAULT_JUDGE = "gpt-4"
DEFAULT_BENCHMARK = "fastchat"


def judge_of(record: dict[str, Any], path: Path, line: int, judge: str | None) -> tuple[str, str | None, bool]:
    """``(judge model, judge prompt name, assumed)`` of a record.

    ``judge`` (the user's ``--judge``) wins over the file; a record without a ``judge`` field gets
    `DEFAULT_JUDGE` and ``assumed=True`` so the importer can say so.
    """
    value = record.get("judge")
    prompt = None
    if isinstance(value, (list, tuple)):
        if not value or not isinstance(value[0], str) or not value[0].strip():
            raise fail("expected [judge model, prompt name]", path, line, "judge")
        prompt = str(value[1]) if len(value) > 1 and value[1] is not None else None
        value = value[0]
    elif value is not None and not isinstance(value, str):
        raise fail("expected a judge name or [judge model, prompt name]", path, line, "judge")
    if judge is not None:
        return judge, prompt, False
    if value is None or is_missing(value):
        return DEFAULT_JUDGE, prompt, True
    return value.strip(), prompt, False


def turn_of(record: dict[str, Any], path: Path, line: int) -> int:
    """The record's ``turn`` (1 when absent); a positive whole number."""
    value = record.get("turn", 1)
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 0:
        raise fail(f"turn {value!r} is not a turn number", path, line, "turn")
    return max(int(value), 1)


def instance_id(benchmark: str, question_id: Any, turn: int) -> str:
    """``<benchmark>/<question_id>`` for turn 1, ``.../turn<N>`` for later turns."""
    base = f"{benchmark}/{question_id}"
    return base if turn <= 1 else f"{base}/turn{turn}"


def note_assumed(assumed: int, counts: dict[str, int], notes: list[str]) -> None:
    """Count and say that ``assumed`` rows got `DEFAULT_JUDGE` because their record names no judge."""
    if assumed:
        counts["judge_assumed"] = assumed
        notes.append(
            f"rows whose record names no judge are taken to be {DEFAULT_JUDGE} (FastChat's default judge and "
            "arena-bench's; count judge_assumed): pass --judge to name it"
        )
