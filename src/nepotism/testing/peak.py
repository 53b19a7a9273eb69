"""The peak resident memory of a command, as the kernel counts it — for tests and benchmarks that
bound what a command may take.

Why not ``os.wait4`` on the command itself: on Linux a process's peak (``ru_maxrss``) starts from
its parent's resident size at ``fork``, kept across ``exec``, so a command started by a pytest worker
that has loaded a 3 GB model reports 3 GB whatever it used. `run_measured` starts the command from a
small Python process instead and reads the peak of its only child. Linux and macOS (``resource``);
not Windows.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["run_measured"]

_MEASURE = (
    "import resource, subprocess, sys\n"
    "code = subprocess.call(sys.argv[2:])\n"
    "with open(sys.argv[1], 'w') as out:\n"
    "    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
    "sys.exit(code if code >= 0 else 128 - code)\n"
)


def run_measured(argv: Sequence[str], **options: Any) -> tuple[subprocess.CompletedProcess[Any], int]:
    """``subprocess.run(argv, **options)`` through a small parent, and the command's peak resident
    memory in bytes. A command killed by a signal N exits 128 + N here."""
    with tempfile.TemporaryDirectory() as folder:
        peak_file = Path(folder) / "peak"
        done = subprocess.run([sys.executable, "-c", _MEASURE, str(peak_file), *map(str, argv)], **options)
        text = peak_file.read_text() if peak_file.exists() else ""
    # ru_maxrss is in kilobytes on Linux, in bytes on macOS
    peak = int(text) * (1 if sys.platform == "darwin" else 1024) if text else 0
    return done, peak
