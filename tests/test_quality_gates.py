"""Quality gates CI runs through the test command: ruff's lint and its formatter (`ruff format
--check`) with the committed configuration on every source, test, script and benchmark, and mypy
--strict on the typed core (the files listed under [tool.mypy] in pyproject.toml)."""

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
        timeout=1500,  # a hang guard: a cold run of the 170 files takes ~190 s alone, 2-3x that beside the suite
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_passes_with_the_committed_configuration():
    pytest.importorskip("ruff", reason="ruff (the test extra) is not installed: pip install -e '.[test]'")
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests", "scripts", "bench", "examples"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_leaves_every_file_as_it_is():
    """The layout is the formatter's (the one reformat commit is in .git-blame-ignore-revs): a file it
    would change fails here, naming the file; `ruff format src tests scripts bench examples` fixes it."""
    pytest.importorskip("ruff", reason="ruff (the test extra) is not installed: pip install -e '.[test]'")
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "src", "tests", "scripts", "bench", "examples"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
