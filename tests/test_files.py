"""Atomic writes: a file appears complete or not at all; nothing is left behind on failure."""

import os
import subprocess
import sys

import pytest

from nepotism._files import atomic_write, atomic_write_bytes, write_files


def test_write_files_creates_the_folder_and_returns_each_path(tmp_path):
    paths = write_files(tmp_path / "new" / "dir", {"a.txt": b"one", "b.bin": b"\x00\x01"})
    assert {name: p.read_bytes() for name, p in paths.items()} == {"a.txt": b"one", "b.bin": b"\x00\x01"}
    assert sorted(p.name for p in (tmp_path / "new" / "dir").iterdir()) == ["a.txt", "b.bin"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")

    def boom(tmp):
        tmp.write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(target, boom)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_a_json_line_with_an_escaped_surrogate_pair_is_text_and_a_lone_one_is_refused():
    from nepotism._files import parse_json_line
    from nepotism.errors import InputError

    assert parse_json_line('{"t": "smile \\ud83d\\ude00", "u": "\\u00e9"}', "f.jsonl", 1) == {"t": "smile 😀", "u": "é"}
    assert parse_json_line('{"t": "a \\\\ud800 literal"}', "f.jsonl", 1) == {"t": "a \\ud800 literal"}
    for text, field in [('{"t": "\\ud83d"}', "t"), ('{"m": [{"x": "\\uDE00 y"}]}', "m"), ('["\\udc80"]', None)]:
        with pytest.raises(InputError, match="surrogate") as err:
            parse_json_line(text, "f.jsonl", 7)
        assert err.value.line == 7 and err.value.field == field


def _start(pid: int) -> str:
    """The start identity of ``pid`` as a temporary file's name spells it ("boot_namespace_ticks"),
    read here from /proc independently of nepotism."""
    boot = open("/proc/sys/kernel/random/boot_id").read().strip()
    namespace = os.stat("/proc/self/ns/pid").st_ino
    ticks = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19]
    return f"{boot}_{namespace}_{ticks}"


@pytest.mark.skipif(
    not os.path.exists("/proc/sys/kernel/random/boot_id"), reason="a process's start time is read from /proc (Linux)"
)
def test_a_temporary_file_of_a_reused_pid_is_stale_a_live_writers_is_not(tmp_path):
    """A killed export's temporary file whose pid now belongs to another live process: its name's
    start identity differs from that process's, so the next writer removes it. Before, only the
    pid was asked about, and the file stayed for as long as the pid's new owner lived. The live
    writer's own file (its true start), an older nepotism's file (pid only) of a live pid, and a
    file written in another pid namespace stay."""
    from nepotism._files import temp_beside

    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        boot, namespace, ticks = _start(live.pid).split("_")
        name = lambda start, rand: tmp_path / f".out.csv.{live.pid}.{start}{rand}.csv"  # noqa: E731
        reused = name(f"{boot}_{namespace}_{int(ticks) - 1}.", "r3us3d00")
        rebooted = name(f"{'0' * 8}{boot[8:]}_{namespace}_{ticks}.", "r3b00t00")
        own = name(f"{boot}_{namespace}_{ticks}.", "wr1t1ng0")
        older = name("", "0ld3r000")
        container = name(f"{boot}_{int(namespace) + 1}_{int(ticks) - 1}.", "c0nta1n0")
        for path in (reused, rebooted, own, older, container):
            path.write_text("partial")
        atomic_write_bytes(tmp_path / "out.csv", b"a,b\n")
        assert not reused.exists() and not rebooted.exists()
        assert own.exists() and older.exists() and container.exists()
    finally:
        live.kill()
        live.wait()
    # this process's temporary file names its start, and a writer beside it leaves it alone
    mine = temp_beside(tmp_path / "out.csv")
    assert mine.name.startswith(f".out.csv.{os.getpid()}.{_start(os.getpid())}.") and mine.name.endswith(".csv")
    atomic_write_bytes(tmp_path / "out.csv", b"c,d\n")
    assert mine.exists()


def test_a_long_target_name_is_written_its_temporary_file_naming_the_pid_only(tmp_path):
    """A target whose name leaves no room for the writer's start in its temporary file's name
    (200 bytes: the start adds about 57) is written as before, not refused by the file system."""
    from nepotism._files import temp_beside

    target = tmp_path / ("x" * 200 + ".csv")
    atomic_write_bytes(target, b"a,b\n")
    assert target.read_bytes() == b"a,b\n" and [p.name for p in tmp_path.iterdir()] == [target.name]
    assert temp_beside(target).name.startswith(f".{target.name}.{os.getpid()}.")
