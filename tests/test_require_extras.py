"""NEPOTISM_REQUIRE_EXTRAS=1 (set by .ci/run) turns a skip for a missing extra into a failure, while
a skip for data beside the repository (../shared is not in a clone) stays a skip."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

PLANTED = """
import pytest

def test_missing_extra():
    pytest.skip("the `local` extra (llama-cpp-python + packaged models) is absent")

def test_missing_shared_data():
    pytest.skip("../shared/data/judgebench is absent")
"""


def _run(tmp_path, required: bool) -> str:
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_planted.py").write_text(PLANTED)
    env = {**os.environ, "NEPOTISM_REQUIRE_EXTRAS": "1" if required else "0"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout.strip().splitlines()[-1]


def test_required_extras_fail_and_shared_data_still_skips(tmp_path):
    assert "1 failed, 1 skipped" in _run(tmp_path, True)
    assert "2 skipped" in _run(tmp_path, False)
