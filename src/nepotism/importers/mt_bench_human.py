"""Import MT-Bench human judgments (``lmsys/mt_bench_human_judgments``): a preference reference with annotators.

Upstream: the Hugging Face dataset ``lmsys/mt_bench_human_judgments`` (split ``human``: 3,355
votes of experts and authors on six models' MT-Bench answers; split ``gpt4_pair``: GPT-4's
verdicts on the same pairs) and FastChat's ``human_judgments.json`` read by
``fastchat/llm_judge/compute_agreement.py``. Rows: ``question_id``, ``model_a``, ``model_b``,
``winner`` (``model_a``, ``model_b``, ``tie``; ``tie (bothbad)`` is accepted as in the arena data),
``judge`` (``expert_<n>``, ``author_<n>``, or for GPT-4 ``["gpt-4", "pair-v2"]`` / ``gpt4_pair``),
``conversation_a`` / ``conversation_b`` (the two-turn dialogues) and ``turn`` (1 or 2). Files may
be JSONL, CSV, Parquet (as the dataset ships) or one JSON array.

==================  ================================================================================
field               becomes
==================  ================================================================================
``question_id``     ``instance_id`` = ``<benchmark>/<question_id>`` (``.../turn2`` for turn 2), the
                    ids of ``fastchat-single`` / ``fastchat-pair`` with the same ``--benchmark``
``model_a/b``       ``model_a`` / ``model_b`` (as the annotator saw them, A on the left)
``winner``          human rows → preference-ref ``winner`` = the winning model's name or ``tie``;
                    the upstream value stays in ``winner_raw`` (``tie (bothbad)`` keeps its kind)
``judge``           human rows: ``annotator`` (one preference-ref row per vote, so several
                    annotators of one pair are rows of their own). GPT-4 rows: a pairwise table with
                    ``judge`` = ``gpt-4``, ``condition`` = ``orders-combined`` (upstream already
                    merged GPT-4's two games: one verdict per pair, ``inconsistent`` → tie, kept in
                    ``winner_raw``)
``conversation_*``  texts (``--texts-out``): the user message and each model's answer of the turn
``turn``            ``turn``
==================  ================================================================================

What is lost: the earlier turn of a turn-2 dialogue in the texts (the annotator saw it);
annotators' identities beyond their ids.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from nepotism.importers._common import (
    Format,
    Imported,
    conversation_texts,
    fail,
    is_missing,
    provenance,
    read_records,
    require,
    votes_import,
)
from nepotism.importers._fastchat import DEFAULT_BENCHMARK, instance_id, turn_of

__all__ = ["FORMATS", "import_mt_bench_human"]

_TIES = {"tie": "tie", "tie (bothbad)": "tie", "inconsistent": "tie", "tie (inconsistent)": "tie"}
_GPT4_PAIR = re.compile(r"^gpt-?4[_-]pair", re.IGNORECASE)


def _model_judge(value: Any) -> str | None:
    """The judge model of a model-judged row (list ``[model, prompt]`` or ``gpt4_pair``), else None."""
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], str):
        return value[0]
    if isinstance(value, str) and _GPT4_PAIR.match(value):
        return "gpt-4"
    return None


def import_mt_bench_human(path: str | Path, *, benchmark: str = DEFAULT_BENCHMARK, **_: Any) -> Imported:
    """Import MT-Bench human (and GPT-4 pair) judgments; see the module docstring for the mapping."""
    path = Path(path)
    refs, pairs, texts = [], [], []
    for line, record in read_records(path):
        question = require(record, "question_id", path, line)
        model_a, model_b = (str(require(record, k, path, line)).strip() for k in ("model_a", "model_b"))
        winner = str(require(record, "winner", path, line)).strip()
        if winner not in ("model_a", "model_b", *_TIES):
            raise fail(f"unknown winner {winner!r}: expected model_a, model_b or tie", path, line, "winner")
        judge = require(record, "judge", path, line)
        turn = turn_of(record, path, line)
        if model_a == model_b:
            model_a, model_b = f"{model_a}@a", f"{model_b}@b"
        instance = instance_id(benchmark, question, turn)
        common = {
            "instance_id": instance,
            "model_a": model_a,
            "model_b": model_b,
            "winner_raw": winner,
            "turn": turn,
            **provenance(path, line),
        }
        model = _model_judge(judge)
        if model is not None:
            verdict = {"model_a": "A", "model_b": "B"}.get(winner, "tie")
            pairs.append(
                {
                    **common,
                    "judge": model,
                    "verdict": verdict,
                    "condition": "orders-combined",
                    "replicate": 0,
                    "status": "parsed",
                    "reason": None,
                }
            )
        else:
            if not isinstance(judge, str) or is_missing(judge):
                raise fail("expected an annotator id", path, line, "judge")
            refs.append(
                {**common, "winner": {"model_a": model_a, "model_b": model_b}.get(winner, "tie"), "annotator": judge.strip()}
            )
        texts += conversation_texts(record, instance, (model_a, model_b), turn)
    counts = {
        "human_votes": len(refs),
        "annotators": len({r["annotator"] for r in refs}),
        "model_verdicts": len(pairs),
        "ties_bothbad": sum(r["winner_raw"] == "tie (bothbad)" for r in refs),
    }
    notes = [
        "one preference-ref row per human vote (column annotator); ties of every kind are winner 'tie', "
        "the upstream value is in winner_raw"
    ]
    if pairs:
        notes.append("GPT-4 rows carry one verdict per pair (upstream merged its two games): condition orders-combined")
    return votes_import(pairs, refs, texts, counts=counts, notes=notes, path=path)


FORMATS = (
    Format(
        name="mt-bench-human",
        summary="MT-Bench human judgments with annotator ids (question_id, model_a, model_b, winner, judge, turn)",
        read=import_mt_bench_human,
        tables=("preference-ref", "pairwise"),
        upstream="HF lmsys/mt_bench_human_judgments; lm-sys/FastChat fastchat/llm_judge/compute_agreement.py",
        options=("benchmark",),
    ),
)
