"""How much of the package mypy checks strictly: lines of the files `[tool.mypy] files` names
(pyproject.toml; a folder counts every .py under it) over the lines of every module of
src/nepotism (the packaged data left out), in all and per package.

    python scripts/mypy_coverage.py [--rev REV]

With ``--rev`` the same figures for the files list and sources at a git revision (``bd81660``),
read with ``git show`` without checking anything out. Lines are physical lines, blank and comment
lines included, as ``wc -l`` counts them. This script measures; the gate itself is
tests/test_quality_gates.py.
"""

from __future__ import annotations

import argparse
import subprocess
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "src/nepotism"


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def _sources(rev: str | None) -> dict[str, int]:
    """Path (from the repository root) → line count of every module of the package."""
    if rev is None:
        paths = [str(p.relative_to(ROOT)) for p in (ROOT / PACKAGE).rglob("*.py")]
        texts = {p: (ROOT / p).read_text(encoding="utf-8") for p in paths}
    else:
        paths = [p for p in _git("ls-tree", "-r", "--name-only", rev, PACKAGE).split() if p.endswith(".py")]
        texts = {p: _git("show", f"{rev}:{p}") for p in paths}
    return {p: t.count("\n") for p, t in texts.items() if not p.startswith(f"{PACKAGE}/data/")}


def _listed(rev: str | None) -> list[str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8") if rev is None else _git("show", f"{rev}:pyproject.toml")
    return [f.rstrip("/") for f in tomllib.loads(text)["tool"]["mypy"]["files"]]


def _package(path: str) -> str:
    part = path.removeprefix(f"{PACKAGE}/").split("/")[0]
    return part.removesuffix(".py") if "/" in path.removeprefix(f"{PACKAGE}/") else "(top-level modules)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="a git revision to measure instead of the working tree")
    rev = parser.parse_args().rev
    lines, listed = _sources(rev), _listed(rev)
    strict = {p for p in lines if any(p == f or p.startswith(f + "/") for f in listed)}
    total, covered = Counter[str](), Counter[str]()
    for path, n in lines.items():
        total[_package(path)] += n
        if path in strict:
            covered[_package(path)] += n
    all_lines, all_covered = sum(total.values()), sum(covered.values())
    print(
        f"mypy --strict covers {all_covered:,} of {all_lines:,} lines ({all_covered / all_lines:.1%})"
        + (f" at {rev}" if rev else "")
    )
    for package in sorted(total, key=lambda p: -total[p]):
        print(f"  {package:<22} {covered[package]:>6,} / {total[package]:>6,}  {covered[package] / total[package]:6.1%}")


if __name__ == "__main__":
    main()
