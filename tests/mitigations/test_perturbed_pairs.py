"""Perturbed pairs for human labels (paper 003's quality check): planted pairs → annotate items → file → reader."""

from __future__ import annotations

from nepotism.annotate.pairs import load_pairs
from nepotism.mitigations.perturb import Pair, PairTexts
from nepotism.mitigations.perturbed_pairs import perturbed_pair_items, write_perturbed_pairs
from nepotism.records import Instance, Message, Response


def test_changed_texts_become_original_vs_perturbed_items(tmp_path):
    q1 = Instance("q1", (Message("user", "Why is the sky blue?"),), category="science")
    q2 = Instance("q2", "Name a prime.")
    a1, b1 = Response("q1", "judge-a", "Light scatters."), Response("q1", "other", "Rayleigh scattering.")
    a2, b2 = Response("q2", "judge-a", "Seven."), Response("q2", "other", "Eleven.")
    pairs = [Pair("judge-a", q1, a1, b1), Pair("judge-a", q2, a2, b2), Pair("judge-b", q1, b1, a1)]
    results = [
        PairTexts("Light disperses.", "Rayleigh scattering.", None),  # the opponent unchanged: one item
        PairTexts(None, None, "no synonym found"),  # failed: no item
        PairTexts("Rayleigh dispersion.", "Light scatters.", None),
    ]  # b1 now perturbed; a1 seen already
    items = perturbed_pair_items("syn", pairs, results)
    assert [(i.instance_id, i.model_a, i.model_b, i.text_a, i.text_b) for i in items] == [
        ("q1", "judge-a", "judge-a@syn", "Light scatters.", "Light disperses."),
        ("q1", "other", "other@syn", "Rayleigh scattering.", "Rayleigh dispersion."),
    ]
    assert items[0].category == "science" and items[0].metadata == {"perturbation": "syn", "judge": "judge-a"}
    assert write_perturbed_pairs(items, tmp_path / "pairs.jsonl") == 2
    back = load_pairs(tmp_path / "pairs.jsonl")
    assert [(i.model_a, i.model_b, i.text_b) for i in back] == [(i.model_a, i.model_b, i.text_b) for i in items]
    assert back[0].prompt == ({"role": "user", "content": "Why is the sky blue?"},)
