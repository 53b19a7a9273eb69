"""Functional behaviour of `nepotism.sandbox.run`: statuses, output capture, isolation report."""

from __future__ import annotations

import dataclasses
import os
import sys

import pytest

import nepotism.sandbox as sandbox
from nepotism.sandbox import SandboxResult, run, sandbox_capabilities
from nepotism.sandbox import _plan, runner

MBPP_CODE = "def add(a, b):\n    return a + b\n"


def test_public_names():
    assert set(sandbox.__all__) == {"STATUSES", "SandboxError", "SandboxResult", "run", "sandbox_capabilities"}
    assert set(runner.__all__) == {"STATUSES", "SandboxError", "SandboxResult", "run"}
    assert _plan.__all__ == []


def test_passing_asserts():
    res = run(MBPP_CODE, tests="assert add(1, 2) == 3\nassert add(-1, 1) == 0\n")
    assert res.status == "passed"
    assert res.returncode == 0 and res.signal is None
    assert res.detail == "tests passed"


def test_failing_asserts():
    res = run(MBPP_CODE, tests="assert add(1, 2) == 3\nassert add(2, 2) == 5\n")
    assert res.status == "failed"
    assert res.returncode == 1
    assert "AssertionError" in res.stderr and "tests.py" in res.stderr


def test_humaneval_style_check_function():
    tests = "def check(candidate):\n    assert candidate(2, 3) == 5\n\ncheck(add)\n"
    assert run(MBPP_CODE, tests=tests).status == "passed"
    assert run("def add(a, b):\n    return a - b\n", tests=tests).status == "failed"


def test_syntax_error_is_error():
    res = run("def add(a, b) return a + b\n", tests="assert add(1, 2) == 3")
    assert res.status == "error"
    assert "SyntaxError" in res.stderr and "SyntaxError" in res.detail


def test_name_error_in_tests_is_error_not_failed():
    res = run(MBPP_CODE, tests="assert mul(2, 2) == 4")
    assert res.status == "error"
    assert "NameError" in res.detail


def test_assert_in_candidate_body_is_error():
    res = run("assert False, 'candidate asserts'\n", tests="pass")
    assert res.status == "error"


def test_exit_before_tests_is_not_a_pass():
    res = run("import sys\nsys.exit(0)\n", tests="assert False")
    assert res.status == "error"
    res = run("import os\nos._exit(0)\n", tests="assert False")
    assert res.status == "error"


def test_no_tests_exit_zero_is_passed_and_nonzero_is_error():
    assert run("x = 1\n").status == "passed"
    res = run("import sys\nsys.exit(3)\n")
    assert res.status == "error" and res.returncode == 3


def test_stdout_and_stderr_captured():
    res = run("import sys\nprint('hello out')\nprint('hello err', file=sys.stderr)\n")
    assert res.stdout == "hello out\n"
    assert res.stderr == "hello err\n"


def test_timeout_status():
    res = run("import time\ntime.sleep(30)\n", timeout=0.5)
    assert res.status == "timeout"
    assert res.signal == "SIGKILL"


def test_fresh_private_cwd_home_tmpdir():
    code = (
        "import os, tempfile\n"
        "print(os.getcwd() == os.environ['HOME'] == os.environ['TMPDIR'] == tempfile.gettempdir())\n"
        "print(sorted(os.listdir('.')))\n"
        "open('scratch.txt', 'w').write('x')\n"
    )
    first = run(code)
    second = run(code)
    # an interpreter that itself lives under /tmp (a virtualenv there) is shown read-only inside
    # the private /tmp; nothing else is
    from nepotism.sandbox import _plan

    shown = sorted(
        {os.path.relpath(d, "/tmp").split(os.sep)[0] for d in _plan.dirs_under("/tmp", _plan.interpreter_dirs(sys.executable))}
    )
    assert first.stdout == second.stdout == f"True\n{shown}\n"


def test_minimal_environment():
    res = run("import os\nprint(sorted(os.environ))\n")
    assert res.stdout.strip() == "['HOME', 'LANG', 'PATH', 'TMPDIR']"


def test_result_is_frozen_dataclass():
    res = run("pass")
    assert isinstance(res, SandboxResult)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.status = "failed"  # type: ignore[misc]
    assert res.status in sandbox.STATUSES
    assert res.duration_s >= 0


def test_isolation_report_lists_rlimits_and_user():
    iso = run("pass", memory_mb=256, max_file_mb=8).isolation
    assert iso["rlimits"]["RLIMIT_AS"] == [256 * 2**20, 256 * 2**20]
    assert iso["rlimits"]["RLIMIT_FSIZE"] == [8 * 2**20, 8 * 2**20]
    assert iso["rlimits"]["RLIMIT_CORE"] == [0, 0]
    assert set(iso["network"]) == {"isolated", "why"}
    assert iso["user"]["dropped"] == (os.geteuid() == 0)


def test_memory_error_caught_by_candidate_is_its_business():
    code = "try:\n    x = bytearray(10**10)\nexcept MemoryError:\n    print('caught')\n"
    res = run(code, memory_mb=128)
    assert res.status == "passed" and res.stdout == "caught\n"


def test_invalid_arguments():
    with pytest.raises(ValueError):
        run("pass", timeout=0)
    with pytest.raises(ValueError):
        run("pass", memory_mb=0)
    with pytest.raises(ValueError):
        run("pass", python="/nonexistent/python")


def test_capabilities_are_reported():
    caps = sandbox_capabilities()
    assert caps["usable"] is True
    assert {"network_isolated", "uid_drop", "namespaces", "notes", "rlimits"} <= set(caps)
    assert "RLIMIT_NPROC" in caps["rlimits"]
    if not caps["network_isolated"]:
        assert any("network" in note for note in caps["notes"])


def test_hide_plan_reexposes_interpreter(monkeypatch, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    _plan.interpreter_dirs.cache_clear()
    plan = dict(_plan.hide_plan(sys.executable, dropping_uid=True))
    for hidden, exposed in plan.items():
        assert hidden != "/"
        for path in exposed:
            assert path.startswith(hidden + "/")
    assert not any(h == "/tmp" or "/tmp".startswith(h + "/") for h in plan)
