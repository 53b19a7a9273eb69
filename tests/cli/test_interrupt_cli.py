"""Ctrl-C in any command: exit status 130, one line on stderr, and under --json the one document
``{"status": "interrupted"}`` — a real SIGINT sent to the installed executable while it reads its input.

The input is a named pipe: the command blocks reading it, and the test sends SIGINT once the command
has opened it (a writer's non-blocking open succeeds only then), so the signal arrives mid-command
whatever the machine's speed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes (os.mkfifo) are POSIX-only")


def _interrupt(args: list[str], fifo: Path) -> subprocess.CompletedProcess:
    os.mkfifo(fifo)
    # SIGINT at its default in the command: a test run started in the background of a non-interactive
    # shell (`cmd &`) inherits SIGINT ignored, and Python then keeps ignoring it, as a shell expects
    proc = subprocess.Popen(
        [NEPOTISM, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    writer = None
    try:
        deadline = time.monotonic() + 120
        while writer is None:
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # succeeds once the command opened it
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the command never opened its input: {proc.communicate()}") from None
                time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if writer is not None:
            os.close(writer)
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize(
    "command",
    [
        ["metrics", "{fifo}", "--json"],
        ["report", "{fifo}", "--out", "{tmp}/report", "--json"],
        ["import", "{fifo}", "--format", "arena-battles", "--out", "{tmp}/out.csv"],
        ["card", "{tmp}/results.json", "--thresholds", "{fifo}"],
        ["plan", "--judges", "gpt-4", "--generators", "gpt-4,claude-2", "--pilot", "{fifo}", "--json"],
    ],
)
def test_ctrl_c_exits_130_in_every_command(tmp_path, command):
    fifo = tmp_path / "input.csv"
    (tmp_path / "results.json").write_text("[]")
    args = [part.format(fifo=fifo, tmp=tmp_path) for part in command]
    done = _interrupt(args, fifo)
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert done.stderr.strip() == "interrupted (SIGINT)" and "Aborted" not in done.stderr
    if "--json" in args:
        assert json.loads(done.stdout) == {"status": "interrupted", "signal": "SIGINT"}
    else:
        assert done.stdout == ""
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "report").exists()
