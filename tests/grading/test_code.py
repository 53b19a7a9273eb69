"""Tests of nepotism.grading.code with a fake runner, and HumanEval canonical solutions in the real sandbox."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

import nepotism.grading.code as gc
from nepotism.grading.code import build_tests, extract_code, grade_code

#: beside the repository (../shared is not part of a clone: the test using it skips)
HUMANEVAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "humaneval" / "HumanEval.jsonl.gz"


@dataclass
class _Result:
    status: str
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0


class _FakeRunner:
    """Runs code + tests with exec in-process (trusted test inputs only) and records the calls."""

    def __init__(self):
        self.calls = []

    def __call__(self, code, *, tests, timeout, memory_mb):
        self.calls.append((code, tests, timeout, memory_mb))
        namespace: dict = {}
        try:
            exec(compile(code + "\n" + tests, "<candidate>", "exec"), namespace)
        except AssertionError:
            return _Result("failed", stderr="Traceback...\nAssertionError")
        except Exception as err:  # noqa: BLE001 - the fake mirrors the sandbox's 'error' status
            return _Result("error", stderr=f"{type(err).__name__}: {err}")
        return _Result("passed")


def test_all_is_exported():
    assert set(gc.__all__) == {"build_tests", "extract_code", "grade_code"}


def test_extract_code_from_fences():
    text = "Here:\n```python\ndef f(x):\n    return x\n```\nand a usage\n```\nprint(f(1))\n```"
    assert extract_code(text) == "def f(x):\n    return x\n\nprint(f(1))"
    assert extract_code(text, entry_point="f") == "def f(x):\n    return x"
    assert extract_code("def g():\n    return 1\n") == "def g():\n    return 1"


def test_build_tests_styles():
    assert build_tests(["assert f(1) == 1", "assert f(2) == 2"]) == "assert f(1) == 1\nassert f(2) == 2"
    humaneval = "def check(candidate):\n    assert candidate(1) == 1\n"
    assert build_tests(humaneval, "f").rstrip().endswith("check(f)")
    with pytest.raises(ValueError):
        build_tests(humaneval)
    with pytest.raises(ValueError):
        build_tests([])


def test_mbpp_style_pass_fail_error():
    runner = _FakeRunner()
    tests = ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]
    good = grade_code("```python\ndef add(a, b):\n    return a + b\n```", tests, runner=runner, timeout=3, memory_mb=128)
    assert (good.correct, good.method) == (True, "sandbox:passed")
    assert runner.calls[0][2:] == (3, 128)
    bad = grade_code("def add(a, b):\n    return a - b", tests, runner=runner)
    assert (bad.correct, bad.method) == (False, "sandbox:failed")
    crash = grade_code("def add(a, b):\n    return a + None", tests, runner=runner)
    assert (crash.correct, crash.method) == (False, "sandbox:error") and "TypeError" in crash.detail


def test_humaneval_completion_gets_prompt_prepended():
    runner = _FakeRunner()
    prompt = 'def inc(x):\n    """Add one."""\n'
    tests = "def check(candidate):\n    assert candidate(1) == 2\n"
    result = grade_code("    return x + 1\n", tests, entry_point="inc", prompt=prompt, runner=runner)
    assert result.correct is True
    assert runner.calls[0][0].startswith(prompt)


@pytest.mark.parametrize("status, expected", [("timeout", False), ("killed", False)])
def test_limits_count_as_wrong(status, expected):
    result = grade_code("while True: pass", ["assert True"], runner=lambda *a, **k: _Result(status))
    assert result.correct is expected and result.method == f"sandbox:{status}"


def test_empty_candidate_and_unknown_status():
    assert grade_code("   ", ["assert True"], runner=_FakeRunner()).correct is None
    with pytest.raises(ValueError):
        grade_code("x = 1", ["assert True"], runner=lambda *a, **k: _Result("weird"))


def test_sandbox_failure_is_ungradable():
    sandbox = pytest.importorskip("nepotism.sandbox")

    def broken(*args, **kwargs):
        raise sandbox.SandboxError("no namespaces")

    result = grade_code("x = 1", ["assert x == 1"], runner=broken)
    assert result.correct is None and result.method == "sandbox:unavailable"


@pytest.mark.slow
@pytest.mark.skipif(not HUMANEVAL.exists(), reason="../shared/data is absent beside the repository")
def test_humaneval_canonical_solutions_pass_in_real_sandbox():
    pytest.importorskip("nepotism.sandbox")
    rows = [json.loads(line) for line in gzip.open(HUMANEVAL)]
    sample = rows[::16][:10]
    for row in sample:
        good = grade_code(row["prompt"] + row["canonical_solution"], row["test"], entry_point=row["entry_point"])
        assert good.correct is True, (row["task_id"], good)
    broken = sample[0]
    wrong = grade_code(broken["prompt"] + "    return None\n", broken["test"], entry_point=broken["entry_point"])
    assert wrong.correct is False
