"""`nepotism run` and the file system: a symbolic link at an output file's name is replaced, never
written through; an output folder that cannot be written (a dangling link, a read-only mount) stops
the run before any call is sent; a store whose folder is read-only is named as such; and a complete
store that cannot be written serves a rerun whole, writing nothing. Read-only file systems are real
ones here (a small tmpfs remounted read-only: `small_disk`)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, standin_thread

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))


def _run(exp: Path, db: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [NEPOTISM, "run", str(exp), "--store", str(db), "--no-progress", *args], capture_output=True, text=True, timeout=600
    )


def _digest(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_a_link_at_the_registry_copy_is_replaced_not_written_through(tmp_path):
    victim = tmp_path / "victim.toml"
    victim.write_text("# someone else's file\n")
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, _server):
        exp = standin_experiment(tmp_path / "exp", url, items=1, recognition=False)
        copy = tmp_path / "exp" / "out" / "models" / "00-standin_models.toml"
        copy.parent.mkdir(parents=True)
        copy.symlink_to(victim)
        done = _run(exp, tmp_path / "s.db")
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "# someone else's file\n"  # before: overwritten with the registry
    assert not copy.is_symlink() and copy.read_bytes() == (tmp_path / "exp" / "standin_models.toml").read_bytes()


def test_a_dangling_link_as_the_output_folder_stops_the_run_before_any_call(tmp_path):
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, server):
        exp = standin_experiment(tmp_path / "exp", url, items=2)
        (tmp_path / "exp" / "out").symlink_to(tmp_path / "nowhere")
        done = _run(exp, tmp_path / "s.db")
        requests = server.stats["requests"]
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "symbolic link to" in line and "nowhere" in line and "output.dir" in line
    assert requests == 0  # before: 36 calls were paid, then the exports failed
    assert not (tmp_path / "s.db").exists()


def test_a_read_only_output_folder_stops_the_run_before_any_call(tmp_path, small_disk):
    disk = small_disk("1m", "out")
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, server):
        exp = standin_experiment(tmp_path / "exp", url, items=2)
        text = exp.read_text().replace('dir = "out"', f'dir = "{disk.path}"')
        exp.write_text(text)
        disk.remount("ro")
        done = _run(exp, tmp_path / "s.db")
        requests = server.stats["requests"]
    assert done.returncode == 2, done.stderr
    assert "output folder cannot be written (Read-only file system)" in done.stderr
    assert requests == 0 and not (tmp_path / "s.db").exists()


def test_a_store_in_a_read_only_folder_is_named_as_such(tmp_path, small_disk):
    disk = small_disk("1m")
    disk.remount("ro")
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, server):
        exp = standin_experiment(tmp_path / "exp", url, items=2)
        done = _run(exp, disk.path / "s.db")
        requests = server.stats["requests"]
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "cannot write" not in line and "unable to open" not in line
    assert f"its folder {disk.path} cannot be written: a read-only file system" in line
    assert requests == 0


@pytest.mark.slow
def test_a_complete_read_only_store_serves_a_rerun_whole_and_an_incomplete_one_says_what_it_lacks(tmp_path, small_disk):
    disk = small_disk("16m")
    db = disk.path / "s.db"
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, server):
        exp = standin_experiment(tmp_path / "exp", url, items=3, recognition=False)
        first = _run(exp, db)
        assert first.returncode == 0, first.stderr
        again = _run(exp, db)  # a rerun on the writable store: what the read-only one must give
        assert again.returncode == 0, again.stderr
        out = tmp_path / "exp" / "out"
        expected = _digest(out)
        for p in out.rglob("*"):
            if p.is_file():
                p.unlink()
        disk.remount("ro")
        store_before = _digest(disk.path)
        requests = server.stats["requests"]
        served = _run(exp, db, "--json")
        assert served.returncode == 0, served.stderr
        assert server.stats["requests"] == requests  # nothing sent
        assert "read-only" in served.stderr and "nothing is sent" in served.stderr
        served_files = _digest(out)
        assert served_files.pop("run.json") and expected.pop("run.json")  # (each names its run)
        assert served_files == expected  # the same tables, registry copies and references
        assert _digest(disk.path) == store_before  # nothing written beside the store either
        # the same items judged by one more protocol need calls the store lacks; one more item, an
        # instance: each said, exit 2, nothing sent
        more_calls = standin_experiment(tmp_path / "exp2", url, items=3, recognition=True)
        more_items = standin_experiment(tmp_path / "exp4", url, items=4, recognition=False)
        lacking = [_run(more_calls, db), _run(more_items, db)]
        assert server.stats["requests"] == requests
    for done, what in zip(lacking, ("calls (to send, then store)", "instances (new, or edited in the dataset)")):
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        line = done.stderr.strip().splitlines()[-1]
        assert "the store is read-only" in line and "would add or change " in line and what in line, line
