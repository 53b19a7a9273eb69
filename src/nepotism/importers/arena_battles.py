"""Import Chatbot-Arena-style battles (``model_a, model_b, winner``), voted by humans or by a judge model.

Upstream: lm-sys/FastChat ``fastchat/serve/monitor/clean_battle_data.py`` (the ``clean_battle_*.json``
files its ``elo_analysis.py`` reads: one JSON array) and the Hugging Face datasets built from them
(``lmsys/chatbot_arena_conversations``: Parquet/JSONL). Each battle: ``model_a``, ``model_b``,
``winner`` = ``model_a``, ``model_b``, ``tie`` or ``tie (bothbad)`` (from the left / right / tie /
both-bad vote buttons), ``judge`` (``arena_user_<id>`` for a human voter), optionally
``question_id`` (the conversation id), ``turn``, ``anony``, ``language``, ``tstamp``,
``conversation_a`` / ``conversation_b``.

==================  ================================================================================
field               becomes
==================  ================================================================================
``question_id``     ``instance_id`` = ``<benchmark>/<question_id>`` (benchmark ``arena`` unless
                    named); without one, ``<benchmark>/<file stem>-<line or record>``
``model_a/b``       ``model_a`` / ``model_b`` (A = the left answer); two answers of one model get
                    ``@a`` / ``@b``
``judge``           a name the model registry knows (or ``--judge``, which applies to every row) →
                    a pairwise judgment by that model; anything else (``arena_user_...``) → a human
                    vote: a preference-ref row with ``annotator`` = the id
``winner``          judged rows: ``verdict`` A / B / tie (an empty winner → unparsed,
                    ``no_verdict``); human rows: ``winner`` = the winning model or ``tie`` (an empty
                    winner is no vote: skipped and counted). ``winner_raw`` keeps the upstream value
                    (``tie (bothbad)`` stays distinguishable)
``turn``, ``anony``,  kept as columns of the same names
``language``
==================  ================================================================================

What is lost: conversation texts (except with ``--texts-out``: the first user message and each
answer's first reply); moderation tags and timestamps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nepotism.errors import InputError
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

__all__ = ["FORMATS", "import_arena_battles"]

_WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")


def import_arena_battles(path: str | Path, *, judge: str | None = None, benchmark: str = "arena", **_: Any) -> Imported:
    """Import one battles file; model-judged rows → pairwise, human votes → preference-ref."""
    from nepotism.models import default_registry

    path = Path(path)
    if judge is not None and not judge.strip():
        raise InputError("the judge name is blank", path=str(path), field="--judge")
    registry = default_registry()
    stem = path.name.split(".")[0]
    pairs, refs, texts = [], [], []
    missing_votes = 0
    for position, record in read_records(path):
        model_a, model_b = (str(require(record, k, path, position)).strip() for k in ("model_a", "model_b"))
        if model_a == model_b:
            model_a, model_b = f"{model_a}@a", f"{model_b}@b"
        winner = record.get("winner")
        if not is_missing(winner) and winner not in _WINNERS:
            raise fail(f"unknown winner {winner!r}: expected {', '.join(_WINNERS)}", path, position, "winner")
        vote: str | None = None if is_missing(winner) else winner  # one of _WINNERS
        question = record.get("question_id")
        instance = f"{benchmark}/{question}" if not is_missing(question) else f"{benchmark}/{stem}-{int(position)}"
        voter = record.get("judge")
        if voter is not None and not isinstance(voter, str):
            raise fail("expected a judge name or voter id", path, position, "judge")
        common = {
            "instance_id": instance,
            "model_a": model_a,
            "model_b": model_b,
            "winner_raw": vote,
            **{k: record.get(k) for k in ("turn", "anony", "language") if k in record},
            **provenance(path, position),
        }
        # the judge: --judge when given, else a voter the registry knows
        model_judge = (
            judge if judge is not None else (voter.strip() if voter is not None and registry.knows(voter.strip()) else None)
        )
        if model_judge is not None:
            verdict = None if vote is None else {"model_a": "A", "model_b": "B"}.get(vote, "tie")
            pairs.append(
                {
                    **common,
                    "judge": model_judge,
                    "verdict": verdict,
                    "condition": "default",
                    "replicate": 0,
                    "status": "parsed" if verdict else "unparsed",
                    "reason": None if verdict else "no_verdict",
                }
            )
        elif vote is None:
            missing_votes += 1
            continue
        else:
            refs.append(
                {
                    **common,
                    "winner": {"model_a": model_a, "model_b": model_b}.get(vote, "tie"),
                    "annotator": None if voter is None or is_missing(voter) else voter.strip(),
                }
            )
        texts += conversation_texts(record, instance, (model_a, model_b))
    raw = [r["winner_raw"] for r in pairs + refs]
    counts = {
        "battles": len(pairs) + len(refs),
        "judged_by_model": len(pairs),
        "human_votes": len(refs),
        "ties": sum(w in ("tie", "tie (bothbad)") for w in raw),
        "ties_bothbad": sum(w == "tie (bothbad)" for w in raw),
        "votes_missing": missing_votes,
    }
    notes = [
        "both tie buttons become a tie; winner_raw keeps 'tie (bothbad)' apart",
        "a battle is seen in one order only (A = left): position bias cannot be separated from preference",
    ]
    return votes_import(pairs, refs, texts, counts=counts, notes=notes, path=path)


FORMATS = (
    Format(
        name="arena-battles",
        summary="Chatbot Arena battles (model_a, model_b, winner incl. tie (bothbad), judge), human or model votes",
        read=import_arena_battles,
        tables=("pairwise", "preference-ref"),
        upstream="lm-sys/FastChat fastchat/serve/monitor/clean_battle_data.py; HF lmsys/chatbot_arena_conversations",
        options=("judge", "benchmark"),
    ),
)
