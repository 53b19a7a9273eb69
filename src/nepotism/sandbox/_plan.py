"""Host-side planning for one sandbox run: which uid, which directories to hide and re-expose.

Kept apart from `runner` so that the decisions can be tested without starting processes. Nothing
here changes the machine: it reads ``/proc``, the password database and file modes only.
"""

from __future__ import annotations

import functools
import os
import pwd
import secrets
import stat
import subprocess
import sys
import tempfile

__all__: list[str] = []

#: Range of numeric uids used for runs when we are root: unnamed, one per run, never reused while
#: a process of that uid exists, so RLIMIT_NPROC and the final sweep see only that run's processes.
_UID_LOW, _UID_HIGH = 1_600_000_000, 1_900_000_000

#: Directories that must never be hidden, nor have a hidden ancestor: the system itself.
_SYSTEM = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/dev", "/proc", "/sys")


def _is_within(path: str, parent: str) -> bool:
    path, parent = os.path.normpath(path), os.path.normpath(parent)
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def processes_of_uid(uid: int) -> list[int]:
    """Pids (host namespace) whose real uid is ``uid``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as fh:
                for line in fh:
                    if line.startswith(b"Uid:"):
                        if int(line.split()[1]) == uid:
                            found.append(int(name))
                        break
        except (OSError, ValueError, IndexError):
            continue
    return found


def pick_uid() -> int:
    """A uid with no passwd entry and no live process."""
    for _ in range(100):
        uid = _UID_LOW + secrets.randbelow(_UID_HIGH - _UID_LOW)
        try:
            pwd.getpwuid(uid)
            continue
        except KeyError:
            pass
        if not processes_of_uid(uid):
            return uid
    raise RuntimeError("could not find a free sandbox uid")


@functools.lru_cache(maxsize=16)
def interpreter_dirs(python: str) -> tuple[str, ...]:
    """Directories the interpreter needs to start: its prefix, base prefix and real bin dir."""
    real = os.path.realpath(python)
    if os.path.realpath(sys.executable) == real and os.path.abspath(python) == os.path.abspath(sys.executable):
        prefixes = [sys.prefix, sys.base_prefix]
    else:
        out = subprocess.run(
            [python, "-I", "-S", "-c", "import sys; print(sys.prefix); print(sys.base_prefix)"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        prefixes = out.stdout.split("\n")[:2]
    dirs = {os.path.realpath(p) for p in prefixes if p} | {os.path.dirname(real)}
    dirs |= {os.path.dirname(os.path.abspath(python))}
    minimal = sorted(d for d in dirs if not any(o != d and _is_within(d, o) for o in dirs))
    return tuple(minimal)


def dirs_under(root: str, dirs: tuple[str, ...]) -> list[str]:
    """The directories of ``dirs`` inside ``root`` (e.g. a virtualenv under /tmp, which the
    sandbox's private /tmp would otherwise hide from the interpreter)."""
    real_root = os.path.realpath(root)
    return [d for d in dirs if d != real_root and _is_within(d, real_root)]


def _first_closed_ancestor(path: str) -> str | None:
    """The first directory on ``path`` that 'others' cannot traverse, if any."""
    current = "/"
    for part in os.path.normpath(path).strip("/").split("/"):
        current = os.path.join(current, part)
        try:
            mode = os.stat(current).st_mode
        except OSError:
            return None
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return current
    return None


def hide_plan(python: str, *, dropping_uid: bool) -> list[tuple[str, list[str]]]:
    """[(directory to hide behind an empty tmpfs, [interpreter dirs under it to re-expose])]."""
    needed = interpreter_dirs(python)
    candidates = {"/root", os.path.expanduser("~")}
    try:
        candidates.add(pwd.getpwuid(os.geteuid()).pw_dir)
    except KeyError:
        pass
    if dropping_uid:
        candidates |= {a for a in map(_first_closed_ancestor, needed) if a}
    keep_visible = _SYSTEM + (tempfile.gettempdir(),)
    hides = []
    for cand in candidates:
        if not cand or not os.path.isabs(cand) or not os.path.isdir(cand) or cand == "/":
            continue
        cand = os.path.realpath(cand)
        if any(_is_within(sysdir, cand) for sysdir in keep_visible):
            continue
        if any(_is_within(cand, d) for d in needed):
            continue
        hides.append(cand)
    hides = sorted({h for h in hides if not any(o != h and _is_within(h, o) for o in hides)})
    return [(h, [d for d in needed if _is_within(d, h) and d != h]) for h in hides]
