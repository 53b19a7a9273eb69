"""Process-side half of the sandbox: namespaces, mounts, limits, privilege drop, reaping.

This file is executed as a *script* by the host interpreter (``python -I -S -B _launcher.py
CONFIG``) in a new session, never imported by nepotism. It uses the standard library only. Three
processes are involved:

* the launcher L: enters new network/mount/pid/ipc/uts namespaces (and, when not root, a user
  namespace first), forks P1 and waits for it;
* P1, the reaper (pid 1 of the new pid namespace when that worked): makes mounts private, hides the
  invoking user's home and ``/root`` behind empty tmpfs (re-exposing only the interpreter's own
  directories, read-only), gives the candidate a fresh size-capped tmpfs as ``/tmp`` (also bound on
  ``/var/tmp`` and ``/dev/shm``), remounts ``/`` read-only and mounts a fresh ``/proc``; then forks C,
  enforces the wall deadline, and kills everything C left behind before reporting;
* C: applies rlimits, drops to the unprivileged sandbox uid, sets no_new_privs and execs the
  sandboxed interpreter on the driver.

Every step that fails is recorded (not fatal) so that the host can report what was actually
applied. L and P1 write one JSON object per line to the report fd. What it leaves out: seccomp
filters, cgroups (memory is bounded by RLIMIT_AS, not by a cgroup) and user-visible ``/sys``.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import sys
import time

TYPE_CHECKING = False  # (typing is not imported when the script runs: it starts every sandboxed call)
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any, NoReturn

    #: the launch configuration the host writes (`nepotism.sandbox._plan`), as JSON gives it
    _Config = dict[str, Any]
    #: {namespace: {"applied": bool, "why": str}}
    _Namespaces = dict[str, dict[str, Any]]

_CLONE = {  # name: (flag, constant name)
    "net": (0x40000000, "CLONE_NEWNET"),
    "mount": (0x00020000, "CLONE_NEWNS"),
    "pid": (0x20000000, "CLONE_NEWPID"),
    "ipc": (0x08000000, "CLONE_NEWIPC"),
    "uts": (0x04000000, "CLONE_NEWUTS"),
}
_CLONE_NEWUSER = 0x10000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_MOVE, _MS_REC, _MS_PRIVATE = 32, 4096, 8192, 16384, 1 << 18
_PR_SET_CHILD_SUBREAPER, _PR_SET_NO_NEW_PRIVS = 36, 38

_libc = ctypes.CDLL(None, use_errno=True)


class _Stop(Exception):
    """Raised in P1 by the deadline timer or by SIGTERM from the host."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(s: str | None) -> bytes | None:
        return None if s is None else s.encode()

    ret = _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))
    _check(ret, f"mount {target}")


def _prctl(option: int, value: int) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0), "prctl")


def _emit(fd: int, obj: dict[str, Any]) -> None:
    try:
        os.write(fd, (json.dumps(obj) + "\n").encode())
    except OSError:
        pass


def _write_file(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _enter_namespaces(cfg: _Config) -> _Namespaces:
    """Enter what we can; return {name: {"applied": bool, "why": str}}."""
    out: _Namespaces = {}
    if cfg["mode"] == "user":
        try:
            uid, gid = os.getuid(), os.getgid()
            _unshare(_CLONE_NEWUSER)
            _write_file("/proc/self/setgroups", "deny")
            _write_file("/proc/self/uid_map", f"{uid} {uid} 1")
            _write_file("/proc/self/gid_map", f"{gid} {gid} 1")
            out["user"] = {"applied": True, "why": "unprivileged user namespace"}
        except OSError as err:
            out["user"] = {"applied": False, "why": f"user namespace refused: {err}"}
            for name in _CLONE:
                out[name] = {"applied": False, "why": "needs root or a user namespace"}
            return out
    for name, (flag, const) in _CLONE.items():
        try:
            _unshare(flag)
            out[name] = {"applied": True, "why": f"unshare({const})"}
        except OSError as err:
            out[name] = {"applied": False, "why": str(err)}
    return out


def _setup_mounts(cfg: _Config, ns: _Namespaces) -> tuple[str, dict[str, str]]:
    """Run in P1. Returns (workdir, {step: ok-or-error}) ."""
    steps: dict[str, str] = {}
    if not ns["mount"]["applied"]:
        return cfg["fallback_workdir"], {"mounts": "no mount namespace"}
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    # Stage the directories to re-expose before hiding their parents.
    staged: list[tuple[str, str]] = []
    for i, (hidden, exposed) in enumerate(cfg["hide"]):
        for j, path in enumerate(exposed):
            stage = os.path.join(cfg["stage_dir"], f"{i}-{j}")
            try:
                _mount(path, stage, None, _MS_BIND | _MS_REC)
                staged.append((stage, path))
            except OSError as err:
                steps[f"expose {path}"] = str(err)
    for hidden, _exposed in cfg["hide"]:
        try:
            _mount("tmpfs", hidden, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=0755")
            steps[f"hide {hidden}"] = "ok"
        except OSError as err:
            steps[f"hide {hidden}"] = str(err)
    for stage, path in staged:
        try:
            os.makedirs(path, mode=0o755, exist_ok=True)
            _mount(stage, path, None, _MS_MOVE)
            _mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID)
            steps[f"expose {path}"] = "ok (read-only)"
        except OSError as err:
            steps[f"expose {path}"] = str(err)
    for hidden, _exposed in cfg["hide"]:
        try:
            _mount(None, hidden, None, _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
        except OSError:
            pass
    sid = cfg["uid"] if cfg["uid"] is not None else os.getuid()
    opts = f"size={cfg['tmpfs_mb']}m,mode=0700,uid={sid},gid={sid}"
    # The private /tmp is built aside (under the old /tmp, still visible), the interpreter's own
    # directories that live under /tmp (a virtualenv in /tmp, say) are bound into it read-only,
    # and the whole tree is then moved onto /tmp in one step.
    fresh = cfg["fresh_tmp"]
    _mount("tmpfs", fresh, "tmpfs", _MS_NOSUID | _MS_NODEV, opts)
    for path in cfg.get("tmp_expose", ()):
        target = os.path.join(fresh, os.path.relpath(path, "/tmp"))
        try:
            os.makedirs(target, mode=0o755, exist_ok=True)
            _mount(path, target, None, _MS_BIND | _MS_REC)
            _mount(None, target, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID)
            steps[f"expose {path}"] = "ok (read-only, inside the private /tmp)"
        except OSError as err:
            steps[f"expose {path}"] = str(err)
    _mount(fresh, "/tmp", None, _MS_MOVE)
    steps["private /tmp"] = f"tmpfs {cfg['tmpfs_mb']} MiB"
    for extra in ("/var/tmp", "/dev/shm"):
        if os.path.isdir(extra):
            try:
                _mount("/tmp", extra, None, _MS_BIND)
                steps[f"private {extra}"] = "bound to the private /tmp"
            except OSError as err:
                steps[f"private {extra}"] = str(err)
    try:
        _mount(None, "/", None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY)
        steps["read-only /"] = "ok"
    except OSError as err:
        steps["read-only /"] = str(err)
    if ns["pid"]["applied"]:
        try:
            _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
            steps["fresh /proc"] = "ok"
        except OSError as err:
            steps["fresh /proc"] = str(err)
    return "/tmp", steps


def _exec_candidate(cfg: _Config, workdir: str, report_fd: int, payload_fd: int) -> NoReturn:
    """Run in C: never returns."""
    try:
        os.set_inheritable(cfg["status_fd"], True)
        os.set_inheritable(payload_fd, True)
        os.set_inheritable(report_fd, False)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM, signal.SIGINT, signal.SIGALRM):
            signal.signal(sig, signal.SIG_DFL)
        for name, value in cfg["rlimits"].items():
            resource.setrlimit(getattr(resource, name), (value[0], value[1]))
        uid = cfg["uid"]
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            if os.getuid() != uid or os.geteuid() != uid:
                raise OSError("privilege drop did not take")
        _prctl(_PR_SET_NO_NEW_PRIVS, 1)
        os.chdir(workdir)
        env = dict(cfg["env"], HOME=workdir, TMPDIR=workdir)
        argv = [cfg["python"], "-I", "-B", "-c", cfg["driver"], str(payload_fd), str(cfg["status_fd"])]
        os.execve(cfg["python"], argv, env)
    except BaseException as err:  # noqa: BLE001 - report any failure to the host, then die
        _emit(report_fd, {"event": "setup_error", "where": "candidate", "error": repr(err)})
        os._exit(127)


def _children_of(pid: int) -> list[int]:
    found: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == pid:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(name))
    return found


def _reap_all(me: int) -> int:
    """Kill and reap every process left below P1 (P1 is their subreaper or pid-namespace init)."""
    killed: set[int] = set()
    if me == 1:
        # init of our own pid namespace: kill(-1) reaches every process in it, atomically w.r.t.
        # fork, so a fork bomb cannot outrun it. Never do this outside a pid namespace.
        killed.update(int(n) for n in os.listdir("/proc") if n.isdigit() and n != "1")
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for _ in range(200):
        kids = _children_of(me)
        for kid in kids:
            try:
                os.kill(kid, signal.SIGKILL)
                killed.add(kid)
            except ProcessLookupError:
                pass
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return len(killed)
            if pid == 0:
                break
        if not kids:
            time.sleep(0.005)
    return len(killed)


def _p1(cfg: _Config, ns: _Namespaces, report_fd: int) -> NoReturn:
    try:
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    except OSError:
        pass
    payload_fd = os.open(cfg["payload_path"], os.O_RDONLY)  # before /tmp is replaced
    try:
        workdir, steps = _setup_mounts(cfg, ns)
    except OSError as err:
        _emit(report_fd, {"event": "setup_error", "where": "mounts", "error": str(err)})
        os._exit(126)
    _emit(report_fd, {"event": "mounts", "steps": steps, "workdir": workdir})

    def on_signal(signum: int, _frame: FrameType | None) -> NoReturn:
        raise _Stop("timeout" if signum == signal.SIGALRM else "stopped")

    signal.signal(signal.SIGALRM, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    start = time.monotonic()
    child = os.fork()
    if child == 0:
        _exec_candidate(cfg, workdir, report_fd, payload_fd)
    os.close(cfg["status_fd"])
    os.close(payload_fd)
    result: dict[str, Any] = {"event": "exit", "stopped": None, "wait_status": None}
    try:
        signal.setitimer(signal.ITIMER_REAL, cfg["timeout"])
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == child:
                result["wait_status"] = status
                break
    except _Stop as stop:
        result["stopped"] = stop.why
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    result["elapsed"] = time.monotonic() - start
    if result["wait_status"] is None:
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            _, status = os.waitpid(child, 0)
            result["wait_status"] = status
        except ChildProcessError:
            pass
    result["strays_killed"] = _reap_all(os.getpid())
    _emit(report_fd, result)
    os._exit(0)


def _main() -> NoReturn:
    with open(sys.argv[1]) as fh:
        cfg: _Config = json.load(fh)
    report_fd = cfg["report_fd"]
    ns = _enter_namespaces(cfg)
    _emit(report_fd, {"event": "namespaces", "namespaces": ns})
    p1 = os.fork()
    if p1 == 0:
        try:
            _p1(cfg, ns, report_fd)
        finally:
            os._exit(125)
    _emit(report_fd, {"event": "reaper", "pid": p1})
    os.close(cfg["status_fd"])
    os.close(report_fd)
    signal.signal(signal.SIGTERM, lambda *_: os.kill(p1, signal.SIGTERM))
    while True:
        try:
            _, status = os.waitpid(p1, 0)
            break
        except ChildProcessError:
            status = 0
            break
    os._exit(0 if os.waitstatus_to_exitcode(status) == 0 else 1)


if __name__ == "__main__":
    _main()
