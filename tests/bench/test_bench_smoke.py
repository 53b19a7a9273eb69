"""The benchmarks still run (at a tiny size): a benchmark that crashes measures nothing.

Only their own checks are asserted (a fully cached rerun, shards adding up), never a time.
"""

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _run(*argv: str) -> str:
    done = subprocess.run([sys.executable, str(BENCH / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_cached_rerun_benchmark_with_its_ablations():
    out = _run("runner_p2.py", "240", "--repeat", "1", "--ablate")
    assert "cached rerun: 240 judge calls" in out
    assert "cached rerun from the memo: 240 judge calls" in out  # (the script checks every window hit)
    assert "reading the rows from SQLite" in out
    for fast_path in (
        "frozen builders",
        "prompt skeletons",
        "cached-row replay",
        "narrow batched read",
        "collector pauses",
        "builders + replay + narrow read",
    ):
        assert fast_path in out


def test_end_to_end_run_benchmark_with_its_timeline_and_cached_rerun():
    out = _run("run_p1.py", "--calls", "200", "--concurrency", "8", "--latency", "0.001", "--rounds", "1", "--rerun")
    assert "median ratio" in out and "   100%" in out  # the run's last tenth is in the timeline
    assert "of which the loop's thread" in out  # the CPU per call split by thread
    assert "request B" in out and "answer B" in out  # what the calls of each tenth carry
    assert "cached rerun of the last round" in out and "0 sent" in out
    assert "cached rerun of the last round without the judge-plan memo" in out


def test_sharded_planning_benchmark_adds_up():
    out = _run("shards_plan.py", "--prompts", "12", "--generators", "4", "--judges", "2", "--shards", "3")
    assert "expected 288 judge calls; whole plan 288; shards sum 288" in out
    assert "FAIL" not in out and out.count("  ok ") == 5  # (the fifth: every planned call distinct)


def test_partitioned_metrics_benchmark_gives_the_file_records(tmp_path):
    out = _run("metrics_partitioned.py", "--rows", "5000", "--data", str(tmp_path), "--compare-file")
    assert "rows=4,752 judges=12 in memory:" in out and "exit 0" in out
    assert "(same JSON as the dataset: yes)" in out


def test_partitioned_metrics_benchmark_streams_the_in_memory_records(tmp_path):
    out = _run("metrics_partitioned.py", "--rows", "6000", "--judges", "14", "--data", str(tmp_path), "--memory", "--stream")
    assert "judges=14 --stream:" in out and "same JSON as in memory: yes" in out and "exit 0" in out


def test_batch_files_benchmark_round_trips():
    out = _run("batch_files.py", "--prompts", "3", "--generators", "4", "--judges", "2")
    assert "72 requests written, one per planned call" in out
    assert "FAIL" not in out and out.count("  ok ") == 3


def test_claims_takeover_benchmark_finishes_a_killed_runs_calls():
    out = _run("claims_takeover.py", "--rule", "reused", "--items", "2", "--latency", "0.5")
    assert "reused:" in out and "claims left 0, calls not ok 0)  ok" in out
