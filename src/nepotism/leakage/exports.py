"""Write a generator's synthetic data in the formats common trainers read.

* TRL: ``messages`` (conversational SFT: a user turn and an assistant turn), ``prompt-completion``
  (plain strings) and, for preference pairs, ``dpo`` (``prompt``, ``chosen``, ``rejected``), all
  JSON Lines.
* LLaMA-Factory: ``alpaca`` (``instruction``, ``input``, ``output``; preference pairs as
  ``chosen``/``rejected`` with ``ranking: true``) and ``sharegpt`` (``conversations`` of
  ``from``/``value`` turns; preference pairs with ``chosen``/``rejected`` turns), each as a JSON
  Lines file plus a ``dataset_info.json`` entry that names it, so ``--dataset NAME
  --dataset_dir DIR`` finds it.

Rows are `SyntheticExample` (an instruction and its answer) or `PreferencePair`. Every file is
written atomically. Not done here: multi-turn data, system prompts, tokenisation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nepotism._files import atomic_write

__all__ = ["FORMATS", "PreferencePair", "SyntheticExample", "export_dataset"]

FORMATS = ("trl-messages", "trl-prompt-completion", "trl-dpo", "llamafactory-alpaca", "llamafactory-sharegpt")


@dataclass(frozen=True)
class SyntheticExample:
    """One training example: the instruction and the answer a generator (or a human) wrote."""

    instance_id: str
    prompt: str
    response: str
    source: str


@dataclass(frozen=True)
class PreferencePair:
    """A DPO example: two answers to one prompt, ordered by a labeller's preference."""

    instance_id: str
    prompt: str
    chosen: str
    rejected: str
    labeller: str


def _rows(fmt: str, data: Sequence[SyntheticExample | PreferencePair]) -> list[dict[str, object]]:
    pairs = [d for d in data if isinstance(d, PreferencePair)]
    if pairs and len(pairs) != len(data):
        raise ValueError("a dataset is either all examples or all preference pairs")
    if fmt == "trl-dpo" and not pairs:
        raise ValueError("trl-dpo needs preference pairs")
    if fmt in ("trl-messages", "trl-prompt-completion") and pairs:
        raise ValueError(f"{fmt} is a supervised format; use trl-dpo for preference pairs")
    return [_pair_row(fmt, d) if isinstance(d, PreferencePair) else _example_row(fmt, d) for d in data]


def _example_row(fmt: str, d: SyntheticExample) -> dict[str, object]:
    if fmt == "trl-messages":
        return {"messages": [{"role": "user", "content": d.prompt}, {"role": "assistant", "content": d.response}]}
    if fmt == "trl-prompt-completion":
        return {"prompt": d.prompt, "completion": d.response}
    if fmt == "llamafactory-alpaca":
        return {"instruction": d.prompt, "input": "", "output": d.response}
    if fmt == "llamafactory-sharegpt":
        return {"conversations": [{"from": "human", "value": d.prompt}, {"from": "gpt", "value": d.response}]}
    raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")


def _pair_row(fmt: str, d: PreferencePair) -> dict[str, object]:
    if fmt == "trl-dpo":
        return {"prompt": d.prompt, "chosen": d.chosen, "rejected": d.rejected}
    if fmt == "llamafactory-alpaca":
        return {"instruction": d.prompt, "input": "", "chosen": d.chosen, "rejected": d.rejected}
    if fmt == "llamafactory-sharegpt":
        return {
            "conversations": [{"from": "human", "value": d.prompt}],
            "chosen": {"from": "gpt", "value": d.chosen},
            "rejected": {"from": "gpt", "value": d.rejected},
        }
    raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")


def _dataset_info(name: str, file_name: str, fmt: str, ranking: bool) -> dict[str, dict[str, object]]:
    entry: dict[str, object] = {"file_name": file_name}
    columns: dict[str, str]
    if fmt == "llamafactory-sharegpt":
        entry["formatting"] = "sharegpt"
        columns = {"messages": "conversations"}
        if ranking:
            columns.update({"chosen": "chosen", "rejected": "rejected"})
        entry["columns"] = columns
        entry["tags"] = {"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt"}
    else:
        entry["formatting"] = "alpaca"
        columns = {"prompt": "instruction", "query": "input"}
        columns.update({"chosen": "chosen", "rejected": "rejected"} if ranking else {"response": "output"})
        entry["columns"] = columns
    if ranking:
        entry["ranking"] = True
    return {name: entry}


def export_dataset(data: Sequence[SyntheticExample | PreferencePair], out_dir: str | Path, name: str, fmt: str) -> list[Path]:
    """Write ``data`` as ``<out_dir>/<name>.<fmt>.jsonl`` (and, for LLaMA-Factory formats, merge
    the entry into ``<out_dir>/dataset_info.json``). Returns the files written."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")
    if not data:
        raise ValueError("nothing to export")
    out_dir = Path(out_dir)
    rows = _rows(fmt, data)
    target = out_dir / f"{name}.{fmt}.jsonl"
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    written = [target]
    if fmt.startswith("llamafactory-"):
        info_path = out_dir / "dataset_info.json"
        info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.is_file() else {}
        info.update(_dataset_info(name, target.name, fmt, isinstance(data[0], PreferencePair)))
        body = json.dumps(info, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        atomic_write(info_path, lambda tmp: tmp.write_text(body, encoding="utf-8"))
        written.append(info_path)
    return written
