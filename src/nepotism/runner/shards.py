"""Splitting an experiment's plan into shards that run as separate processes.

A `Shard` ``k/N`` holds the instances whose stable hash lands on ``k`` (0 ≤ k < N): the first
eight bytes of SHA-256 of the instance id, as an unsigned big-endian integer, modulo ``N``. The
split is by *instance*, so every generator's response to an item, both presentation orders of
every pair and every judge of that item are planned in the same shard; nothing a metric pairs up
is split across shards. The hash depends only on the id, never on the file order, the process or
Python's hash seed, so every machine computes the same split. ``k`` counts from 0 like a Slurm
``$SLURM_ARRAY_TASK_ID`` of ``--array=0-(N-1)`` or a Kubernetes indexed Job's
``$JOB_COMPLETION_INDEX``.

Each shard writes its own store (`shard_store_path`: ``--store``, else the experiment's store
with ``.shard-K-of-N`` before the suffix) and its own output folder (`shard_output_dir`), and
``nepotism store merge`` (`nepotism.store.merge`) joins the stores afterwards. Left out: any
scheduling — running the shards is the job of an existing scheduler (docs/scale.md).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from nepotism.errors import InputError

__all__ = ["Shard", "shard_output_dir", "shard_store_path"]

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
            raise InputError(f"--shard {text}: K counts from 0 and must be below N (0/{max(count, 1)} to "
                             f"{max(count, 1) - 1}/{max(count, 1)})", field="--shard")
        return cls(index, count)

    def holds(self, instance_id: str) -> bool:
        """Whether the instance ``instance_id`` belongs to this shard."""
        return shard_of(instance_id, self.count) == self.index

    @property
    def label(self) -> str:
        """``shard-K-of-N``, the part of a file or folder name that says which shard wrote it."""
        return f"shard-{self.index}-of-{self.count}"


def shard_of(instance_id: str, count: int) -> int:
    """The shard (0 to ``count - 1``) that instance ``instance_id`` lands on."""
    digest = hashlib.sha256(str(instance_id).encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % count


def shard_store_path(path: Path, shard: Shard) -> Path:
    """The default store of ``shard`` next to ``path``: ``runs/audit.db`` → ``runs/audit.shard-3-of-8.db``."""
    path = Path(path)
    suffix = path.suffix or ".db"
    return path.with_name(f"{path.name[: len(path.name) - len(path.suffix)]}.{shard.label}{suffix}")


def shard_output_dir(output_dir: str | None, shard: Shard) -> str | None:
    """The output folder of ``shard``: a ``shard-K-of-N`` folder inside the experiment's own."""
    return None if output_dir is None else str(Path(output_dir) / shard.label)
