"""Code restyling with a functional-equivalence check in the sandbox (paper 003, coding task).

`restyle_code` rewrites a Python program without changing what it does, using the standard
library's ``ast``: local variables and parameters of each function (not names declared
``global``/``nonlocal``, nothing in a function that holds a nested function, class or lambda) are
renamed to a different naming style (``count_dict`` -> ``countDict``, ``total`` -> ``totalVal``),
and the
program is printed back by ``ast.unparse`` (which normalises quotes, spacing and parentheses and
drops comments). `restyle_response` does this to the code inside a response (its fenced block, or
the whole text when there is none) and leaves the prose around it alone.

`verify_equivalent` runs the original and the restyled program against each test separately in
the sandbox (`nepotism.sandbox.run`, or an injected runner with the same signature) and accepts
the restyle only when every test has the same status for both; a mismatch, a program that does
not parse, or a restyle that changed nothing is a counted failure, never used.

Paper 003 restyles with a model ("idiomatic style variations ... we also maintain the original
comments"): `restyle_prompt` asks a code model for that, and `read_restyle` takes its reply (the
first fenced block, or the whole reply) and accepts it only when it parses, changed the code and
kept every comment of the original (each ``# ...`` text, in order); the caller then runs
`verify_equivalent`. The ``ast`` renaming above is the mechanical variant (``restyle = "ast"``),
which drops comments.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Callable, Sequence
from typing import Any

from nepotism.records import Message

from nepotism.mitigations.synonyms import Perturbation

__all__ = [
    "code_of",
    "comments",
    "read_restyle",
    "restyle_code",
    "restyle_prompt",
    "restyle_response",
    "split_tests",
    "verify_equivalent",
]

_BUILTINS = frozenset(dir(builtins))
_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)


def _new_name(name: str, taken: set[str]) -> str:
    parts = [p for p in name.split("_") if p]
    if len(parts) > 1:
        base = parts[0].lower() + "".join(p[:1].upper() + p[1:] for p in parts[1:])
    elif name.startswith("_") or not parts:
        base = name
    else:
        base = parts[0] + "Val"
    candidate, i = base, 2
    while candidate in taken or candidate == name:
        candidate, i = f"{base}{i}", i + 1
    return candidate


class _Renamer(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.mapping:
            node.id = self.mapping[node.id]
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        if node.arg in self.mapping:
            node.arg = self.mapping[node.arg]
        return node


def _params(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    params = {a.arg for a in func.args.args + func.args.posonlyargs + func.args.kwonlyargs}
    return params | {a.arg for a in (func.args.vararg, func.args.kwarg) if a is not None}


def _locals(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    params = _params(func)
    declared: set[str] = set()
    assigned: set[str] = set()
    for node in ast.walk(func):
        if node is not func and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return set()  # a nested scope could capture a local: rename nothing in this function
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            assigned.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            declared.update((a.asname or a.name).split(".")[0] for a in node.names)
    return assigned - params - declared - _BUILTINS


def _has_nested_scope(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        node is not func and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
        for node in ast.walk(func)
    )


def restyle_code(code: str, *, rename_parameters: bool = True) -> str:
    """The restyled program (raises `SyntaxError` when ``code`` does not parse).

    ``rename_parameters`` also renames each function's parameters (not ``self``/``cls``): a
    caller passing them by keyword would break, which `verify_equivalent` catches."""
    tree = ast.parse(code)
    every_name = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    every_name |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    every_name |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for func in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        taken = set(every_name)
        mapping = {}
        names = _locals(func)
        if rename_parameters and names is not None and not _has_nested_scope(func):
            names |= {p for p in _params(func) if p not in ("self", "cls")}
        for name in sorted(names):
            mapping[name] = _new_name(name, taken)
            taken.add(mapping[name])
        if mapping:
            for stmt in func.body:
                _Renamer(mapping).visit(stmt)
            _Renamer(mapping).visit(func.args)
    return ast.unparse(tree) + "\n"


def restyle_response(text: str) -> Perturbation:
    """Restyle the code held in a response (see the module docstring)."""
    match = _FENCE.search(text or "")
    code = match.group(1) if match else (text or "")
    try:
        new = restyle_code(code)
    except SyntaxError as err:
        return Perturbation(None, False, reason=f"the code does not parse: {err.msg}", method="code-restyle")
    if new.strip() == code.strip():
        return Perturbation(None, False, reason="restyling changed nothing", method="code-restyle")
    if match:
        out = text[: match.start(1)] + new + text[match.end(1) :]
    else:
        out = new
    return Perturbation(out, True, method="code-restyle", detail={"code": new, "original_code": code})


def split_tests(tests: str | Sequence[str]) -> list[str]:
    """One program per test: MBPP assert lines one by one, anything else as a single test."""
    if isinstance(tests, str):
        lines = [t for t in tests.splitlines() if t.strip()]
        if lines and all(t.lstrip().startswith("assert") for t in lines):
            return lines
        return [tests]
    return [str(t) for t in tests if str(t).strip()]


def verify_equivalent(
    original: str,
    restyled: str,
    tests: str | Sequence[str],
    *,
    runner: Callable[..., Any] | None = None,
    timeout: float = 10.0,
    memory_mb: int = 512,
) -> tuple[bool, dict[str, Any]]:
    """(equivalent?, detail): each test's status for both programs must be the same."""
    if runner is None:
        from nepotism.sandbox import run

        runner = run
    before, after = [], []
    for test in split_tests(tests):
        before.append(str(runner(original, tests=test, timeout=timeout, memory_mb=memory_mb).status))
        after.append(str(runner(restyled, tests=test, timeout=timeout, memory_mb=memory_mb).status))
    same = before == after and bool(before)
    return same, {"before": before, "after": after, "n_tests": len(before)}


def code_of(text: str) -> tuple[str, re.Match[str] | None]:
    """The code a response holds (its first fenced block, else the whole text) and the fence match."""
    match = _FENCE.search(text or "")
    return (match.group(1) if match else (text or "")), match


def comments(code: str) -> list[str]:
    """The text of each ``#`` comment of a Python program, in order (tokenize: not ``#`` in strings)."""
    import io
    import tokenize

    try:
        return [
            tok.string.lstrip("#").strip()
            for tok in tokenize.generate_tokens(io.StringIO(code).readline)
            if tok.type == tokenize.COMMENT and tok.string.lstrip("#").strip()
        ]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []


def restyle_prompt(code: str) -> tuple[Message, ...]:
    """Ask a code model to restyle ``code`` idiomatically, same behaviour, comments kept.

    The code comes first and the instruction after it: asked the other way round,
    Qwen2.5-Coder-0.5B-Instruct replied with a bare expression, without the ``def`` line or any
    comment (tests/fixtures/mitigations/model_probes.json records what it does with this one)."""
    return (
        Message(
            "user",
            "Here is a Python program with comments:\n```python\n" + code.rstrip() + "\n```\n"
            "Rewrite the whole program in a different idiomatic style (for example a comprehension "
            "or a built-in call instead of a loop). Keep every def line unchanged, keep the same "
            "behaviour, and keep every comment exactly as it is (copy each # comment into the new "
            "code). Reply with the complete program in one ```python block and nothing else.",
        ),
    )


def read_restyle(text: str, output: str | None) -> Perturbation:
    """The response ``text`` with its code replaced by the model's restyle, or a counted failure."""
    method = "code-restyle"
    if output is None:
        return Perturbation(None, False, reason="the restyling call failed", method=method)
    original, match = code_of(text)
    new, _ = code_of(output)
    new = new.strip("\n") + "\n"
    try:
        ast.parse(new)
    except SyntaxError as err:
        return Perturbation(None, False, reason=f"the restyled code does not parse: {err.msg}", method=method)
    if new.strip() == original.strip():
        return Perturbation(None, False, reason="restyling changed nothing", method=method)
    kept, dropped = comments(new), [c for c in comments(original)]
    it = iter(kept)
    if not all(any(c == k for k in it) for c in dropped):
        return Perturbation(None, False, reason="the restyle dropped or changed a comment", method=method)
    out = text[: match.start(1)] + new + text[match.end(1) :] if match else new
    return Perturbation(out, True, method=method, detail={"code": new, "original_code": original})
