"""The ``nepotism sandbox`` command line."""

from __future__ import annotations

import json

from click.testing import CliRunner

import nepotism.cli.sandbox as cli_sandbox
from nepotism.cli import main


def test_all():
    assert cli_sandbox.__all__ == ["command"]


def test_run_passing_and_failing(tmp_path):
    code = tmp_path / "cand.py"
    code.write_text("def sq(x):\n    return x * x\nprint('ran')\n")
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text("assert sq(3) == 9\n")
    bad.write_text("assert sq(3) == 10\n")
    runner = CliRunner()
    res = runner.invoke(main, ["sandbox", "run", str(code), "--tests", str(good)])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("status: passed") and "ran" in res.output
    res = runner.invoke(main, ["sandbox", "run", str(code), "--tests", str(bad), "--json"])
    assert res.exit_code == 0
    data = json.loads(res.output)
    assert data["status"] == "failed" and data["stdout"] == "ran\n"
    assert "isolation" in data


def test_run_timeout_is_data(tmp_path):
    code = tmp_path / "loop.py"
    code.write_text("while True:\n    pass\n")
    res = CliRunner().invoke(main, ["sandbox", "run", str(code), "--timeout", "0.5", "--json"])
    assert res.exit_code == 0
    assert json.loads(res.output)["status"] == "timeout"


def test_missing_file_exits_2(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["sandbox", "run", str(tmp_path / "nope.py")])
    assert res.exit_code == 2 and "not found" in res.output
    code = tmp_path / "c.py"
    code.write_text("pass\n")
    res = runner.invoke(main, ["sandbox", "run", str(code), "--tests", str(tmp_path / "nope.py")])
    assert res.exit_code == 2


def test_check(tmp_path):
    res = CliRunner().invoke(main, ["sandbox", "check", "--json"])
    assert res.exit_code == 0
    caps = json.loads(res.output)
    assert caps["usable"] is True and "network_isolated" in caps
    res = CliRunner().invoke(main, ["sandbox", "check"])
    assert res.exit_code == 0 and "network_isolated:" in res.output
