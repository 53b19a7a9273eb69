"""Run one untrusted Python program (plus its tests) in a contained child and classify the outcome.

`run` starts ``_launcher.py`` with the host interpreter in a new session; the launcher enters new
namespaces, drops to a fresh unnamed uid when we are root, applies rlimits and execs the sandboxed
interpreter (``python -I -B``) on ``_driver.py``. This module collects stdout/stderr (capped), the
driver's status line and the launcher's report, enforces a backstop deadline, kills whatever is left
(process group, then every process of the sandbox uid) and removes the run directory.

Statuses: ``passed`` (exit 0 after the tests ran; with ``tests=None`` exit 0 alone counts as passed),
``failed`` (an AssertionError raised by the tests), ``error`` (any other exception or non-zero exit,
including exiting before the tests finished), ``timeout`` (wall deadline), ``killed`` (a signal, a
MemoryError under RLIMIT_AS, EFBIG under RLIMIT_FSIZE, or output beyond ``max_output_kb``).
A failure of the sandbox itself raises `SandboxError`: it is not the candidate's outcome.
What it leaves out: seccomp, cgroups, CPU pinning, and defending a candidate's own tests against it.
"""

from __future__ import annotations

import errno
import json
import math
import os
import secrets
import selectors
import shutil
import signal as _signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nepotism.errors import NepotismError
from nepotism.sandbox import _plan

__all__ = ["STATUSES", "SandboxError", "SandboxResult", "run"]

#: Every status `run` can return.
STATUSES = ("passed", "failed", "error", "timeout", "killed")

_HERE = Path(__file__).resolve().parent
_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
_NOFILE = 256
_GRACE_S = 5.0
_MIB = 1024 * 1024


class SandboxError(NepotismError, RuntimeError):
    """The sandbox itself could not be set up or did not report; no verdict on the candidate."""


@dataclass(frozen=True)
class SandboxResult:
    """Outcome of one `run`. ``returncode`` is negative (minus the signal) when killed by a signal."""

    status: str
    stdout: str
    stderr: str
    duration_s: float
    returncode: int | None
    signal: str | None
    isolation: dict[str, Any] = field(hash=False)
    detail: str = ""


def _rlimits(timeout: float, memory_mb: int, nproc: int, max_file_mb: int) -> dict[str, list[int]]:
    cpu = math.ceil(timeout) + 1
    return {
        "RLIMIT_CPU": [cpu, cpu + 1],
        "RLIMIT_AS": [memory_mb * _MIB, memory_mb * _MIB],
        "RLIMIT_NPROC": [nproc, nproc],
        "RLIMIT_FSIZE": [max_file_mb * _MIB, max_file_mb * _MIB],
        "RLIMIT_NOFILE": [_NOFILE, _NOFILE],
        "RLIMIT_CORE": [0, 0],
    }


def _validate(timeout: float, memory_mb: int, max_processes: int, max_file_mb: int, max_output_kb: int, python: str) -> None:
    if not timeout > 0:
        raise ValueError("timeout must be positive")
    for name, value in (
        ("memory_mb", memory_mb),
        ("max_processes", max_processes),
        ("max_file_mb", max_file_mb),
        ("max_output_kb", max_output_kb),
    ):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer")
    if memory_mb < 32:
        raise ValueError("memory_mb below 32 cannot start a Python interpreter")
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise ValueError(f"python interpreter not found or not executable: {python}")


class _Capture:
    """Keeps the first ``cap`` bytes of a stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap, self.data, self.total = cap, bytearray(), 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    @property
    def over(self) -> bool:
        return self.total > self.cap

    def text(self) -> str:
        out = self.data.decode("utf-8", errors="replace")
        if self.over:
            out += f"\n[nepotism.sandbox: output truncated at {self.cap // 1024} KiB]"
        return out


def _kill_uid(uid: int) -> int:
    killed: set[int] = set()
    for _ in range(100):
        pids = _plan.processes_of_uid(uid)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, _signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.01)
    return len(killed)


def _sweep_files(uid: int) -> int:
    """Without a mount namespace: remove what the sandbox uid left in world-writable dirs."""
    removed = 0
    for top in ("/tmp", "/var/tmp", "/dev/shm"):
        for dirpath, dirnames, filenames in os.walk(top, topdown=False, onerror=lambda e: None):
            for name in filenames + dirnames:
                path = os.path.join(dirpath, name)
                try:
                    if os.lstat(path).st_uid != uid:
                        continue
                    if os.path.isdir(path) and not os.path.islink(path):
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        os.unlink(path)
                    removed += 1
                except OSError:
                    pass
    return removed


def _pump(proc: subprocess.Popen[bytes], fds: dict[int, _Capture | _Lines], deadline: float, on_over: Callable[[], None]) -> bool:
    """Drain all fds until the launcher exits (and pipes close); True if the backstop fired."""
    sel = selectors.DefaultSelector()
    for fd in fds:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    exited_at = None
    try:
        while sel.get_map():
            now = time.monotonic()
            if proc.poll() is not None:
                exited_at = exited_at or now
                if now - exited_at > 0.5:
                    return False
            if now > deadline:
                return True
            for key, _ in sel.select(timeout=0.05):
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                sink = fds[key.fd]
                sink.feed(chunk)
                if isinstance(sink, _Capture) and sink.over:
                    on_over()
        return False
    finally:
        sel.close()


class _Lines:
    def __init__(self) -> None:
        self.buf = bytearray()

    def feed(self, chunk: bytes) -> None:
        if len(self.buf) < 4 * _MIB:
            self.buf += chunk

    def records(self) -> list[dict[str, Any]]:
        out = []
        for line in bytes(self.buf).splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict):
                out.append(rec)
        return out


def _classify(
    tests: str | None,
    rc: int | None,
    sig: str | None,
    stopped: str | None,
    host_timeout: bool,
    over: bool,
    driver: dict[str, Any],
) -> tuple[str, str]:
    if host_timeout or stopped == "timeout":
        return "timeout", "wall-clock deadline reached"
    if over:
        return "killed", "output limit exceeded"
    if sig is not None:
        return "killed", f"terminated by {sig}"
    if rc == 0:
        if driver.get("done") or tests is None:
            return "passed", "exit 0" if tests is None and not driver.get("done") else "tests passed"
        return "error", "exited with status 0 before the tests finished"
    if driver:
        exc = driver.get("exc", "")
        if driver.get("memory"):
            return "killed", "MemoryError (RLIMIT_AS)"
        if driver.get("errno") == errno.EFBIG:
            return "killed", "file size limit (RLIMIT_FSIZE)"
        if driver.get("assertion") and driver.get("phase") == "tests":
            return "failed", f"{exc} in the tests"
        return "error", f"{exc} in the {driver.get('phase')}"
    return "error", f"exit status {rc}"


def run(
    code: str,
    *,
    tests: str | None = None,
    timeout: float = 10.0,
    memory_mb: int = 512,
    max_processes: int = 64,
    max_file_mb: int = 16,
    max_output_kb: int = 256,
    python: str = sys.executable,
) -> SandboxResult:
    """Run ``code`` then ``tests`` in the sandbox and return what happened (see module docstring)."""
    _validate(timeout, memory_mb, max_processes, max_file_mb, max_output_kb, python)
    root = os.geteuid() == 0
    uid = _plan.pick_uid() if root else None
    nproc = max_processes if root else len(_plan.processes_of_uid(os.getuid())) + max_processes
    hides = _plan.hide_plan(python, dropping_uid=root)
    rlimits = _rlimits(timeout, memory_mb, nproc, max_file_mb)
    token = secrets.token_hex(16)
    run_root = tempfile.mkdtemp(prefix="nepotism-sandbox-")
    pipes: list[int] = []
    try:
        os.chmod(run_root, 0o711)
        stage = os.path.join(run_root, "stage")
        os.mkdir(stage, 0o700)
        for i, (_hidden, exposed) in enumerate(hides):
            for j, _path in enumerate(exposed):
                os.mkdir(os.path.join(stage, f"{i}-{j}"), 0o700)
        fresh_tmp = os.path.join(run_root, "fresh-tmp")
        os.mkdir(fresh_tmp, 0o700)
        work = os.path.join(run_root, "work")
        os.mkdir(work, 0o700)
        if uid is not None:
            os.chown(work, uid, uid)
        payload = os.path.join(run_root, "payload.json")
        _write_private(payload, {"code": code, "tests": tests, "token": token})
        status_r, status_w = os.pipe()
        report_r, report_w = os.pipe()
        pipes += [status_r, status_w, report_r, report_w]
        cfg = {
            "mode": "root" if root else "user",
            "uid": uid,
            "python": python,
            "driver": (_HERE / "_driver.py").read_text(),
            "payload_path": payload,
            "status_fd": status_w,
            "report_fd": report_w,
            "timeout": float(timeout),
            "rlimits": rlimits,
            "hide": hides,
            "stage_dir": stage,
            "fresh_tmp": fresh_tmp,
            "tmp_expose": _plan.dirs_under("/tmp", _plan.interpreter_dirs(python)),
            "fallback_workdir": work,
            "tmpfs_mb": max(64, 4 * max_file_mb),
            "env": _ENV,
        }
        config = os.path.join(run_root, "config.json")
        _write_private(config, cfg)
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-B", str(_HERE / "_launcher.py"), config],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(status_w, report_w),
            start_new_session=True,
            env=dict(_ENV),
            cwd=run_root,
        )
        for fd in (status_w, report_w):
            os.close(fd)
            pipes.remove(fd)
        out, err = _Capture(max_output_kb * 1024), _Capture(max_output_kb * 1024)
        status_lines, report_lines = _Lines(), _Lines()
        stopping: dict[str, bool] = {"over": False}

        def on_over() -> None:
            if stopping["over"]:
                return
            stopping["over"] = True
            reaper = next((r.get("pid") for r in report_lines.records() if r.get("event") == "reaper"), None)
            _signal_quietly(reaper, _signal.SIGTERM)

        stdout, stderr = proc.stdout, proc.stderr  # pipes: Popen was given PIPE for both
        assert stdout is not None and stderr is not None
        fds: dict[int, _Capture | _Lines] = {
            stdout.fileno(): out,
            stderr.fileno(): err,
            status_r: status_lines,
            report_r: report_lines,
        }
        host_timeout = _pump(proc, fds, started + timeout + _GRACE_S, on_over)
        _killpg_quietly(proc.pid)
        proc.wait()
        duration = time.monotonic() - started
        stdout.close()
        stderr.close()
        strays_host = _kill_uid(uid) if uid is not None else 0
        reports = report_lines.records()
        return _result(
            tests,
            reports,
            status_lines.records(),
            token,
            out,
            err,
            host_timeout,
            stopping["over"],
            duration,
            uid,
            rlimits,
            hides,
            strays_host,
        )
    finally:
        for fd in pipes:
            os.close(fd)
        shutil.rmtree(run_root, ignore_errors=True)


def _result(
    tests: str | None,
    reports: list[dict[str, Any]],
    statuses: list[dict[str, Any]],
    token: str,
    out: _Capture,
    err: _Capture,
    host_timeout: bool,
    over: bool,
    duration: float,
    uid: int | None,
    rlimits: dict[str, list[int]],
    hides: list[tuple[str, list[str]]],
    strays_host: int,
) -> SandboxResult:
    by_event: dict[str, dict[str, Any]] = {}
    for rec in reports:
        by_event.setdefault(str(rec.get("event")), rec)
    if "setup_error" in by_event:
        bad = by_event["setup_error"]
        raise SandboxError(f"sandbox setup failed ({bad.get('where')}): {bad.get('error')}")
    exit_rec = by_event.get("exit")
    if exit_rec is None and not host_timeout and not over:
        raise SandboxError("the sandbox reaper did not report; stderr: " + err.text()[-2000:])
    exit_rec = exit_rec or {}
    driver = next((s for s in statuses if s.get("token") == token), {})
    rc, sig = None, None
    wait_status = exit_rec.get("wait_status")
    if wait_status is not None:
        rc = os.waitstatus_to_exitcode(wait_status)
        if rc < 0:
            sig = _signal.Signals(-rc).name
    stopped = exit_rec.get("stopped")
    status, detail = _classify(tests, rc, sig, stopped, host_timeout, over, driver)
    strays_sandbox = int(exit_rec.get("strays_killed") or 0)
    mounts = by_event.get("mounts", {})
    files_swept = 0
    if uid is not None and not by_event.get("namespaces", {}).get("namespaces", {}).get("mount", {}).get("applied"):
        files_swept = _sweep_files(uid)
    isolation = _isolation(by_event, mounts, uid, rlimits, hides, strays_sandbox + strays_host, files_swept)
    duration_s = float(exit_rec.get("elapsed", duration))
    return SandboxResult(status, out.text(), err.text(), duration_s, rc, sig, isolation, detail)


def _isolation(
    by_event: dict[str, dict[str, Any]],
    mounts: dict[str, Any],
    uid: int | None,
    rlimits: dict[str, list[int]],
    hides: list[tuple[str, list[str]]],
    strays: int,
    files_swept: int,
) -> dict[str, Any]:
    ns = by_event.get("namespaces", {}).get("namespaces", {})
    net = ns.get("net", {"applied": False, "why": "launcher did not report"})
    if uid is not None:
        user = {"dropped": True, "uid": uid, "why": "root: fresh unnamed uid for this run"}
    else:
        user = {
            "dropped": False,
            "uid": os.getuid(),
            "why": "not root: cannot change uid; RLIMIT_NPROC is set relative to this uid's live processes",
        }
    return {
        "network": {"isolated": bool(net.get("applied")), "why": net.get("why", "")},
        "namespaces": ns,
        "user": user,
        "mounts": mounts.get("steps", {}),
        "workdir": mounts.get("workdir"),
        "hidden": [h for h, _ in hides],
        "rlimits": rlimits,
        "env": sorted([*_ENV, "HOME", "TMPDIR"]),
        "strays_killed": strays,
        "files_swept": files_swept,
    }


def _write_private(path: str, obj: Any) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(obj, fh)


def _signal_quietly(pid: int | None, sig: int) -> None:
    if pid:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _killpg_quietly(pgid: int) -> None:
    try:
        os.killpg(pgid, _signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
