"""The generation plan a run starts from (`experiment_run._generation_plan`): which stored
responses it keeps and which generation calls it still makes, each call planned once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from nepotism.experiment import load_experiment
from nepotism.records import Response
from nepotism.runner import calls as calls_module
from nepotism.runner.calls import request_key
from nepotism.runner.engine import Runner
from nepotism.runner.experiment_run import (
    _generation_plan,
    _generators,
    _stored,
    build_endpoints,
    dry_run,
    load_dataset,
    run_experiment,
)
from nepotism.store import Store
from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, standin_process


def _plain(store, experiment, runner, instances, recorded):
    """The plan as computed before it was planned once: each stored response's own generation
    call keyed to check it made the response, then `Runner.plan_generation` for the rest."""
    specs = {spec.model: spec for spec in _generators(experiment)}
    by_id = {i.id: i for i in instances}
    recorded_pairs = {(r.instance_id, r.generator) for r in recorded}
    have = list(recorded)
    for r in store.responses(generator=list(specs)):
        instance = by_id.get(r.instance_id)
        if instance is None or (r.instance_id, r.generator) in recorded_pairs:
            continue
        made_by = r.metadata.get("call_key")
        if made_by is None or made_by == request_key(runner.endpoints[r.generator], specs[r.generator].request(instance)):
            have.append(r)
    return have, runner.plan_generation(instances, list(specs.values()), have)


def _setup(tmp_path: Path):
    """An experiment of two generators over five items (q1 and q4 share a prompt; q3 has a
    recorded answer of standin-alpha) and a store holding every kind of stored response."""
    path = standin_experiment(tmp_path, "http://127.0.0.1:9/v1", items=5)
    rows = [{"id": f"q{i}", "prompt": f"Question {i}?"} for i in range(1, 6)]
    rows[3]["prompt"] = rows[0]["prompt"]
    rows.append({"id": "q3", "prompt": "Question 3?", "model": "standin-alpha", "text": "recorded answer"})
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    experiment = load_experiment(path)
    instances, recorded = load_dataset(experiment)
    runner = Runner(Store(tmp_path / "s.db"), build_endpoints(experiment, _registry(experiment), connect=False))
    specs = {spec.model: spec for spec in _generators(experiment)}
    by_id = {i.id: i for i in instances}

    def made(instance_id: str, generator: str, text: str, key: str | None = "own") -> Response:
        if key == "own":
            key = request_key(runner.endpoints[generator], specs[generator].request(by_id[instance_id]))
        return Response(instance_id, generator, text, metadata={} if key is None else {"call_key": key})

    runner.store.add_instances(instances)
    runner.store.add_responses(
        [
            made("q1", "standin-alpha", "made by the plan's call"),
            made("q1", "standin-beta", "made by an edited request", key="0" * 64),
            made("q2", "standin-alpha", "loaded, no call key", key=None),
            made("q2", "standin-beta", "answer to the old prompt", key="1" * 64),
            made("q2", "standin-beta", "answer to the prompt now"),
            made("q3", "standin-alpha", "stored beside the recorded answer"),
            made("q4", "standin-alpha", "the call q1 shares"),
            Response("q9", "standin-alpha", "an instance of another dataset", metadata={"call_key": "2" * 64}),
        ]
    )
    return experiment, runner, instances, recorded


def _registry(experiment):
    from nepotism.models import load_registry

    return load_registry(experiment.registry_files)


def _calls(planned):
    return [(call.key, instance.id, spec.model) for call, instance, spec in planned]


def test_the_plan_keeps_and_plans_what_keying_each_stored_response_kept_and_planned(tmp_path):
    experiment, runner, instances, recorded = _setup(tmp_path)
    with runner.store:
        have, planned = _generation_plan(runner.store, experiment, runner, instances, recorded)
        want_have, want_planned = _plain(runner.store, experiment, runner, instances, recorded)
        assert [(r.id, r.metadata) for r in have] == [(r.id, r.metadata) for r in want_have]
        assert _calls(planned) == _calls(want_planned)
        assert {(r.instance_id, r.generator, r.text) for r in have if r.instance_id != "q3"} == {
            ("q1", "standin-alpha", "made by the plan's call"),
            ("q2", "standin-alpha", "loaded, no call key"),
            ("q2", "standin-beta", "answer to the prompt now"),
            ("q4", "standin-alpha", "the call q1 shares"),
        }
        assert {(i, g) for _, i, g in _calls(planned)} == {
            ("q1", "standin-beta"),
            ("q3", "standin-beta"),
            ("q4", "standin-beta"),
            ("q5", "standin-alpha"),
            ("q5", "standin-beta"),
        }
        # the same from the responses read once, for any subset of the instances (the dry run's chunks)
        stored = _stored(runner.store, experiment)
        for part in (instances[:2], instances[2:], instances[3:4]):
            ids = {i.id for i in part}
            mine = [r for r in recorded if r.instance_id in ids]
            have, planned = _generation_plan({i.id: stored.get(i.id, ()) for i in part}, experiment, runner, part, mine)
            want_have, want_planned = _plain(runner.store, experiment, runner, part, mine)
            assert sorted(r.id for r in have) == sorted(r.id for r in want_have)
            assert _calls(planned) == _calls(want_planned)
        assert dry_run(experiment, runner.store, chunk_calls=1) == dry_run(experiment, runner.store, chunk_calls=10**6)


def _edit_item(folder: Path, prompt: str | None) -> list[dict]:
    """Give the dataset's second item ``prompt`` (None: a stand-in fault marker after its prompt,
    so every call showing it fails); the dataset's rows after the edit."""
    rows = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    rows[1]["prompt"] = prompt if prompt is not None else rows[1]["prompt"] + " <<standin:fault=http_500>>"
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def _count_keying(monkeypatch, rows: list[dict]) -> list[str]:
    """From now on, the prompt of every generation call keyed (`request_key`) for one of ``rows``."""
    keyed: list[str] = []
    plain_key = calls_module.request_key
    prompts = {r["prompt"] for r in rows}

    def counting(endpoint, request, replicate=0):
        if request.messages is not None and request.messages[-1].content in prompts:
            keyed.append(request.messages[-1].content)
        return plain_key(endpoint, request, replicate)

    monkeypatch.setattr(calls_module, "request_key", counting)
    return keyed


def test_a_rerun_after_a_prompt_edit_keys_each_generation_call_once(tmp_path, monkeypatch):
    """The stored responses are checked against the plan's own keys: a rerun keys each (item,
    generator) generation call once (before, once to check the stored response and once more to
    plan the call it no longer answered)."""
    with standin_process(StandinConfig(latency_s=0.001)) as url:
        path = standin_experiment(tmp_path, url, items=3, recognition=False)
        with Store(tmp_path / "s.db") as store:
            asyncio.run(run_experiment(load_experiment(path), store))
        rows = _edit_item(tmp_path, "Question 2, edited?")
        keyed = _count_keying(monkeypatch, rows)
        with Store(tmp_path / "s.db") as store:
            summary = asyncio.run(run_experiment(load_experiment(path), store))
    assert (summary.generation["total"], summary.generation["sent"]) == (2, 2)
    assert sorted(keyed) == sorted(r["prompt"] for r in rows for _ in ("standin-alpha", "standin-beta"))


def test_a_failed_generation_is_keyed_once_and_its_prevented_judgments_carry_that_key(tmp_path, monkeypatch):
    """`record_prevented` takes each failed pair's generation call from the run's plan: the calls
    of a fresh run are keyed once each (before, a failed pair's call was rendered and keyed again
    to find the key its prevented judgments are stored with), and those judgments carry the key
    of the call that failed."""
    with standin_process(StandinConfig(latency_s=0.001)) as url:
        path = standin_experiment(tmp_path, url, items=3, recognition=False, attempts=1)
        rows = _edit_item(tmp_path, None)  # every call showing its prompt fails
        keyed = _count_keying(monkeypatch, rows)
        with Store(tmp_path / "s.db") as store:
            summary = asyncio.run(run_experiment(load_experiment(path), store))
            failed = dict(store._conn().execute("SELECT key, status FROM calls WHERE status = 'failed'").fetchall())
            prevented = (
                store._conn().execute("SELECT call_key, reason FROM judgments WHERE reason LIKE 'generation:%'").fetchall()
            )
    assert summary.prevented == {"generation:http_5xx:500": 4} and len(failed) == 2
    assert sorted(keyed) == sorted(r["prompt"] for r in rows for _ in ("standin-alpha", "standin-beta"))
    # (each shows both failed responses and is owed to the first generator by name)
    assert len(prevented) == 4 and len({key for key, _ in prevented}) == 1 and prevented[0][0] in failed
