"""Import chosen/rejected pairs (RewardBench, LLMBar, JudgeBench) and a reward model's scores of them.

A pair is one prompt with a better and a worse response. It becomes a reference (which response
is right), and, when a reward model scored both responses, pointwise judgments by that model.
Record shapes read (JSONL, CSV, Parquet, a JSON array, or a JSON object of column lists):

* RewardBench (allenai/reward-bench): ``prompt``, ``chosen``, ``rejected``, optionally
  ``chosen_model``, ``rejected_model``, ``subset``, ``id``; scores from ``scripts/run_rm.py``'s
  per-prompt output (``scores_chosen``, ``scores_rejected``, with ``text_chosen`` /
  ``text_rejected`` in place of the responses and the reward model in ``model``) or as
  ``score_chosen`` / ``score_rejected``.
* LLMBar (princeton-nlp/LLMBar ``Dataset/**/dataset.json``): ``input``, ``output_1``,
  ``output_2``, ``label`` (1 or 2: the better output). No scores, no generator names.
* JudgeBench (ScalerLab/JudgeBench): read by the ``judgebench`` format's reader (the same rows,
  ``response_model@A`` / ``@B`` names; reward-model files give pointwise rows per game).

==================  ================================================================================
field               becomes
==================  ================================================================================
``id``              ``instance_id`` = ``<benchmark>/<id>`` (benchmark = ``--benchmark`` or the file
                    name's stem; without an id the line or record number)
responses           ``model_a`` = the first response (``chosen`` / ``output_1``), ``model_b`` = the
                    second; names from ``chosen_model`` / ``rejected_model``, else ``--generator``
                    (default ``unknown``) tagged with the slot: ``unknown@chosen``,
                    ``unknown@output_1`` ...
label               preference-ref ``winner`` (the better response), correctness-ref ``correct``
                    (true for the better, false for the worse)
``subset``          ``category``
scores              pointwise ``score`` of each response, ``judge`` = ``--judge`` or the file's
                    ``model``; a null score stays a row, ``status`` unparsed, ``reason``
                    ``no_verdict``
==================  ================================================================================

Main table: pointwise when the file has scores (its companion: the correctness-ref, whose pairing
with the scores gives ``mipa`` paradigm DA, i.e. the reward model's pairwise accuracy), else the
preference-ref (companion: the correctness-ref). Texts (``--texts-out``): the prompt and both
responses. What is lost: RewardBench's chat-formatted ``text_*`` strings are kept as texts as they
are (template tokens included); per-token or per-turn rewards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from nepotism.errors import InputError
from nepotism.importers._common import (
    Format,
    Imported,
    fail,
    is_missing,
    number_or_none,
    provenance,
    read_records,
    require,
)

__all__ = ["FORMATS", "import_reward_pairs"]

# (first text, second text) fields of each shape, and how the label says which is better.
_SHAPES = (
    ("rewardbench", ("chosen", "rejected")),
    ("rewardbench-scores", ("text_chosen", "text_rejected")),
    ("llmbar", ("output_1", "output_2")),
)
_SCORES = (("scores_chosen", "scores_rejected"), ("score_chosen", "score_rejected"))


def _shape(record: dict[str, Any], path: Path, line: int) -> tuple[str, tuple[str, str]]:
    for name, fields in _SHAPES:
        if all(f in record for f in fields):
            return name, fields
    raise fail(
        "not a chosen/rejected pair: expected chosen and rejected (RewardBench), text_chosen and "
        "text_rejected (RewardBench scores), output_1, output_2 and label (LLMBar), or JudgeBench's "
        "response_A, response_B and label",
        path,
        line,
        "chosen",
    )


def _better(shape: str, record: dict[str, Any], path: Path, line: int) -> int:
    """0 when the first response is the better one, 1 when the second is."""
    if shape != "llmbar":
        return 0
    label = require(record, "label", path, line)
    if str(label).strip() not in ("1", "2"):
        raise fail(f"label {label!r} is neither 1 nor 2 (the better output)", path, line, "label")
    return int(str(label).strip()) - 1


def _names(shape: str, record: dict[str, Any], generator: str) -> tuple[str, str]:
    slots = ("output_1", "output_2") if shape == "llmbar" else ("chosen", "rejected")
    given = [record.get("chosen_model"), record.get("rejected_model")] if shape != "llmbar" else [None, None]
    if any(is_missing(g) for g in given):
        return f"{generator}@{slots[0]}", f"{generator}@{slots[1]}"
    first, second = (str(g).strip() for g in given)
    return (f"{first}@{slots[0]}", f"{second}@{slots[1]}") if first == second else (first, second)


def _judgebench(path: Path, judge: str | None) -> Imported:
    from nepotism.importers.judgebench import import_judgebench

    imported = import_judgebench(path)
    if judge is not None and imported.main == "pointwise":
        imported.tables["pointwise"]["judge"] = judge
    return imported


def import_reward_pairs(
    path: str | Path, *, judge: str | None = None, generator: str = "unknown", benchmark: str | None = None, **_: Any
) -> Imported:
    """Import one file of chosen/rejected pairs (and reward scores); see the module docstring."""
    path = Path(path)
    records = read_records(path)
    if records and "response_A" in records[0][1] and "pair_id" in records[0][1]:
        return _judgebench(path, judge)
    prefix = benchmark or path.name.split(".")[0]
    prefs, refs, points, texts = [], [], [], []
    seen: dict[str, int] = {}
    for line, record in records:
        shape, fields = _shape(record, path, line)
        ident = record.get("id")
        ident = str(line) if is_missing(ident) else str(ident).strip()
        if ident in seen:
            raise fail(f"id {ident!r} repeats an earlier record", path, line, "id")
        seen[ident] = line
        instance = f"{prefix}/{ident}"
        answers = [require(record, f, path, line, allow_missing=True) for f in fields]
        for field, answer in zip(fields, answers):
            if answer is not None and not isinstance(answer, str):
                raise fail("expected the response text", path, line, field)
        models = _names(shape, record, generator)
        better = _better(shape, record, path, line)
        category = record.get("subset")
        where = provenance(path, line)
        prefs.append(
            {
                "instance_id": instance,
                "model_a": models[0],
                "model_b": models[1],
                "winner": models[better],
                "category": category,
                **where,
            }
        )
        for slot, model in enumerate(models):
            refs.append({"instance_id": instance, "model": model, "correct": slot == better, "category": category, **where})
            texts.append(
                {
                    "instance_id": instance,
                    "prompt": record.get("prompt", record.get("input")),
                    "tests": None,
                    "model": model,
                    "text": answers[slot] or "",
                }
            )
        fields_scored = next((pair for pair in _SCORES if pair[0] in record or pair[1] in record), None)
        if fields_scored is None:
            continue
        name = judge or record.get("model")
        if is_missing(name):
            raise fail("scores without a reward model's name: pass --judge", path, line, "model")
        for slot, (field, model) in enumerate(zip(fields_scored, models)):
            score = number_or_none(record.get(field), path, line, field)
            points.append(
                {
                    "instance_id": instance,
                    "judge": str(name).strip(),
                    "model": model,
                    "score": score,
                    "condition": "default",
                    "replicate": 0,
                    "category": category,
                    "status": "parsed" if score is not None else "unparsed",
                    "reason": None if score is not None else "no_verdict",
                    **where,
                }
            )
    if not prefs:
        raise InputError("no pairs in the file", path=str(path))
    if points and len(points) != 2 * len(prefs):
        raise InputError(
            "some records have scores and others not: one file holds one reward model's scores of every pair, or none",
            path=str(path),
        )
    tables = {"preference-ref": pd.DataFrame(prefs), "correctness-ref": pd.DataFrame(refs)}
    main = "preference-ref"
    if points:
        frame = pd.DataFrame(points)
        frame["score"] = frame["score"].astype(float)
        tables = {"pointwise": frame, "correctness-ref": tables["correctness-ref"], "preference-ref": tables["preference-ref"]}
        main = "pointwise"
    counts = {"pairs": len(prefs), "scored_responses": len(points), "unscored": sum(p["score"] is None for p in points)}
    notes = []
    if main == "pointwise":
        notes.append(
            "pair the pointwise scores with the correctness-ref (--reference-out): mipa paradigm DA is the "
            "reward model's pairwise accuracy"
        )
    if any(m.startswith(f"{generator}@") for p in prefs for m in (p["model_a"], p["model_b"])):
        notes.append(f"the file does not name the generators: responses are named {generator}@<slot>")
    return Imported(tables=tables, main=main, texts=pd.DataFrame(texts), counts=counts, notes=notes, source=str(path))


FORMATS = (
    Format(
        name="reward-pairs",
        summary="chosen/rejected pairs (RewardBench, LLMBar, JudgeBench) as references, reward-model scores as pointwise",
        read=import_reward_pairs,
        tables=("pointwise", "preference-ref", "correctness-ref"),
        upstream="allenai/reward-bench scripts/run_rm.py; princeton-nlp/LLMBar Dataset/; ScalerLab/JudgeBench",
        options=("judge", "generator", "benchmark"),
    ),
)
