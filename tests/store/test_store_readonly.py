"""A store opened read-only answers the writes of a complete rerun by checking them: a write that
changes nothing there is a no-op, one that would add or change something is a `StoreWriteError`
naming the store, why it is read-only and what the run would write; the file is never touched."""

from __future__ import annotations

import hashlib

import pytest

from nepotism.records import Instance, Judgment, Reference, Response
from nepotism.store import Store, StoreWriteError
from tests.store.keys import opaque_key


def _judgment(verdict="A", status="parsed", instance="q1"):
    return Judgment(
        instance_id=instance,
        judge="judge-a",
        protocol="pairwise",
        candidates=("gen-x", "gen-y"),
        status=status,
        verdict=verdict if status != "failed" else None,
        reason="timeout" if status == "failed" else None,
    )


@pytest.fixture
def stored(tmp_path):
    """A store holding one item of each kind, closed cleanly, then opened read-only."""
    path = tmp_path / "s.db"
    key = opaque_key("p")
    with Store(path) as store:
        store.add_instances([Instance("q1", "Name a prime.")], dataset="/data/items.jsonl")
        store.add_responses([Response("q1", "gen-x", "7")])
        store.put_call(key, request={"model": "m"}, response=None, text="[[A]]")
        store.add_judgments([_judgment(), _judgment("B", "failed", "q2")], call_keys={_judgment().id: key})
        store.add_references([Reference("q1", "preference", ("gen-x", "gen-y"), winner="gen-x")])
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    store = Store(path, readonly=True)
    yield store, key
    store.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]


def test_writes_that_change_nothing_are_no_ops(stored):
    store, key = stored
    assert store.add_instances([Instance("q1", "Name a prime.")], dataset="/data/items.jsonl") == 0
    assert store.add_responses([Response("q1", "gen-x", "7")]) == 0
    assert store.add_judgments([_judgment()], call_keys={_judgment().id: key}) == 0
    assert store.add_judgments([_judgment("B", "failed", "q2")]) == 0  # a failure stays one
    assert store.add_references([Reference("q1", "preference", ("gen-x", "gen-y"), winner="gen-x")]) == 0
    run = store.start_run({"x": 1})
    store.end_run(run, "done")  # (not recorded)
    assert store.runs() == [] and store.abandon_dead_runs() == []
    plan = store.open_plan()  # a run's plan is a temporary table: still possible
    store.add_plan_ids(plan, [_judgment().id])
    store.reserve_space()
    store.drop_reserve()


@pytest.mark.parametrize(
    "write, what",
    [
        (lambda s, k: s.add_instances([Instance("q1", "Name an even prime.")], dataset="/data/items.jsonl"), "1 instances"),
        (lambda s, k: s.add_instances([Instance("q3", "New.")]), "1 instances"),
        (lambda s, k: s.add_responses([Response("q1", "gen-y", "11")]), "1 responses"),
        (lambda s, k: s.add_judgments([_judgment("B", "parsed", "q2")]), "1 judgments"),  # a retry that succeeded
        (lambda s, k: s.add_judgments([_judgment()], call_keys={_judgment().id: opaque_key("other")}), "1 judgments"),
        (lambda s, k: s.add_judgments([_judgment(instance="q5")]), "1 judgments"),
        (lambda s, k: s.add_references([Reference("q5", "preference", ("gen-x", "gen-y"), winner="gen-y")]), "1 references"),
    ],
    ids=["edited-instance", "new-instance", "response", "retried-judgment", "other-call", "new-judgment", "reference"],
)
def test_a_write_that_would_change_something_names_the_store_and_what(stored, write, what):
    store, key = stored
    with pytest.raises(StoreWriteError) as err:
        write(store, key)
    message = str(err.value)
    assert str(store.path) in message and "read-only (opened for reading only)" in message
    assert f"would add or change {what}" in message and "\n" not in message
