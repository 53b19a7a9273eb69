"""Import the MBPP self-preference file of paper 004 (Llama-3.3-70B judging its own code vs GPT-4o's).

File ``<judge>_<other>_eval.jsonl``, one problem per line: ``unique_id``, ``problem`` (task text
ending with the ``assert`` tests), ``assistent_1_answer`` (the judge's own solution),
``assistent_2_answer`` (the other model's), ``assistent_{1,2}_is_correct`` (execution result),
and two judging games ``game_{1,2}_output`` (the judge's one-token reply) with
``game_{1,2}_spb_score`` (three probabilities).

What the fields mean, and the evidence:

* Label order of ``*_spb_score``: ``[A, T, B]`` = first shown better, tie, second shown better.
  Paper 004 (appendix, verdict generation) has the judge emit one token among "A", "T", "B" and
  keeps the probabilities of these three candidates. In the data every reply "A" has its largest
  probability at index 0, every "T" at index 1 and every "B" at index 2 (all 378 rows, both games).
* Order of presentation: game_1 shows assistant 1 (the judge's own answer) first, game_2 swaps
  (assistant 2 first). Paper 004 (section 2) evaluates each prompt twice as j1 = J(x, y_A, y_B) and
  j2 = J(x, y_B, y_A). The data agree: the mean log-odds log P(A)/P(B) is +0.89 in game_1 but -0.30
  in game_2 (a pure position bias would give the same sign in both; a judge leaning to its own answer
  with swapped order gives opposite signs), and the rank correlation of the two games' log-odds is
  negative (Spearman -0.13, p = 0.01), as expected when the same answer changes side.

Output: pairwise rows (two per problem, one per game, ``game`` column kept), the judge's reply
kept as ``reply``, probabilities into prob_a / prob_tie / prob_b of the *shown* order, and the
verdict from one of two sources (``verdicts=``):

* ``"probabilities"`` (default, paper 004's protocol): the label with the largest of the three
  recorded probabilities. Paper 004's implementation details (verdict generation) read the verdict
  as the candidate token among "A", "T", "B" with the highest logit, so every game with a score has
  a verdict. Two labels can hold exactly the same top probability (9 of the 756 games in the
  Llama-3.3-70B file: A and T in seven, A and B in two); the argmax then takes the first of them in
  the recorded order [A, T, B], as an argmax over that list does. That is what reproduces the
  paper's numbers on this file (SPR 57/378 = 15.1%, LSPR 4/13; leaving the nine games unparsed
  gave 55/369 and 4/12); they are counted as ``top_probability_ties``. A game without scores stays
  unparsed (``no_label_logprobs``). Where the reply is parseable the two sources agree in every row
  of the file (checked on import and counted as ``reply_disagrees``).
* ``"reply"``: the reply when it is exactly A, B or T, else unparsed with reason ``no_verdict``
  (code-fence replies such as a lone backtick run are common: 226 of 756 in the Llama-3.3-70B file;
  their label probabilities are still kept) or ``empty_reply``. A variant: the reply is what the
  judge wrote with one token of budget, not the verdict the paper reads.

Also written: correctness-ref
rows (instance, model, correct); texts (problem, tests, both answers) for re-running the tests.
Left out: the restyled answers (``assistent_1_answer_restyle*``) present on a few rows.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from nepotism.errors import InputError
from nepotism.importers._common import Format, Imported, is_missing, provenance, read_jsonl, require

__all__ = ["FORMATS", "VERDICT_SOURCES", "import_mbpp_selfpref", "split_tests"]

_NAME = re.compile(r"^(?P<judge>.+?)_(?P<other>[^_]+)_eval\.jsonl(\.gz)?$")
_LABELS = {"A": "A", "B": "B", "T": "tie"}
_TESTS_HEADER = "Your code should satisfy these tests:"


def split_tests(problem: str) -> list[str]:
    """The ``assert`` lines that follow the tests header of an MBPP prompt (empty when absent)."""
    if _TESTS_HEADER not in problem:
        return []
    tail = problem.split(_TESTS_HEADER, 1)[1]
    return [line.strip() for line in tail.splitlines() if line.strip().startswith("assert")]


def _probs(value: Any, path: Path, line: int, field: str) -> tuple[float, float, float]:
    if value is None:
        return (math.nan, math.nan, math.nan)
    if not isinstance(value, list) or len(value) != 3:
        raise InputError("expected a list of three probabilities [A, T, B]", path=str(path), line=line, field=field)
    out = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (int, float)) or math.isnan(item) or not -1e-6 <= item <= 1 + 1e-6:
            raise InputError(f"'{item}' is not a probability", path=str(path), line=line, field=field)
        out.append(min(max(float(item), 0.0), 1.0))
    return out[0], out[1], out[2]


def _verdict(output: Any) -> str | None:
    if is_missing(output):
        return None
    return _LABELS.get(str(output).strip())


def _argmax(p_a: float, p_tie: float, p_b: float) -> tuple[str | None, bool]:
    """The most probable of A, tie, B — on an exact tie for the top, the first in the recorded order
    [A, T, B] (the module docstring says why) — and whether such a tie was broken; (None, False)
    without scores."""
    probs = {"A": p_a, "tie": p_tie, "B": p_b}
    if any(math.isnan(v) for v in probs.values()):
        return None, False
    top = max(probs.values())
    best = [label for label, value in probs.items() if value == top]
    return best[0], len(best) > 1


def _names(path: Path, judge: str | None, other: str | None) -> tuple[str, str]:
    match = _NAME.match(path.name)
    if judge is None or other is None:
        if match is None:
            raise InputError(
                "cannot tell the two models from the file name (expected <judge>_<other>_eval.jsonl)",
                path=str(path),
            )
        judge = judge or match["judge"]
        other = other or match["other"]
    if judge == other:
        raise InputError("the judge's model and the other model have the same name", path=str(path))
    return judge, other


VERDICT_SOURCES = ("reply", "probabilities")


def import_mbpp_selfpref(
    path: str | Path, *, judge: str | None = None, other: str | None = None, verdicts: str = "probabilities", **_: Any
) -> Imported:
    """Import one ``<judge>_<other>_eval.jsonl`` file (assistant 1 = the judge's own answers).

    ``verdicts`` is ``"probabilities"`` (argmax of the recorded [A, T, B] probabilities, paper 004's
    reading, default) or ``"reply"`` (the judge's token); see the module docstring.
    """
    if verdicts not in VERDICT_SOURCES:
        raise InputError(f"verdicts must be one of {', '.join(VERDICT_SOURCES)}, not {verdicts!r}", field="--verdicts")
    path = Path(path)
    disagree = ties = 0
    own, rival = _names(path, judge, other)
    pairs, refs, texts = [], [], []
    seen: dict[str, int] = {}
    for line, record in read_jsonl(path):
        uid = str(require(record, "unique_id", path, line))
        if uid in seen:
            raise InputError(f"unique_id repeats line {seen[uid]}", path=str(path), line=line, field="unique_id")
        seen[uid] = line
        instance = f"mbpp/{uid}"
        problem = require(record, "problem", path, line)
        answers = {
            own: require(record, "assistent_1_answer", path, line),
            rival: require(record, "assistent_2_answer", path, line),
        }
        for model, key in ((own, "assistent_1_is_correct"), (rival, "assistent_2_is_correct")):
            correct = require(record, key, path, line, allow_missing=True)
            if correct is not None and not isinstance(correct, bool):
                raise InputError(f"'{correct}' is not true/false", path=str(path), line=line, field=key)
            if correct is not None:
                refs.append({"instance_id": instance, "model": model, "correct": correct, **provenance(path, line)})
        tests = split_tests(problem)
        for model in (own, rival):
            texts.append({"instance_id": instance, "prompt": problem, "tests": tests, "model": model, "text": answers[model]})
        for game, (first, second) in ((1, (own, rival)), (2, (rival, own))):
            output = require(record, f"game_{game}_output", path, line, allow_missing=True)
            p_a, p_tie, p_b = _probs(
                require(record, f"game_{game}_spb_score", path, line, allow_missing=True), path, line, f"game_{game}_spb_score"
            )
            replied, (likeliest, tied) = _verdict(output), _argmax(p_a, p_tie, p_b)
            disagree += replied is not None and likeliest is not None and replied != likeliest
            ties += tied and verdicts == "probabilities"
            verdict = replied if verdicts == "reply" else likeliest
            if verdict is not None:
                reason = None
            elif verdicts == "probabilities":
                reason = "no_label_logprobs"
            else:
                reason = "empty_reply" if is_missing(output) or not str(output).strip() else "no_verdict"
            pairs.append(
                {
                    "instance_id": instance,
                    "judge": own,
                    "model_a": first,
                    "model_b": second,
                    "verdict": verdict,
                    "status": "parsed" if verdict is not None else "unparsed",
                    "reason": reason,
                    "reply": None if is_missing(output) else str(output),
                    "prob_a": p_a,
                    "prob_b": p_b,
                    "prob_tie": p_tie,
                    "condition": "default",
                    "replicate": 0,
                    "category": "mbpp",
                    "game": game,
                    **provenance(path, line),
                }
            )
    if not pairs:
        raise InputError("no records in the file", path=str(path))
    pairwise = pd.DataFrame(pairs)
    counts = {
        "problems": len(seen),
        "judgments": len(pairwise),
        "unparsed": int(pairwise["verdict"].isna().sum()),
        "reply_disagrees": int(disagree),
        "top_probability_ties": int(ties),
    }
    notes = [
        "each problem is judged in both orders: game 1 shows the judge's own answer first, game 2 swaps",
        f"verdicts from the judge's {'reply' if verdicts == 'reply' else 'recorded label probabilities (argmax)'}",
    ]
    if ties:
        notes.append(f"{ties} games with two labels tied for the top probability take the first of them in [A, T, B]")
    return Imported(
        tables={"pairwise": pairwise, "correctness-ref": pd.DataFrame(refs)},
        main="pairwise",
        texts=pd.DataFrame(texts),
        counts=counts,
        notes=notes,
        source=str(path),
    )


FORMATS = (
    Format(
        name="mbpp-selfpref",
        summary="paper 004's MBPP self-preference file <judge>_<other>_eval.jsonl (both games, correctness)",
        read=import_mbpp_selfpref,
        tables=("pairwise", "correctness-ref"),
        upstream="Taslim-M/mitigating_self_preference task_mbpp/data/*_eval.jsonl",
        options=("judge", "verdicts"),
    ),
)
