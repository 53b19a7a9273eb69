"""One chunking policy (`nepotism.runner.judge_plan.in_chunks`) for every reading of a plan that is
never held whole: the dry run, the batch rounds and `iter_tasks`. How a plan is cut into chunks
must not show in what comes out: the dry run's document, a generation round's request files and a
run's exports are the same bytes whatever the chunk size; a judge round's files hold the same
lines (their order follows the chunks)."""

from __future__ import annotations

import asyncio
import functools
import json
from pathlib import Path

import pytest

from nepotism.experiment import load_experiment
from nepotism.runner.judge_plan import in_chunks
from nepotism.store import Store
from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, standin_thread
from tests.runner.test_batch import DEAD, answer_batch

CHUNK_SIZES = (1, 5, 13, 10**6)  # chunks of one instance, a few, all at once


def test_chunks_hold_about_the_calls_asked_whatever_the_calls_per_instance():
    instances = list(range(3000))
    for per_instance in (1, 7, 300, 1520, 5000):
        sizes = [len(part) for part in in_chunks(instances, lambda part, k=per_instance: [0] * (k * len(part)))]
        assert sum(sizes) == len(instances) * per_instance  # every instance planned once
        assert sizes[0] == 8 * per_instance  # the first chunk: 8 instances
        assert max(sizes[1:]) <= max(4096, per_instance)
        if per_instance <= 4:
            assert max(sizes[1:]) == 1024 * per_instance  # never more than 1,024 instances
    parts = list(in_chunks(instances, lambda part: [(i, n) for i in part for n in range(3)], calls=50))
    assert [x for part in parts for x in part] == [(i, n) for i in instances for n in range(3)]  # in order
    assert [len(p) for p in in_chunks(list(range(5)), list, calls=1)] == [1] * 5
    assert [len(p) for p in in_chunks(list(range(9)), list, calls=3)] == [3, 3, 3]
    assert list(in_chunks([], list)) == []


def _items(folder: Path) -> None:
    # shared prompts (q1, q4; q2, q6): calls planned twice, in one chunk or in two
    prompts = ["Same?", "Two words.", "Other?", "Same?", "Longer prompt, odd length!", "Two words.", "Last."]
    (folder / "items.jsonl").write_text(
        "".join(json.dumps({"id": f"q{i + 1}", "prompt": p}) + "\n" for i, p in enumerate(prompts))
    )


def _perplexity(path: Path) -> Path:
    path.write_text(path.read_text() + '\n[perplexity]\nresponses = "all"\n', encoding="utf-8")
    return path


@pytest.mark.parametrize("perplexity", [False, True])
def test_the_dry_runs_document_is_the_same_bytes_whatever_the_chunk_size(tmp_path, perplexity):
    from nepotism.runner.experiment_run import dry_run

    path = standin_experiment(tmp_path, DEAD, items=3)
    _items(tmp_path)
    if perplexity:
        _perplexity(path)
    experiment = load_experiment(path)
    with Store(tmp_path / "plan.db") as store:
        # no sort_keys: the order of the models (the rows the text view prints) must not move either
        texts = {json.dumps(dry_run(experiment, store, chunk_calls=calls)) for calls in CHUNK_SIZES}
    assert len(texts) == 1
    assert json.loads(texts.pop())["totals"]["shared"] > 0


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _written(experiment, db: Path, out: Path) -> list[dict[str, bytes]]:
    from nepotism.runner.batch import plan_round, write_batch

    written = []
    with Store(db) as store:
        for calls in CHUNK_SIZES:
            write_batch(experiment, plan_round(experiment, store, chunk_calls=calls), out / str(calls))
            written.append(_files(out / str(calls)))
    return written


def test_batch_request_files_are_the_same_bytes_whatever_the_chunk_size(tmp_path):
    from nepotism.runner.batch import plan_round, read_results, store_results

    path = _perplexity(standin_experiment(tmp_path, DEAD, items=3))
    _items(tmp_path)
    experiment = load_experiment(path)
    first = _written(experiment, tmp_path / "b.db", tmp_path / "round1")
    assert all(files == first[0] for files in first) and len(first[0]) > 1
    with standin_thread(StandinConfig(latency_s=0.0)) as (url, _):
        answer_batch(tmp_path / "round1" / "1", url, tmp_path / "out1.jsonl")
    with Store(tmp_path / "b.db") as store:
        store_results(store, read_results(plan_round(experiment, store), [tmp_path / "out1.jsonl"]))
    second = _written(experiment, tmp_path / "b.db", tmp_path / "round2")
    # a judge round's lines come a chunk at a time, each chunk's tasks protocol by protocol (as
    # `plan_tasks` plans them): the same lines in each file, in an order that follows the chunks
    lines = [{name: sorted(data.splitlines()) for name, data in files.items()} for files in second]
    assert all(files == lines[0] for files in lines)
    assert all(files["batch.json"] == second[0]["batch.json"] for files in second)
    assert any(b'"echo":true' in data for data in second[0].values())  # the perplexity calls too


def test_a_runs_exports_are_the_same_bytes_whatever_chunks_its_perplexity_step_reads_the_plan_in(tmp_path, monkeypatch):
    from nepotism.runner import experiment_run
    from nepotism.runner.judge_plan import iter_tasks

    exports = []
    with standin_thread(StandinConfig(latency_s=0.0)) as (url, _):
        for calls in (1, 10**6):
            folder = tmp_path / str(calls)
            path = _perplexity(standin_experiment(folder, url, items=3))
            _items(folder)
            monkeypatch.setattr(experiment_run, "iter_tasks", functools.partial(iter_tasks, calls=calls))
            with Store(folder / "s.db") as store:
                summary = asyncio.run(experiment_run.run_experiment(load_experiment(path), store))
            assert summary.perplexity["scores"]["ok"] > 0
            exports.append({name: data for name, data in _files(folder / "out").items() if name != "run.json"})  # (the run's id)
    assert exports[0] == exports[1] and "perplexity.csv" in exports[0]


@pytest.mark.parametrize("small", [4, 1 << 16])
def test_the_key_set_says_which_keys_are_new_as_a_python_set_would(monkeypatch, small):
    """Chunk after chunk, against a set of the same keys: repeats within a chunk (the first is
    new), across chunks, keys that share their first 8 bytes (searched again whole), keys ending
    in zero bytes (a numpy ``S32`` scalar would drop them), merges of every kind (``small``)."""
    import random

    from nepotism.runner.judge_plan import KeySet

    monkeypatch.setattr(KeySet, "_SMALL", small)
    rng = random.Random(7)
    pool = [rng.randbytes(32).hex() for _ in range(3000)]
    pool += [pool[0][:16] + rng.randbytes(24).hex() for _ in range(20)]  # same first 8 bytes as pool[0]
    pool += [rng.randbytes(24).hex() + "00" * 8, rng.randbytes(31).hex() + "00", "00" * 32]
    keys, seen = KeySet(), set()
    for n in [0, 1, 5, 64, 300, 7, 1000, 2500, 3, 2000] * 3:
        chunk = [rng.choice(pool) for _ in range(n)]
        want = []
        for key in chunk:
            want.append(key not in seen)
            seen.add(key)
        assert keys.add(chunk).tolist() == want
        assert len(keys) == len(seen)
    assert len(seen) > 2900
    with pytest.raises(ValueError):
        keys.add(["abc"])
