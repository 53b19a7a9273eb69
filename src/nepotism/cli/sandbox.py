"""``nepotism sandbox``: run a candidate program in the code sandbox, or show what isolation exists.

Thin wrapper over `nepotism.sandbox`; the status of a run is data, so ``run`` exits 0 whatever the
candidate did, and 2 only for bad input (a missing file).
"""

from __future__ import annotations

from pathlib import Path

import click

from nepotism.cli._common import Finite, echo_json

from nepotism.errors import InputError

__all__ = ["command"]


def _read(path: str, what: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{what} file not found", path=path)
    try:
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read {what} file: {err}", path=path) from err


@click.group("sandbox")
def command() -> None:
    """Run untrusted generated Python code in an isolated, resource-limited child."""


@command.command("run")
@click.argument("file")
@click.option("--tests", "tests_file", default=None, help="File of tests (assert lines or a check call) run after FILE.")
@click.option(
    "--timeout", type=Finite(0.0, 86_400.0, min_open=True), default=10.0, show_default=True, help="Wall-clock limit in seconds."
)
@click.option("--memory-mb", type=click.IntRange(32), default=512, show_default=True, help="Address-space limit (RLIMIT_AS).")
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
def run_cmd(file: str, tests_file: str | None, timeout: float, memory_mb: int, as_json: bool) -> None:
    """Run FILE (then --tests) in the sandbox and print the status and outputs.

    Statuses: passed, failed (a test assertion failed), error, timeout, killed (a resource limit).
    Exits 0 whatever the status; 2 on a missing or unreadable file.
    """
    from dataclasses import asdict

    from nepotism.sandbox import run

    code = _read(file, "code")
    tests = _read(tests_file, "tests") if tests_file is not None else None
    result = run(code, tests=tests, timeout=timeout, memory_mb=memory_mb)
    if as_json:
        echo_json(asdict(result))
        return
    click.echo(f"status: {result.status} ({result.detail})")
    click.echo(f"returncode: {result.returncode}  signal: {result.signal}  duration: {result.duration_s:.2f}s")
    net = result.isolation["network"]
    click.echo(f"network isolated: {'yes' if net['isolated'] else 'NO'} ({net['why']})")
    for name, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        if text:
            click.echo(f"--- {name} ---")
            click.echo(text.rstrip("\n"))


@command.command("check")
@click.option("--json", "as_json", is_flag=True, help="Print the capabilities as JSON.")
def check_cmd(as_json: bool) -> None:
    """Show which isolation the sandbox can apply on this machine (from a real trivial run)."""
    from nepotism.sandbox import sandbox_capabilities

    caps = sandbox_capabilities()
    if as_json:
        echo_json(caps)
        return
    for key, value in caps.items():
        if key == "notes":
            continue
        click.echo(f"{key}: {value}")
    for note in caps.get("notes", []):
        click.echo(f"note: {note}")
