"""Grade a code response by running it with its tests in `nepotism.sandbox`.

Two test styles are understood:

* MBPP style — a list of ``assert ...`` lines (or one string of them), run after the candidate;
* HumanEval style — a test module defining ``check(candidate)``; with ``entry_point`` given, a call
  ``check(<entry_point>)`` is appended.

The candidate code is read from the response: fenced code blocks (```python ... ```) if any — the
last block defining ``entry_point`` when given, else all blocks joined — otherwise the whole text.
With a HumanEval ``prompt`` given and a candidate that does not define ``entry_point`` (a bare
completion), the prompt is put in front.

Sandbox status → ``correct``: ``passed`` → True; ``failed`` (an assertion of the tests failed),
``error`` (any other exception or a non-zero exit of the candidate), ``timeout`` and ``killed``
(a limit exceeded) → False. A failure of the sandbox itself (`nepotism.sandbox.SandboxError`) is
no verdict on the candidate: ``correct`` is None with ``method="sandbox:unavailable"``. ``method``
is otherwise ``"sandbox:<status>"``. An empty candidate is ungradable (None).

Left out: pass@k over several samples, partial credit per assert.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from nepotism.grading._result import GradeResult

__all__ = ["build_tests", "extract_code", "grade_code"]

_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)
_STATUS = {"passed": True, "failed": False, "error": False, "timeout": False, "killed": False}


def extract_code(response: str, entry_point: str | None = None) -> str:
    """Return the candidate program held in ``response`` (see the module docstring)."""
    blocks: list[tuple[str, str]] = [(lang.lower(), body) for lang, body in _FENCE_RE.findall(response or "")]
    if not blocks:
        return (response or "").strip("\n")
    python = [body for lang, body in blocks if lang in ("", "python", "py", "python3")] or [b for _, b in blocks]
    if entry_point:
        defining = [b for b in python if re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", b, re.M)]
        if defining:
            return defining[-1].strip("\n")
    return "\n\n".join(b.strip("\n") for b in python)


def build_tests(tests: str | Sequence[str], entry_point: str | None = None) -> str:
    """Return the test program: MBPP assert lines joined, or a HumanEval ``check`` plus its call."""
    text = tests if isinstance(tests, str) else "\n".join(str(t) for t in tests)
    if not text.strip():
        raise ValueError("the tests are empty")
    if re.search(r"^def\s+check\s*\(", text, re.M):
        if not entry_point:
            raise ValueError("HumanEval-style tests (def check) need an entry_point")
        text = f"{text.rstrip()}\n\n\ncheck({entry_point})\n"
    return text


def _sandbox_errors() -> tuple[type[BaseException], ...]:
    try:
        from nepotism.sandbox import SandboxError
    except ImportError:
        return ()
    return (SandboxError,)


def _default_runner(code: str, *, tests: str, timeout: float, memory_mb: int) -> Any:
    from nepotism.sandbox import run  # imported lazily: the sandbox is optional at import time

    return run(code, tests=tests, timeout=timeout, memory_mb=memory_mb)


def grade_code(
    response: str,
    tests: str | Sequence[str],
    *,
    entry_point: str | None = None,
    prompt: str | None = None,
    runner: Callable[..., Any] | None = None,
    timeout: float = 10.0,
    memory_mb: int = 512,
) -> GradeResult:
    """Run the code in ``response`` against ``tests`` in the sandbox and grade it.

    ``runner`` replaces `nepotism.sandbox.run` (same signature and result fields), e.g. in tests.
    """
    test_program = build_tests(tests, entry_point)
    code = extract_code(response, entry_point)
    if not code.strip():
        return GradeResult(None, None, None, None, "no code found in the response")
    if prompt and entry_point and not re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", code, re.M):
        code = prompt + code
    try:
        result = (runner or _default_runner)(code, tests=test_program, timeout=timeout, memory_mb=memory_mb)
    except _sandbox_errors() as err:
        return GradeResult(None, code, "sandbox:unavailable", None, str(err)[:300])
    status = str(result.status)
    if status not in _STATUS:
        raise ValueError(f"unknown sandbox status {status!r}")
    detail = (result.stderr or "").strip().splitlines()[-1:] if status != "passed" else []
    return GradeResult(_STATUS[status], code, f"sandbox:{status}", "sandbox", detail[0][:300] if detail else "")
