"""The perturbed texts as pairs for human labels (paper 003's human quality check).

Paper 003 has annotators compare each answer before and after a perturbation, blind and in random
order. `perturbed_pair_items` turns the texts a perturbation made into `nepotism annotate` pairs
(`nepotism.store.annotations.AnnotationItem`, written by `nepotism.annotate.pairs.write_pairs` and
read back by its `load_pairs`): one item per response whose text the perturbation changed, the
original as ``M`` and the perturbed version as ``M@<condition name>`` — the naming the human-study
test reads (`nepotism.mitigations.human_study.quality_test`), so `nepotism annotate` on this file,
then ``[mitigate] human_study`` on its label export, gives the binomial test without hand-made pairs.
A response perturbed in several pairs (a judge-paraphrased opponent) keeps the text of its first
pair, as the recognition questions do; failed perturbations and unchanged texts give no item.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from nepotism.mitigations.perturb import Pair, PairTexts
from nepotism.records import Instance
from nepotism.store.annotations import AnnotationItem

__all__ = ["perturbed_pair_items", "write_perturbed_pairs"]


def _prompt(instance: Instance) -> str | tuple[Mapping[str, str], ...]:
    prompt = instance.prompt
    return prompt if isinstance(prompt, str) else tuple({"role": m.role, "content": m.content} for m in prompt)


def perturbed_pair_items(name: str, pairs: Sequence[Pair], results: Sequence[PairTexts]) -> list[AnnotationItem]:
    """Items for condition ``name`` from the `Pair`s and their `PairTexts` (same order), in pair order."""
    seen: set[tuple[str, str]] = set()
    items = []
    for pair, result in zip(pairs, results):
        if result.own is None or result.opponent is None:  # not `PairTexts.ok`
            continue
        for original, text in ((pair.own, result.own), (pair.opponent, result.opponent)):
            key = (original.instance_id, original.generator)
            if key in seen or text == original.text:
                continue
            seen.add(key)
            items.append(
                AnnotationItem(
                    instance_id=original.instance_id,
                    model_a=original.generator,
                    model_b=f"{original.generator}@{name}",
                    prompt=_prompt(pair.instance),
                    text_a=original.text,
                    text_b=text,
                    category=pair.instance.category,
                    metadata={"perturbation": name, "judge": pair.judge},
                )
            )
    return items


def write_perturbed_pairs(items: Iterable[AnnotationItem], out: str | os.PathLike[str]) -> int:
    """Write the items as a pairs file (`nepotism annotate`'s input), atomically; return the count."""
    from nepotism.annotate.pairs import write_pairs

    return write_pairs(items, out)
