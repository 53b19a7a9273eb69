"""Atomic output files: a file appears complete or not at all.

Every writer in nepotism goes through `atomic_write`: the content goes to a temporary file in the
target's folder (same file system, same suffixes so type-sniffing writers still work), which then
replaces the target with one rename. Temporary files get the usual permissions (0666 minus the
umask), not mkstemp's 0600. Several outputs that must land together use `temp_beside` for each and
rename them at the end. A temporary file's name holds the writer's process id
(``.NAME.PID.XXXX.SUFFIX``): a writer first removes the temporary files of the same target left by
processes that no longer exist (a killed export), so they do not pile up.
"""

from __future__ import annotations

import gzip
import os
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_bytes", "bad_utf8_line", "remove_stale_temps", "temp_beside",
           "write_files"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def temp_beside(target: str | os.PathLike[str]) -> Path:
    """A fresh, empty temporary file next to ``target`` with the same suffixes (``.csv.gz`` kept)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    suffix = "".join(target.suffixes[-2:]) if target.suffix == ".gz" else target.suffix
    remove_stale_temps(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=suffix, dir=target.parent)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())
    return Path(tmp)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def remove_stale_temps(target: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files of ``target`` (see `temp_beside`) whose writing process no
    longer exists on this machine; return them. Files of live processes are left alone."""
    target = Path(target)
    removed: list[Path] = []
    prefix = f".{target.name}."
    try:
        entries = list(target.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if not name.startswith(prefix):
            continue
        pid = name[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
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


def bad_utf8_line(path: str | os.PathLike[str]) -> int | None:
    """The 1-based line holding the first invalid UTF-8 of a text file (gunzipped for ``.gz``),
    for error messages that name a line rather than a byte offset; None if every line decodes or
    the file cannot be read."""
    path = Path(path)
    try:
        opener = gzip.open if path.suffix.lower() == ".gz" else open
        with opener(path, "rb") as raw:
            for number, line in enumerate(raw, start=1):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError:
                    return number
    except (OSError, EOFError, zlib.error):
        return None
    return None
