"""Making students from a generator's synthetic data: ICL prompts, data mixing, DPO pairs.

* `ICLSpec` is a `GenerationSpec` whose requests start with ``k`` demonstrations (user turn,
  assistant turn) drawn with a fixed seed from the student's training data, the same ones for
  every evaluation instruction (paper 000 §5.3 uses 4). The cache key covers the demonstrations,
  so two ICL students never share a call.
* `mix_examples` builds the training set of the data-mixing analysis (§5.1): a share ``ratio`` of
  the total from the generator's own data, the rest from another source (human-written answers of
  the pool, or other generators' data), on distinct instructions, total size fixed.
* `preference_pairs` turns a labeller's two-order pairwise verdicts on two sampled answers into
  DPO pairs (§5.3): a pair is kept only when both orders agree on a winner; ties, disagreements and
  unreadable verdicts are dropped and counted, never guessed.

Training on the data is in `nepotism.leakage.training`; this module calls no model.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nepotism.backends.base import Request
from nepotism.leakage.exports import PreferencePair, SyntheticExample
from nepotism.records import Instance, Judgment, Message
from nepotism.runner.engine import GenerationSpec

__all__ = ["ICLSpec", "completion_prompt", "data_digest", "icl_demonstrations", "mix_examples", "preference_pairs"]


def data_digest(examples: Sequence[SyntheticExample | PreferencePair]) -> str:
    """A short SHA-256 of a training set (what a student records as its data)."""
    payload = [e.__dict__ for e in examples]
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def icl_demonstrations(
    examples: Sequence[SyntheticExample], k: int, *, seed: int, max_chars: int | None = None
) -> tuple[Message, ...]:
    """``k`` examples chosen with ``seed`` (sorted by instance id first, so the choice does not
    depend on the order given), as alternating user/assistant messages; answers longer than
    ``max_chars`` are cut there (to fit small context windows)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    if len(examples) < k:
        raise ValueError(f"need {k} demonstrations, the data has {len(examples)}")
    pool = sorted(examples, key=lambda e: (e.instance_id, e.source))
    chosen = random.Random(seed).sample(pool, k)
    messages: list[Message] = []
    for e in chosen:
        answer = e.response if max_chars is None else e.response[:max_chars]
        messages += [Message("user", e.prompt), Message("assistant", answer)]
    return tuple(messages)


@dataclass(frozen=True)
class ICLSpec(GenerationSpec):
    """Generation through a base model with fixed in-context demonstrations before the prompt."""

    demonstrations: tuple[Message, ...] = ()
    #: ``"chat"``: demonstrations as chat turns (instruction-tuned bases); ``"completion"``: one raw
    #: few-shot prompt "Instruction: … / Response: …" ending in an open "Response:", cut at the
    #: next "Instruction:" (base models without a chat template, e.g. Gemma-3-270M).
    prompt_format: str = "chat"

    def request(self, instance: Instance) -> Request:
        if self.prompt_format == "completion":
            return Request(
                model=self.model,
                prompt=completion_prompt(self.demonstrations, instance),
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                seed=self.seed,
                extra={**self.extra, "stop": [_INSTRUCTION, "\n\n\n"]},
            )
        return Request(
            model=self.model,
            messages=self.demonstrations + tuple(instance.messages),
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            seed=self.seed,
            extra=self.extra,
        )


_INSTRUCTION = "Instruction:"
_RESPONSE = "Response:"


def completion_prompt(demonstrations: Sequence[Message], instance: Instance) -> str:
    """The raw few-shot prompt of a completion-format ICL student (no chat template needed):
    blocks "Instruction: …\\nResponse: …" separated by blank lines, ending in an open "Response:"."""
    query = "\n".join(m.content for m in instance.messages if m.role == "user")
    blocks = []
    for user, assistant in zip(demonstrations[0::2], demonstrations[1::2]):
        blocks.append(f"{_INSTRUCTION} {user.content.strip()}\n{_RESPONSE} {assistant.content.strip()}")
    blocks.append(f"{_INSTRUCTION} {query.strip()}\n{_RESPONSE}")
    return "\n\n".join(blocks)


def mix_examples(
    own: Sequence[SyntheticExample], other: Sequence[SyntheticExample], ratio: float, total: int, *, seed: int
) -> list[SyntheticExample]:
    """``round(ratio * total)`` of ``own`` plus the rest from ``other``, on distinct instructions.

    Raises `ValueError` when there are not enough examples (the total is kept fixed on purpose:
    a smaller set would confound the share of synthetic data with the amount of data).
    """
    if not 0.0 <= ratio <= 1.0:
        raise ValueError("ratio must be within [0, 1]")
    rng = random.Random(seed)
    n_own = int(round(ratio * total))
    own_sorted = sorted(own, key=lambda e: e.instance_id)
    rng.shuffle(own_sorted)
    if len(own_sorted) < n_own:
        raise ValueError(f"the mix needs {n_own} own examples, there are {len(own_sorted)}")
    picked = own_sorted[:n_own]
    used = {e.instance_id for e in picked}
    rest = sorted((e for e in other if e.instance_id not in used), key=lambda e: (e.instance_id, e.source))
    rng.shuffle(rest)
    chosen_other: list[SyntheticExample] = []
    for e in rest:
        if len(chosen_other) == total - n_own:
            break
        if e.instance_id in used:
            continue
        used.add(e.instance_id)
        chosen_other.append(e)
    if len(chosen_other) < total - n_own:
        raise ValueError(
            f"the mix needs {total - n_own} other-source examples on other instructions, there are {len(chosen_other)}"
        )
    return sorted(picked + chosen_other, key=lambda e: e.instance_id)


def preference_pairs(
    judgments: Sequence[Judgment], samples: Mapping[tuple[str, str], str], prompts: Mapping[str, str], labeller: str
) -> tuple[list[PreferencePair], dict[str, int]]:
    """DPO pairs from ``labeller``'s pairwise judgments of two sampled answers per instruction.

    ``samples`` maps (instance id, sample name) to the answer text, ``judgments`` are the
    labeller's pairwise judgments over the two sample names in both orders. Returns the pairs
    and the counts of dropped instructions by reason (``tie``, ``orders disagree``,
    ``unreadable``, ``one order missing``).
    """
    by_instance: dict[str, list[Judgment]] = {}
    for j in judgments:
        if j.judge == labeller and j.protocol == "pairwise":
            by_instance.setdefault(j.instance_id, []).append(j)
    pairs: list[PreferencePair] = []
    dropped: dict[str, int] = {}
    for instance_id in sorted(by_instance):
        winners: list[str | None] = []
        for j in by_instance[instance_id]:
            if j.status != "parsed" or j.verdict is None:
                winners.append(None)
            elif j.verdict == "tie":
                winners.append("tie")
            else:
                winners.append(j.candidates[0] if j.verdict == "A" else j.candidates[1])
        read = [w for w in winners if w is not None]
        reason = None
        if len(winners) < 2:
            reason = "one order missing"
        elif len(read) != len(winners):
            reason = "unreadable"
        elif "tie" in winners:
            reason = "tie"
        elif len(set(winners)) != 1:
            reason = "orders disagree"
        if reason:
            dropped[reason] = dropped.get(reason, 0) + 1
            continue
        names = sorted({c for j in by_instance[instance_id] for c in j.candidates})
        win = read[0]
        lose = next(n for n in names if n != win)
        pairs.append(
            PreferencePair(instance_id, prompts[instance_id], samples[(instance_id, win)], samples[(instance_id, lose)], labeller)
        )
    return pairs, dropped
