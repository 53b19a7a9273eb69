"""Reading the pairs to annotate, and writing a pairs file.

Two ways to give the pairs (``PAIRS`` on the command line):

1. **A pairs file** (JSON Lines, what ``nepotism annotate sample`` writes): one object per pair
   with ``instance_id``, ``prompt``, ``model_a``, ``model_b``, ``text_a``, ``text_b`` and
   optionally ``category``; every other key is kept as the item's metadata. ``prompt`` is a
   string or a list of ``{"role", "content"}`` messages.
2. **A recorded pairwise judgments file** (any format `nepotism.tables` reads) **plus a texts
   file** (JSON Lines, one object per response: ``instance_id``, ``prompt``, ``model``, ``text``,
   optionally ``category``). Each distinct (instance, unordered model pair) in the judgments
   becomes one item, in order of first appearance, with the models in the order first judged.

Items keep file order; the annotation app decides the order shown on screen. This module reads,
checks and writes files; it samples nothing (see `nepotism.annotate.sampling`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nepotism.errors import InputError
from nepotism.tables import read_rows
from nepotism.store.annotations import AnnotationItem
from nepotism.store.export import atomic_write

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PAIR_FIELDS",
    "TEXT_FIELDS",
    "items_from_judgments",
    "load_pairs",
    "read_pairs_file",
    "read_texts",
    "write_pairs",
]

PAIR_FIELDS = ("instance_id", "prompt", "model_a", "model_b", "text_a", "text_b")
TEXT_FIELDS = ("instance_id", "prompt", "model", "text")
_KNOWN = (*PAIR_FIELDS, "category")

# a prompt as AnnotationItem holds it: a string, or {role, content} messages
_Prompt = str | tuple[Mapping[str, str], ...]


def _json_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise InputError("no such file", path=str(path))
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    if not suffixes or suffixes[-1] not in (".jsonl", ".ndjson"):
        raise InputError("expected a JSON Lines file (.jsonl, optionally .gz)", path=str(path))
    return read_rows(path)


def _text(record: Mapping[str, Any], key: str, path: Path, line: int, *, allow_empty: bool = False) -> str:
    value = record.get(key)
    if value is None or isinstance(value, (dict, list, bool)):
        raise InputError("missing or not a string", path=str(path), line=line, field=key)
    value = str(value)
    if not allow_empty and not value.strip():
        raise InputError("empty value where one is required", path=str(path), line=line, field=key)
    return value if key.startswith("text") or key == "prompt" else value.strip()


def _prompt(record: Mapping[str, Any], path: Path, line: int) -> _Prompt:
    value = record.get("prompt")
    if isinstance(value, list):
        messages = []
        for message in value:
            if not (
                isinstance(message, dict) and isinstance(message.get("role"), str) and isinstance(message.get("content"), str)
            ):
                raise InputError(
                    "a prompt list must hold {role, content} objects of strings", path=str(path), line=line, field="prompt"
                )
            messages.append({"role": message["role"], "content": message["content"]})
        if not messages:
            raise InputError("empty prompt", path=str(path), line=line, field="prompt")
        return tuple(messages)
    return _text(record, "prompt", path, line)


def _category(record: Mapping[str, Any]) -> str | None:
    value = record.get("category")
    return None if value is None or str(value).strip() == "" else str(value)


def read_pairs_file(path: str | os.PathLike[str]) -> list[AnnotationItem]:
    """Read a pairs file (format 1 in the module docstring)."""
    path = Path(path)
    items: list[AnnotationItem] = []
    seen: dict[str, int] = {}
    for line, record in _json_lines(path):
        if "judge" in record and "text_a" not in record:
            raise InputError("this looks like a judgments file: give its texts with --texts", path=str(path), line=line)
        item = AnnotationItem(
            instance_id=_text(record, "instance_id", path, line),
            model_a=_text(record, "model_a", path, line),
            model_b=_text(record, "model_b", path, line),
            prompt=_prompt(record, path, line),
            text_a=_text(record, "text_a", path, line, allow_empty=True),
            text_b=_text(record, "text_b", path, line, allow_empty=True),
            category=_category(record),
            metadata={k: v for k, v in record.items() if k not in _KNOWN},
        )
        if item.model_a == item.model_b:
            raise InputError("model_a and model_b are the same model", path=str(path), line=line, field="model_b")
        key = _pair_key(item.instance_id, item.model_a, item.model_b)
        if key in seen:
            raise InputError(f"the same pair as line {seen[key]}", path=str(path), line=line, field="instance_id")
        seen[key] = line
        items.append(item)
    if not items:
        raise InputError("the pairs file holds no pairs", path=str(path))
    return items


def _pair_key(instance_id: str, a: str, b: str) -> str:
    return json.dumps([instance_id, *sorted((a, b))])


def read_texts(path: str | os.PathLike[str]) -> dict[tuple[str, str], tuple[_Prompt, str, str | None]]:
    """Read a texts file: ``(instance_id, model) -> (prompt, text, category)``."""
    path = Path(path)
    texts: dict[tuple[str, str], tuple[_Prompt, str, str | None]] = {}
    prompts: dict[str, tuple[_Prompt, int]] = {}
    for line, record in _json_lines(path):
        instance_id = _text(record, "instance_id", path, line)
        model = _text(record, "model", path, line)
        prompt = _prompt(record, path, line)
        if (instance_id, model) in texts:
            raise InputError(f"a second text for model {model!r} on this instance", path=str(path), line=line, field="model")
        if instance_id in prompts and prompts[instance_id][0] != prompt:
            raise InputError(
                f"the prompt differs from the one on line {prompts[instance_id][1]}", path=str(path), line=line, field="prompt"
            )
        prompts.setdefault(instance_id, (prompt, line))
        texts[(instance_id, model)] = (prompt, _text(record, "text", path, line, allow_empty=True), _category(record))
    if not texts:
        raise InputError("the texts file holds no texts", path=str(path))
    return texts


def items_from_judgments(
    frame: pd.DataFrame,
    texts: Mapping[tuple[str, str], tuple[_Prompt, str, str | None]],
    *,
    judgments_path: str = "",
    texts_path: str = "",
) -> list[AnnotationItem]:
    """One item per distinct (instance, unordered pair) of a validated pairwise judgments frame."""
    items: list[AnnotationItem] = []
    seen: set[str] = set()
    for instance_id, model_a, model_b, line in zip(
        frame["instance_id"], frame["model_a"], frame["model_b"], frame["_line"], strict=True
    ):
        key = _pair_key(instance_id, model_a, model_b)
        if key in seen:
            continue
        seen.add(key)
        if model_a == model_b:
            raise InputError("model_a and model_b are the same model", path=judgments_path, line=int(line), field="model_b")
        found = []
        for model in (model_a, model_b):
            if (instance_id, model) not in texts:
                raise InputError(
                    f"no text for model {model!r} on instance {instance_id!r} in {texts_path}",
                    path=judgments_path,
                    line=int(line),
                    field="model_a" if model == model_a else "model_b",
                )
            found.append(texts[(instance_id, model)])
        (prompt, text_a, category), (_, text_b, _) = found
        items.append(AnnotationItem(instance_id, model_a, model_b, prompt, text_a, text_b, category))
    if not items:
        raise InputError("the judgments file holds no pairs", path=judgments_path)
    return items


def load_pairs(path: str | os.PathLike[str], texts: str | os.PathLike[str] | None = None) -> list[AnnotationItem]:
    """The items of ``PAIRS``: a pairs file, or a pairwise judgments file plus ``texts``."""
    if texts is None:
        return read_pairs_file(path)
    from nepotism.tables import read_table

    table = read_table(path, kind="pairwise")
    return items_from_judgments(table.frame, read_texts(texts), judgments_path=str(path), texts_path=str(texts))


def _record(item: AnnotationItem) -> dict[str, Any]:
    record: dict[str, Any] = {
        "instance_id": item.instance_id,
        "prompt": item.prompt if isinstance(item.prompt, str) else [dict(m) for m in item.prompt],
        "model_a": item.model_a,
        "model_b": item.model_b,
        "text_a": item.text_a,
        "text_b": item.text_b,
    }
    if item.category is not None:
        record["category"] = item.category
    for key, value in item.metadata.items():
        if key not in record:
            record[key] = value
    return record


def write_pairs(items: Iterable[AnnotationItem], out: str | os.PathLike[str]) -> int:
    """Write ``items`` as a pairs file (JSON Lines), atomically; return the count."""
    out = Path(out)
    records = [_record(item) for item in items]

    def write(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")

    atomic_write(out, write)
    return len(records)
