"""`merge_stores` / `nepotism store merge`: every table joined, duplicates once, conflicts refused."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from nepotism.cli import main
from nepotism.errors import InputError
from nepotism.records import Instance, Judgment, Reference, Response
from nepotism.store import Store
from nepotism.store.annotations import AnnotationItem, add_collection, add_label, shown_first
from nepotism.store.merge import merge_stores

KEY_A, KEY_B, KEY_C = "a" * 64, "b" * 64, "c" * 64


def _call(store: Store, key: str, text: str | None = "A", status: str = "ok", run_id: str | None = None) -> None:
    store.put_call(
        key,
        request={"backend": "openai", "model": "m", "messages": [{"role": "user", "content": key}]},
        response={"body": {"id": f"chatcmpl-{run_id}"}},
        text=text,
        status=status,
        error=None if status == "ok" else "timeout",
        latency_s=0.1,
        run_id=run_id,
    )


def _judgment(instance: str, verdict: str | None = "A", status: str = "parsed") -> Judgment:
    return Judgment(
        instance,
        "judge",
        "pairwise",
        ("x", "y"),
        status=status,
        verdict=verdict,
        condition="default",
        replicate=0,
        reason=None if status == "parsed" else "timeout",
    )


def _execute(path: Path, sql: str) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(sql)
    conn.close()


def _shard(path: Path, instance: str, key: str, *, verdict: str = "A") -> Path:
    with Store(path) as store:
        run = store.start_run({"experiment": {"name": "e"}})
        store.add_instances([Instance(instance, f"prompt of {instance}", category="c")])
        store.add_responses([Response(instance, "x", "one"), Response(instance, "y", "two")])
        _call(store, key, run_id=run)
        store.add_judgments([_judgment(instance, verdict)], call_keys={_judgment(instance).id: key}, run_id=run)
        store.add_references([Reference(instance, "preference", ("x", "y"), winner="x")])
        store.end_run(run)
    return path


def test_disjoint_stores_merge_into_one_with_every_table(tmp_path):
    a = _shard(tmp_path / "a.db", "q1", KEY_A)
    b = _shard(tmp_path / "b.db", "q2", KEY_B)
    with Store(b) as store:
        item = AnnotationItem("q2", "x", "y", "p", "one", "two")
        add_collection(store, "human", [item])
        shown_first(store, "human", item.item_id, "ann", lambda: "model_a")
        add_label(store, "human", item.item_id, "ann", "A", elapsed_ms=5)
        store.record_import("table.csv", kind="pairwise", rows=3, sha256="0" * 64)
        store.add_instance_categories({"q7": "loaded"}, source="table.csv")
    summary = merge_stores([a, b], tmp_path / "all.db")
    assert summary.added == {
        "runs": 2,
        "instances": 2,
        "responses": 4,
        "calls": 2,
        "judgments": 2,
        "references": 2,
        "imports": 1,
        "instance_categories": 1,
        "annotation_items": 1,
        "annotation_orders": 1,
        "annotation_labels": 1,
    }
    assert sum(summary.duplicates.values()) == 0 and summary.unfinished_runs == ()
    with Store(tmp_path / "all.db") as merged:
        assert {j.instance_id for j in merged.judgments()} == {"q1", "q2"}
        assert merged.get_call(KEY_A).text == "A" and merged.judgments()[0].call_key if hasattr(Judgment, "call_key") else True
        assert [r["status"] for r in merged.runs()] == ["done", "done"]
        assert merged._conn().execute("SELECT COUNT(*) FROM judgments WHERE call_key IS NOT NULL").fetchone()[0] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "all.db", "b.db"]  # no temporary file left


def test_identical_duplicates_are_kept_once(tmp_path):
    a = _shard(tmp_path / "a.db", "q1", KEY_A)
    shutil.copy(a, tmp_path / "copy.db")
    summary = merge_stores([a, tmp_path / "copy.db", a], tmp_path / "all.db")
    assert summary.added["judgments"] == 1 and summary.duplicates["judgments"] == 2
    assert summary.duplicates["runs"] == 2
    # merging the merge with one of its inputs again adds nothing
    again = merge_stores([tmp_path / "all.db", a], tmp_path / "again.db")
    assert again.added["calls"] == 1 and again.duplicates["calls"] == 1


def test_same_call_answered_twice_alike_is_no_conflict_despite_body_and_timing(tmp_path):
    a = _shard(tmp_path / "a.db", "q1", KEY_A)
    with Store(tmp_path / "b.db") as store:  # another run of the same call: other body id, run, time
        run = store.start_run({"experiment": {"name": "other"}})
        _call(store, KEY_A, run_id=run)
        store.end_run(run)
    summary = merge_stores([a, tmp_path / "b.db"], tmp_path / "all.db")
    assert summary.added["calls"] == 1 and summary.duplicates["calls"] == 1


def test_failed_rows_give_way_to_successful_ones(tmp_path):
    with Store(tmp_path / "failed.db") as store:
        _call(store, KEY_A, text=None, status="failed")
        store.add_judgments([_judgment("q1", None, "failed")])
    ok = _shard(tmp_path / "ok.db", "q1", KEY_A)
    for order in ([tmp_path / "failed.db", ok], [ok, tmp_path / "failed.db"]):
        out = tmp_path / f"all-{order[0].stem}.db"
        merge_stores(order, out)
        with Store(out) as merged:
            assert merged.get_call(KEY_A).status == "ok"
            assert [j.status for j in merged.judgments()] == ["parsed"]


@pytest.mark.parametrize("table", ["calls", "judgments", "instances"])
def test_same_key_different_content_is_a_conflict_naming_table_and_key(tmp_path, table):
    a = _shard(tmp_path / "a.db", "q1", KEY_A)
    b = tmp_path / "b.db"
    shutil.copy(a, b)
    column, sql = {
        "calls": ("text", "UPDATE calls SET text = 'B'"),
        "judgments": ("verdict", "UPDATE judgments SET verdict = 'B'"),
        "instances": ("prompt", "UPDATE instances SET prompt = '\"other\"'"),
    }[table]
    _execute(b, sql)
    with pytest.raises(InputError) as err:
        merge_stores([a, b], tmp_path / "all.db")
    message = str(err.value)
    assert f"table {table}" in message and column in message and str(b) in message
    key = {"calls": KEY_A, "judgments": _judgment("q1").id, "instances": "q1"}[table]
    assert key in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "b.db"]  # nothing written


def test_cli_refuses_an_existing_output_a_missing_input_and_a_non_store(tmp_path):
    a = _shard(tmp_path / "a.db", "q1", KEY_A)
    runner = CliRunner()
    (tmp_path / "exists.db").write_text("keep me")
    done = runner.invoke(main, ["store", "merge", str(a), "--out", str(tmp_path / "exists.db")])
    assert done.exit_code == 2 and "exists" in done.output
    assert (tmp_path / "exists.db").read_text() == "keep me"
    done = runner.invoke(main, ["store", "merge", str(a), str(tmp_path / "nope.db"), "--out", str(tmp_path / "o.db")])
    assert done.exit_code == 2 and "nope.db" in done.output and not (tmp_path / "o.db").exists()
    (tmp_path / "text.db").write_text("not sqlite")
    done = runner.invoke(main, ["store", "merge", str(a), str(tmp_path / "text.db"), "--out", str(tmp_path / "o.db")])
    assert done.exit_code == 2 and "text.db" in done.output and not (tmp_path / "o.db").exists()
    done = runner.invoke(main, ["store", "merge", str(a), "--out", str(tmp_path / "o.db")])
    assert done.exit_code == 0, done.output
    assert "judgments" in done.output and (tmp_path / "o.db").is_file()


def test_an_older_schema_is_refused_with_how_to_migrate(tmp_path):
    a = _shard(tmp_path / "a.db", "q1", KEY_A)
    _execute(a, "DELETE FROM _migrations WHERE version = (SELECT MAX(version) FROM _migrations)")
    with pytest.raises(InputError) as err:
        merge_stores([a], tmp_path / "o.db")
    assert "schema version" in str(err.value) and "store info" in str(err.value)


def test_a_run_still_running_is_reported(tmp_path):
    with Store(tmp_path / "a.db") as store:
        store.start_run({"experiment": {"name": "e"}})
    summary = merge_stores([tmp_path / "a.db"], tmp_path / "o.db")
    assert len(summary.unfinished_runs) == 1
