"""The annotation tables: collections, recorded orders, appended labels, several writers."""

from __future__ import annotations

import threading

import pytest

import nepotism.store.annotations as ann
from nepotism.errors import InputError
from nepotism.store import Store
from nepotism.store.annotations import AnnotationItem


def _items(n=3):
    return [AnnotationItem(f"q{i}", "m1", "m2", f"prompt {i}", f"one {i}", f"two {i}") for i in range(n)]


def test_all_is_exported():
    for name in ann.__all__:
        assert hasattr(ann, name)


def test_collection_round_trip_and_idempotent(tmp_path):
    with Store(tmp_path / "s.db") as store:
        items = _items() + [
            AnnotationItem(
                "q9", "m1", "m3", ({"role": "user", "content": "hi"},), "x", "y", category="chat", metadata={"why": "test"}
            )
        ]
        assert ann.add_collection(store, "c", items) == 4
        assert ann.add_collection(store, "c", items) == 0  # restart: same pairs
        back = ann.collection_items(store, "c")
        assert [i.position for i in back] == [1, 2, 3, 4]
        assert back[3].prompt == ({"role": "user", "content": "hi"},)
        assert back[3].category == "chat" and back[3].metadata == {"why": "test"}
        assert [i.item_id for i in back] == [i.item_id for i in items]
        assert ann.collection_names(store) == ["c"]
        with pytest.raises(InputError, match="other pairs"):
            ann.add_collection(store, "c", items[:2])
        with pytest.raises(InputError, match="appears twice"):
            ann.add_collection(store, "d", items + items[:1])
        with pytest.raises(InputError, match="no pairs"):
            ann.add_collection(store, "e", [])


def test_order_is_drawn_once_and_labels_map_to_models(tmp_path):
    with Store(tmp_path / "s.db") as store:
        items = _items()
        ann.add_collection(store, "c", items)
        item = items[0]
        calls = []

        def draw():
            calls.append(1)
            return "model_b"

        assert ann.shown_first(store, "c", item.item_id, "ann", draw) == "model_b"
        assert ann.shown_first(store, "c", item.item_id, "ann", lambda: "model_a") == "model_b"
        assert len(calls) == 1
        # "A" means the response shown first, which is model_b here
        assert ann.add_label(store, "c", item.item_id, "ann", "A", 1200).winner == "model_b"
        assert ann.add_label(store, "c", item.item_id, "ann", "B").winner == "model_a"
        assert ann.add_label(store, "c", item.item_id, "ann", "tie").winner == "tie"
        skip = ann.add_label(store, "c", item.item_id, "ann", "skip")
        assert skip.winner is None and skip.shown_first == "model_b"
        assert [lab.pressed for lab in ann.label_history(store, "c")] == ["A", "B", "tie", "skip"]
        latest = ann.latest_labels(store, "c")
        assert len(latest) == 1 and latest[0].pressed == "skip"
        with pytest.raises(InputError, match="never shown"):
            ann.add_label(store, "c", items[1].item_id, "ann", "A")
        with pytest.raises(InputError, match="label is one of"):
            ann.add_label(store, "c", item.item_id, "ann", "C")


@pytest.mark.parametrize("name", ["", "a b", "-x", "x/y", "é", "a" * 65])
def test_bad_annotator_names(name):
    with pytest.raises(InputError):
        ann.validate_annotator(name)


def test_two_processes_worth_of_writers_keep_every_label(tmp_path):
    path = tmp_path / "s.db"
    items = _items(30)
    with Store(path) as store:
        ann.add_collection(store, "c", items)
    errors = []

    def annotate(name, press):
        try:
            with Store(path) as store:  # each writer its own connection, as separate servers
                for item in items:
                    ann.shown_first(store, "c", item.item_id, name, lambda: "model_a")
                    ann.add_label(store, "c", item.item_id, name, press)
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=annotate, args=(n, p)) for n, p in (("x", "A"), ("y", "B"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with Store(path) as store:
        latest = ann.latest_labels(store, "c")
    assert sum(lab.annotator == "x" and lab.winner == "model_a" for lab in latest) == 30
    assert sum(lab.annotator == "y" and lab.winner == "model_b" for lab in latest) == 30
