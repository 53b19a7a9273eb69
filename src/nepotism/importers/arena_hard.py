"""Import Arena-Hard-Auto pairwise judgments: two games per question, strong and weak verdict labels.

Upstream: lmarena/arena-hard-auto ``gen_judgment.py`` (v0.1: ``question_id``, ``model``,
``judge``, ``games``) and ``src/arenahard/gen_judgment.py`` (v2.0: ``uid``, ``category``,
``judge``, ``model``, ``baseline``, ``games``), one file per judged model under
``model_judgment/<judge>/``. Each record compares the model with the baseline twice: game 1 shows
the baseline as Assistant A and the model as B, game 2 swaps them. ``games[i].score`` is the label
the judge wrote: ``A>>B``, ``A>B``, ``A=B``, ``B>A``, ``B>>A`` (``show_result.py`` also accepts
``A<<B``, ``A<B``, ``B=A``, ``B<<A``, ``B<A``), or null when the reply held no label (and, in v0.1,
when it held two different ones: its ``get_score``; v2.0's keeps the last label of the upper-cased
reply); a game is null in v2.0 when the call failed.

==================  ================================================================================
field               becomes
==================  ================================================================================
``question_id`` /   ``instance_id`` = ``arena-hard/<id>``
``uid``
``model``,          game 1 row: ``model_a`` = baseline, ``model_b`` = model; game 2 row: swapped.
``baseline``        v0.1 files do not name the baseline (it was set in the run's configuration,
                    ``gpt-4-0314`` for arena-hard-v0.1): pass ``--baseline``
``judge``           ``judge``
``category``        ``category`` (v2.0: hard_prompt, creative_writing ...)
``games[i].score``  ``verdict`` in the shown order (A, B, tie), the label itself in ``label`` and its
                    strength in ``strength`` (``strong`` for ``>>``/``<<``, ``weak`` for ``>``/``<``,
                    empty for ties). Null → empty verdict, ``status`` unparsed, ``reason``
                    ``conflicting`` when the reply holds two different ``[[...]]`` labels, else
                    ``no_verdict``; a label outside the list → unparsed, ``invalid_verdict``; a null
                    game → ``status`` failed, ``call_failed``
==================  ================================================================================

What is lost: the replies and prompts; Arena-Hard's weighting of strong verdicts (``show_result.py``
counts a strong verdict three times): every row here is one verdict, the ``strength`` column lets a
user weight them.
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
    is_missing,
    provenance,
    read_records,
    reason_from_reply,
    require,
    status_counts,
)

__all__ = ["FORMATS", "LABELS", "import_arena_hard"]

#: Verdict label -> (winner in the shown order, strength). From arena-hard-auto show_result.py's
#: label_to_score (A>>B and B<<A: A wins strongly, ...).
LABELS: dict[str, tuple[str, str | None]] = {
    "A>>B": ("A", "strong"),
    "A>B": ("A", "weak"),
    "A=B": ("tie", None),
    "B>A": ("B", "weak"),
    "B>>A": ("B", "strong"),
    "A<<B": ("B", "strong"),
    "A<B": ("B", "weak"),
    "B=A": ("tie", None),
    "B<A": ("A", "weak"),
    "B<<A": ("A", "strong"),
}
_SPACE = re.compile(r"\s+")
#: The judge's verdict markers, as arena-hard-auto's judge configs extract them (``[[A>B]]``).
_MARKER = re.compile(r"\[\[([AB<>=]+)\]\]")


def _game(game: Any, shown: tuple[str, str], path: Path, line: int, index: int) -> dict[str, Any]:
    base = {"model_a": shown[0], "model_b": shown[1], "label": None, "strength": None}
    if game is None:
        return {**base, "verdict": None, "status": "failed", "reason": "call_failed"}
    if not isinstance(game, dict):
        raise fail("each game must be an object or null", path, line, f"games[{index}]")
    if "score" not in game:
        raise fail("missing field", path, line, f"games[{index}].score")
    score = game["score"]
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        raise fail(
            "a numeric score: this is a single-grading file (no baseline); arena-hard pairwise files hold labels such as A>B",
            path,
            line,
            f"games[{index}].score",
        )
    if is_missing(score):
        reply = game.get("judgment")
        reply = reply.get("answer") if isinstance(reply, dict) else reply
        return {**base, "verdict": None, "status": "unparsed", "reason": reason_from_reply(reply, _MARKER)}
    if not isinstance(score, str):
        raise fail(f"expected a verdict label such as A>B, not {score!r}", path, line, f"games[{index}].score")
    label = _SPACE.sub("", score).upper()
    if label not in LABELS:
        return {**base, "label": score, "verdict": None, "status": "unparsed", "reason": "invalid_verdict"}
    verdict, strength = LABELS[label]
    return {**base, "label": label, "verdict": verdict, "strength": strength, "status": "parsed", "reason": None}


def import_arena_hard(path: str | Path, *, baseline: str | None = None, judge: str | None = None, **_: Any) -> Imported:
    """Import one Arena-Hard-Auto judgment ``.jsonl`` file (two pairwise rows per record)."""
    path = Path(path)
    rows = []
    for line, record in read_records(path):
        key = "uid" if "uid" in record else "question_id"
        question = require(record, key, path, line)
        model = str(require(record, "model", path, line)).strip()
        name = judge or str(require(record, "judge", path, line)).strip()
        base = record.get("baseline") if not is_missing(record.get("baseline")) else baseline
        if base is None:
            raise fail(
                "the record names no baseline (arena-hard v0.1 set it in the run's configuration, gpt-4-0314 "
                "for arena-hard-v0.1): pass --baseline",
                path,
                line,
                "baseline",
            )
        base = str(base).strip()
        if base == model:
            raise fail(f"the judged model is the baseline {base!r}", path, line, "model")
        games = require(record, "games", path, line)
        if isinstance(games, list) and len(games) == 1:
            _game(games[0], (base, model), path, line, 0)  # a numeric single grade gets its own message
        if not isinstance(games, list) or len(games) != 2:
            raise fail("expected a list of two games (baseline first, then swapped)", path, line, "games")
        common = {
            "instance_id": f"arena-hard/{question}",
            "judge": name,
            "condition": "default",
            "replicate": 0,
            "category": record.get("category"),
            **provenance(path, line),
        }
        for index, shown in enumerate(((base, model), (model, base))):
            rows.append({**common, **_game(games[index], shown, path, line, index), "game": index + 1})
    if not rows:
        raise InputError("no judgments in the file", path=str(path))
    frame = pd.DataFrame(rows)
    counts = {
        "questions": len(frame) // 2,
        "judgments": len(frame),
        **status_counts(frame),
        "strong_verdicts": int((frame["strength"] == "strong").sum()),
    }
    notes = [
        "each question is judged in both orders: game 1 shows the baseline first, game 2 the model",
        "strong verdicts (A>>B, B>>A) are one verdict each here; Arena-Hard's show_result.py counts them "
        "three times (column strength)",
    ]
    return Imported(tables={"pairwise": frame}, main="pairwise", counts=counts, notes=notes, source=str(path))


FORMATS = (
    Format(
        name="arena-hard",
        summary="Arena-Hard-Auto judgments: two games per question against a baseline, labels A>>B ... B>>A",
        read=import_arena_hard,
        tables=("pairwise",),
        upstream="lmarena/arena-hard-auto gen_judgment.py, src/arenahard/gen_judgment.py, show_result.py",
        options=("baseline", "judge"),
    ),
)
