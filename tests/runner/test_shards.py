"""Shards: `nepotism run --shard K/N` in separate processes, merged, equals one unsharded run."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nepotism.errors import InputError
from nepotism.records import Instance, Message
from nepotism.runner.shards import Shard, shard_key, shard_of, shard_output_dir, shard_store_path
from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, standin_process

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))


def nep(*args: str, cwd: Path, expect: int = 0) -> subprocess.CompletedProcess:
    done = subprocess.run([NEPOTISM, *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == expect, f"nepotism {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def test_parse_counts_from_zero_and_refuses_bad_specs():
    assert Shard.parse("3/8") == Shard(3, 8)
    assert Shard.parse(" 0 / 1 ") == Shard(0, 1)
    for bad in ("8/8", "1/0", "-1/4", "a/b", "3", "", "1/2/3"):
        with pytest.raises(InputError) as err:
            Shard.parse(bad)
        assert err.value.field == "--shard"
    with pytest.raises(ValueError):
        Shard(2, 2)


def test_split_is_stable_and_covers_every_instance_once():
    ids = [f"item-{i}" for i in range(2000)] + ["ünïcode", "", "1"]
    shards = [Shard(k, 8) for k in range(8)]
    for ident in ids:
        assert sum(s.holds(ident) for s in shards) == 1
    # the hash is of the key alone (SHA-256, first 8 bytes big-endian): fixed across processes and versions
    assert [shard_of(f"item-{i}", 8) for i in range(8)] == [
        int.from_bytes(__import__("hashlib").sha256(f"item-{i}".encode()).digest()[:8], "big") % 8 for i in range(8)
    ]
    code = "from nepotism.runner.shards import shard_of; print([shard_of(f'item-{i}', 8) for i in range(50)])"
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ | {"PYTHONHASHSEED": "123"}
    )
    assert json.loads(other.stdout) == [shard_of(f"item-{i}", 8) for i in range(50)]
    sizes = [sum(s.holds(i) for i in ids) for s in shards]
    assert min(sizes) > 200  # roughly even


def test_the_shard_key_is_the_request_so_instances_sharing_a_prompt_share_a_shard():
    same = [Instance(f"item-{i}", "Name a prime.") for i in range(40)]
    assert len({shard_key(i) for i in same}) == 1
    assert shard_key(Instance("a", "Name a prime.")) == shard_key(Instance("b", (Message("user", "Name a prime."),)))
    assert shard_key(Instance("a", "Name a prime.")) != shard_key(Instance("a", (Message("system", "Name a prime."),)))
    assert len({shard_of(shard_key(Instance("x", f"Question {i}")), 8) for i in range(40)}) == 8


def test_instances_sharing_a_prompt_are_sent_by_one_shard(tmp_path):
    """Instances with one prompt and different ids share their generation and judge calls (one key
    each): split by id, each shard sent them, and a server that samples answers each differently, so
    `store merge` refused the shards (the same key, different text). By request, one shard sends them."""
    ids = [f"item-{i}" for i in range(40)]
    apart = [next(i for i in ids if shard_of(i, 2) == k) for k in range(2)]  # the ids' hashes split them
    with standin_process(StandinConfig(latency_s=0.001)) as url:
        exp = standin_experiment(tmp_path, url, recognition=False)
        rows = [
            {"id": apart[0], "prompt": "Name a prime."},
            {"id": apart[1], "prompt": "Name a prime."},
            {"id": "other", "prompt": "Name an even number."},
        ]
        (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        for k in range(2):
            nep("run", str(exp), "--shard", f"{k}/2", "--no-progress", cwd=tmp_path)
    stores = [tmp_path / f"nepotism.shard-{k}-of-2.db" for k in range(2)]
    keys = [{key for (key,) in _rows(store, "SELECT key FROM calls")} for store in stores]
    assert keys[0] and keys[1] and not keys[0] & keys[1]
    holding = [
        k
        for k in range(2)
        if {apart[0], apart[1]} <= {i for (i,) in _rows(stores[k], "SELECT DISTINCT instance_id FROM judgments")}
    ]
    assert len(holding) == 1


def test_default_store_and_output_folder_name_the_shard(tmp_path):
    shard = Shard(3, 8)
    assert shard_store_path(Path("runs/audit.db"), shard) == Path("runs/audit.shard-3-of-8.db")
    assert shard_store_path(Path("nepotism"), shard) == Path("nepotism.shard-3-of-8.db")
    assert shard_output_dir("out", shard) == str(Path("out") / "shard-3-of-8")
    assert shard_output_dir(None, shard) is None


def test_dry_run_plans_of_the_shards_add_up_to_the_whole(tmp_path):
    from nepotism.experiment import load_experiment
    from nepotism.runner.experiment_run import dry_run
    from nepotism.store import Store

    exp = load_experiment(standin_experiment(tmp_path, "http://127.0.0.1:9/v1", items=20))
    with Store(tmp_path / "plan.db") as store:
        whole = dry_run(exp, store)
        parts = [dry_run(exp, store, shard=Shard(k, 8)) for k in range(8)]
    for field in ("instances", "generation_calls", "judge_calls"):
        assert sum(p[field] for p in parts) == whole[field] > 0


def _rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def test_eight_shard_processes_merged_equal_one_unsharded_run(tmp_path):
    """The issue's done-means: 8 shards as separate `nepotism` processes with separate stores,
    merged; `store export` and `metrics --json` byte-identical to one unsharded run."""
    with standin_process(StandinConfig(latency_s=0.001)) as url:
        exp = standin_experiment(tmp_path, url, items=21)  # every shard of 8 holds one or more of these prompts
        whole = json.loads(nep("run", str(exp), "--store", "whole.db", "--no-progress", "--json", cwd=tmp_path).stdout)
        assert whole["status"] == "done" and whole["instances"] == 21
        procs = [
            subprocess.Popen(
                [NEPOTISM, "run", str(exp), "--shard", f"{k}/8", "--no-progress", "--json"],
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for k in range(8)
        ]
        outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [err for _, err in outs]
    summaries = [json.loads(out) for out, _ in outs]
    assert sum(s["instances"] for s in summaries) == 21
    stores = [tmp_path / f"nepotism.shard-{k}-of-8.db" for k in range(8)]
    prompts = {
        row["id"]: Instance(row["id"], row["prompt"])
        for row in map(json.loads, (tmp_path / "items.jsonl").read_text().splitlines())
    }
    # every shard wrote only its own instances, and every call of an instance is in its shard
    seen: set[str] = set()
    for k, store in enumerate(stores):
        ids = {i for (i,) in _rows(store, "SELECT DISTINCT instance_id FROM judgments")}
        assert ids and all(Shard(k, 8).holds(shard_key(prompts[i])) for i in ids) and not ids & seen
        seen |= ids
        assert Path(summaries[k]["exports"]["pairwise"]).parent == tmp_path / "out" / f"shard-{k}-of-8"
    assert len(seen) == 21

    merged = json.loads(nep("store", "merge", *map(str, stores), "--out", "all.db", "--json", cwd=tmp_path).stdout)
    assert merged["added"]["runs"] == 8 and merged["unfinished_runs"] == []
    assert merged["added"]["judgments"] == len(_rows(tmp_path / "whole.db", "SELECT id FROM judgments"))
    for table in ("pairwise", "recognition"):
        for db in ("whole", "all"):
            (tmp_path / db).mkdir(exist_ok=True)
            nep("store", "export", table, "--store", f"{db}.db", "--out", f"{db}/{table}.csv", cwd=tmp_path)
        assert (tmp_path / "all" / f"{table}.csv").read_bytes() == (tmp_path / "whole" / f"{table}.csv").read_bytes()
    metrics = {}
    for db in ("whole", "all"):
        metrics[db] = nep(
            "metrics",
            "pairwise.csv",
            "recognition.csv",
            "--models",
            "../standin_models.toml",
            "--bootstrap",
            "200",
            "--json",
            cwd=tmp_path / db,
        ).stdout
    assert metrics["all"] == metrics["whole"]
    assert {r["metric"] for r in json.loads(metrics["all"])["results"]} >= {"win-rate", "recognition-accuracy"}
    # the merged store finishes the run from the cache: nothing is sent, the output folder is whole
    again = json.loads(nep("run", str(exp), "--store", "all.db", "--no-progress", "--json", cwd=tmp_path).stdout)
    assert again["judging"]["sent"] == again["generation"]["sent"] == 0
    assert (tmp_path / "out" / "pairwise.csv").read_bytes() == (tmp_path / "whole" / "pairwise.csv").read_bytes()


def test_shards_with_a_failed_generator_merged_equal_one_unsharded_run(tmp_path):
    """A generator whose server is down: each shard exports the comparisons its answers would
    have had as failed rows (reason generation:connection), and the merged store exports what one
    unsharded run's store does, those rows included."""
    with standin_process(StandinConfig(latency_s=0.001)) as url:
        exp = standin_experiment(
            tmp_path, url, items=6, attempts=1, generators=("standin-alpha", "standin-alpha-mini", "standin-beta")
        )
        head, tail = exp.read_text().split("[models.standin-alpha-mini]\n", 1)
        exp.write_text(head + "[models.standin-alpha-mini]\n" + tail.replace(url, "http://127.0.0.1:9/v1", 1))
        nep("run", str(exp), "--store", "whole.db", "--no-progress", cwd=tmp_path, expect=3)
        for k in range(2):
            nep("run", str(exp), "--shard", f"{k}/2", "--no-progress", cwd=tmp_path, expect=3)
    nep("store", "merge", *(f"nepotism.shard-{k}-of-2.db" for k in range(2)), "--out", "all.db", cwd=tmp_path)
    for table in ("pairwise", "recognition"):
        for db in ("whole", "all"):
            (tmp_path / db).mkdir(exist_ok=True)
            nep("store", "export", table, "--store", f"{db}.db", "--out", f"{db}/{table}.csv", cwd=tmp_path)
        merged = (tmp_path / "all" / f"{table}.csv").read_bytes()
        assert merged == (tmp_path / "whole" / f"{table}.csv").read_bytes()
        assert b",failed,generation:connection," in merged
        shards = [tmp_path / "out" / f"shard-{k}-of-2" / f"{table}.csv" for k in range(2)]
        assert sum(len(f.read_text().splitlines()) - 1 for f in shards) == len(merged.decode().splitlines()) - 1


def test_bad_shard_is_one_line_exit_2_and_writes_nothing(tmp_path):
    exp = standin_experiment(tmp_path, "http://127.0.0.1:9/v1")
    done = nep("run", str(exp), "--shard", "8/8", cwd=tmp_path, expect=2)
    assert "--shard" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.glob("*.db"))


def test_dry_run_counts_a_call_planned_twice_once_as_the_run_sends_it(tmp_path):
    """Two instances with one prompt share their generation calls and then their judge calls: the
    dry run prices what the run sends (it counted every planned call as one to send)."""
    from nepotism.experiment import load_experiment
    from nepotism.runner.experiment_run import dry_run
    from nepotism.store import Store

    path = standin_experiment(tmp_path, "http://127.0.0.1:9/v1", items=3, recognition=False)
    rows = [{"id": "q1", "prompt": "Same?"}, {"id": "q2", "prompt": "Same?"}, {"id": "q3", "prompt": "Other?"}]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with Store(tmp_path / "plan.db") as store:
        plan = dry_run(load_experiment(path), store)
    totals = plan["totals"]
    assert plan["generation_calls"] == 6 and plan["judge_calls"] == 12  # 2 generators; 2 judges x both orders
    # sent once: 2 prompts x 2 generators, and the judge calls of 2 distinct (prompt, answers)
    assert totals["to_send"] == 4 + 8 and totals["shared"] == 2 + 4 and totals["cached"] == 0
    assert totals["calls"] == totals["to_send"] + totals["shared"]
