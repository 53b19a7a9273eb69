"""The ``nepotism`` command line: nouns with verb subcommands, each docstring its ``--help``.

Every module in this package that defines a module-level ``command`` (a click command or group) is
registered under that command's name, so adding a noun is adding one module. The modules are
loaded the first time the group's commands are looked at (in `main`, so a module that fails to
load is reported as any other bug: exit status 70), not when this package is imported; they keep
heavy imports inside their functions so that ``nepotism --help`` stays fast. This package holds
no logic of its own: it parses arguments, calls the library and prints.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from typing import Any

import click

from nepotism.cli._common import input_limit_options
from nepotism.errors import InputError

__all__ = ["main"]


class _Main(click.Group):
    """Top-level group that turns an `InputError` into one line on stderr and exit status 2, Ctrl-C
    into exit status 130 (``{"status": "interrupted"}`` under ``--json``), keeps
    stdout for the one JSON document when a command is given ``--json``, writes everything on
    stdout and stderr whole (`_common.whole_output`), whatever mode the pipe was left in, and
    prints any other exception through the same writer, secrets redacted, with exit status 70
    (`_common.report_internal_error`) — one raised while the command modules are first loaded
    (`commands`) too."""

    _registered = False

    @property  # type: ignore[override]
    def commands(self) -> dict[str, click.Command]:
        """The commands by name; the first look loads every command module of this package (again
        at the next look if one failed to load, so the group is never silently missing a noun)."""
        if not self._registered:
            for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
                if info.name.startswith("_"):
                    continue
                module = importlib.import_module(f"{__name__}.{info.name}")
                command = getattr(module, "command", None)
                if isinstance(command, click.Command) and command.name:
                    self._commands.setdefault(command.name, command)
            self._registered = True
        return self._commands

    @commands.setter
    def commands(self, value: dict[str, click.Command]) -> None:
        self._commands = value

    def main(self, *args: Any, **kwargs: Any) -> Any:  # click's Command.main returns Any
        from nepotism.cli._common import INTERNAL_ERROR, report_internal_error, whole_output

        with whole_output():
            try:
                return super().main(*args, **kwargs)
            except Exception as err:  # a bug: click has already handled its own errors and aborts
                report_internal_error(err)
                sys.exit(INTERNAL_ERROR)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["nepotism.json"] = "--json" in args
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:  # as click's Group.invoke
        import contextlib

        from nepotism.cli._common import json_stdout

        try:
            with json_stdout() if ctx.meta.get("nepotism.json") else contextlib.nullcontext():
                return super().invoke(ctx)
        except InputError as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(getattr(err, "exit_status", 2))  # (2: the input; a full store disk says otherwise)
        except KeyboardInterrupt as stop:  # before click turns it into "Aborted!" and exit status 1
            _interrupted(stop, as_json=bool(ctx.meta.get("nepotism.json")))


def _interrupted(stop: KeyboardInterrupt, *, as_json: bool) -> None:
    """Ctrl-C (or SIGTERM in a command running calls) in any command: one line on stderr, under
    ``--json`` the one document ``{"status": "interrupted", "signal": ...}``, exit status 130 (143
    for SIGTERM). `_common.run_live` says first what a live run keeps."""
    from nepotism._loop import Terminated
    from nepotism.cli._common import echo_json

    name, code = ("SIGTERM", 143) if isinstance(stop, Terminated) else ("SIGINT", 130)
    click.echo(f"interrupted ({name})", err=True)
    if as_json:
        echo_json({"status": "interrupted", "signal": name})
    sys.exit(code)


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import version

    from nepotism._loop import loop_name

    click.echo(f"nepotism, version {version('nepotism')}\nevent loop: {loop_name()}")
    ctx.exit()


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_version,
    help="Show the version and the event loop runs use (uvloop, else asyncio's), and exit.",
)
@input_limit_options
def main() -> None:
    """Measure how much LLM judges favour themselves, their family and their students.

    The --max-* options bound what any command reads from a file (before the command's name:
    nepotism --max-line 256Mi metrics big.jsonl); an input beyond one is refused, naming it."""
