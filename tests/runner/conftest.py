"""Shared fixtures of the runner tests: a scripted backend and small judge tasks."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass

import pytest

from nepotism.backends.base import Completion, Request, failed
from nepotism.records import Judgment, Message
from nepotism.store import Store


class ScriptedBackend:
    """Answers from a script: ``faults[prompt]`` is a list of error classes returned, in turn,
    before the call succeeds (``"raise"`` raises instead). Counts calls per prompt."""

    name = "scripted"

    def __init__(self, faults=None, delay: float = 0.0) -> None:
        self.faults = {k: list(v) for k, v in (faults or {}).items()}
        self.delay = delay
        self.calls: Counter[str] = Counter()
        self.in_flight = 0
        self.peak = 0

    async def complete(self, request: Request) -> Completion:
        text = request.messages[-1].content
        self.calls[text] += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        script = self.faults.get(text)
        if script:
            fault = script.pop(0)
            if fault == "raise":
                raise RuntimeError("backend bug")
            return failed(fault)
        verdict = "A" if hash(text) % 2 == 0 else "B"
        return Completion(
            text=f"I pick [[{verdict}]]",
            usage={"prompt_tokens": 10, "completion_tokens": 3},
            raw={"id": "x"},
            finish_reason="stop",
        )

    async def aclose(self) -> None:
        pass


@dataclass(frozen=True)
class Task:
    instance: str
    judge: str
    a: str = "m1"
    b: str = "m2"
    replicate: int = 0


def render(task: Task, *, model: str) -> Request:
    return Request(model=model, messages=(Message("user", f"{task.instance}|{task.a}|{task.b}"),), max_tokens=8)


def interpret(task: Task, completion: Completion) -> list[Judgment]:
    base = dict(
        instance_id=task.instance, judge=task.judge, protocol="pairwise", candidates=(task.a, task.b), replicate=task.replicate
    )
    if not completion.ok:
        return [Judgment(status="failed", raw_output=completion.error, **base)]
    text = completion.text or ""
    for v in ("A", "B"):
        if f"[[{v}]]" in text:
            return [Judgment(status="parsed", verdict=v, raw_output=text, **base)]
    return [Judgment(status="unparsed", raw_output=text, **base)]


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "s.db") as s:
        yield s


class SmallDisk:
    """A tmpfs of a few megabytes mounted at ``path`` (a real file system: a full disk gives ENOSPC,
    a read-only one EROFS, as a user's would); `remount` changes its size or makes it read-only."""

    def __init__(self, path, size: str) -> None:
        import subprocess

        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", str(path)], capture_output=True, text=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (a kernel feature a container may lack): {done.stderr.strip()}")

    def remount(self, options: str) -> None:
        import subprocess

        subprocess.run(["mount", "-o", f"remount,{options}", str(self.path)], check=True)

    def unmount(self) -> None:
        import subprocess

        subprocess.run(["umount", "-l", str(self.path)], check=False)


@pytest.fixture
def small_disk(tmp_path):
    """``small_disk(size="4m")``: a `SmallDisk` under ``tmp_path``, unmounted after the test."""
    disks: list[SmallDisk] = []

    def mount(size: str = "4m", name: str = "disk") -> SmallDisk:
        disks.append(SmallDisk(tmp_path / name, size))
        return disks[-1]

    yield mount
    for disk in disks:
        disk.unmount()


def count_calls(db, where: str = "") -> int:
    """The calls in store ``db`` (``where``: an SQL condition on them), read without writing; 0
    before the file or its table exists (a run just started, or killed before)."""
    import sqlite3

    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute(f"SELECT COUNT(*) FROM calls{' WHERE ' + where if where else ''}").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0
