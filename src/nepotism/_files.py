"""Atomic output files: a file appears complete or not at all.

Every writer in nepotism goes through `atomic_write`: the content goes to a temporary file in the
target's folder (same file system, same suffixes so type-sniffing writers still work), which then
replaces the target with one rename. Temporary files get the usual permissions (0666 minus the
umask), not mkstemp's 0600. Several outputs that must land together use `temp_beside` for each and
rename them at the end. A temporary file's name holds the writer's process id and, where ``/proc``
tells it, the process's start (`nepotism._process.own_start`, ``:`` written ``_``):
``.NAME.PID.START.XXXX.SUFFIX`` (``.NAME.PID.XXXX.SUFFIX`` without it, or when the name would be
longer than the file system allows: a target of a long name is written as before). A writer first removes the
temporary files of the same target whose writer is gone (`nepotism._process.gone`: a killed
export, also when its pid now belongs to another process), so they do not pile up; a live
writer's file, or one written in another pid namespace, is left alone.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nepotism._process import gone, own_start
from nepotism.errors import InputError
from nepotism.input_limits import bad_utf8_line, check_value, numbered_lines, open_text, too_deep

__all__ = [
    "atomic_write",
    "atomic_write_bytes",
    "base_suffix",
    "current_umask",
    "is_store",
    "iter_jsonl_rows",
    "jsonl_rows",
    "parse_json_line",
    "remove_stale_temps",
    "temp_beside",
    "unreadable",
    "write_files",
]


def current_umask() -> int:
    """The process's file-mode creation mask (read by setting and restoring it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def temp_beside(target: str | os.PathLike[str]) -> Path:
    """A fresh, empty temporary file next to ``target`` with the same suffixes (``.csv.gz`` kept)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    suffix = _temp_suffix(target)
    remove_stale_temps(target)
    writer, start = f"{os.getpid()}.", own_start()
    if start is not None:
        marked = f"{writer}{start.replace(':', '_')}."
        # a name too long for the start as well keeps the pid only (`remove_stale_temps` reads both)
        if len(os.fsencode(f".{target.name}.{marked}{'x' * 8}{suffix}")) <= _name_max(target.parent):
            writer = marked
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{writer}", suffix=suffix, dir=target.parent)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~current_umask())
    return Path(tmp)


def _name_max(folder: Path) -> int:
    """The longest file name ``folder``'s file system takes, in bytes (255 where it cannot say)."""
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255


def _temp_suffix(target: Path) -> str:
    """The suffixes a temporary file of ``target`` ends with (``.csv.gz`` kept whole)."""
    return "".join(target.suffixes[-2:]) if target.suffix == ".gz" else target.suffix


def _writer(middle: str) -> tuple[int, str | None] | None:
    """(pid, start or None) from the part of a temporary file's name between ``.NAME.`` and its
    suffix: ``PID.START.RANDOM`` or ``PID.RANDOM``; None for any other file."""
    fields = middle.split(".")
    if len(fields) not in (2, 3) or not fields[0].isdigit():
        return None
    return int(fields[0]), fields[1].replace("_", ":") if len(fields) == 3 else None


def remove_stale_temps(target: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files of ``target`` (see `temp_beside`) whose writing process is gone
    (`nepotism._process.gone`: no such pid, a zombie, or the pid now another process's by the
    start in the name); return them. Files of live writers are left alone."""
    target = Path(target)
    removed: list[Path] = []
    prefix, suffix = f".{target.name}.", _temp_suffix(target)
    try:
        entries = list(target.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if not name.startswith(prefix) or not name.endswith(suffix) or len(name) <= len(prefix) + len(suffix):
            continue
        writer = _writer(name[len(prefix) : len(name) - len(suffix)])
        if writer is not None and gone(*writer):
            try:
                entry.unlink()
                removed.append(entry)
            except OSError:
                pass
    return removed


def atomic_write(target: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``target``, then rename it onto ``target``."""
    target = Path(target)
    tmp = temp_beside(target)
    try:
        write(tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def atomic_write_bytes(target: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``target`` atomically."""
    return atomic_write(target, lambda tmp: tmp.write_bytes(data))


def write_files(folder: str | os.PathLike[str], payloads: dict[str, bytes]) -> dict[str, Path]:
    """Write each ``{name: bytes}`` into ``folder`` (created) atomically; return the paths by name."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    return {name: atomic_write_bytes(out / name, data) for name, data in payloads.items()}


# -- reading JSON Lines (no pandas: a run reads its dataset without importing it) -----------


def is_store(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an SQLite file (a nepotism store): its first 16 bytes say so."""
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def base_suffix(path: Path) -> str:
    """The file's type suffix, lower case, under a ``.gz`` (``x.JSONL.gz`` -> ``.jsonl``)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def unreadable(path: Path, err: BaseException, what: str) -> InputError:
    """The `InputError` for a file that cannot be decoded: invalid UTF-8 (with its line), or a
    ``.gz`` that is not (intact) gzip."""
    if isinstance(err, UnicodeDecodeError):
        return InputError(f"not valid UTF-8 ({err.reason})", path=str(path), line=bad_utf8_line(path))
    if isinstance(err, (gzip.BadGzipFile, EOFError, zlib.error)):
        return InputError(
            f"not a valid gzip file ({err or type(err).__name__}); a name ending in .gz needs gzip content", path=str(path)
        )
    return InputError(f"cannot read the file as {what} ({err})", path=str(path))


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object's dict, refusing a key that appears twice (JSON leaves it undefined; Python
    would silently keep the last value)."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate_escape(text: str | bytes) -> bool:
    """Whether JSON ``text`` holds a ``\\uD800``-``\\uDFFF`` escape: the only way a parsed JSON
    value can hold a lone surrogate (half of a pair, or a pair's halves in the wrong order)."""
    if isinstance(text, bytes):
        return _SURROGATE_ESCAPE_BYTES.search(text) is not None
    return _SURROGATE_ESCAPE.search(text) is not None


def without_lone_surrogates(value: Any) -> Any:
    """Parsed JSON ``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD,
    as bytes that are not UTF-8 are read: it is no character, and no UTF-8 file or SQLite row can
    hold it. A model server's answer is data, not input to refuse (`has_surrogate_escape` says when
    to call this)."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {without_lone_surrogates(k): without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_lone_surrogates(v) for v in value]
    return value


def _lone_surrogate(value: object, field: str | None = None) -> tuple[str | None] | None:
    """``(field,)`` of the first string in ``value`` (a key or a value; ``field`` the top-level key
    holding it) with a lone UTF-16 surrogate, else None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return (field,)
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            top = key if field is None else field
            found = _lone_surrogate(key, top) or _lone_surrogate(item, top)
            if found:
                return found
    elif isinstance(value, list):
        for item in value:
            found = _lone_surrogate(item, field)
            if found:
                return found
    return None


def parse_json_line(text: str, path: str, line: int | None) -> object:
    """One JSON value from one line of ``path`` (``line`` None: ``text`` is the whole file, and a
    syntax error names its own line): `InputError` naming the line for invalid JSON,
    a key repeated within an object (the key is the field), nesting too deep to read, or a
    ``\\uD800``-style escape of a lone surrogate (valid JSON, but no text: it cannot be written as
    UTF-8 anywhere, so it would fail later in a store, a table or a report)."""
    try:
        value = json.loads(text, object_pairs_hook=_unique_object)
    except json.JSONDecodeError as err:
        raise InputError(f"not valid JSON ({err.msg})", path=path, line=err.lineno if line is None else line) from None
    except _DuplicateKey as err:
        raise InputError("a key appears twice in one JSON object", path=path, line=line, field=err.key) from None
    except RecursionError:
        raise too_deep(path, line) from None
    check_value(value, path, line, text=text)  # nesting and the length of every string
    if has_surrogate_escape(text):  # only an escape can make one (the line itself is UTF-8)
        found = _lone_surrogate(value)  # (within the depth limit: no recursion error)
        if found:
            raise InputError(
                "a \\u escape of a lone surrogate (no character: the text is not valid Unicode)",
                path=path,
                line=line,
                field=found[0],
            )
    return value


def jsonl_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line, object)`` for each non-blank line of a JSONL file (optionally gzipped); an
    `InputError` naming the file and line for invalid UTF-8 or JSON, a line that is not an object
    or a key repeated in one (the field). The readers of tables, importers and a run's dataset
    share it; it needs no pandas (a run that reads a JSON Lines dataset does not import it)."""
    return list(iter_jsonl_rows(path))


def iter_jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """`jsonl_rows` one line at a time, for a reader that keeps only some rows (memory bounded
    by what it keeps, not by the file): the same checks and errors, raised at the line."""
    try:
        with open_text(path, newline="") as handle:
            for number, text in numbered_lines(handle, path):
                if not text.strip():
                    continue
                value = parse_json_line(text, str(path), number)
                if not isinstance(value, dict):
                    raise InputError("each line must be a JSON object", path=str(path), line=number)
                yield number, value
    except (UnicodeDecodeError, OSError, EOFError, zlib.error) as err:
        raise unreadable(path, err, "JSON Lines") from None
