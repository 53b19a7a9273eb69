"""A command that needs a missing extra stops before any work: one line, the install command, exit 2."""

import importlib.util

import pytest
from click.testing import CliRunner

from nepotism import extras
from nepotism.cli import main


def _hide(monkeypatch, *modules):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in modules else real(name, *a))


def test_require_names_the_extra_and_the_install_command(monkeypatch):
    _hide(monkeypatch, "llama_cpp")
    assert extras.missing("local") == ["llama_cpp"]
    with pytest.raises(extras.MissingExtra) as err:
        extras.require("local", purpose="this check")
    assert "pip install 'nepotism[local]'" in str(err.value) and "this check" in str(err.value)
    with pytest.raises(ValueError, match="unknown extra"):
        extras.missing("nosuch")


def test_every_extra_is_declared_in_pyproject():
    import tomllib
    from pathlib import Path

    declared = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert set(extras.EXTRAS) <= set(declared["project"]["optional-dependencies"])


def test_demo_live_without_the_local_extra_exits_2_and_writes_nothing(tmp_path, monkeypatch):
    _hide(monkeypatch, "llama_cpp")
    out = tmp_path / "live"
    result = CliRunner().invoke(main, ["demo", "--live", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "pip install 'nepotism[local]'" in result.output and len(result.output.strip().splitlines()) == 1
    assert not out.exists()
