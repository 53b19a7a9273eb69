"""The stand-in server every journey runs against (`nepotism standin`, as a user starts it)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))


@pytest.fixture
def standin(tmp_path):
    """``nepotism standin --port 0`` in the background; yields its base URL, stops it with SIGTERM."""
    proc = subprocess.Popen(
        [NEPOTISM, "standin", "--port", "0", "--latency", "0.001"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), proc.stderr.read()
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0  # a clean stop, no traceback
        assert "Traceback" not in proc.stderr.read()
