"""Hostile programs: each must be contained, reported with a fitting status, and leave the host as it was.

Every test uses its own markers and directories so the file can run in parallel (pytest-xdist).
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

import pytest

import nepotism
from nepotism.sandbox import _plan, run, sandbox_capabilities

BAD = {"error", "killed", "timeout"}


@pytest.fixture(scope="module")
def caps():
    return sandbox_capabilities()


def _marker() -> str:
    return "nepotism_hostile_" + uuid.uuid4().hex


def _processes_with(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    found.append(int(name))
        except OSError:
            continue
    return found


def _assert_clean(res, marker: str | None = None) -> None:
    """Nothing of the run is left alive: no process of its uid, none carrying its marker."""
    uid = res.isolation["user"]["uid"]
    if res.isolation["user"]["dropped"]:
        assert _plan.processes_of_uid(uid) == []
    if marker is not None:
        assert _processes_with(marker) == []


def test_fork_bomb():
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    res = run(code, timeout=1.5, max_processes=32)
    assert res.status in BAD
    _assert_clean(res)


def test_memory_bomb():
    res = run("x = []\nwhile True:\n    x.append(bytearray(10**7))\n", memory_mb=128)
    assert res.status == "killed"
    assert "MemoryError" in res.detail
    _assert_clean(res)


def test_cpu_infinite_loop():
    res = run("while True:\n    pass\n", timeout=1)
    assert res.status in {"timeout", "killed"}
    _assert_clean(res)


def test_sleep_loop_hits_wall_deadline():
    res = run("import time\nwhile True:\n    time.sleep(0.05)\n", timeout=0.8)
    assert res.status == "timeout"
    _assert_clean(res)


def test_children_that_outlive_the_parent():
    marker = _marker()
    code = (
        "import subprocess, sys\n"
        f"for _ in range(3):\n"
        f"    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', '{marker}'])\n"
        "print('parent done')\n"
    )
    res = run(code, timeout=60)  # a deadline it should not meet, even on a loaded machine
    assert res.status == "passed" and "parent done" in res.stdout
    _assert_clean(res, marker)


def test_daemonised_grandchild_with_setsid_and_double_fork():
    marker = _marker()
    code = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        os.closerange(0, 3)\n"
        f"        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', '{marker}'])\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        "time.sleep(0.3)\n"
    )
    res = run(code, timeout=60)  # a deadline it should not meet, even on a loaded machine
    assert res.status == "passed"
    _assert_clean(res, marker)


def test_writes_to_real_home_and_root(monkeypatch, tmp_path):
    home = tmp_path / "home"
    home.mkdir(mode=0o777)
    home.chmod(0o777)
    monkeypatch.setenv("HOME", str(home))
    marker = _marker()
    targets = [home / marker, Path("/root") / marker, Path(os.path.expanduser("~")) / (marker + "2")]
    code = (
        "import os\nfor p in %r:\n    try:\n        open(p, 'w').write('pwned')\n        print('WROTE', p)\n    except OSError as e:\n        print('refused', p, e)\n"
        % [str(t) for t in targets]
    )
    try:
        res = run(code)
        for target in targets:
            assert not target.exists()
        _assert_clean(res)
    finally:
        for target in targets:
            target.unlink(missing_ok=True)


def test_writes_to_shared_tmp_do_not_land_on_host():
    marker = _marker()
    targets = [f"/tmp/{marker}", f"/var/tmp/{marker}", f"/dev/shm/{marker}"]
    code = "for p in %r:\n    try:\n        open(p, 'w').write('pwned')\n    except OSError as e:\n        print(e)\n" % targets
    try:
        res = run(code)
        for target in targets:
            assert not os.path.exists(target)
        _assert_clean(res)
    finally:
        for target in targets:
            if os.path.exists(target):
                os.unlink(target)


def test_environment_secrets_are_invisible(monkeypatch):
    secret = _marker()
    monkeypatch.setenv("NEPOTISM_FAKE_API_KEY", secret)
    code = (
        "import os\n"
        "print(dict(os.environ))\n"
        "for p in ('/proc/self/environ', '/proc/1/environ', f'/proc/{os.getppid()}/environ'):\n"
        "    try:\n"
        "        print(open(p, 'rb').read())\n"
        "    except OSError as e:\n"
        "        print(p, e)\n"
    )
    res = run(code)
    assert secret not in res.stdout and secret not in res.stderr
    assert "NEPOTISM_FAKE_API_KEY" not in res.stdout


def test_planted_netrc_of_invoking_user_is_unreadable(monkeypatch, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    secret = _marker()
    netrc = home / ".netrc"
    netrc.write_text(f"machine example.org login me password {secret}\n")
    netrc.chmod(0o644)
    monkeypatch.setenv("HOME", str(home))
    code = (
        "import os\n"
        f"for p in ({str(netrc)!r}, os.path.expanduser('~/.netrc'), '/root/.netrc'):\n"
        "    try:\n"
        "        print(open(p).read())\n"
        "    except OSError as e:\n"
        "        print('unreadable', p, e)\n"
    )
    res = run(code)
    assert secret not in res.stdout and secret not in res.stderr
    assert "unreadable" in res.stdout


def test_loopback_listener_gets_no_connection(caps):
    if not caps["network_isolated"]:
        pytest.skip("no network namespace here: " + caps["network_why"])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    try:
        code = (
            "import socket\n"
            "s = socket.socket()\n"
            "s.settimeout(2)\n"
            "try:\n"
            f"    s.connect(('127.0.0.1', {port}))\n"
            "    print('CONNECTED')\n"
            "except OSError as e:\n"
            "    print('no route', e)\n"
        )
        res = run(code)
        assert "CONNECTED" not in res.stdout and "no route" in res.stdout
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()


def test_outside_address_unreachable(caps):
    if not caps["network_isolated"]:
        pytest.skip("no network namespace here: " + caps["network_why"])
    code = (
        "import socket\n"
        "for host in ('1.1.1.1', '8.8.8.8', '10.0.0.1'):\n"
        "    try:\n"
        "        socket.create_connection((host, 53), timeout=1)\n"
        "        print('CONNECTED', host)\n"
        "    except OSError as e:\n"
        "        print('blocked', host, e)\n"
        "try:\n"
        "    socket.getaddrinfo('example.org', 80)\n"
        "    print('RESOLVED')\n"
        "except OSError as e:\n"
        "    print('no dns', e)\n"
    )
    res = run(code)
    assert "CONNECTED" not in res.stdout and "RESOLVED" not in res.stdout
    assert res.stdout.count("blocked") == 3


def test_signal_games_do_not_touch_the_host(caps):
    if not caps["kill_all_contained"]:
        pytest.skip("kill(-1) cannot be contained without a uid drop or pid namespace")
    me = os.getpid()
    code = (
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "for target in (os.getppid(), 1, %d):\n"
        "    try:\n"
        "        os.kill(target, signal.SIGKILL)\n"
        "    except OSError as e:\n"
        "        print('kill', target, e)\n"
        "try:\n"
        "    os.killpg(0, signal.SIGKILL)\n"
        "except OSError as e:\n"
        "    print(e)\n"
        "os.kill(-1, signal.SIGKILL)\n"
        "time.sleep(5)\n"
    ) % me
    res = run(code, timeout=2)
    assert os.getpid() == me  # still alive to assert anything at all
    assert res.status in BAD
    _assert_clean(res)


def test_huge_stdout_is_truncated_and_stopped():
    code = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"
    res = run(code, max_output_kb=64, timeout=10)
    assert res.status == "killed" and res.detail == "output limit exceeded"
    assert len(res.stdout) < 64 * 1024 + 200
    assert res.stdout.endswith("output truncated at 64 KiB]")
    _assert_clean(res)


def test_huge_file_write_hits_fsize_limit():
    res = run("open('big.bin', 'wb').write(b'x' * (40 * 2**20))\n", max_file_mb=4)
    assert res.status == "killed"
    assert "RLIMIT_FSIZE" in res.detail
    _assert_clean(res)


def test_deleting_files_outside(tmp_path):
    victim_dir = tmp_path / "victim"
    victim_dir.mkdir()
    victim_dir.chmod(0o777)
    victim = victim_dir / "keep.txt"
    victim.write_text("keep me")
    victim.chmod(0o666)
    pkg_init = Path(nepotism.__file__)
    code = (
        "import os, shutil\n"
        f"for p in ({str(victim)!r}, {str(pkg_init)!r}):\n"
        "    try:\n"
        "        os.remove(p)\n"
        "    except OSError as e:\n"
        "        print(e)\n"
        f"shutil.rmtree({str(victim_dir)!r}, ignore_errors=True)\n"
    )
    res = run(code)
    assert victim.read_text() == "keep me"
    assert pkg_init.exists()
    _assert_clean(res)


def test_ctypes_setuid_and_unshare_do_not_escape(tmp_path):
    marker = _marker()
    outside = Path("/root") / marker
    code = (
        "import ctypes, os, socket\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('setuid', libc.setuid(0), 'euid', os.geteuid())\n"
        "print('unshare', libc.unshare(0x10000000 | 0x00020000))\n"
        f"for p in ({str(outside)!r}, {str(tmp_path / marker)!r}):\n"
        "    try:\n"
        "        open(p, 'w').write('x')\n"
        "        print('WROTE', p)\n"
        "    except OSError as e:\n"
        "        print('refused', e)\n"
        "try:\n"
        "    socket.create_connection(('1.1.1.1', 53), timeout=1)\n"
        "    print('CONNECTED')\n"
        "except OSError as e:\n"
        "    print('blocked', e)\n"
    )
    try:
        res = run(code)
        assert not outside.exists() and not (tmp_path / marker).exists()
        assert "CONNECTED" not in res.stdout
        if res.isolation["user"]["dropped"]:
            assert "setuid -1" in res.stdout
        _assert_clean(res)
    finally:
        outside.unlink(missing_ok=True)


def test_opening_many_files():
    code = "fs = []\nwhile True:\n    fs.append(open('/dev/null'))\n"
    res = run(code)
    assert res.status == "error"
    assert "Too many open files" in res.stderr
    _assert_clean(res)


def test_reading_proc_of_the_parent(monkeypatch):
    secret = _marker()
    monkeypatch.setenv("NEPOTISM_PROC_SECRET", secret)
    me = os.getpid()
    code = (
        "import os\n"
        "seen = []\n"
        f"for pid in [{me}, os.getppid(), 1] + [int(p) for p in os.listdir('/proc') if p.isdigit()]:\n"
        "    for leaf in ('environ', 'cmdline'):\n"
        "        try:\n"
        "            seen.append(open(f'/proc/{pid}/{leaf}', 'rb').read())\n"
        "        except OSError:\n"
        "            pass\n"
        "print(b'|'.join(seen))\n"
    )
    res = run(code)
    assert secret not in res.stdout
    assert "pytest" not in res.stdout


def test_writing_into_the_package_directory():
    marker = _marker()
    pkg_dir = Path(nepotism.__file__).parent
    target = pkg_dir / f"{marker}.py"
    code = f"open({str(target)!r}, 'w').write('import os')\n"
    try:
        res = run(code)
        assert res.status == "error"
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)


def test_recursion_bomb():
    res = run("def f():\n    return f()\nf()\n")
    assert res.status == "error" and "RecursionError" in res.detail
    deep = "import sys\nsys.setrecursionlimit(10**7)\ndef f(n):\n    return f(n + 1)\nf(0)\n"
    res = run(deep, timeout=3, memory_mb=128)
    assert res.status in BAD
    _assert_clean(res)


def test_thread_bomb():
    code = "import threading, time\nwhile True:\n    threading.Thread(target=time.sleep, args=(60,), daemon=False).start()\n"
    res = run(code, timeout=3, max_processes=32)
    assert res.status in BAD
    _assert_clean(res)


def test_stdin_is_empty_and_closed_to_the_host():
    res = run("import sys\nprint(repr(sys.stdin.read()))\n")
    assert res.stdout == "''\n"
