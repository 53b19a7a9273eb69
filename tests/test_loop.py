"""`nepotism._loop`: the commands' event loop is uvloop's when importable, asyncio's otherwise."""

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from nepotism import _loop

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))


async def _loop_type_and_thread_callback() -> tuple[str, int]:
    """The running loop's class module, and a value handed back from a thread the way the store
    writer reports (``call_soon_threadsafe``)."""
    loop = asyncio.get_running_loop()
    got: asyncio.Future[int] = loop.create_future()
    threading.Thread(target=lambda: loop.call_soon_threadsafe(got.set_result, 42)).start()
    return type(loop).__module__, await got


@pytest.mark.skipif(sys.platform == "win32", reason="uvloop is not installed on Windows")
def test_run_uses_uvloop_when_it_is_installed():
    module, value = _loop.run(_loop_type_and_thread_callback())
    assert module.startswith("uvloop")
    assert value == 42
    assert _loop.loop_name().startswith("uvloop ")


def test_without_uvloop_the_run_falls_back_to_asyncios_loop(monkeypatch):
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` raises ImportError
    module, value = _loop.run(_loop_type_and_thread_callback())
    assert module.startswith("asyncio")
    assert value == 42
    assert _loop.loop_name() == "asyncio (uvloop not installed)"


def test_run_leaves_no_loop_policy_or_current_loop_behind():
    policy = asyncio.get_event_loop_policy()
    assert _loop.run(asyncio.sleep(0, "done")) == "done"
    assert asyncio.get_event_loop_policy() is policy
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()


def test_an_exception_in_the_coroutine_propagates_and_the_loop_is_closed():
    made: list[asyncio.AbstractEventLoop] = []

    async def boom() -> None:
        made.append(asyncio.get_running_loop())
        raise ValueError("from the job")

    with pytest.raises(ValueError, match="from the job"):
        _loop.run(boom())
    assert made[0].is_closed()


def test_version_names_the_event_loop():
    done = subprocess.run([NEPOTISM, "--version"], capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("nepotism, version ")
    assert lines[1] == f"event loop: {_loop.loop_name()}"


_WATCH_STDOUT = """
import asyncio, os
from nepotism import _loop

async def main():
    loop = asyncio.get_running_loop()
    loop.add_writer(1, lambda: None)  # uvloop makes a watched descriptor non-blocking, for good
    loop.remove_writer(1)
    return os.get_blocking(1)

during = _loop.run(main())
print(during, os.get_blocking(1))
"""


def test_the_standard_streams_leave_run_in_the_blocking_mode_they_had():
    """Otherwise a full stdout pipe after the run drops the rest of the output with exit status 0."""
    done = subprocess.run([sys.executable, "-c", _WATCH_STDOUT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    during, after = done.stdout.split()
    assert after == "True"
    if sys.platform != "win32":  # the case that matters: uvloop switched it while the loop ran
        assert during == "False"
