"""``nepotism store info`` and ``nepotism store export`` through click's CliRunner."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
from click.testing import CliRunner

import nepotism.cli.store as store_cli
from nepotism.cli import main
from nepotism.records import Judgment
from nepotism.store import Store
from nepotism.store._migrate import SCHEMA_VERSION
from tests.store.keys import opaque_key


def _filled(path):
    with Store(path) as store:
        store.add_judgments(
            [
                Judgment("q1", "judge-a", "pairwise", ("x", "y"), "parsed", verdict="A"),
                Judgment("q2", "judge-a", "pairwise", ("x", "y"), "unparsed"),
            ]
        )
        key = opaque_key("p")
        store.put_call(key, request={"model": "m"}, response=None, text="A")
    return path


def test_public_names():
    assert store_cli.__all__ == ["command"]
    assert "store" in main.commands


def test_info_json(tmp_path):
    path = _filled(tmp_path / "s.db")
    result = CliRunner().invoke(main, ["store", "info", "--store", str(path), "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["schema_version"] == SCHEMA_VERSION
    assert info["counts"]["judgments"] == 2 and info["counts"]["calls"] == 1
    assert info["judgment_status"] == {"parsed": 1, "unparsed": 1}


def test_info_takes_the_store_as_its_argument(tmp_path):
    """``nepotism store info PATH`` as a newcomer types it (before: "Got unexpected extra argument")."""
    path = _filled(tmp_path / "s.db")
    by_argument = CliRunner().invoke(main, ["store", "info", str(path), "--json"])
    assert by_argument.exit_code == 0, by_argument.output
    assert by_argument.output == CliRunner().invoke(main, ["store", "info", "--store", str(path), "--json"]).output
    both = CliRunner().invoke(main, ["store", "info", str(path), "--store", str(tmp_path / "other.db")])
    assert both.exit_code == 2 and "two stores named" in both.output
    missing = CliRunner().invoke(main, ["store", "info", str(tmp_path / "none.db")])
    assert missing.exit_code == 2 and "no store file" in missing.output and not (tmp_path / "none.db").exists()


def test_info_text_uses_the_environment_store(tmp_path, monkeypatch):
    path = _filled(tmp_path / "env.db")
    monkeypatch.setenv("NEPOTISM_STORE", str(path))
    result = CliRunner().invoke(main, ["store", "info"])
    assert result.exit_code == 0, result.output
    assert f"schema version  {SCHEMA_VERSION}" in result.output
    assert "judge-a" in result.output


def test_info_on_a_missing_store_is_exit_2(tmp_path):
    result = CliRunner().invoke(main, ["store", "info", "--store", str(tmp_path / "none.db")])
    assert result.exit_code == 2
    assert "no store file" in result.output
    assert not (tmp_path / "none.db").exists()


def test_export_infers_the_format(tmp_path):
    path = _filled(tmp_path / "s.db")
    out = tmp_path / "judgments.parquet"
    result = CliRunner().invoke(main, ["store", "export", "judgments", "--out", str(out), "--store", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"table": "judgments", "out": str(out), "format": "parquet", "rows": 2}
    assert pq.read_table(out).column("verdict").to_pylist() == ["A", None]


def test_export_explicit_format_and_protocol(tmp_path):
    path = _filled(tmp_path / "s.db")
    out = tmp_path / "j.out"
    result = CliRunner().invoke(
        main,
        ["store", "export", "judgments", "--out", str(out), "--format", "csv", "--protocol", "pairwise", "--store", str(path)],
    )
    assert result.exit_code == 0, result.output
    assert "wrote 2 rows" in result.output
    assert out.read_text().startswith("instance_id,judge,model_a,model_b,verdict")


def test_export_errors_are_exit_2(tmp_path):
    path = _filled(tmp_path / "s.db")
    runner = CliRunner()
    bad_ext = runner.invoke(main, ["store", "export", "calls", "--out", str(tmp_path / "x.txt"), "--store", str(path)])
    assert bad_ext.exit_code == 2 and "extension" in bad_ext.output
    bad_table = runner.invoke(main, ["store", "export", "nope", "--out", str(tmp_path / "x.csv"), "--store", str(path)])
    assert bad_table.exit_code == 2 and "unknown table" in bad_table.output
    assert not (tmp_path / "x.csv").exists()


def test_help_texts():
    result = CliRunner().invoke(main, ["store", "export", "--help"])
    assert result.exit_code == 0
    assert "public recorded-judgment format" in result.output


PAIRS = (
    "instance_id,judge,model_a,model_b,verdict,category\n"
    "q1,judge-a,x,y,A,coding\nq1,judge-a,y,x,B,coding\nq2,judge-a,x,y,tie,\nq3,judge-a,x,y,B,maths\n"
)


def test_load_then_export_keeps_the_category_and_merge_carries_it(tmp_path):
    table = tmp_path / "pairs.csv"
    table.write_text(PAIRS)
    store, out = tmp_path / "s.db", tmp_path / "out.csv"
    for _ in range(2):  # loading twice adds nothing
        done = CliRunner().invoke(main, ["store", "load", str(table), "--store", str(store)])
        assert done.exit_code == 0, done.output
    done = CliRunner().invoke(main, ["store", "export", "pairwise", "--store", str(store), "--out", str(out)])
    assert done.exit_code == 0, done.output
    import pandas as pd

    exported = pd.read_csv(out, keep_default_na=False)
    assert dict(zip(exported["instance_id"], exported["category"])) == {"q1": "coding", "q2": "", "q3": "maths"}
    with Store(store) as opened:
        assert opened.info()["schema_version"] == SCHEMA_VERSION
    merged = tmp_path / "merged.db"
    done = CliRunner().invoke(main, ["store", "merge", str(store), "--out", str(merged)])
    assert done.exit_code == 0, done.output
    again = tmp_path / "again.csv"
    CliRunner().invoke(main, ["store", "export", "pairwise", "--store", str(merged), "--out", str(again)])
    assert again.read_text() == out.read_text()


def test_a_category_that_contradicts_the_store_or_the_table_writes_nothing(tmp_path):
    store = tmp_path / "s.db"
    first = tmp_path / "a.csv"
    first.write_text(PAIRS)
    assert CliRunner().invoke(main, ["store", "load", str(first), "--store", str(store)]).exit_code == 0
    other = tmp_path / "b.csv"
    other.write_text("instance_id,judge,model_a,model_b,verdict,category\nq1,judge-b,x,y,A,writing\n")
    done = CliRunner().invoke(main, ["store", "load", str(other), "--store", str(store)])
    assert done.exit_code == 2 and "'q1' is already in the store with category 'coding'" in done.output
    with Store(store) as opened:
        assert {j.judge for j in opened.judgments()} == {"judge-a"}
    torn = tmp_path / "c.csv"
    torn.write_text("instance_id,judge,model_a,model_b,verdict,category\nq9,j,x,y,A,one\nq9,j,y,x,B,two\n")
    done = CliRunner().invoke(main, ["store", "load", str(torn), "--store", str(tmp_path / "fresh.db")])
    assert done.exit_code == 2 and "c.csv" in done.output and "line 3" in done.output and "category" in done.output
