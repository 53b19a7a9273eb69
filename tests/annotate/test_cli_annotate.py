"""``nepotism annotate``: sample, serve (a real process), export and agreement from the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import httpx
import pandas as pd
import pytest
from click.testing import CliRunner

import nepotism.cli.annotate as cli_module
from nepotism.cli import main
from nepotism.store import Store
from nepotism.store.annotations import add_collection, add_label, shown_first
from nepotism.annotate.pairs import load_pairs
from nepotism.tables import read_table


def test_all_is_exported():
    assert cli_module.__all__ == ["command"]


def _labelled_store(tmp_path, pairs_file):
    """Three annotators on five pairs, with known labels in canonical terms."""
    store_path = tmp_path / "s.db"
    items = load_pairs(pairs_file(5))
    plan = {  # canonical side each annotator picks (None = skip)
        "ann1": ["model_a", "model_a", "model_b", "tie", "model_a"],
        "ann2": ["model_a", "model_b", "model_b", "tie", None],
        "ann3": ["model_a", "model_b", "model_a", "model_a", "model_b"],
    }
    with Store(store_path) as store:
        add_collection(store, "pairs", items)
        for annotator, sides in plan.items():
            for item, side in zip(items, sides, strict=True):
                first = shown_first(store, "pairs", item.item_id, annotator, lambda: "model_a")
                assert first == "model_a"
                pressed = {"model_a": "A", "model_b": "B", "tie": "tie", None: "skip"}[side]
                add_label(store, "pairs", item.item_id, annotator, pressed)
    return store_path, items


def test_export_and_agreement(tmp_path, pairs_file, model_names):
    store_path, items = _labelled_store(tmp_path, pairs_file)
    runner = CliRunner()
    result = runner.invoke(
        main,
        [
            "annotate",
            "export",
            "--store",
            str(store_path),
            "--out",
            str(tmp_path / "refs.csv"),
            "--per-annotator",
            str(tmp_path / "by"),
            "--to-store",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    # majorities: q1 a (3-0), q2 b (2-1), q3 b (2-1), q4 tie (2-1), q5 a/b level -> unresolved
    assert summary["outcomes"] == {"model_a": 1, "model_b": 2, "tie": 1, "unresolved": 1, "unlabelled": 0}
    assert summary["references_added_to_store"] == 4
    refs = read_table(tmp_path / "refs.csv", kind="preference-ref").frame
    a, b = model_names
    assert refs["winner"].tolist() == [a, b, b, "tie"]
    assert sorted(os.listdir(tmp_path / "by")) == ["ann1.csv", "ann2.csv", "ann3.csv"]
    with Store(store_path) as store:
        assert {r.winner for r in store.references(source="annotate:pairs")} == {a, b, "tie"}

    judgments = pd.DataFrame(
        {
            "instance_id": ["q01", "q02", "q03", "q04", "q05", "q01"],
            "judge": ["j"] * 5 + ["k"],
            "model_a": [a, b, a, a, a, a],
            "model_b": [b, a, b, b, b, b],
            "verdict": ["A", "A", "B", "A", "A", None],
        }
    )
    judgments.to_csv(tmp_path / "j.csv", index=False)
    result = runner.invoke(
        main,
        [
            "annotate",
            "agreement",
            "--store",
            str(store_path),
            "--judgments",
            str(tmp_path / "j.csv"),
            "--bootstrap",
            "200",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    # judge j: q1 a==a, q2 verdict A on (b, a) -> b == b, q3 b == b, q4 a != tie; q5 unresolved
    judge = report["judges"]["j"]["agreement"]
    assert judge["value"] == pytest.approx(3 / 4) and judge["n"] == 4
    assert judge["excluded"] == {"no human majority": 1}
    assert report["judges"]["k"]["agreement"]["excluded"] == {"no verdict": 1}
    pair = report["pairs"][0]
    assert pair["annotators"] == ["ann1", "ann2"]
    assert pair["agreement"]["value"] == pytest.approx(3 / 4)  # q5 skipped by ann2
    assert report["annotators"]["ann2"] == {
        "labelled": 4,
        "skipped": 1,
        "median_seconds_per_label": None,
        "labels_per_minute": None,
    }
    assert report["overall"]["fleiss_kappa"]["ci_low"] is not None

    text = runner.invoke(main, ["annotate", "agreement", "--store", str(store_path), "--bootstrap", "0"])
    assert text.exit_code == 0 and "Krippendorff's alpha" in text.output and "ann1 vs ann3" in text.output


def test_sample_command(tmp_path, pairs_file):
    pairs = pairs_file(6)
    out = tmp_path / "sample.jsonl"
    result = CliRunner().invoke(main, ["annotate", "sample", str(pairs), "--n", "4", "--seed", "3", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["n_selected"] == 4
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4 and all(r["sample_strategy"] == "uniform" for r in rows)
    # disagreement without judgments is an input error: one line, exit 2
    bad = CliRunner().invoke(
        main, ["annotate", "sample", str(pairs), "--n", "2", "--by", "disagreement", "--out", str(tmp_path / "x.jsonl")]
    )
    assert bad.exit_code == 2 and "needs the judges" in bad.output


def test_input_errors_exit_2(tmp_path, pairs_file):
    runner = CliRunner()
    result = runner.invoke(
        main, ["annotate", "serve", str(pairs_file(2)), "--annotator", "no spaces", "--store", str(tmp_path / "s.db")]
    )
    assert result.exit_code == 2 and "annotator name" in result.output
    result = runner.invoke(main, ["annotate", "export", "--store", str(tmp_path / "none.db"), "--out", str(tmp_path / "r.csv")])
    assert result.exit_code == 2 and "no store file" in result.output


def test_serve_runs_a_local_server(tmp_path, pairs_file):
    pytest.importorskip("uvicorn")
    store_path = tmp_path / "s.db"
    process = subprocess.Popen(
        [
            sys.executable,
            "-u",
            "-c",
            "from nepotism.cli import main; main()",
            "annotate",
            "serve",
            str(pairs_file(3)),
            "--annotator",
            "dana",
            "--store",
            str(store_path),
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        url = re.search(r"open (http://127\.0\.0\.1:\d+)/", line).group(1)
        page = None
        for _ in range(100):
            try:
                # the socket listens before the server starts: on a loaded machine the first page
                # can take longer than httpx's default 5 s to come
                page = httpx.get(url + "/", follow_redirects=True, timeout=120)
                break
            except httpx.ConnectError:
                time.sleep(0.05)
        assert page is not None and page.status_code == 200 and "Item 1 of 3" in page.text
    finally:
        process.terminate()
        process.wait(timeout=20)
        process.stdout.close()
        process.stderr.close()


def test_serve_on_a_taken_port_exits_2_and_stores_nothing(tmp_path, pairs_file):
    """The port is taken before anything is stored: before, the collection went into the store and only
    then the bind failed (exit 1). The default port is not the stand-in's (8765), which the README leaves
    running while one annotates."""
    import socket

    from nepotism.cli.annotate import DEFAULT_PORT
    from nepotism.cli.standin import command as standin

    assert DEFAULT_PORT != next(p.default for p in standin.params if p.name == "port")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    store = tmp_path / "s.db"
    try:
        result = CliRunner().invoke(
            main,
            [
                "annotate",
                "serve",
                str(pairs_file(2)),
                "--annotator",
                "dana",
                "--store",
                str(store),
                "--port",
                str(busy.getsockname()[1]),
            ],
        )
    finally:
        busy.close()
    assert result.exit_code == 2 and "field '--port'" in result.output and "cannot listen" in result.output
    assert not store.exists()
