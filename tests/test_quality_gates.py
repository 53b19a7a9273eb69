"""Quality gates CI runs through the test command: ruff with the committed configuration on every
source, test, script and benchmark, and mypy --strict on the typed core (the files listed under
[tool.mypy] in pyproject.toml)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_typed_core_passes_mypy_strict():
    pytest.importorskip("mypy", reason="mypy (the test extra) is not installed: pip install -e '.[test]'")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_passes_with_the_committed_configuration():
    pytest.importorskip("ruff", reason="ruff (the test extra) is not installed: pip install -e '.[test]'")
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests", "scripts", "bench"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
