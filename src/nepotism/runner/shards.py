"""Splitting an experiment's plan into shards that run as separate processes.

A `Shard` ``k/N`` holds the instances whose stable hash lands on ``k`` (0 ≤ k < N): the first
eight bytes of SHA-256 of the instance's request (`shard_key`: its messages, roles and texts, as
compact JSON), as an unsigned big-endian integer, modulo ``N``. The split is by *instance*, so
every generator's response to an item, both presentation orders of every pair and every judge of
that item are planned in the same shard; nothing a metric pairs up is split across shards. It
hashes the request rather than the id so that instances sharing a prompt, which share their
generation call and then their judge calls (one cache key each), land in one shard: split, two
shards would each send the same request, a server that samples (any real one) would answer them
differently, and `nepotism store merge` would refuse the two answers under one key. The hash
depends only on the request, never on the id, the file order, the process or Python's hash seed,
so every machine computes the same split. ``k`` counts from 0 like a Slurm
``$SLURM_ARRAY_TASK_ID`` of ``--array=0-(N-1)`` or a Kubernetes indexed Job's
``$JOB_COMPLETION_INDEX``.

Each shard writes its own store (`shard_store_path`: ``--store``, else the experiment's store
with ``.shard-K-of-N`` before the suffix) and its own output folder (`shard_output_dir`), and
``nepotism store merge`` (`nepotism.store.merge`) joins the stores afterwards. Left out: any
scheduling — running the shards is the job of an existing scheduler (docs/scale.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from nepotism.errors import InputError
from nepotism.records import Instance

__all__ = ["Shard", "shard_key", "shard_of", "shard_output_dir", "shard_store_path"]

_SPEC = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (``0 <= index < count``)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if type(self.count) is not int or self.count < 1:
            raise ValueError(f"a shard count is a positive integer, not {self.count!r}")
        if type(self.index) is not int or not 0 <= self.index < self.count:
            raise ValueError(f"a shard index is an integer from 0 to {self.count - 1}, not {self.index!r}")

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"K/N"`` → ``Shard(K, N)``; a bad spelling is an `InputError` naming ``--shard``."""
        match = _SPEC.fullmatch(text or "")
        if match is None:
            raise InputError(f"--shard takes K/N (e.g. 0/8), not {text!r}", field="--shard")
        index, count = int(match[1]), int(match[2])
        if count < 1 or index >= count:
            raise InputError(
                f"--shard {text}: K counts from 0 and must be below N (0/{max(count, 1)} to {max(count, 1) - 1}/{max(count, 1)})",
                field="--shard",
            )
        return cls(index, count)

    def holds(self, key: str) -> bool:
        """Whether the instance whose `shard_key` is ``key`` belongs to this shard."""
        return shard_of(key, self.count) == self.index

    @property
    def label(self) -> str:
        """``shard-K-of-N``, the part of a file or folder name that says which shard wrote it."""
        return f"shard-{self.index}-of-{self.count}"


def shard_key(instance: Instance) -> str:
    """What a shard hashes of ``instance``: its request's messages (role and text) as compact JSON,
    the same for every instance that shares a prompt."""
    return json.dumps([[m.role, m.content] for m in instance.messages], ensure_ascii=False, separators=(",", ":"))


def shard_of(key: str, count: int) -> int:
    """The shard (0 to ``count - 1``) that the instance whose `shard_key` is ``key`` lands on."""
    digest = hashlib.sha256(str(key).encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % count


def shard_store_path(path: Path, shard: Shard) -> Path:
    """The default store of ``shard`` next to ``path``: ``runs/audit.db`` → ``runs/audit.shard-3-of-8.db``."""
    path = Path(path)
    suffix = path.suffix or ".db"
    return path.with_name(f"{path.name[: len(path.name) - len(path.suffix)]}.{shard.label}{suffix}")


def shard_output_dir(output_dir: str | None, shard: Shard) -> str | None:
    """The output folder of ``shard``: a ``shard-K-of-N`` folder inside the experiment's own."""
    return None if output_dir is None else str(Path(output_dir) / shard.label)
