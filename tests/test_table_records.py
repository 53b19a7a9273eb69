"""Recorded tables become records; loading them into a store round-trips through export."""

import pandas as pd
import pytest
from click.testing import CliRunner

from nepotism.cli import main
from nepotism.errors import InputError
from nepotism.table_records import table_records
from nepotism.tables import read_table, write_table


def test_pairwise_rows_become_judgments_with_unparsed_kept(tmp_path):
    path = tmp_path / "j.csv"
    path.write_text("instance_id,judge,model_a,model_b,verdict,prob_a,prob_b\n1,j,x,y,A,0.8,0.2\n1,j,y,x,,,\n")
    first, second = table_records(read_table(path))
    assert first.status == "parsed" and first.verdict == "A" and first.candidates == ("x", "y")
    assert first.label_probs == {"A": 0.8, "B": 0.2}
    assert second.status == "unparsed" and second.verdict is None and second.label_probs is None
    assert first.id != second.id


def test_rubric_and_pointwise_rows(tmp_path):
    rubric = tmp_path / "r.csv"
    rubric.write_text("instance_id,judge,model,rubric_id,met\n1,j,x,r1,true\n1,j,x,r2,\n")
    met, missing = table_records(read_table(rubric))
    assert (met.verdict, met.rubric_id, missing.status) == ("yes", "r1", "unparsed")
    points = tmp_path / "p.csv"
    points.write_text("instance_id,judge,model,score\n1,j,x,7\n")
    (score,) = table_records(read_table(points))
    assert score.score == 7.0 and score.protocol == "pointwise"


def test_references(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("instance_id,model_a,model_b,winner\n1,x,y,tie\n")
    (reference,) = table_records(read_table(path))
    assert reference.kind == "preference" and reference.winner == "tie"


def test_rubric_items_are_refused(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text("instance_id,rubric_id,text,points\n1,r1,Uses no commas,1\n")
    with pytest.raises(InputError, match="describe instances"):
        table_records(read_table(path))


def test_store_load_is_idempotent_and_exports_back(tmp_path):
    frame = pd.DataFrame(
        {
            "instance_id": ["1", "1", "2"],
            "judge": ["j"] * 3,
            "model_a": ["x", "y", "x"],
            "model_b": ["y", "x", "y"],
            "verdict": ["A", "tie", None],
        }
    )
    source = write_table(frame, tmp_path / "j.parquet")
    store = tmp_path / "s.db"
    runner = CliRunner()
    first = runner.invoke(main, ["store", "load", str(source), "--store", str(store), "--json"])
    second = runner.invoke(main, ["store", "load", str(source), "--store", str(store), "--json"])
    assert first.exit_code == 0 and '"added": 3' in first.output
    assert second.exit_code == 0 and '"added": 0' in second.output
    out = tmp_path / "back.csv"
    assert runner.invoke(main, ["store", "export", "judgments", "--out", str(out), "--store", str(store)]).exit_code == 0
    back = read_table(out).frame.sort_values(["instance_id", "model_a"]).reset_index(drop=True)
    assert back["verdict"].tolist() == ["A", "tie", None]


def test_store_load_bad_file_exit_2_and_no_store_created(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("instance_id,judge,model_a,model_b,verdict\n1,j,x,y,Z\n")
    store = tmp_path / "s.db"
    result = CliRunner().invoke(main, ["store", "load", str(bad), "--store", str(store)])
    assert result.exit_code == 2 and "line 2" in result.output
    assert not store.exists()
