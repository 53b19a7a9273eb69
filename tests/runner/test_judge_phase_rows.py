"""What a judge phase leaves in the store: two fresh runs of one experiment in two stores store the
same rows (calls, responses, judgments, judge-plan memo), and a rerun, from the memo or without
it, writes none and exports the same bytes."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from nepotism.experiment import load_experiment
from nepotism.runner.experiment_run import run_experiment
from nepotism.store import Store
from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, standin_process

TIMES = ("created_at", "run_id", "latency_s", "started_at", "ended_at")


def _rows(db: Path) -> dict[str, list[tuple]]:
    """The rows a run writes, in a fixed order, without what differs between two runs of one
    experiment: times, run ids, a call's answer body (the stand-in's ids), a memo row's id and
    digest (the experiment's folder is part of it)."""
    conn = sqlite3.connect(db)
    try:
        out = {}
        for table, order in (("calls", "key"), ("responses", "id"), ("judgments", "id")):
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})") if r[1] not in TIMES + ("response",)]
            out[table] = conn.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}").fetchall()
        out["judge_memo"] = sorted(
            (
                tasks,
                pairs,
                tags,
                tuple(
                    conn.execute(
                        "SELECT call_key, judgment_id FROM judge_memo_pairs WHERE memo = ? ORDER BY seq", (memo,)
                    ).fetchall()
                ),
            )
            for memo, tasks, pairs, tags in conn.execute("SELECT id, tasks, pairs, tags FROM judge_memo")
        )
        return out
    finally:
        conn.close()


def _exports(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.csv"))}


def test_fresh_runs_store_the_same_rows_and_reruns_write_none(tmp_path):
    with standin_process(StandinConfig(latency_s=0.001)) as url:
        runs = {}
        for name in ("one", "two"):
            exp = load_experiment(standin_experiment(tmp_path / name, url, items=40))
            with Store(tmp_path / name / "s.db") as store:
                runs[name] = asyncio.run(run_experiment(exp, store))
        first = _rows(tmp_path / "one" / "s.db")
        assert first == _rows(tmp_path / "two" / "s.db")
        assert all(first[table] for table in first), "a table the test compares is empty"
        # the fresh run's memo rows name every task and judgment it made (its rerun counts from them)
        assert sum(tasks for tasks, _, _, _ in first["judge_memo"]) == runs["one"].judging["total"]
        assert sorted(ident for *_, pairs in first["judge_memo"] for _, ident in pairs) == sorted(
            row[0] for row in first["judgments"]
        )
        exported = _exports(tmp_path / "one" / "out")
        assert exported and exported == _exports(tmp_path / "two" / "out")
        exp = load_experiment(tmp_path / "one" / "exp.toml")
        for forget in (False, True):
            if forget:
                with sqlite3.connect(tmp_path / "one" / "s.db") as conn:
                    conn.execute("DELETE FROM judge_memo_pairs")
                    conn.execute("DELETE FROM judge_memo")
                conn.close()
            with Store(tmp_path / "one" / "s.db") as store:
                again = asyncio.run(run_experiment(exp, store))
            assert again.judging["sent"] == again.generation["sent"] == 0
            assert again.judgments == runs["one"].judgments
            assert _rows(tmp_path / "one" / "s.db") == first  # (without the memo: its rows written again, the same)
            assert _exports(tmp_path / "one" / "out") == exported
