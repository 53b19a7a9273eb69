"""A hostile server that echoes the API key, writing ``/`` as ``\\/``: the key reaches nothing.

The run goes through the installed ``nepotism`` executable; afterwards the raw bytes of every file
(the store, its WAL while a reader holds it, the exports, the metrics and report outputs) and
everything printed are searched for the key and for its distinctive fragments.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, standin_thread

KEY = "sk-proj/Q7mXr2Zk/leak-marker-4d2a+9f"
FRAGMENTS = ("Q7mXr2Zk", "leak-marker-4d2a")


def _exe() -> str:
    found = shutil.which("nepotism", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("the nepotism executable is not installed next to this Python")
    return found


def _needles() -> list[bytes]:
    spellings = {KEY, KEY.replace("/", "\\/"), *FRAGMENTS}
    return [s.encode() for s in spellings]


def _assert_clean(blob: bytes, where: str) -> None:
    for needle in _needles():
        assert blob.count(needle) == 0, f"{needle!r} found in {where}"


@pytest.mark.slow
def test_echoing_escaping_server_leaks_the_key_nowhere(tmp_path):
    env = os.environ | {"NEPOTISM_TEST_HOSTILE_KEY": KEY}
    config = StandinConfig(
        latency_s=0.001,
        expected_api_key=KEY,
        echo_headers=True,
        escape_slashes=True,
        fault_rates={"http_500": 0.2, "malformed": 0.05},
        seed=3,
    )
    printed: list[str] = []
    with standin_thread(config) as (url, server):
        exp = standin_experiment(tmp_path / "exp", url, items=3, model_options='api_key_env = "NEPOTISM_TEST_HOSTILE_KEY"')
        db = tmp_path / "s.db"
        for args in (["--json", "--progress"], ["--dry-run"], []):
            r = subprocess.run(
                [_exe(), "run", str(exp), "--store", str(db), *args], capture_output=True, text=True, env=env, timeout=300
            )
            assert r.returncode == 0, r.stdout + r.stderr
            printed += [r.stdout, r.stderr]
        assert server.stats["auth_ok"] > 0 and server.stats.get("auth_missing", 0) == 0
        assert server.stats.get("fault_http_500", 0) > 0 and server.stats.get("fault_malformed", 0) > 0
    # the server did echo the key, escaped: without the scrubbing it would be stored
    conn = sqlite3.connect(db)
    bodies = [json.loads(r)["body"] for (r,) in conn.execute("SELECT response FROM calls WHERE status='ok'")]
    assert bodies and all(b["echo"]["Authorization"] == "Bearer [redacted]" for b in bodies)
    texts = [t for (t,) in conn.execute("SELECT text FROM responses")]
    assert texts and all("Authorization: Bearer [redacted]" in t for t in texts)
    errors = [e for (e,) in conn.execute("SELECT error FROM calls WHERE error IS NOT NULL")]
    errors += [e for (r,) in conn.execute("SELECT response FROM calls") for e in json.loads(r)["errors"]]
    assert any("Bearer [redacted]" in e for e in errors)  # an echoing error body reached a reason
    # the judge prompts embed the generated (echoing) answers: the redacted text, never the key
    prompts = [r for (r,) in conn.execute("SELECT request FROM calls WHERE request LIKE '%[redacted]%'")]
    assert prompts
    # the WAL, read while this connection keeps it from being checkpointed away
    for path in (db, Path(f"{db}-wal")):
        if path.exists():
            _assert_clean(path.read_bytes(), str(path))
    conn.close()

    out = tmp_path / "exp" / "out"
    pairwise = out / "pairwise.csv"
    assert pairwise.is_file()
    models = tmp_path / "exp" / "standin_models.toml"
    for args in (
        ["metrics", str(pairwise), "--models", str(models), "--bootstrap", "50"],
        ["metrics", str(pairwise), "--models", str(models), "--bootstrap", "50", "--json"],
        ["report", str(pairwise), "--models", str(models), "--out", str(tmp_path / "report.html")],
        ["store", "info", "--store", str(db)],
        ["store", "export", "calls", "--out", str(tmp_path / "calls.jsonl"), "--store", str(db)],
        ["store", "export", "responses", "--out", str(tmp_path / "responses.csv"), "--store", str(db)],
        ["store", "export", "runs", "--out", str(tmp_path / "runs.jsonl"), "--store", str(db)],
    ):
        r = subprocess.run([_exe(), *args], capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, (args, r.stdout + r.stderr)
        printed += [r.stdout, r.stderr]
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {"calls.jsonl", "responses.csv", "runs.jsonl", "report.html", "pairwise.csv"} <= {p.name for p in files}
    for path in files:
        _assert_clean(path.read_bytes(), str(path))
    for i, text in enumerate(printed):
        _assert_clean(text.encode(), f"printed output {i}")


@pytest.mark.slow
@pytest.mark.parametrize("around", [" ", "\t", "\n", "\r\n"], ids=["space", "tab", "newline", "crlf"])
def test_a_key_with_whitespace_around_it_is_used_trimmed_and_leaks_nowhere(tmp_path, around):
    """The variable holds the key and a trailing space, tab or line break. The server trims the
    header it receives (HTTP drops whitespace around a field value) and echoes it in every answer:
    before, the store held the trimmed key in clear, since only the untrimmed text was known to the
    redaction, and a line break made every call fail as "exception:ValueError" without a word."""
    env = os.environ | {"NEPOTISM_TEST_PADDED_KEY": KEY + around}
    config = StandinConfig(latency_s=0.001, expected_api_key=KEY, echo_headers=True, seed=5)
    printed: list[str] = []
    with standin_thread(config) as (url, server):
        exp = standin_experiment(
            tmp_path / "exp", url, items=2, recognition=False, model_options='api_key_env = "NEPOTISM_TEST_PADDED_KEY"'
        )
        db = tmp_path / "s.db"
        run = subprocess.run(
            [_exe(), "run", str(exp), "--store", str(db), "--json"], capture_output=True, text=True, env=env, timeout=300
        )
        assert run.returncode == 0, run.stdout + run.stderr
        printed += [run.stdout, run.stderr]
        assert server.stats["auth_ok"] > 0 and server.stats["auth_ok"] == server.stats["ok"]
    assert json.loads(run.stdout)["generation"]["failed"] == 0
    warning = [line for line in run.stderr.splitlines() if "NEPOTISM_TEST_PADDED_KEY" in line]
    assert len(warning) == 1 and "whitespace" in warning[0]
    conn = sqlite3.connect(db)
    bodies = [json.loads(r)["body"] for (r,) in conn.execute("SELECT response FROM calls WHERE status='ok'")]
    assert bodies and all(b["echo"]["Authorization"] == "Bearer [redacted]" for b in bodies)
    for path in (db, Path(f"{db}-wal")):  # (the WAL read while this connection holds it)
        if path.exists():
            _assert_clean(path.read_bytes(), str(path))
    conn.close()
    pairwise = tmp_path / "exp" / "out" / "pairwise.csv"
    for args in (
        [
            "report",
            str(pairwise),
            "--models",
            str(tmp_path / "exp" / "standin_models.toml"),
            "--out",
            str(tmp_path / "report.html"),
            "--bootstrap",
            "50",
        ],
        ["store", "export", "calls", "--out", str(tmp_path / "calls.jsonl"), "--store", str(db)],
    ):
        r = subprocess.run([_exe(), *args], capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, (args, r.stdout + r.stderr)
        printed += [r.stdout, r.stderr]
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {"calls.jsonl", "report.html", "pairwise.csv"} <= {p.name for p in files}
    for path in files:
        _assert_clean(path.read_bytes(), str(path))
    for i, text in enumerate(printed):
        _assert_clean(text.encode(), f"printed output {i}")
