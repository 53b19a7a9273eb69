"""Recorded judge replies read by our parser, compared with the decision the source's own code made.

JudgeBench (ScalerLab/JudgeBench ``utils/judges.py``, ``ArenaHard.get_judgment``) reads an
arena-hard reply by collecting every ``[[...]]`` label: one distinct label is the decision (``>>``
folded into ``>``), several distinct ones give none. Our reader must agree wherever both read a
verdict, and reads more: a verdict line in quotation marks (o1-mini echoes the prompt's example
``"My final verdict is ...: [[B>A]]"``), and ``[[A>B]]`` with ``[[A>>B]]`` (the same side).
MBPP self-preference replies (paper 004) are one token, ``A``/``B``/``T``, or a lone code fence.
"""

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from nepotism.backends.base import Completion
from nepotism.judging import JudgeTask, interpret
from nepotism.records import Instance, Response

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
_DECISION = {"A>B": "A", "B>A": "B", "A=B": "tie"}


def _task(instance_id, question, first, second, options):
    inst = Instance(instance_id, question)
    return JudgeTask(
        "pairwise", "judge", inst, (Response(inst.id, "x", first or ""), Response(inst.id, "y", second or "")), options=options
    )


def _judgebench(judge_model):
    paths = list((DATA / "judgebench").glob(f"*judge_name=arena_hard,judge_model={judge_model}.jsonl.gz"))
    if not paths:
        pytest.skip("JudgeBench outputs not found beside the repository")
    rows = []
    with gzip.open(paths[0], "rt", encoding="utf-8") as handle:
        for line in handle:
            pair = json.loads(line)
            for game, judged in enumerate(pair["judgments"]):
                if judged is None:
                    continue
                shown = (pair["response_A"], pair["response_B"])[:: 1 if game == 0 else -1]
                task = _task(pair["pair_id"], pair["question"], *shown, {"reasoning": "cot"})
                rows.append((interpret(task, Completion(text=judged["judgment"]["response"])), _DECISION.get(judged["decision"])))
    return rows


@pytest.mark.parametrize(
    "judge_model, replies, parsed, reasons",
    [
        ("claude-3-haiku-20240307", 540, 529, {"conflicting": 11}),
        ("o1-mini-2024-09-12", 700, 700, {}),
    ],
)
def test_judgebench_replies_agree_with_judgebench_decisions(judge_model, replies, parsed, reasons):
    rows = _judgebench(judge_model)
    assert len(rows) == replies
    assert sum(j.status == "parsed" for j, _ in rows) == parsed
    assert Counter(j.reason for j, _ in rows if j.status != "parsed") == Counter(reasons)
    # wherever both read a verdict they agree; every decision JudgeBench made, we make too
    assert all(j.verdict == decision for j, decision in rows if decision is not None)
    # what only we read: two replies with [[A>B]] and [[A>>B]] (distinct labels to JudgeBench)
    extra = [j for j, decision in rows if decision is None and j.status == "parsed"]
    assert len(extra) == {"claude-3-haiku-20240307": 2, "o1-mini-2024-09-12": 0}[judge_model]
    assert all(">>" in j.raw_output and "[[" in j.raw_output for j in extra)
    # conflicting replies are the ones JudgeBench also gave no decision
    assert all(decision is None for j, decision in rows if j.reason == "conflicting")


def test_mbpp_one_token_replies():
    path = DATA / "mbpp_selfpref" / "llama-3.3-70b_gpt-4o_eval.jsonl"
    if not path.exists():
        pytest.skip("MBPP self-preference file not found beside the repository")
    seen = Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for game in (1, 2):
            shown = (row["assistent_1_answer"], row["assistent_2_answer"])[:: 1 if game == 1 else -1]
            reply = row[f"game_{game}_output"]
            j = interpret(_task(str(row["unique_id"]), row["problem"], *shown, {}), Completion(text=reply))
            expected = {"A": "A", "B": "B", "T": "tie"}.get(reply.strip())
            assert j.verdict == expected, reply
            seen[j.reason or j.verdict] += 1
    # the candidates are Python code full of capital letters: a whole reply that is one value is
    # still read (it quotes nothing); the lone code fences stay unparsed with their reason
    assert seen == Counter({"A": seen["A"], "B": seen["B"], "tie": seen["tie"], "no_verdict": 226})
    assert seen["A"] + seen["B"] + seen["tie"] == 530
