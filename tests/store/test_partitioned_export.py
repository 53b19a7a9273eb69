"""`store export --partition-by judge` writes a hive-partitioned Parquet dataset, and `nepotism
metrics` reads such a dataset (folder or glob) as the one table it holds: the same records as the
single-file export, byte for byte, through the installed executable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from nepotism import audit
from nepotism.datasets import dataset_files, read_dataset
from nepotism.errors import InputError, ValidationError
from nepotism.simulate import SimulationSpec, simulate
from nepotism.store.export import partition_folder

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))


def nep(*args: str, cwd: Path, expect: int = 0) -> subprocess.CompletedProcess:
    done = subprocess.run([NEPOTISM, *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == expect, f"nepotism {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A store holding a planted pairwise table (self and family bias, ties, unparsed and failed
    verdicts with reasons, a second condition) and its registry."""
    folder = tmp_path_factory.mktemp("planted")
    spec = SimulationSpec(
        judges=("judge-a", "judge-b", "other-1"), n_instances=40, self_bias=0.6, family_bias=0.3, student_bias=0.4, tie_rate=0.1
    )
    table = simulate(spec, seed=4, kinds=("pairwise",)).pairwise
    table = pd.concat([table, table.assign(condition="swapped")], ignore_index=True)
    rng = np.random.default_rng(1)
    missing = rng.random(len(table)) < 0.05
    table.loc[missing, "verdict"] = None
    table["status"] = np.where(missing, np.where(rng.random(len(table)) < 0.5, "unparsed", "failed"), "parsed")
    table["reason"] = np.where(
        table["status"] == "failed", "timeout", np.where(table["status"] == "unparsed", "conflicting", None)
    )
    table.to_csv(folder / "pairwise.csv", index=False)
    (folder / "registry.toml").write_text(spec.registry_toml())
    nep("store", "load", "pairwise.csv", "--store", "s.db", cwd=folder)
    return folder


def test_the_dataset_has_one_folder_per_judge_with_the_file_export_rows(planted):
    out = nep("store", "export", "judgments", "--store", "s.db", "--out", "ds", "--partition-by", "judge", "--json", cwd=planted)
    summary = json.loads(out.stdout)
    assert summary["partition_by"] == "judge" and summary["format"] == "parquet"
    nep("store", "export", "judgments", "--store", "s.db", "--out", "one.parquet", cwd=planted)
    one = pq.read_table(planted / "one.parquet").to_pandas()
    assert summary["rows"] == len(one)
    assert sorted(p.name for p in (planted / "ds").iterdir()) == ["judge=judge-a", "judge=judge-b", "judge=other-1"]
    for judge in ("judge-a", "judge-b", "other-1"):
        part = pq.read_table(planted / "ds" / f"judge={judge}" / "part-0.parquet").to_pandas()
        assert "judge" not in part.columns  # in the folder name, as hive partitioning has it
        mine = one[one["judge"] == judge].drop(columns="judge").reset_index(drop=True)
        pd.testing.assert_frame_equal(part, mine)
    assert not [p for p in planted.iterdir() if p.name.startswith(".ds.")]  # no temporary folder left


def test_metrics_on_the_dataset_equal_metrics_on_the_file(planted):
    nep("store", "export", "judgments", "--store", "s.db", "--out", "same", "--partition-by", "judge", cwd=planted)
    nep("store", "export", "judgments", "--store", "s.db", "--out", "same.parquet", cwd=planted)
    sources = ("same.parquet", "same", "same/judge=*/*.parquet")
    documents = [
        json.loads(nep("metrics", source, "--models", "registry.toml", "--json", cwd=planted).stdout) for source in sources
    ]
    # the same document but for the source each names
    assert [d["summary"].pop("source") for d in documents] == list(sources)
    assert documents[0]["results"] and documents[1] == documents[0] and documents[2] == documents[0]
    text = nep("metrics", "same", "--models", "registry.toml", "--all", cwd=planted).stdout
    assert "self-preference-ratio" in text and "unparsed-conflicting" in text


def test_an_existing_folder_is_refused_unless_replace(planted):
    nep("store", "export", "judgments", "--store", "s.db", "--out", "taken", "--partition-by", "judge", cwd=planted)
    marker = planted / "taken" / "judge=judge-a" / "part-0.parquet"
    before = marker.read_bytes()
    (planted / "taken" / "mine.txt").write_text("keep")
    refused = nep(
        "store", "export", "judgments", "--store", "s.db", "--out", "taken", "--partition-by", "judge", cwd=planted, expect=2
    )
    assert "exists" in refused.stderr and "--replace" in refused.stderr
    assert (planted / "taken" / "mine.txt").exists() and marker.read_bytes() == before
    nep("store", "export", "judgments", "--store", "s.db", "--out", "taken", "--partition-by", "judge", "--replace", cwd=planted)
    assert not (planted / "taken" / "mine.txt").exists() and marker.exists()
    assert not [p for p in planted.iterdir() if p.name.startswith(".taken.")]


@pytest.mark.parametrize(
    "args, says",
    [
        (["--partition-by", "judge", "--format", "csv"], "Parquet dataset"),
        (["--replace"], "--replace goes with --partition-by"),
    ],
)
def test_bad_combinations_are_exit_2_and_write_nothing(planted, args, says):
    done = nep("store", "export", "judgments", "--store", "s.db", "--out", "never", *args, cwd=planted, expect=2)
    assert says in done.stderr
    assert not (planted / "never").exists()


def test_partition_names_are_percent_encoded_and_read_back(tmp_path):
    assert partition_folder("judge", "org/model v1") == "judge=org%2Fmodel%20v1"
    folder = tmp_path / "ds" / partition_folder("judge", "org/model v1")
    folder.mkdir(parents=True)
    pd.DataFrame({"instance_id": ["q1", "q1"], "model_a": ["x", "y"], "model_b": ["y", "x"], "verdict": ["A", "B"]}).to_parquet(
        folder / "part-0.parquet"
    )
    [(path, partitions)] = dataset_files(tmp_path / "ds")
    assert partitions == {"judge": "org/model v1"}
    table = read_dataset(tmp_path / "ds")
    assert table.kind == "pairwise" and set(table.frame["judge"]) == {"org/model v1"}


def _two_files(tmp_path, second: dict) -> Path:
    rows = {"instance_id": ["q1", "q1"], "model_a": ["x", "y"], "model_b": ["y", "x"], "verdict": ["A", "B"]}
    for judge, extra in (("judge-a", {}), ("judge-b", second)):
        folder = tmp_path / "ds" / f"judge={judge}"
        folder.mkdir(parents=True)
        pd.DataFrame(rows | extra).to_parquet(folder / "part-0.parquet")
    return tmp_path / "ds"


def test_a_bad_cell_names_the_file_line_field_and_partition(tmp_path):
    ds = _two_files(tmp_path, {"verdict": ["A", "maybe"]})
    with pytest.raises(ValidationError) as err:
        audit(ds)
    assert err.value.path == str(ds / "judge=judge-b" / "part-0.parquet")
    assert err.value.line == 2 and err.value.field == "verdict"
    assert "unknown verdict 'maybe'" in str(err.value) and "partition judge=judge-b" in str(err.value)
    done = nep("metrics", str(ds), cwd=tmp_path, expect=2)
    assert "judge=judge-b/part-0.parquet" in done.stderr and "line 2" in done.stderr


def test_a_judge_the_registry_lacks_names_its_file(tmp_path):
    ds = _two_files(tmp_path, {})
    with pytest.raises(ValidationError) as err:
        audit(ds)
    assert "not in the model registry" in str(err.value)
    assert err.value.path == str(ds / "judge=judge-a" / "part-0.parquet") and err.value.line == 1


def test_a_column_in_both_the_file_and_the_folder_name_is_refused(tmp_path):
    ds = _two_files(tmp_path, {"judge": ["judge-b", "judge-b"]})
    with pytest.raises(InputError) as err:
        read_dataset(ds)
    assert "both in the file and in its folder name" in str(err.value) and err.value.field == "judge"


def test_the_same_row_in_two_files_is_a_duplicate(tmp_path):
    ds = _two_files(tmp_path, {})
    (ds / "judge=judge-a" / "part-1.parquet").write_bytes((ds / "judge=judge-a" / "part-0.parquet").read_bytes())
    with pytest.raises(ValidationError) as err:
        read_dataset(ds)
    assert "duplicate row" in str(err.value) and err.value.path == str(ds / "judge=judge-a" / "part-1.parquet")
    assert "part-0.parquet line 1" in str(err.value)


def test_an_empty_dataset_or_pattern_is_an_input_error(tmp_path):
    (tmp_path / "ds" / "judge=a").mkdir(parents=True)
    with pytest.raises(InputError, match="no Parquet file"):
        read_dataset(tmp_path / "ds")
    with pytest.raises(InputError, match="no Parquet file"):
        audit(str(tmp_path / "nothing" / "*.parquet"))
