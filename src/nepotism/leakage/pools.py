"""Instruction pools of a leakage experiment and the check that keeps evaluation out of training.

A pool is a JSON Lines file, one instruction per line: ``id`` (or ``instance_id``), ``prompt`` (a
string) and, optionally, ``response`` — a human-written (or other-source) answer used by the
data-mixing analysis (paper 000 §5.1) — and ``category``. `check_disjoint` refuses an evaluation
pool that shares an instruction with the training pool, by exact text or after normalisation
(Unicode NFKC, case folding, punctuation dropped, whitespace collapsed), because a student that
saw an evaluation instruction during training is contaminated in the ordinary sense, which would
be confused with preference leakage. Not done here: near-duplicate (fuzzy) detection.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nepotism.errors import InputError
from nepotism.tables import read_rows
from nepotism.records import Instance

__all__ = ["PoolItem", "check_disjoint", "load_pool", "normalise_text"]

_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class PoolItem:
    """One instruction, with an optional other-source answer."""

    id: str
    prompt: str
    response: str | None = None
    category: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def instance(self) -> Instance:
        return Instance(self.id, self.prompt, category=self.category)


def normalise_text(text: str) -> str:
    """The form two instructions are compared in: NFKC, case-folded, no punctuation, one space."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE.sub(" ", _PUNCT.sub(" ", text)).strip()


def load_pool(path: str | Path, *, limit: int | None = None) -> list[PoolItem]:
    """Read a pool file (see the module docstring); ids must be unique, prompts non-empty."""
    path = Path(path)
    if not path.is_file():
        raise InputError("pool file not found", path=str(path))
    items: list[PoolItem] = []
    seen: set[str] = set()
    for number, row in read_rows(path):
        ident = row.get("id", row.get("instance_id"))
        if isinstance(ident, bool) or not isinstance(ident, (str, int)) or ident == "":
            raise InputError("each row needs an id", path=str(path), line=number, field="id")
        ident = str(ident)
        if ident in seen:
            raise InputError(f"id {ident!r} appears twice", path=str(path), line=number, field="id")
        prompt = row.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise InputError("each row needs a non-empty prompt string", path=str(path), line=number, field="prompt")
        response = row.get("response")
        if response is not None and (not isinstance(response, str) or not response.strip()):
            raise InputError("response must be a non-empty string when given", path=str(path), line=number, field="response")
        category = row.get("category")
        seen.add(ident)
        items.append(
            PoolItem(
                ident,
                prompt,
                response,
                category if isinstance(category, str) else None,
                meta if isinstance(meta := row.get("metadata"), dict) else {},
            )
        )
        if limit is not None and len(items) >= limit:
            break
    if not items:
        raise InputError("the pool holds no instruction", path=str(path))
    return items


def check_disjoint(
    train: list[PoolItem], evaluation: list[PoolItem], *, train_path: str = "<train pool>", eval_path: str = "<evaluation pool>"
) -> None:
    """Raise `InputError` when an evaluation instruction is also a training instruction.

    Compared exactly and after `normalise_text`; shared ids are refused too (the store keys
    instances by id, so a shared id would silently merge two instructions). The message names
    the first clash and how many there are.
    """
    by_text = {item.prompt: item.id for item in train}
    by_norm = {normalise_text(item.prompt): item.id for item in train}
    ids = {item.id for item in train}
    clashes: list[str] = []
    for item in evaluation:
        if item.prompt in by_text:
            clashes.append(f"{item.id!r} is training instruction {by_text[item.prompt]!r} (exact match)")
        elif (norm := normalise_text(item.prompt)) in by_norm and norm:
            clashes.append(f"{item.id!r} matches training instruction {by_norm[norm]!r} after normalisation")
        elif item.id in ids:
            clashes.append(f"{item.id!r} is also an id in the training pool")
    if clashes:
        more = f" (and {len(clashes) - 1} more)" if len(clashes) > 1 else ""
        raise InputError(
            f"evaluation instructions must be disjoint from the training pool: {clashes[0]}{more}; "
            f"remove them from one of the pools",
            path=eval_path,
            field=f"overlap with {train_path}",
        )
