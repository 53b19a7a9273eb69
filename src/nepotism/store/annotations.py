"""Human pairwise annotations in the store: collections of pairs, shown orders and labels.

The tables come from migration 0002. A *collection* is a named, numbered list of
`AnnotationItem`s (a prompt and two responses in canonical order ``model_a``, ``model_b``). For
each (item, annotator) the order shown on screen is drawn once and recorded (`shown_first`);
every key press is appended to ``annotation_labels`` and committed before the function returns,
so an annotator's current label is simply their latest row. Several processes (one server per
annotator) may write to the same file at once: each label is one autocommitted INSERT and rows
are keyed by annotator, so nobody overwrites anybody.

This module stores and reads; it does not decide majorities or compute agreement
(`nepotism.annotate` does that) and never sends model names anywhere.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nepotism.errors import InputError
from nepotism.records import content_id
from nepotism.store import _codec
from nepotism.store.database import Store

__all__ = [
    "PRESSES",
    "WINNERS",
    "AnnotationItem",
    "Label",
    "add_collection",
    "add_label",
    "collection_items",
    "collection_names",
    "label_history",
    "latest_labels",
    "shown_first",
    "validate_annotator",
]

#: What an annotator can press, as stored.
PRESSES = ("A", "B", "tie", "skip")
#: A label in canonical terms (a skip has no winner).
WINNERS = ("model_a", "model_b", "tie")
_SIDES = ("model_a", "model_b")
_ANNOTATOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_ITEM_COLUMNS = "item_id, position, instance_id, model_a, model_b, prompt, text_a, text_b, category, metadata"
_LABEL_COLUMNS = "id, collection, item_id, annotator, pressed, winner, shown_first, elapsed_ms, created_at"


def validate_annotator(name: str) -> str:
    """Return ``name`` if it is a valid annotator name (letters, digits, ``_.-``; at most 64)."""
    if not isinstance(name, str) or not _ANNOTATOR.fullmatch(name):
        raise InputError(
            f"annotator name {name!r} must start with a letter or digit and use only letters, "
            "digits, '_', '.' and '-' (at most 64 characters)",
            field="annotator",
        )
    return name


@dataclass(frozen=True)
class AnnotationItem:
    """One pair to label: a prompt and two responses, in canonical order (a, b).

    ``prompt`` is a string or a tuple of ``{"role", "content"}`` dicts. ``position`` is the
    1-based place in its collection (0 until stored).
    """

    instance_id: str
    model_a: str
    model_b: str
    prompt: str | tuple[Mapping[str, str], ...]
    text_a: str
    text_b: str
    category: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    position: int = 0

    @property
    def item_id(self) -> str:
        return content_id("annotation-item", [self.instance_id, self.model_a, self.model_b])

    def model(self, side: str) -> str:
        """The model name of canonical side ``model_a`` or ``model_b``."""
        return self.model_a if side == "model_a" else self.model_b

    def text(self, side: str) -> str:
        return self.text_a if side == "model_a" else self.text_b


@dataclass(frozen=True)
class Label:
    """One key press: ``pressed`` as shown, ``winner`` canonical (None for a skip)."""

    id: int
    collection: str
    item_id: str
    annotator: str
    pressed: str
    winner: str | None
    shown_first: str
    elapsed_ms: int | None
    created_at: str


def _prompt_json(prompt: Any) -> str:
    if isinstance(prompt, str):
        return json.dumps(prompt, ensure_ascii=False)
    return json.dumps([{"role": str(m["role"]), "content": str(m["content"])} for m in prompt], ensure_ascii=False)


def _item_from_row(row: Sequence[Any]) -> AnnotationItem:
    (_, position, instance_id, model_a, model_b, prompt, text_a, text_b, category, metadata) = row
    prompt = json.loads(prompt)
    if not isinstance(prompt, str):
        prompt = tuple(prompt)
    return AnnotationItem(instance_id, model_a, model_b, prompt, text_a, text_b, category, json.loads(metadata), position)


def _label_from_row(row: Sequence[Any]) -> Label:
    return Label(*row)


def collection_names(store: Store) -> list[str]:
    """The collections in the store, sorted."""
    rows = store._conn().execute("SELECT DISTINCT collection FROM annotation_items ORDER BY 1")
    return [name for (name,) in rows]


def collection_items(store: Store, collection: str) -> list[AnnotationItem]:
    """The items of ``collection`` in position order (empty when there is no such collection)."""
    rows = store._conn().execute(
        f"SELECT {_ITEM_COLUMNS} FROM annotation_items WHERE collection = ? ORDER BY position",
        (collection,),
    )
    return [_item_from_row(r) for r in rows]


def add_collection(store: Store, collection: str, items: Iterable[AnnotationItem]) -> int:
    """Store ``items`` as ``collection`` numbered 1..n; return how many rows were written.

    Re-adding the same items in the same order is a no-op (returns 0), so a server can be
    restarted on the same file. A collection that already holds other items is refused: labels
    refer to items, and silently changing the items would orphan or misattribute them.
    """
    if not collection or not isinstance(collection, str):
        raise InputError("a collection needs a non-empty name", field="collection")
    items = list(items)
    if not items:
        raise InputError("there are no pairs to annotate", field="collection")
    ids = [item.item_id for item in items]
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        for item in items:
            if item.item_id in seen:
                raise InputError(
                    f"the pair ({item.instance_id}, {item.model_a}, {item.model_b}) appears twice",
                    field="instance_id",
                )
            seen.add(item.item_id)
    conn = store._conn()
    conn.execute("BEGIN IMMEDIATE")
    try:
        stored = [
            r[0]
            for r in conn.execute(
                "SELECT item_id FROM annotation_items WHERE collection = ? ORDER BY position",
                (collection,),
            )
        ]
        if stored:
            conn.execute("ROLLBACK")
            if stored == ids:
                return 0
            raise InputError(
                f"the store already holds a collection {collection!r} with other pairs "
                f"({len(stored)} stored, {len(ids)} given); pick another collection name",
                field="collection",
            )
        now = _codec.now()
        conn.executemany(
            "INSERT INTO annotation_items (collection, item_id, position, instance_id, model_a, "
            "model_b, prompt, text_a, text_b, category, metadata, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    collection,
                    item.item_id,
                    pos,
                    item.instance_id,
                    item.model_a,
                    item.model_b,
                    _prompt_json(item.prompt),
                    item.text_a,
                    item.text_b,
                    item.category,
                    _codec.dumps(dict(item.metadata)),
                    now,
                )
                for pos, item in enumerate(items, start=1)
            ],
        )
        conn.execute("COMMIT")
    except sqlite3.Error:
        conn.execute("ROLLBACK")
        raise
    return len(items)


def _stored_order(conn: sqlite3.Connection, collection: str, item_id: str, annotator: str) -> str | None:
    """The side stored as shown first to this annotator on this item, or None."""
    row = conn.execute(
        "SELECT shown_first FROM annotation_orders WHERE collection = ? AND item_id = ? AND annotator = ?",
        (collection, item_id, annotator),
    ).fetchone()
    return None if row is None else row[0]


def shown_first(store: Store, collection: str, item_id: str, annotator: str, draw: Callable[[], str]) -> str:
    """Which canonical side this annotator sees as "A" on this item; drawn once with ``draw``.

    ``draw()`` returns ``"model_a"`` or ``"model_b"``; it is called only when no order is stored
    yet, and if two requests race, the first stored order wins for both.
    """
    conn = store._conn()
    stored = _stored_order(conn, collection, item_id, annotator)
    if stored is not None:
        return stored
    side = draw()
    if side not in _SIDES:
        raise ValueError(f"an order draw must return one of {_SIDES}, not {side!r}")
    conn.execute(
        "INSERT OR IGNORE INTO annotation_orders (collection, item_id, annotator, shown_first, "
        "created_at) VALUES (?, ?, ?, ?, ?)",
        (collection, item_id, validate_annotator(annotator), side, _codec.now()),
    )
    stored = _stored_order(conn, collection, item_id, annotator)  # another request's, if it came first
    return side if stored is None else stored


def _winner(pressed: str, first: str) -> str | None:
    if pressed == "A":
        return first
    if pressed == "B":
        return "model_b" if first == "model_a" else "model_a"
    return None if pressed == "skip" else "tie"


def add_label(
    store: Store,
    collection: str,
    item_id: str,
    annotator: str,
    pressed: str,
    elapsed_ms: int | None = None,
) -> Label:
    """Append one key press (committed on return) and return it with its canonical winner.

    The item must already have been shown to this annotator (its order is needed to turn "A" or
    "B" into a model).
    """
    if pressed not in PRESSES:
        raise InputError(f"a label is one of {PRESSES}, not {pressed!r}", field="label")
    conn = store._conn()
    first = _stored_order(conn, collection, item_id, annotator)
    if first is None:
        raise InputError("this item was never shown to this annotator", field="item")
    if elapsed_ms is not None:
        elapsed_ms = max(0, int(elapsed_ms))
    cursor = conn.execute(
        "INSERT INTO annotation_labels (collection, item_id, annotator, pressed, winner, "
        "shown_first, elapsed_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (collection, item_id, annotator, pressed, _winner(pressed, first), first, elapsed_ms, _codec.now()),
    )
    found = conn.execute(f"SELECT {_LABEL_COLUMNS} FROM annotation_labels WHERE id = ?", (cursor.lastrowid,)).fetchone()
    return _label_from_row(found)


def latest_labels(store: Store, collection: str, annotator: str | None = None) -> list[Label]:
    """Each annotator's current (latest) label per item, ordered by annotator and item position."""
    params: list[Any] = [collection]
    who = ""
    if annotator is not None:
        who = " AND l.annotator = ?"
        params.append(annotator)
    sql = (
        f"SELECT {', '.join('l.' + c.strip() for c in _LABEL_COLUMNS.split(','))} "
        "FROM annotation_labels l JOIN annotation_items i "
        "ON i.collection = l.collection AND i.item_id = l.item_id "
        "WHERE l.collection = ?" + who + " AND l.id = (SELECT MAX(id) FROM annotation_labels m "
        "WHERE m.collection = l.collection AND m.item_id = l.item_id "
        "AND m.annotator = l.annotator) ORDER BY l.annotator, i.position"
    )
    return [_label_from_row(r) for r in store._conn().execute(sql, params)]


def label_history(store: Store, collection: str, annotator: str | None = None) -> list[Label]:
    """Every key press in the order given (all annotators unless one is named)."""
    params: list[Any] = [collection]
    sql = f"SELECT {_LABEL_COLUMNS} FROM annotation_labels WHERE collection = ?"
    if annotator is not None:
        sql += " AND annotator = ?"
        params.append(annotator)
    return [_label_from_row(r) for r in store._conn().execute(sql + " ORDER BY id", params)]
