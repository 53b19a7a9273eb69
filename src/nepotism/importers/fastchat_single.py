"""Import FastChat single-answer grading (MT-Bench ``gpt-4_single.jsonl``, RouteLLM, arena-bench).

Upstream: lm-sys/FastChat ``fastchat/llm_judge/common.py`` (``play_a_match_single``), also written
by Arena-Hard-Auto's early arena-bench stage (``judge_any.py``). One JSON object per line:

==================  ================================================================================
field               becomes
==================  ================================================================================
``question_id``     ``instance_id`` = ``<benchmark>/<question_id>`` (``.../turn2`` for turn 2)
``model``           ``model`` (kept as spelled, e.g. ``mistralai/Mixtral-8x7B-Instruct-v0.1``)
``judge``           ``judge`` = its first element; the prompt name (``single-v1``,
                    ``single-math-v1-multi-turn`` ...) goes to ``judge_prompt``. Absent (arena-bench)
                    → ``gpt-4``, FastChat's default judge, said in a note; ``--judge`` overrides
``score``           ``score``. FastChat writes ``-1`` when no ``[[rating]]`` was found and
                    arena-bench ``null`` when no single rating was; both stay as rows with an empty
                    score, ``status`` = unparsed, ``reason`` = ``conflicting`` when the reply holds
                    two different ``[[ratings]]``, else ``no_verdict``
``judgment``        not copied; ``$ERROR$`` (FastChat's text for a call that failed after every
                    retry) makes the row ``status`` = failed, ``reason`` = ``call_failed``
``turn``            ``turn`` (1 when absent)
``user_prompt``,    not copied (the judge prompt embeds the question, the answer and, for math,
``tstamp``          GPT-4's reference answer)
==================  ================================================================================

``condition`` is ``default`` and ``replicate`` 0: FastChat grades each answer once. What is lost:
the judge's reasoning text and the prompt it saw; the question category (join ``question.jsonl``
if needed: FastChat uses the reference-answer prompts for math, reasoning and coding).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from nepotism.errors import InputError
from nepotism.importers._common import (
    Format,
    Imported,
    fail,
    number_or_none,
    provenance,
    read_records,
    reason_from_reply,
    require,
    status_counts,
)
from nepotism.importers._fastchat import API_ERROR, DEFAULT_BENCHMARK, instance_id, judge_of, note_assumed, turn_of

__all__ = ["FORMATS", "import_fastchat_single"]


#: FastChat's rating marker (``one_score_pattern`` in fastchat/llm_judge/common.py).
_RATING = re.compile(r"\[\[(\d+\.?\d*)\]\]")


def _score(value: Any, path: Path, line: int) -> float | None:
    score = number_or_none(value, path, line, "score")
    if score is not None and score < 0 and score != -1:
        raise fail(f"score {value} is negative (FastChat's only negative score is -1, 'no rating')", path, line, "score")
    return None if score == -1 else score


def import_fastchat_single(
    path: str | Path, *, judge: str | None = None, benchmark: str = DEFAULT_BENCHMARK, **_: Any
) -> Imported:
    """Import one FastChat single-grading ``.jsonl`` file (see the module docstring for the mapping)."""
    path = Path(path)
    rows = []
    assumed = 0
    for line, record in read_records(path):
        question = require(record, "question_id", path, line)
        model = str(require(record, "model", path, line)).strip()
        if "score" not in record:
            raise fail("missing field", path, line, "score")
        score = _score(record["score"], path, line)
        name, prompt, guessed = judge_of(record, path, line, judge)
        assumed += guessed
        turn = turn_of(record, path, line)
        failed = record.get("judgment") == API_ERROR
        status = "failed" if failed else ("parsed" if score is not None else "unparsed")
        rows.append(
            {
                "instance_id": instance_id(benchmark, question, turn),
                "judge": name,
                "model": model,
                "score": None if failed else score,
                "condition": "default",
                "replicate": 0,
                "turn": turn,
                "judge_prompt": prompt,
                "status": status,
                "reason": (
                    "call_failed"
                    if status == "failed"
                    else reason_from_reply(record.get("judgment"), _RATING)
                    if status == "unparsed"
                    else None
                ),
                **provenance(path, line),
            }
        )
    if not rows:
        raise InputError("no judgments in the file", path=str(path))
    frame = pd.DataFrame(rows)
    frame["score"] = frame["score"].astype(float)
    counts = {
        "judgments": len(frame),
        **status_counts(frame),
    }
    notes = [
        "FastChat grades each answer once (replicate 0); unparsed (-1 or null) and failed scores are "
        "kept as rows with an empty score and a reason"
    ]
    note_assumed(assumed, counts, notes)
    return Imported(tables={"pointwise": frame}, main="pointwise", counts=counts, notes=notes, source=str(path))


FORMATS = (
    Format(
        name="fastchat-single",
        summary="FastChat / MT-Bench single-answer grades (question_id, model, judge, score, turn)",
        read=import_fastchat_single,
        tables=("pointwise",),
        upstream="lm-sys/FastChat fastchat/llm_judge/common.py play_a_match_single; arena-hard-auto judge_any.py",
        options=("judge", "benchmark"),
    ),
)
