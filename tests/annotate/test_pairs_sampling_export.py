"""Reading pairs, drawing samples, majority votes and reference files."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import nepotism.annotate as annotate
import nepotism.annotate.export as export_module
import nepotism.annotate.pairs as pairs_module
import nepotism.annotate.sampling as sampling_module
from nepotism.annotate.export import majority, majority_frame, write_exports
from nepotism.annotate.pairs import load_pairs, read_pairs_file, write_pairs
from nepotism.annotate.sampling import sample_items
from nepotism.errors import InputError
from nepotism.store.annotations import AnnotationItem, Label
from nepotism.tables import read_table


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_all_lists_are_real():
    for module in (annotate, export_module, pairs_module, sampling_module):
        for name in module.__all__:
            assert hasattr(module, name), (module.__name__, name)


def test_pairs_file_round_trip(tmp_path, pairs_file):
    items = read_pairs_file(pairs_file(3))
    assert [i.instance_id for i in items] == ["q01", "q02", "q03"]
    out = tmp_path / "again.jsonl"
    assert write_pairs(items, out) == 3
    assert read_pairs_file(out) == items


@pytest.mark.parametrize(
    "row, field",
    [
        ({"instance_id": "q", "prompt": "p", "model_a": "m", "model_b": "n", "text_a": "x"}, "text_b"),
        ({"instance_id": "q", "prompt": "p", "model_a": "m", "model_b": "m", "text_a": "x", "text_b": "y"}, "model_b"),
        ({"instance_id": " ", "prompt": "p", "model_a": "m", "model_b": "n", "text_a": "x", "text_b": "y"}, "instance_id"),
        ({"instance_id": "q", "prompt": [{"role": 1}], "model_a": "m", "model_b": "n", "text_a": "x", "text_b": "y"}, "prompt"),
    ],
)
def test_bad_pairs_rows_name_line_and_field(tmp_path, row, field):
    good = {"instance_id": "q0", "prompt": "p", "model_a": "m", "model_b": "n", "text_a": "x", "text_b": "y"}
    path = _jsonl(tmp_path / "p.jsonl", [good, row])
    with pytest.raises(InputError) as err:
        read_pairs_file(path)
    assert err.value.line == 2 and err.value.field == field


def test_duplicate_pair_in_either_order_is_refused(tmp_path):
    row = {"instance_id": "q", "prompt": "p", "model_a": "m", "model_b": "n", "text_a": "x", "text_b": "y"}
    swapped = row | {"model_a": "n", "model_b": "m"}
    with pytest.raises(InputError, match="same pair as line 1"):
        read_pairs_file(_jsonl(tmp_path / "p.jsonl", [row, swapped]))


def _judgments_and_texts(tmp_path):
    judgments = pd.DataFrame(
        [
            # q1: judges disagree (j1 says m1, j2 says m2)
            ("q1", "j1", "m1", "m2", "A"),
            ("q1", "j2", "m1", "m2", "B"),
            # q2: both judges agree on m1 (swapped order counts the same)
            ("q2", "j1", "m1", "m2", "A"),
            ("q2", "j2", "m2", "m1", "B"),
            # q3: judge m2 picks its own response, the other judge the other one
            ("q3", "m2", "m1", "m2", "B"),
            ("q3", "j1", "m1", "m2", "A"),
            # q4: unparsed only
            ("q4", "j1", "m1", "m2", None),
        ],
        columns=["instance_id", "judge", "model_a", "model_b", "verdict"],
    )
    jpath = tmp_path / "j.csv"
    judgments.to_csv(jpath, index=False)
    texts = [
        {"instance_id": f"q{i}", "prompt": f"prompt {i}", "model": m, "text": f"{m} on {i}"}
        for i in range(1, 5)
        for m in ("m1", "m2")
    ]
    tpath = _jsonl(tmp_path / "t.jsonl", texts)
    return jpath, tpath


def test_judgments_plus_texts_and_sampling(tmp_path):
    jpath, tpath = _judgments_and_texts(tmp_path)
    items = load_pairs(jpath, tpath)
    assert [(i.instance_id, i.model_a, i.model_b) for i in items] == [
        ("q1", "m1", "m2"),
        ("q2", "m1", "m2"),
        ("q3", "m1", "m2"),
        ("q4", "m1", "m2"),
    ]
    assert items[1].text_b == "m2 on 2" and items[0].prompt == "prompt 1"
    frame = read_table(jpath, kind="pairwise").frame

    chosen, summary = sample_items(items, 3, strategy="disagreement", judgments=frame, seed=1)
    # q1 (0.5) and q3 (0.5) disagree; q2 agrees; q4 has no verdict
    assert sorted(i.instance_id for i in chosen) == ["q1", "q3"]
    assert summary.n_qualified == 2 and summary.n_filled == 0 and summary.n_unparsed_judgments == 1
    assert all(i.metadata["sample_strategy"] == "disagreement" for i in chosen)

    chosen, summary = sample_items(items, 3, strategy="self-preference", judgments=frame, seed=1)
    assert [i.instance_id for i in chosen] == ["q3"]
    assert chosen[0].metadata["sample_score"] == pytest.approx(1.5)

    chosen, summary = sample_items(items, 3, strategy="self-preference", judgments=frame, seed=1, fill=True)
    assert len(chosen) == 3 and [i.metadata["sample_reason"] for i in chosen][1:] == ["fill", "fill"]

    first, _ = sample_items(items, 2, strategy="uniform", seed=7)
    again, _ = sample_items(items, 2, strategy="uniform", seed=7)
    assert first == again and len(first) == 2
    with pytest.raises(InputError, match="needs the judges"):
        sample_items(items, 2, strategy="disagreement")


def test_missing_text_is_reported(tmp_path):
    jpath, tpath = _judgments_and_texts(tmp_path)
    lines = tpath.read_text().splitlines()[:-1]  # drop q4/m2
    tpath.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="no text for model 'm2' on instance 'q4'"):
        load_pairs(jpath, tpath)


@pytest.mark.parametrize(
    "winners, outcome",
    [
        (["model_a"], "model_a"),
        (["model_a", "model_b"], "unresolved"),
        (["model_a", "model_b", "model_b"], "model_b"),
        (["tie", "tie", "model_a"], "tie"),
        (["tie", "model_a", "model_b"], "unresolved"),
        ([None, None], "unlabelled"),
        ([None, "model_a"], "model_a"),
        ([], "unlabelled"),
    ],
)
def test_majority_rule(winners, outcome):
    assert majority(winners) == outcome


def test_min_votes():
    assert majority(["model_a"], min_votes=2) == "unlabelled"
    assert majority(["model_a", "model_a"], min_votes=2) == "model_a"


def _label(item, annotator, pressed, winner, i):
    return Label(i, "c", item.item_id, annotator, pressed, winner, "model_a", None, f"t{i}")


def test_exports_in_reference_format(tmp_path):
    items = [AnnotationItem(f"q{i}", "gpt@x", "llama", "p", "a", "b", category="math") for i in range(4)]
    labels = [
        _label(items[0], "ann1", "A", "model_a", 1),
        _label(items[0], "ann2", "A", "model_a", 2),
        _label(items[1], "ann1", "B", "model_b", 3),
        _label(items[1], "ann2", "tie", "tie", 4),
        _label(items[2], "ann1", "tie", "tie", 5),
        _label(items[3], "ann1", "skip", None, 6),
        _label(items[1], "ann2", "B", "model_b", 7),  # ann2 changes their mind: latest counts
    ]
    summary = write_exports("c", items, labels, tmp_path / "refs.jsonl", per_annotator_dir=tmp_path / "by")
    assert summary.outcomes == {"model_a": 1, "model_b": 1, "tie": 1, "unresolved": 0, "unlabelled": 1}
    assert summary.annotators["ann1"] == {"labelled": 3, "skipped": 1, "presses": 4}
    refs = read_table(tmp_path / "refs.jsonl", kind="preference-ref").frame
    assert list(zip(refs["instance_id"], refs["winner"])) == [("q0", "gpt@x"), ("q1", "llama"), ("q2", "tie")]
    assert refs["votes_b"].tolist() == [0, 2, 0]
    mine = read_table(tmp_path / "by" / "ann1.csv", kind="preference-ref").frame
    assert mine["winner"].tolist() == ["gpt@x", "llama", "tie"]
    frame = majority_frame(items, labels)
    assert frame["skips"].tolist() == [0, 0, 0, 1]
