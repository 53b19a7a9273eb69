"""Whether a process that left something behind is gone: the one rule for pids recorded on disk.

A pid alone does not name a process for long: once it ends, the kernel hands the number to the
next process that starts. So whoever records a pid (a claim on a call, a run, the name of an
atomic write's temporary file) also records when that process started, as ``start_of`` reads it
(`process_start`; `own_start` for this process): ``"<boot id>:<pid namespace>:<start time>"`` —
this boot's id (``/proc/sys/kernel/random/boot_id``), the inode of the pid namespace
(``/proc/self/ns/pid``, one per container) and field 22 of ``/proc/<pid>/stat`` (clock ticks after
boot). `gone` then tells a live owner from a dead one whose pid another process now holds.
Where there is no ``/proc`` (macOS) the start is None and only the pid can be asked about.

Used by the store (claims and runs, `nepotism.store.database`) and by `nepotism._files`
(temporary files of interrupted writes).
"""

from __future__ import annotations

import os

__all__ = ["gone", "own_start", "process_start"]


def gone(pid: int, start: str | None = None) -> bool:
    """Whether the process that was ``pid`` on this host, started at ``start`` (`process_start`;
    None when unknown), has ended for good.

    * A start recorded in another pid namespace (another container sharing the host name and
      the folder or store) names a pid this process cannot look up: never gone here, whatever
      its boot id (a sandbox may have a boot id of its own).
    * A start of an earlier boot (another boot id) ended with that boot.
    * No such pid: gone. A pid we may not signal still exists (another user's).
    * A zombie is gone: killed, its parent not yet waiting for it, it holds its pid but does
      nothing more.
    * A pid alive with another start time is another process that reused the number: gone.

    Without ``/proc``, existing is all that can be told."""
    if start is not None:
        boot, namespace, _ = start.split(":", 2) if start.count(":") >= 2 else ("", "", "")
        if namespace != _pid_namespace():
            return False  # another container's pid (or an unreadable record): not ours to judge
        if _boot_id() not in (None, boot):
            return True  # recorded before this host last booted
    denied = False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        denied = True  # exists, another user's
    except OverflowError:
        return False  # no pid this system could have: not for us to remove
    stat = _stat(pid)
    if stat is None:  # gone since, or hidden (/proc mounted hidepid: another user's, alive)
        return _PROC and not denied
    if not stat:
        return False  # unreadable: assume it runs
    end = stat.rfind(b")")  # "pid (name) state ...": the name may hold parentheses and spaces
    if stat[end + 2 : end + 3] in (b"Z", b"X"):
        return True
    return start is not None and _start_of(stat) not in (None, start)


def process_start(pid: int) -> str | None:
    """When process ``pid`` of this host started (see the module docstring); None where ``/proc``
    cannot tell."""
    stat = _stat(pid)
    return _start_of(stat) if stat else None


_OWN: list[tuple[int, str | None]] = []


def own_start() -> str | None:
    """`process_start` of this process, read once (a forked child reads its own)."""
    pid = os.getpid()
    if not _OWN or _OWN[0][0] != pid:
        _OWN[:] = [(pid, process_start(pid))]
    return _OWN[0][1]


def _stat(pid: int) -> bytes | None:
    """``/proc/<pid>/stat`` (None: no such file; empty: it could not be read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError:
        return b""


def _start_of(stat: bytes) -> str | None:
    """The start identity from a ``/proc/<pid>/stat`` line of this pid namespace; None if the boot
    id, the namespace or field 22 cannot be read."""
    boot, namespace = _boot_id(), _pid_namespace()
    fields = stat[stat.rfind(b")") + 2 :].split()
    if boot is None or namespace is None or len(fields) < 20 or not fields[19].isdigit():
        return None
    return f"{boot}:{namespace}:{int(fields[19])}"  # fields[0] is field 3 (state): 22 is fields[19]


_BOOT_ID: list[str | None] = []


def _boot_id() -> str | None:
    if not _BOOT_ID:
        try:
            with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
                _BOOT_ID.append(handle.read().strip().replace(":", "") or None)
        except (OSError, ValueError):
            _BOOT_ID.append(None)
    return _BOOT_ID[0]


def _pid_namespace() -> str | None:
    """The inode of this process's pid namespace (the same for every process of a container)."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return None


#: Whether this host shows processes under /proc (Linux), for `gone`.
_PROC = os.path.exists("/proc/self/stat")
