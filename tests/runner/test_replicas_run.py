"""`base_urls` in an experiment file: a run spreads each model's calls over its endpoints, fails over
from a dead one, and counts every endpoint in the summary."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from nepotism.errors import InputError
from nepotism.experiment import load_experiment
from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, standin_thread

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))


def _dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _replicated(folder: Path, urls: list[str], **kwargs) -> Path:
    path = standin_experiment(folder, urls[0], **kwargs)
    path.write_text(path.read_text().replace(f'base_url = "{urls[0]}"', f"base_urls = {json.dumps(urls)}"))
    return path


def test_base_urls_are_read_in_order_and_checked(tmp_path):
    exp = load_experiment(_replicated(tmp_path, ["http://a:1/v1", "http://b:2/v1"]))
    cfg = exp.models["standin-alpha"]
    assert cfg.base_urls == ("http://a:1/v1", "http://b:2/v1") and cfg.base_url == "http://a:1/v1"
    single = load_experiment(standin_experiment(tmp_path / "one", "http://a:1/v1"))
    assert single.models["standin-alpha"].base_urls == ("http://a:1/v1",)
    for i, (value, field) in enumerate(
        (
            ('["http://a:1/v1", "ftp://b"]', "base_urls[1]"),
            ("[]", "base_urls"),
            ('["http://a:1/v1", "http://a:1/v1/"]', "base_urls[1]"),
        )
    ):
        path = standin_experiment(tmp_path / f"bad{i}", "http://x:1/v1")
        path.write_text(path.read_text().replace('base_url = "http://x:1/v1"', f"base_urls = {value}"))
        with pytest.raises(InputError) as err:
            load_experiment(path)
        assert err.value.field == f"models.standin-alpha.{field}", err.value
    both = standin_experiment(tmp_path / "both", "http://x:1/v1")
    both.write_text(
        both.read_text().replace('base_url = "http://x:1/v1"', 'base_url = "http://x:1/v1"\nbase_urls = ["http://y:1/v1"]')
    )
    with pytest.raises(InputError, match="not both"):
        load_experiment(both)


def test_a_run_over_two_stand_ins_one_dead_loses_no_call_and_counts_each_endpoint(tmp_path):
    dead = _dead_url()
    with standin_thread(StandinConfig(latency_s=0.001)) as (alive, server):
        single = standin_experiment(tmp_path / "single", alive, items=4)
        subprocess.run(
            [NEPOTISM, "run", str(single), "--store", "s.db", "--no-progress"],
            cwd=tmp_path / "single",
            check=True,
            capture_output=True,
        )
        exp = _replicated(tmp_path / "replicas", [dead, alive], items=4, concurrency=8)
        done = subprocess.run(
            [NEPOTISM, "run", str(exp), "--store", "r.db", "--no-progress", "--json"],
            cwd=tmp_path / "replicas",
            capture_output=True,
            text=True,
        )
        plain = subprocess.run(
            [NEPOTISM, "run", str(exp), "--store", "r2.db", "--no-progress"],
            cwd=tmp_path / "replicas",
            capture_output=True,
            text=True,
        )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["judging"]["failed"] == summary["generation"]["failed"] == 0
    for model in ("standin-alpha", "standin-beta"):
        counts = summary["endpoints"][model]
        assert counts[dead]["answered"] == 0 and counts[dead]["failed"] == counts[dead]["failed_over"] >= 1
        assert counts[alive]["answered"] > 0
    assert f"endpoints of standin-alpha:\n      {dead}" in plain.stdout
    assert "moved to another endpoint" in plain.stdout
    for table in ("pairwise", "recognition"):
        assert (tmp_path / "replicas" / "out" / f"{table}.csv").read_bytes() == (
            tmp_path / "single" / "out" / f"{table}.csv"
        ).read_bytes()


def test_dry_run_needs_one_reachable_endpoint(tmp_path):
    dead = _dead_url()
    with standin_thread(StandinConfig(latency_s=0.0)) as (alive, _):
        ok = subprocess.run(
            [NEPOTISM, "run", str(_replicated(tmp_path / "a", [dead, alive])), "--dry-run"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(
        [NEPOTISM, "run", str(_replicated(tmp_path / "b", [dead, _dead_url()])), "--dry-run"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and dead in bad.stderr
