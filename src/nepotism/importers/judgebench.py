"""Import JudgeBench (ScalerLab/JudgeBench) pairs and judge outputs.

Files (``dataset=judgebench,response_model=M[,judge_name=J,judge_model=JM].jsonl(.gz)``), one pair a
line: ``pair_id``, ``original_id``, ``source`` (e.g. ``mmlu-pro-law``), ``question``,
``response_model`` (both responses come from this one model), ``response_A``, ``response_B`` and the
objective ``label`` (``A>B`` or ``B>A``). Judge output files add ``judge_name`` and ``judgments``: two
games, as JudgeBench's ``run_judge.py`` runs them — game 1 shows (A, B), game 2 shows (B, A) — each
``{"judgment": {...}, "decision": ...}`` with the decision written in the *shown* labels (JudgeBench's
``metrics.py`` flips game 2 back before scoring). A game is ``null`` when the call failed.

* ``judge_name=arena_hard`` (an LLM judge with the Arena-Hard prompt): ``decision`` is ``A>B``,
  ``B>A``, ``A=B`` or ``null`` (no verdict could be read from the reply). -> pairwise rows, two per
  pair, verdict A / B / tie / empty (unparsed and failed games both stay empty, counted apart).
* ``judge_name=reward_model``: ``judgment.scores`` = [score of first shown, score of second shown].
  -> pointwise rows, one per response per game (replicate = game - 1).
* no judge (the data files): -> preference-ref rows (and a correctness-ref) only.

Both responses are one model's, so they are named ``MODEL@A`` and ``MODEL@B`` (the table forbids
model_a == model_b). instance_id = ``judgebench/<pair_id>``, category = ``source``. The objective label
is also returned as a preference-ref table for every file. Left out: the judge prompts and replies.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from nepotism.errors import InputError
from nepotism.importers._common import Format, Imported, provenance, read_jsonl, reason_from_reply, require

__all__ = ["FORMATS", "import_judgebench"]

_DECISIONS = {"A>B": "A", "B>A": "B", "A=B": "tie"}


def _judgments(record: dict[str, Any], path: Path, line: int) -> list[dict[str, Any] | None]:
    games = require(record, "judgments", path, line)
    if not isinstance(games, list) or not 1 <= len(games) <= 2:
        raise InputError("expected a list of one or two games", path=str(path), line=line, field="judgments")
    for game in games:
        if game is not None and not isinstance(game, dict):
            raise InputError("each game must be an object or null", path=str(path), line=line, field="judgments")
    return games


def import_judgebench(path: str | Path, **_: Any) -> Imported:
    """Import one JudgeBench data or output file (see the module docstring for what each yields)."""
    path = Path(path)
    refs, correct, pairwise, pointwise = [], [], [], []
    judge_kind = None
    counts = {"pairs": 0, "failed": 0, "unparsed": 0}
    seen: dict[str, int] = {}
    for line, record in read_jsonl(path):
        pid = str(require(record, "pair_id", path, line))
        if pid in seen:
            raise InputError(f"pair_id repeats line {seen[pid]}", path=str(path), line=line, field="pair_id")
        seen[pid] = line
        model = str(require(record, "response_model", path, line))
        instance = f"judgebench/{pid}"
        tag = {"A": f"{model}@A", "B": f"{model}@B"}
        label = require(record, "label", path, line)
        if label not in ("A>B", "B>A"):
            raise InputError(f"unknown label '{label}': expected A>B or B>A", path=str(path), line=line, field="label")
        category = record.get("source")
        where = provenance(path, line)
        refs.append(
            {
                "instance_id": instance,
                "model_a": tag["A"],
                "model_b": tag["B"],
                "winner": tag[label[0]],
                "category": category,
                **where,
            }
        )
        for side in ("A", "B"):
            correct.append(
                {"instance_id": instance, "model": tag[side], "correct": side == label[0], "category": category, **where}
            )
        counts["pairs"] += 1
        name = record.get("judge_name")
        if name is None:
            kind = None
        elif name == "arena_hard":
            kind = "pairwise"
        elif name == "reward_model":
            kind = "pointwise"
        else:
            raise InputError(
                f"unknown judge_name '{name}': expected arena_hard or reward_model", path=str(path), line=line, field="judge_name"
            )
        if counts["pairs"] == 1:
            judge_kind = kind
        elif kind != judge_kind:
            raise InputError(
                "judge_name differs from earlier lines: one file holds one judge", path=str(path), line=line, field="judge_name"
            )
        if kind is None:
            continue
        for number, game in enumerate(_judgments(record, path, line), start=1):
            shown = ("A", "B") if number == 1 else ("B", "A")
            judgment = None if game is None else game.get("judgment")
            if game is None or not isinstance(judgment, dict):
                counts["failed"] += 1
                judge_model = None
            else:
                judge_model = require(judgment, "judge_model", path, line)
            judge = judge_model or _judge_from_name(path)
            if kind == "pairwise":
                decision = None if game is None else game.get("decision")
                if decision is not None and decision not in _DECISIONS:
                    raise InputError(
                        f"unknown decision '{decision}'", path=str(path), line=line, field=f"judgments[{number - 1}].decision"
                    )
                if decision is None and game is not None:
                    counts["unparsed"] += 1
                status = "failed" if game is None else ("parsed" if decision is not None else "unparsed")
                pairwise.append(
                    {
                        "instance_id": instance,
                        "judge": judge,
                        "model_a": tag[shown[0]],
                        "model_b": tag[shown[1]],
                        "verdict": None if decision is None else _DECISIONS[decision],
                        "condition": "arena_hard",
                        "replicate": 0,
                        "category": category,
                        "game": number,
                        "status": status,
                        "reason": _reason(status, judgment),
                        **where,
                    }
                )
            else:
                scores = [math.nan, math.nan] if judgment is None else judgment.get("scores")
                if (
                    not isinstance(scores, list)
                    or len(scores) != 2
                    or any(isinstance(s, bool) or not isinstance(s, (int, float)) for s in scores)
                ):
                    raise InputError(
                        "expected two numeric scores", path=str(path), line=line, field=f"judgments[{number - 1}].judgment.scores"
                    )
                for position, score in zip(shown, scores):
                    pointwise.append(
                        {
                            "instance_id": instance,
                            "judge": judge,
                            "model": tag[position],
                            "score": float(score),
                            "condition": "reward_model",
                            "replicate": number - 1,
                            "category": category,
                            "shown": "first" if position == shown[0] else "second",
                            "status": "failed" if judgment is None else "parsed",
                            "reason": "call_failed" if judgment is None else None,
                            **where,
                        }
                    )
    if not refs:
        raise InputError("no pairs in the file", path=str(path))
    tables = {"preference-ref": pd.DataFrame(refs), "correctness-ref": pd.DataFrame(correct)}
    main = "preference-ref"
    notes = []
    if judge_kind == "pairwise":
        tables = {"pairwise": pd.DataFrame(pairwise), **tables}
        main = "pairwise"
        notes.append("each pair is judged in both orders: game 1 shows response A first, game 2 response B")
    elif judge_kind == "pointwise":
        tables = {
            "pointwise": pd.DataFrame(pointwise),
            "correctness-ref": tables["correctness-ref"],
            "preference-ref": tables["preference-ref"],
        }
        main = "pointwise"
        notes.append("reward-model scores: one row per response per game (replicate 0 = A shown first)")
    return Imported(tables=tables, main=main, counts=counts, notes=notes, source=str(path))


_LABEL = re.compile(r"\[\[([AB<>=]+)\]\]")


def _reason(status: str, judgment: dict[str, Any] | None) -> str | None:
    """Why an arena-hard game has no decision: ``call_failed``; or, by JudgeBench's own rule
    (``ArenaHard.get_score``), ``no_verdict`` with no ``[[...]]`` label in the reply and
    ``conflicting`` with several different ones."""
    if status != "unparsed":
        return {"failed": "call_failed"}.get(status)
    return reason_from_reply(str((judgment or {}).get("response") or ""), _LABEL)


def _judge_from_name(path: Path) -> str:
    for part in path.name.split(","):
        if part.startswith("judge_model="):
            return part.split("=", 1)[1].split(".jsonl", 1)[0]
    raise InputError("a failed game names no judge and the file name has no judge_model=", path=str(path))


FORMATS = (
    Format(
        name="judgebench",
        summary="JudgeBench pairs and judge outputs (arena_hard judges in both orders, reward-model scores)",
        read=import_judgebench,
        tables=("pairwise", "pointwise", "preference-ref", "correctness-ref"),
        upstream="ScalerLab/JudgeBench run_judge.py, utils/metrics.py (data/, outputs/)",
    ),
)
