"""Instances, responses, judgments and references in and out of the store; runs, imports, info."""

from __future__ import annotations

import pytest

import nepotism.store.database as database_mod
from nepotism.errors import InputError
from nepotism.records import Instance, Judgment, Message, Reference, Response, RubricItem
from nepotism.store._migrate import SCHEMA_VERSION
from tests.store.keys import opaque_key


def _pairwise(instance="q1", judge="judge-a", verdict="A", status="parsed", replicate=0, **kw):
    return Judgment(
        instance_id=instance,
        judge=judge,
        protocol="pairwise",
        candidates=("gen-x", "gen-y"),
        status=status,
        verdict=verdict,
        replicate=replicate,
        **kw,
    )


def test_public_names():
    assert set(database_mod.__all__) == {
        "CLAIM_LEASE_S",
        "RUN_STATUSES",
        "TABLES",
        "InstanceConflict",
        "Store",
        "default_store_path",
    }


def test_instances_round_trip(store):
    plain = Instance("q1", "What is 2+2?", reference_answer="4", category="math", metadata={"source": "toy", "tags": ["a"]})
    chat = Instance(
        "q2",
        (Message("system", "Be brief."), Message("user", "Name a colour.")),
        rubric=(RubricItem("r1", "names a colour", 2.0, "content"), RubricItem("r2", "is rude", -1.0)),
    )
    assert store.add_instances([plain, chat]) == 2
    assert store.add_instances([plain]) == 0
    got = store.instances()
    assert got == [plain, chat]
    assert got[0].metadata == {"source": "toy", "tags": ["a"]}
    assert store.instances(category="math") == [plain]


def test_an_edited_instance_replaces_the_stored_one(store):
    """The store holds an instance as it was last added (the dataset's item edited since), so a
    dataset read from the store is the latest one; adding it unchanged changes nothing."""
    first = Instance("q1", "What is 2+2?", category="math")
    store.add_instances([first, Instance("q2", "Name a colour.")])
    edited = Instance("q1", "What is 3+3?", reference_answer="6", category="arithmetic", metadata={"v": 2})
    assert store.add_instances([edited]) == 1
    assert store.add_instances([edited]) == 0
    assert store.instances() == [edited, Instance("q2", "Name a colour.")]
    assert store.instances()[0].metadata == {"v": 2}


def test_an_id_another_dataset_gives_other_content_is_refused_and_nothing_is_written(store):
    """One id is one item in a store: the same dataset file edited updates it (and an id stored
    before files were recorded, or given without one, takes the new content as before), but
    another file giving the id other content is refused, naming the id and both files."""
    from nepotism.store.database import InstanceConflict

    a = Instance("q1", "What is 2+2?", category="math")
    assert store.add_instances([a, Instance("q2", "Name a colour.")], dataset="/data/a.jsonl") == 2
    assert store.add_instances([a], dataset="/data/b.jsonl") == 0  # the same item from a copy: fine
    other = Instance("q1", "Name a prime.", category="primes")
    with pytest.raises(InstanceConflict) as refused:
        store.add_instances([Instance("q3", "New."), other], dataset="/data/b.jsonl")
    err = refused.value
    assert (err.instance_id, err.path, err.field) == ("q1", "/data/b.jsonl", "id") and "/data/a.jsonl" in err.message
    assert [i.id for i in store.instances()] == ["q1", "q2"] and store.instances()[0] == a  # nothing written
    edited = Instance("q1", "What is 3+3?", category="math")
    assert store.add_instances([edited], dataset={"q1": "/data/a.jsonl"}) == 1  # its own file, edited
    assert store.add_instances([other]) == 1  # no file given: the latest content, as before
    assert store.instances()[0] == other


def test_responses_round_trip_and_filters(store):
    responses = [
        Response("q1", "gen-x", "four", {"tokens": 3}),
        Response("q1", "gen-y", "4"),
        Response("q2", "gen-x", "blue ✓"),
    ]
    assert store.add_responses(iter(responses)) == 3
    assert store.add_responses(responses) == 0
    assert store.responses() == sorted(responses, key=lambda r: (r.instance_id, r.generator))
    assert store.responses(generator="gen-x", instance_id="q1")[0].metadata == {"tokens": 3}
    assert len(store.responses(instance_id=["q1", "q2"])) == 3
    assert store.responses(instance_id=[]) == []
    with pytest.raises(TypeError, match="cannot filter"):
        store.responses(text="four")


def test_judgments_round_trip_all_fields(store):
    judgment = _pairwise(
        raw_output="[[A]]",
        label_probs={"A": 0.7, "B": 0.2, "tie": 0.1},
        template_id="t1",
        condition="swapped",
        usage={"prompt_tokens": 9},
        latency_s=0.5,
    )
    pointwise = Judgment("q1", "judge-a", "pointwise", ("gen-x",), "parsed", score=7.5)
    unparsed = Judgment("q2", "judge-b", "rubric", ("gen-y",), "unparsed", rubric_id="r1", raw_output="hmm")
    assert store.add_judgments([judgment, pointwise, unparsed], source="unit") == 3
    got = {j.id: j for j in store.judgments()}
    for original in (judgment, pointwise, unparsed):
        stored = got[original.id]
        assert stored == original
        assert stored.label_probs == original.label_probs
        assert stored.usage == original.usage
    assert store.judgments(source="unit", judge="judge-b") == [unparsed]
    assert store.judgments(protocol=["pointwise", "rubric"], status="parsed") == [pointwise]
    assert store.judgments(template_id=None, protocol="pointwise") == [pointwise]


def test_judgments_are_idempotent_on_their_id(store):
    first = _pairwise(verdict="A")
    assert store.add_judgments([first, first]) == 1
    assert store.add_judgments([_pairwise(verdict="B")]) == 0
    assert store.judgments()[0].verdict == "A"
    assert store.add_judgments([_pairwise(verdict="B")], replace=True) == 1
    assert store.judgments()[0].verdict == "B"
    assert store.info()["counts"]["judgments"] == 1


def test_failed_judgment_is_replaced_by_a_successful_retry(store):
    failed = _pairwise(status="failed", verdict=None, raw_output=None)
    assert store.add_judgments([failed]) == 1
    assert store.add_judgments([failed]) == 0
    assert store.add_judgments([_pairwise(verdict="tie")]) == 1
    assert [j.status for j in store.judgments()] == ["parsed"]
    assert store.add_judgments([failed]) == 0  # a failure never overwrites a result


def test_judgments_link_to_calls_and_runs(store):
    run = store.start_run({"x": 1})
    key = opaque_key("p")
    store.put_call(key, request={"model": "m"}, response=None, text="[[A]]", run_id=run)
    judgment = _pairwise()
    store.add_judgments([judgment], call_keys={judgment.id: key}, run_id=run, source=run)
    assert store.judgments(call_key=key, run_id=run) == [judgment]
    with pytest.raises(ValueError, match="call key"):
        store.add_judgments([_pairwise(instance="q9")], call_keys={_pairwise(instance="q9").id: "0" * 64})
    assert store.judgments(instance_id="q9") == []


def test_a_bad_record_in_a_batch_writes_nothing(store):
    def batch():
        yield _pairwise(instance="ok1")
        raise RuntimeError("reader broke")

    with pytest.raises(RuntimeError):
        store.add_judgments(batch())
    assert store.judgments() == []


def test_references_round_trip(store):
    refs = [
        Reference("q1", "preference", ("gen-x", "gen-y"), winner="gen-x", source="humans"),
        Reference("q1", "correctness", ("gen-x",), correct=False, score=0.0),
        Reference("q2", "rubric", ("gen-y",), rubric_id="r1", met=True),
    ]
    assert store.add_references(refs) == 3
    assert store.add_references(refs[:1]) == 0
    got = store.references()
    assert sorted(got, key=lambda r: r.id) == sorted(refs, key=lambda r: r.id)
    assert store.references(kind="correctness")[0].correct is False
    assert store.references(rubric_id="r1")[0].met is True


def test_runs_lifecycle(store):
    run = store.start_run({"judges": ["a", "b"], "seed": 3})
    assert store.runs()[0]["status"] == "running"
    store.end_run(run, "interrupted")
    (row,) = store.runs()
    assert row["id"] == run and row["status"] == "interrupted" and row["ended_at"]
    assert row["config"] == {"judges": ["a", "b"], "seed": 3}
    with pytest.raises(ValueError):
        store.end_run(run, "finished")
    with pytest.raises(InputError, match="no run"):
        store.end_run("missing")


def test_a_run_whose_process_was_killed_is_ended_by_the_next_run(tmp_path):
    import signal
    import subprocess
    import sys

    from nepotism.store import Store

    path = tmp_path / "s.db"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time\n"
                "from nepotism.store import Store\n"
                f"s = Store({str(path)!r})\n"
                "print(s.start_run({'who': 'child'}), flush=True)\n"
                "time.sleep(60)\n"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    killed = child.stdout.readline().strip()
    with Store(path) as store:
        assert store.abandon_dead_runs() == []  # the child is alive: its run is left running
        mine = store.start_run({"who": "alive"})
        child.send_signal(signal.SIGKILL)
        child.wait()
        other = store.start_run({"who": "next"})
        runs = {r["id"]: r for r in store.runs()}
    child.stdout.close()
    assert {k: r["status"] for k, r in runs.items()} == {killed: "interrupted", mine: "running", other: "running"}
    assert runs[killed]["end_note"].startswith(f"abandoned: process {child.pid} ") and runs[killed]["ended_at"]
    assert runs[mine]["end_note"] is None


def test_imports_and_info(store):
    store.record_import("/data/x.csv", kind="pairwise", rows=10, sha256="cd" * 32)
    store.add_judgments(
        [_pairwise(judge="a"), _pairwise(judge="a", replicate=1), _pairwise(judge="b", status="unparsed", verdict=None)]
    )
    key = opaque_key("p")
    store.put_call(key, request={}, response=None, text=None, status="failed", error="refused")
    store.end_run(store.start_run({}))
    assert store.imports()[0] | {"imported_at": None} == {
        "path": "/data/x.csv",
        "sha256": "cd" * 32,
        "kind": "pairwise",
        "rows": 10,
        "imported_at": None,
    }
    info = store.info()
    assert info["schema_version"] == SCHEMA_VERSION
    assert info["path"].endswith("test.db") and info["size_bytes"] > 0
    assert info["counts"] == {
        "runs": 1,
        "instances": 0,
        "responses": 0,
        "calls": 1,
        "judgments": 3,
        "references": 0,
        "imports": 1,
    }
    assert info["judgments_per_judge"] == {"a": 2, "b": 1}
    assert info["judgment_status"] == {"parsed": 2, "unparsed": 1}
    assert info["call_status"] == {"failed": 1}
    assert info["run_status"] == {"done": 1}


def test_judged_calls_counts_parsed_and_unparsed_not_failed(store):
    k1, k2 = "1" * 64, "2" * 64
    store.put_call(k1, request={"m": 1}, response={"r": 1}, text="[[A]]")
    store.put_call(k2, request={"m": 2}, response=None, text=None, status="failed", error="timeout")
    parsed = Judgment(instance_id="1", judge="j", protocol="pairwise", candidates=("x", "y"), status="parsed", verdict="A")
    failed = Judgment(instance_id="2", judge="j", protocol="pairwise", candidates=("x", "y"), status="failed")
    store.add_judgments([parsed, failed], call_keys={parsed.id: k1, failed.id: k2})
    assert store.judged_calls() == {k1: 1}


@pytest.mark.parametrize(("raised", "status"), [(None, "done"), (KeyboardInterrupt, "interrupted"), (RuntimeError, "failed")])
def test_recording_run_ends_with_the_status_of_the_block(store, raised, status):
    try:
        with store.recording_run({"who": "block"}) as run_id:
            assert store.runs()[-1]["status"] == "running"
            if raised is not None:
                raise raised()
    except (KeyboardInterrupt, RuntimeError) as err:
        assert type(err) is raised  # re-raised, never swallowed
    (row,) = [r for r in store.runs() if r["id"] == run_id]
    assert row["status"] == status and row["ended_at"]


def test_a_judgment_read_from_another_call_replaces_the_stored_one(store):
    """An edit the judgment id does not show (a judge's temperature): the latest call's reading wins,
    as a reading from the same call never does (idempotent), and one without a call key neither."""
    k1, k2 = "1" * 64, "2" * 64
    for key in (k1, k2):
        store.put_call(key, request={"k": key}, response={"r": 1}, text="[[A]]")
    first = Judgment(instance_id="1", judge="j", protocol="pairwise", candidates=("x", "y"), status="parsed", verdict="A")
    later = Judgment(instance_id="1", judge="j", protocol="pairwise", candidates=("x", "y"), status="parsed", verdict="B")
    assert first.id == later.id
    store.add_judgments([first], call_keys={first.id: k1})
    assert store.add_judgments([later], call_keys={later.id: k1}) == 0  # same call: kept
    assert [j.verdict for j in store.judgments()] == ["A"]
    assert store.add_judgments([later]) == 0  # no call key (an import): kept
    assert store.add_judgments([later], call_keys={later.id: k2}) == 1  # another call: replaced
    assert [j.verdict for j in store.judgments()] == ["B"]
    assert store.judged_calls() == {k2: 1}
