"""Limits on what nepotism reads from a user's files, and the readers that keep them.

A broken or hostile input ends in an `InputError` naming the file (the line and field where there
are some) and the limit with the option that raises it — never in a traceback, a machine out of
memory or a value too large for the store. Four limits, each with a default far above any real
input we know of (the largest line of ../shared/data is 125 KB):

=============  =======  ====================================================================
limit          default  what it bounds
=============  =======  ====================================================================
decompressed   1 GiB    the bytes a ``.gz`` input inflates to: the file is inflated once,
                        counting, before anything is parsed, so a gzip bomb (4 GB in 20 MB)
                        costs seconds, not memory
line           64 Mi    the characters of one line of a CSV, TSV or JSON Lines file: at most
                        that much is read, never the whole line
cell           16 Mi    the characters of one value: a CSV or TSV cell, any string (or key)
                        in a JSON or TOML value, a text value of a Parquet file (SQLite stores
                        at most 10^9 bytes in one value)
depth          100      how deeply JSON and TOML values nest (lists and tables); below what
                        the parsers and writers that follow can take (Python's recursion,
                        orjson's 254 levels)
=============  =======  ====================================================================

`current` gives the limits in force; `applied` sets them for a block of the process (the command
line's ``--max-decompressed``, ``--max-line``, ``--max-cell`` and ``--max-depth`` do so for a
command). The readers: `open_text` (a text file, gunzipped within the limit), `bounded_lines` and
`numbered_lines` (its lines within the line limit), `check_value` (the depth and cells of a parsed
JSON or TOML value), `read_toml` and `parse_toml` (every TOML file a user gives: experiments,
registries, thresholds, judge templates), `bad_utf8_line` (where a file stops being UTF-8, read a
MiB at a time). JSON is parsed in one place, `nepotism._files.parse_json_line`, which calls
`check_value`. What a file means is its reader's business; this module only bounds it. It leaves
out what a model server sends (the backends bound that) and a Parquet file's own compression: a
Parquet file is read whole before its values are measured.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import io
import tomllib
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from nepotism.errors import InputError

__all__ = [
    "DEFAULTS",
    "MAX_CELL",
    "MAX_DEPTH",
    "OPTIONS",
    "OPTION_MINIMUM",
    "InputLimits",
    "applied",
    "bad_utf8_line",
    "bounded_lines",
    "check_value",
    "current",
    "numbered_lines",
    "open_text",
    "parse_toml",
    "raise_with",
    "read_toml",
    "size_text",
    "too_deep",
]

_KI = 1024


@dataclass(frozen=True)
class InputLimits:
    """The limits on reading user files (module docstring); ``depth`` is at most `MAX_DEPTH`,
    ``cell`` at most `MAX_CELL`."""

    decompressed: int = _KI**3  # bytes
    line: int = 64 * _KI**2  # characters
    cell: int = 16 * _KI**2  # characters
    depth: int = 100  # levels of nesting

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{item.name} must be a positive integer, not {value!r}")
        if self.depth > MAX_DEPTH:
            raise ValueError(f"depth must be at most {MAX_DEPTH}, not {self.depth}")
        if self.cell > MAX_CELL:
            raise ValueError(f"cell must be at most {MAX_CELL}, not {self.cell}")


#: The deepest nesting a user may allow: orjson (the store's JSON) stops at 254 levels, Python's
#: parsers at their recursion limit.
MAX_DEPTH = 200

#: The longest cell a user may allow, in characters: four bytes each in UTF-8 at most, it stays
#: below SQLite's limit on one value (10^9 bytes), which a longer recorded response would hit.
MAX_CELL = 128 * _KI**2

#: The least value the command line takes for each limit: more than nepotism's own files need (its
#: registry nests 4 levels, a judge template holds 2 KB strings), so that a low setting refuses the
#: user's file, not the package's.
OPTION_MINIMUM = {"decompressed": _KI**2, "line": 4 * _KI, "cell": 4 * _KI, "depth": 16}

#: The command-line option that raises each limit (named in the errors).
OPTIONS = {"decompressed": "--max-decompressed", "line": "--max-line", "cell": "--max-cell", "depth": "--max-depth"}

#: The limits when nothing else is `applied`.
DEFAULTS = InputLimits()

_current = DEFAULTS  # one setting for the process (threads read files too), as a command is one reading


def current() -> InputLimits:
    """The limits in force (the defaults unless `applied` set others)."""
    return _current


@contextlib.contextmanager
def applied(limits: InputLimits) -> Iterator[InputLimits]:
    """Read with ``limits`` inside the block (the limits before are restored after it)."""
    global _current
    before, _current = _current, limits
    try:
        yield limits
    finally:
        _current = before


def size_text(n: int) -> str:
    """``n`` the way the options take it: ``16Mi`` for 16 * 1024**2, ``1000`` as is."""
    for suffix, unit in (("Gi", _KI**3), ("Mi", _KI**2), ("Ki", _KI)):
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


def raise_with(name: str) -> str:
    """How an error names the limit ``name`` in force and the option that raises it."""
    value = getattr(current(), name)
    return f"the limit is {size_text(value)}; raise it with nepotism {OPTIONS[name]} {'N' if name == 'depth' else 'SIZE'}"


# ------------------------------------------------------------------------------- compressed files


def _check_inflated_size(path: Path) -> None:
    """Inflate ``path`` (gzip) once, counting, 8 MiB at a time (a MiB at a time took 2.5 times the
    CPU): an `InputError` as soon as it passes the decompressed limit. A file that is not gzip is
    left to the reader to report."""
    limit = current().decompressed
    total = 0
    try:
        with gzip.open(path, "rb") as raw:
            while chunk := raw.read(8 * _KI**2):
                total += len(chunk)
                if total > limit:
                    raise InputError(
                        f"the file inflates to more than {limit:,} bytes ({raise_with('decompressed')})", path=str(path)
                    )
    except (OSError, EOFError, zlib.error):
        return  # not gzip, truncated: the reader says so in its own words


def open_text(path: Path, *, newline: str | None = None) -> io.TextIOBase:
    """``path`` as UTF-8 text (a leading byte-order mark dropped), gunzipped for ``.gz`` once its
    inflated size is known to be within the limit. ``newline`` as for `open` (``""``: lines keep
    their own endings, as the csv module wants)."""
    if path.suffix.lower() == ".gz":
        _check_inflated_size(path)
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline=newline)
    return open(path, encoding="utf-8-sig", newline=newline)


def bad_utf8_line(path: str | Path) -> int | None:
    """The 1-based line holding the first invalid UTF-8 of a text file (gunzipped for ``.gz``),
    for error messages that name a line rather than a byte offset; None if every byte decodes or
    the file cannot be read. Read a MiB at a time, whatever its lines' length."""
    path = Path(path)
    decoder = codecs.getincrementaldecoder("utf-8")()
    line = 1
    try:
        with (gzip.open if path.suffix.lower() == ".gz" else open)(path, "rb") as raw:
            while chunk := raw.read(_KI**2):
                pending = len(decoder.getstate()[0])  # the start of a character cut by the last chunk
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError as err:
                    return line + chunk.count(b"\n", 0, max(0, err.start - pending))
                line += chunk.count(b"\n")
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return line
    except (OSError, EOFError, zlib.error):
        return None
    return None


def _ending(text: str) -> int:
    """The length of the line ending ``text`` ends with: 2 for ``\r\n``, 1 for ``\n`` or ``\r``, else 0."""
    if text.endswith("\r\n"):
        return 2
    return 1 if text[-1] in "\r\n" else 0


def bounded_lines(handle: io.TextIOBase, path: Path | str) -> Iterator[str]:
    """Each line of ``handle`` (its ending kept), reading at most the line limit of any one: a
    longer line is an `InputError` naming it (its 1-based number)."""
    limit = current().line
    readline, size = handle.readline, limit + 2  # room for a line of the limit and its "\r\n"
    number = 0
    while text := readline(size):
        number += 1
        if len(text) > limit and len(text) - _ending(text) > limit:
            raise InputError(f"a line longer than {limit:,} characters ({raise_with('line')})", path=str(path), line=number)
        yield text


def numbered_lines(handle: io.TextIOBase, path: Path | str) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line of ``handle`` (1-based), as `bounded_lines` reads them."""
    return enumerate(bounded_lines(handle, path), start=1)


# ------------------------------------------------------------------------------- parsed values


def _field_name(parts: tuple[Any, ...]) -> str | None:
    """``prompt[0].content`` for the path ("prompt", 0, "content"); None for the value itself."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or None


def check_value(value: Any, path: Path | str, line: int | None = None, *, text: str | None = None) -> None:
    """A parsed JSON or TOML ``value`` within the depth and cell limits, or an `InputError` naming
    the file, ``line`` and the field (the top-level key for depth, the path to the long string —
    ``prompt[0].content`` — for a cell). Given the ``text`` it was parsed from, a value that cannot
    break either limit (no more brackets than levels allowed, no more characters than a cell) is
    not walked."""
    limits = current()
    if text is not None and len(text) <= limits.cell and text.count("[") + text.count("{") <= limits.depth:
        return
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(value, 0, ())]
    while stack:
        item, depth, parts = stack.pop()
        if isinstance(item, str):
            if len(item) > limits.cell:
                raise InputError(
                    f"a value longer than {limits.cell:,} characters ({raise_with('cell')})",
                    path=str(path),
                    line=line,
                    field=_field_name(parts),
                )
        elif isinstance(item, (dict, list)):
            if depth >= limits.depth:
                raise InputError(
                    f"nested more than {limits.depth} levels deep ({raise_with('depth')})",
                    path=str(path),
                    line=line,
                    field=parts[0] if parts and isinstance(parts[0], str) else None,
                )
            if isinstance(item, dict):
                for key, child in item.items():
                    stack.append((key, depth, parts))
                    stack.append((child, depth + 1, (*parts, key)))
            else:
                stack.extend((child, depth + 1, (*parts, i)) for i, child in enumerate(item))


def too_deep(path: Path | str, line: int | None = None) -> InputError:
    """The error of a parser that ran out of recursion: nesting deeper than it reads."""
    return InputError(f"nested too deeply to read ({raise_with('depth')})", path=str(path), line=line)


# ------------------------------------------------------------------------------- TOML


def parse_toml(text: str, path: Path | str) -> dict[str, Any]:
    """The TOML document ``text`` (of ``path``), within the depth and cell limits; an `InputError`
    for invalid TOML (tomllib's message names the line and column) or one beyond a limit."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"not valid TOML ({err})", path=str(path)) from None
    except RecursionError:
        raise too_deep(path) from None
    check_value(document, path)
    return document


def read_toml(path: Path | str, *, what: str = "file") -> dict[str, Any]:
    """`parse_toml` of the file ``path`` (UTF-8, a byte-order mark dropped): a missing file is
    "``what`` not found", invalid UTF-8 names its line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{what} not found", path=str(path)) from None
    except IsADirectoryError:
        raise InputError(f"{what} is a folder, not a file", path=str(path)) from None
    except UnicodeDecodeError as err:
        raise InputError(f"not valid UTF-8 ({err.reason})", path=str(path), line=bad_utf8_line(path)) from None
    except OSError as err:
        raise InputError(f"cannot read the file ({err})", path=str(path)) from None
    return parse_toml(text, path)
