"""What several commands share: options (bootstrap settings, --json, --models, --format), printing a
table that stays readable when piped, the store an experiment command opens, running a live job
under a progress bar with Ctrl-C handled, and what an unexpected exception prints
(`report_internal_error`, exit status `INTERNAL_ERROR`)."""

from __future__ import annotations

import contextlib
import functools
import json
import io
import math
import os
import re
import select
import sys
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import click

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

    from nepotism.experiment import Experiment
    from nepotism.runner import ProgressView

_R = TypeVar("_R")
#: a click command's callback: options the decorators below add arrive as keyword arguments
_Callback = Callable[..., _R]

__all__ = [
    "INTERNAL_ERROR",
    "Finite",
    "Size",
    "bootstrap_options",
    "echo_json",
    "exit_if_calls_failed",
    "experiment_store",
    "finite_value",
    "format_option",
    "input_limit_options",
    "json_stdout",
    "max_failure_rate_option",
    "models_option",
    "named_as_typed",
    "prevented_line",
    "print_table",
    "report_internal_error",
    "run_live",
    "store_path_of",
    "unknown_names_lines",
    "whole_output",
    "write_all",
]

#: How a command prints rows: ``auto`` = a boxed table on a terminal and plain aligned rows when
#: stdout is a pipe or a file (a CI log, ``tee``), which are never wrapped or cut.
FORMATS = ("auto", "table", "plain", "tsv")


# ------------------------------------------------------------------------------- numeric options
# Every number a command line takes goes through these types (tests/cli/test_common_cli.py checks
# each command's options): a float is a `Finite` (nan and infinities are no numbers), an integer a
# click.IntRange with its bounds, a size a `Size`. A bad value is a usage error naming the option
# (exit status 2).


class Finite(click.FloatRange):
    """A float option that is a finite number within its range: ``nan`` and infinities are
    refused (click's FloatRange lets ``nan`` through every bound)."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


def finite_value(text: str, option: str, low: float | None = None, high: float | None = None) -> float:
    """A number written inside an option's value (the SIZE of ``--effect self=SIZE``), finite and
    within [low, high]; an `InputError` naming the option otherwise."""
    from nepotism.errors import InputError

    try:
        return Finite(low, high).convert(text.strip(), None, None)
    except click.BadParameter as err:
        raise InputError(err.message, field=option) from None


_UNITS = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4, "ki": 1024, "mi": 1024**2, "gi": 1024**3, "ti": 1024**4}


class Size(click.ParamType[int]):
    """A whole size from ``minimum`` up to ``maximum``: a number with an optional unit (``64Mi`` =
    64 * 1024**2, ``1G`` = 10**9, ``B`` allowed after it: ``16MiB``)."""

    name = "size"

    def __init__(self, minimum: int = 1, maximum: int | None = None) -> None:
        self.minimum, self.maximum = minimum, maximum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]i?)?b?\s*", str(value), flags=re.IGNORECASE)
            if not found:
                self.fail(f"{value!r} is not a size (a number with an optional unit: 16Mi, 1G, 1000)", param, ctx)
            number = int(float(found.group(1)) * _UNITS[(found.group(2) or "").lower()])
        from nepotism.input_limits import size_text

        if number < max(self.minimum, 1):
            self.fail(f"{value!r} is less than the least allowed, {size_text(max(self.minimum, 1))}", param, ctx)
        if self.maximum is not None and number > self.maximum:
            self.fail(f"{value!r} is more than the most allowed, {size_text(self.maximum)}", param, ctx)
        return number


def input_limit_options(callback: _Callback[_R]) -> _Callback[_R]:
    """Add the top-level --max-decompressed, --max-line, --max-cell and --max-depth options (the
    limits on reading user files, `nepotism.input_limits`) and read every file of the command
    within them."""
    from nepotism import input_limits

    defaults = input_limits.DEFAULTS

    @functools.wraps(callback)
    def function(*args: Any, max_decompressed: int, max_line: int, max_cell: int, max_depth: int, **kwargs: Any) -> _R:
        limits = input_limits.InputLimits(decompressed=max_decompressed, line=max_line, cell=max_cell, depth=max_depth)
        click.get_current_context().with_resource(input_limits.applied(limits))
        return callback(*args, **kwargs)

    for name, option, what in (
        ("depth", "--max-depth", "How deeply a JSON or TOML input may nest, in levels"),
        ("cell", "--max-cell", "Longest value of an input table, dataset or JSON/TOML file, in characters"),
        ("line", "--max-line", "Longest line of a CSV, TSV or JSON Lines input, in characters"),
        ("decompressed", "--max-decompressed", "Most bytes a .gz input may inflate to"),
    ):
        least = input_limits.OPTION_MINIMUM[name]
        kind = (
            click.IntRange(least, input_limits.MAX_DEPTH)
            if name == "depth"
            else Size(least, input_limits.MAX_CELL if name == "cell" else None)
        )
        default = getattr(defaults, name)
        function = click.option(
            option, f"max_{name}", type=kind, default=default, help=f"{what} (default {input_limits.size_text(default)})."
        )(function)
    return function


def bootstrap_options(callback: _Callback[_R]) -> _Callback[_R]:
    """Add --bootstrap, --seed, --confidence and --ci-method; the command receives them as one
    ``bootstrap`` argument (a `nepotism.metrics.Bootstrap`)."""

    @functools.wraps(callback)
    def function(*args: Any, n_resamples: int, seed: int, confidence: float, ci_method: str, **kwargs: Any) -> _R:
        from nepotism.metrics.bootstrap import Bootstrap

        settings = Bootstrap(n_resamples=n_resamples, confidence_level=confidence, method=ci_method, seed=seed)
        return callback(*args, bootstrap=settings, **kwargs)

    function = click.option(
        "--ci-method",
        type=click.Choice(["percentile", "bca"]),
        default="percentile",
        show_default=True,
        help="Bootstrap interval method.",
    )(function)
    function = click.option(
        "--confidence", type=Finite(0.5, 0.999), default=0.95, show_default=True, help="Confidence level of the intervals."
    )(function)
    function = click.option(
        "--seed",
        type=click.IntRange(0),
        default=0,
        show_default=True,
        help="Seed of the bootstrap: the same seed gives the same numbers.",
    )(function)
    function = click.option(
        "--bootstrap",
        "n_resamples",
        type=click.IntRange(0, 100_000),
        default=1000,
        show_default=True,
        help="Bootstrap resamples of prompts (0 = no intervals).",
    )(function)
    return function


def models_option(function: _Callback[_R]) -> _Callback[_R]:
    """Add a repeatable --models FILE that extends the bundled registry."""
    return click.option(
        "--models",
        "models_files",
        multiple=True,
        type=click.Path(dir_okay=False),
        help="Extra model registry TOML file (repeatable); extends the bundled one.",
    )(function)


def format_option(function: _Callback[_R]) -> _Callback[_R]:
    """Add --format auto|table|plain|tsv (how rows are printed; --json stays the machine format)."""
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(FORMATS),
        default="auto",
        show_default=True,
        help="auto: a table on a terminal, plain aligned rows when piped (never wrapped); tsv: tab-separated with a header line.",
    )(function)


#: Plain tables pad a column to its widest cell up to this length; longer cells overflow their row only.
_PAD_CAP = 40


def max_failure_rate_option(calls: str) -> Callable[[_Callback[_R]], _Callback[_R]]:
    """``--max-failure-rate``: the share of ``calls`` (e.g. "the run's calls (generation, judging,
    perplexity)") allowed to fail without exit status 3 (`exit_if_calls_failed`)."""
    return click.option(
        "--max-failure-rate",
        type=Finite(0.0, 1.0),
        default=0.0,
        show_default=True,
        help=f"Share of {calls} allowed to fail without exit status 3.",
    )


def exit_if_calls_failed(phases: Iterable[Mapping[str, Any]], max_failure_rate: float) -> None:
    """Exit with status 3 and one line on stderr when more than ``max_failure_rate`` of the calls
    of ``phases`` (the counters of a command's phases, `RunStats.as_dict`: ``failed``, ``total``,
    ``errors``) failed: they are stored, and a rerun retries them (completed calls are not
    repeated). The one rule of `run`, `mitigate` and `leakage`."""
    phases = list(phases)
    failed, total = sum(p["failed"] for p in phases), sum(p["total"] for p in phases)
    if not total or failed / total <= max_failure_rate:
        return
    errors: dict[str, int] = {}
    for phase in phases:
        for error, n in phase.get("errors", {}).items():
            errors[error] = errors.get(error, 0) + n
    top = ", ".join(f"{error} {n}" for error, n in sorted(errors.items(), key=lambda kv: -kv[1])[:3])
    click.echo(
        f"error: {failed} of {total} calls failed ({top or 'no error recorded'}); fix the cause and run "
        "again to retry them (completed calls are not repeated), or allow some with --max-failure-rate",
        err=True,
    )
    sys.exit(3)


def prevented_line(failures: int, prevented: Mapping[str, int], *, counted: bool = False) -> str:
    """The summary line of a command whose generations failed: how many responses could not be
    made and the judgments they would have shown, exported as failed, by reason (``prevented``:
    `RunSummary.prevented` or the same in a summary dict); ``counted`` adds that the analyses
    count them as excluded."""
    return (
        f"  {failures} responses could not be generated: {sum(prevented.values())} judgments they would have "
        "shown are exported as failed"
        + (" and counted as excluded" if counted else "")
        + " ("
        + ", ".join(f"{reason} {n}" for reason, n in prevented.items())
        + ")"
    )


#: The widest a table column grows to keep its longest word whole on a terminal.
_WORD_CAP = 36


def print_table(title: str, header: list[str], rows: list[list[str]], *, output_format: str = "auto") -> None:
    """Print rows under ``header``. On a terminal (``auto``) or with ``table``: a rich table that folds
    long cells to the terminal's width. Piped (``auto``) or ``plain``: the title, then one line per row
    with columns padded to their widest cell, never wrapped, so a CI log keeps every row on one line
    and ``grep`` finds it. ``tsv``: a header line and tab-separated rows (tabs and newlines inside a
    cell become spaces)."""
    if output_format == "auto":
        output_format = "table" if sys.stdout.isatty() else "plain"
    if output_format == "table":
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title)
        for i, name in enumerate(header):
            # wrap between words, never inside one: a column is at least as wide as its longest word
            # (ids such as gpt-4o-2024-05-13 stay whole); a word longer than the cap is cut with "…"
            longest = max([len(w) for row in rows for w in str(row[i]).split()] + [len(name)])
            table.add_column(name, overflow="ellipsis", min_width=min(longest, _WORD_CAP))
        for row in rows:
            table.add_row(*row)
        Console(highlight=False).print(table)
        return
    clean = [[" ".join(str(cell).split()) for cell in row] for row in rows]
    if output_format == "tsv":
        for row in [header, *clean]:
            click.echo("\t".join(row))
        return
    widths = [max([len(name)] + [len(row[i]) for row in clean if len(row[i]) <= _PAD_CAP]) for i, name in enumerate(header)]
    click.echo(title)
    for row in [header, *clean]:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


#: The real stdout while a ``--json`` command runs (`json_stdout`), else None.
_JSON_STDOUT: TextIO | None = None


@contextlib.contextmanager
def json_stdout() -> Iterator[None]:
    """While a ``--json`` command runs, anything else written to stdout (a library's or a trainer's
    log lines, progress text) goes to stderr, so stdout carries exactly the one document
    `echo_json` writes."""
    global _JSON_STDOUT
    _JSON_STDOUT = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _JSON_STDOUT = None


def echo_json(value: object) -> None:
    """Print one JSON document (indented, sorted keys) to stdout — the real one under `json_stdout`."""
    write_all(_JSON_STDOUT or sys.stdout, json.dumps(value, indent=2, sort_keys=True, default=str) + "\n")


def write_all(stream: TextIO, text: str) -> None:
    """Write ``text`` to ``stream`` whole, or raise.

    A text stream over a descriptor that something made non-blocking (uvloop does so to any
    descriptor its loop watched; a sibling process sharing the pipe may) drops whatever a full
    pipe does not take and reports success. So the text is encoded and written to the descriptor
    by `_write_whole`, until every byte is taken; a closed reader raises BrokenPipeError (click
    exits 1). A stream without a descriptor (a test runner's buffer) is written as usual.
    """
    stream.flush()
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both of the last two
        stream.write(text)
        stream.flush()
        return
    _write_whole(fd, text.encode(stream.encoding or "utf-8", stream.errors or "strict"))


def _write_whole(fd: int, data: bytes | memoryview) -> None:
    """The one writer of the commands' stdout and stderr bytes (`write_all`, and every other line
    through `whole_output`): ``data`` written to ``fd`` until every byte is taken. The descriptor's mode is
    left as it is — it is shared with whoever else holds the pipe — and a full non-blocking pipe is
    waited on until it takes more. A closed reader raises BrokenPipeError."""
    view = memoryview(data).cast("B")
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            try:
                select.select([], [fd], [])
            except (OSError, ValueError):  # no select on this descriptor (Windows): block instead
                os.set_blocking(fd, True)


class _WholeWrites(io.RawIOBase):
    """A descriptor as a binary stream whose every write is whole (`_write_whole`); never closes it."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def read(self, size: int = -1, /) -> bytes:
        raise io.UnsupportedOperation("read")  # write-only, as RawIOBase is when not readable

    def write(self, data: ReadableBuffer) -> int:
        view = memoryview(data)
        _write_whole(self._fd, view)
        return view.nbytes


@contextlib.contextmanager
def whole_output() -> Iterator[None]:
    """While the command line runs, ``sys.stdout`` and ``sys.stderr`` (what click.echo, rich's
    tables and progress bar, print, warnings and error messages write to) are text streams over
    the same descriptors whose every write reaches them whole (`_write_whole`), not buffered: a
    table, a line or a long warning is never cut by a pipe left non-blocking. Each says whether it
    is a terminal as the stream it stands for does (colour codes and rich's live progress bar only
    there). A stream without a descriptor (click's test runner) is left as it is."""
    saved = {name: getattr(sys, name) for name in ("stdout", "stderr")}
    try:
        for name, stream in saved.items():
            whole = _whole(stream)
            if whole is not None:
                setattr(sys, name, whole)
        yield
    finally:
        for name, stream in saved.items():
            setattr(sys, name, stream)


def _whole(stream: TextIO) -> TextIO | None:
    """A text stream over ``stream``'s descriptor (same encoding and error handling) whose every
    write goes through `_write_whole`; None for a stream without a descriptor."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    stream.flush()
    # typeshed's _WrappedBuffer protocol asks for a ``name``, which TextIOWrapper reads only when its
    # own .name is asked for (its repr skips it when missing): the stub is stricter than the runtime
    raw = _WholeWrites(fd)
    return io.TextIOWrapper(raw, encoding=stream.encoding, errors=stream.errors, write_through=True)  # type: ignore[type-var]


#: The exit status of an unexpected exception in a command (a bug, not the input): sysexits'
#: EX_SOFTWARE, so that it is told apart from 1 (click's abort, a closed reader, a failed
#: ``card --check`` threshold), 2 (bad input) and 3 (failed calls).
INTERNAL_ERROR = 70


def report_internal_error(err: BaseException) -> None:
    """Print an unexpected exception as any other line is printed: its traceback and one closing
    line, written to stderr by the one writer (`write_all`) while the commands' streams are still
    in place, every known secret value redacted (`nepotism.credentials.redact_text`: a key that
    reached an exception's message or a request's URL is not shown)."""
    import traceback

    from nepotism.credentials import redact_text

    text = "".join(traceback.format_exception(err))
    text += (
        f"error: internal error ({type(err).__name__}): a bug in nepotism, not a problem with the input; "
        "the traceback above says where (please report it)\n"
    )
    try:
        write_all(sys.stderr, redact_text(text))
    except OSError:  # stderr's reader is gone: the exit status still says it
        pass


def store_path_of(store_path: str | os.PathLike[str] | None, experiment: Experiment) -> Path:
    """The store file of an experiment command: --store, else the experiment's ``store``, else
    $NEPOTISM_STORE, else ./nepotism.db (nothing is created)."""
    from nepotism.store import default_store_path

    return Path(store_path) if store_path else (Path(experiment.store) if experiment.store else default_store_path())


def experiment_store(store_path: str | os.PathLike[str] | None, experiment: Experiment) -> Path:
    """`store_path_of`, its folder created (an `InputError` naming it when it cannot be)."""
    from nepotism.errors import InputError

    path = store_path_of(store_path, experiment)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create the store's folder {path.parent} ({err.strerror or err})", path=str(path)) from None
    return path


def run_live(job: Callable[[ProgressView], Coroutine[Any, Any, _R]], *, progress: bool | None, as_json: bool = False) -> _R:
    """``asyncio.run(job(view))`` under a progress view, on uvloop where installed (`nepotism._loop`);
    Ctrl-C prints that every completed call is stored and exits 130 (the run resumes when started
    again); SIGTERM (a scheduler stopping the job) the same, exit 143. With ``as_json`` stdout still
    gets its one document: ``{"status": "interrupted", "signal": ..., ...}``."""
    from nepotism._loop import Terminated, run
    from nepotism.runner import ProgressView

    view = ProgressView(enabled=progress)
    try:
        with view:
            return run(job(view))
    except KeyboardInterrupt as stop:
        name, code = ("SIGTERM", 143) if isinstance(stop, Terminated) else ("SIGINT", 130)
        message = "every completed call is stored; run again to resume"
        click.echo(f"interrupted ({name}): {message}", err=True)
        if as_json:
            echo_json({"status": "interrupted", "signal": name, "message": message})
        sys.exit(code)


@contextlib.contextmanager
def named_as_typed(names: Mapping[str, str]) -> Iterator[None]:
    """Re-raise an `InputError` whose field is a library argument (``source``, ``correlate``) under
    the command's own name for it (``JUDGMENTS``, ``--correlate``), so the message names what the
    user typed."""
    from nepotism.errors import InputError

    try:
        yield
    except InputError as err:
        if err.field is not None and err.field in names:
            err.field = names[err.field]
            err.args = (str(err),)
        raise


def unknown_names_lines(names: list[str], what: tuple[str, str], *, indent: str = "", shown: int = 12) -> list[str]:
    """Names the model registry does not know (``what``: what one of them is and what several are
    to the command, e.g. ("name is not in the model registry", "names are not ...")) and how to
    name them in a models file: the lines `import` and `metrics` print."""
    if not names:
        return []
    said = what[0] if len(names) == 1 else what[1]
    listed = ", ".join(repr(n) for n in names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")
    return [
        f"{indent}{len(names)} {said}: {listed}",
        f'{indent}name them in a models file passed with --models: [aliases] "GPT 4" = "gpt-4" for a model '
        'the registry knows under another name (`nepotism models list`), [families] "Anthropic" = '
        '["Claude 2", ...] for models it does not know (README, Model registry)',
    ]
