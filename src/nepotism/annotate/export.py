"""Human labels as references: majority vote per pair, and each annotator's own labels.

The majority of an item is the label (model_a, model_b or tie) given by strictly more annotators
than any other label, counting each annotator's latest non-skip label once. Outcomes per item:

* ``model_a`` / ``model_b`` / ``tie``: a majority exists (a majority of "tie" is a human tie and
  is written as ``winner = tie``);
* ``unresolved``: the top labels are level (e.g. one A and one B); not written as a reference;
* ``unlabelled``: fewer than ``min_votes`` labels (skips do not count); not written.

All outcomes are counted in the summary. The references file uses the preference-ref format of
`nepotism.tables` (``instance_id, model_a, model_b, winner`` with winner a model name or ``tie``)
plus ``category`` and the vote counts ``votes_a, votes_b, votes_tie, n_annotators`` (extra
columns that readers ignore). Per-annotator files use the same format, one row per item that
annotator labelled (skips are counted, not written), plus ``annotator``, ``pressed`` (the key as
shown), ``shown_first`` and ``labelled_at``. This module reads the store; it writes nothing
into it.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from nepotism.errors import InputError
from nepotism.records import Reference
from nepotism.store.annotations import WINNERS, AnnotationItem, Label
from nepotism.tables import write_table
from nepotism.votes import decide_one

__all__ = [
    "OUTCOMES",
    "ExportSummary",
    "annotator_frame",
    "majority",
    "majority_frame",
    "references",
    "write_exports",
]

OUTCOMES = ("model_a", "model_b", "tie", "unresolved", "unlabelled")
_REF_COLUMNS = ["instance_id", "model_a", "model_b", "winner", "category"]


def majority(winners: Iterable[str | None], *, min_votes: int = 1) -> str:
    """The outcome of one item from its annotators' canonical labels (None = skip)."""
    votes: Counter[Hashable] = Counter(w for w in winners if w is not None)
    if sum(votes.values()) < min_votes or not votes:
        return "unlabelled"
    winner = decide_one(votes)  # plurality; a shared top count is undecided (`nepotism.votes`)
    return "unresolved" if winner is None else str(winner)


@dataclass(frozen=True)
class ExportSummary:
    """Counts of an export: items, outcomes, labels and skips per annotator, files written."""

    collection: str
    n_items: int
    outcomes: dict[str, int]
    annotators: dict[str, dict[str, int]]
    files: list[str]

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def _latest_by_item(labels: Iterable[Label]) -> dict[str, dict[str, Label]]:
    by_item: dict[str, dict[str, Label]] = {}
    for label in labels:
        by_item.setdefault(label.item_id, {})[label.annotator] = label
    return by_item


def majority_frame(items: Sequence[AnnotationItem], labels: Iterable[Label], *, min_votes: int = 1) -> pd.DataFrame:
    """One row per item: instance, models, vote counts and the majority ``outcome``."""
    by_item = _latest_by_item(labels)
    rows = []
    for item in items:
        mine = by_item.get(item.item_id, {})
        winners = [label.winner for label in mine.values()]
        votes = Counter(w for w in winners if w is not None)
        rows.append(
            {
                "item_id": item.item_id,
                "instance_id": item.instance_id,
                "model_a": item.model_a,
                "model_b": item.model_b,
                "category": item.category,
                "outcome": majority(winners, min_votes=min_votes),
                "votes_a": votes["model_a"],
                "votes_b": votes["model_b"],
                "votes_tie": votes["tie"],
                "skips": sum(w is None for w in winners),
                "n_annotators": sum(votes.values()),
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "item_id",
            "instance_id",
            "model_a",
            "model_b",
            "category",
            "outcome",
            "votes_a",
            "votes_b",
            "votes_tie",
            "skips",
            "n_annotators",
        ],
    )


def _winner_name(row: pd.Series, outcome: str) -> str:
    return "tie" if outcome == "tie" else row["model_a"] if outcome == "model_a" else row["model_b"]


def _reference_frame(majorities: pd.DataFrame) -> pd.DataFrame:
    resolved = majorities[majorities["outcome"].isin(WINNERS)].copy()
    resolved["winner"] = [_winner_name(r, r["outcome"]) for _, r in resolved.iterrows()]
    columns = _REF_COLUMNS + ["votes_a", "votes_b", "votes_tie", "n_annotators"]
    return resolved.reindex(columns=columns).reset_index(drop=True)


def annotator_frame(items: Sequence[AnnotationItem], labels: Iterable[Label], annotator: str) -> pd.DataFrame:
    """One annotator's current non-skip labels in preference-ref format (item order)."""
    by_item = _latest_by_item(label for label in labels if label.annotator == annotator)
    rows = []
    for item in items:
        label = by_item.get(item.item_id, {}).get(annotator)
        if label is None or label.winner is None:
            continue
        winner = "tie" if label.winner == "tie" else item.model(label.winner)
        rows.append(
            {
                "instance_id": item.instance_id,
                "model_a": item.model_a,
                "model_b": item.model_b,
                "winner": winner,
                "category": item.category,
                "annotator": annotator,
                "pressed": label.pressed,
                "shown_first": item.model(label.shown_first),
                "labelled_at": label.created_at,
            }
        )
    columns = _REF_COLUMNS + ["annotator", "pressed", "shown_first", "labelled_at"]
    return pd.DataFrame(rows, columns=columns)


def references(majorities: pd.DataFrame, *, source: str) -> list[Reference]:
    """The resolved majorities as `Reference` records (kind ``preference``)."""
    refs = []
    for _, row in majorities[majorities["outcome"].isin(WINNERS)].iterrows():
        refs.append(
            Reference(
                instance_id=row["instance_id"],
                kind="preference",
                models=(row["model_a"], row["model_b"]),
                winner=_winner_name(row, row["outcome"]),
                source=source,
            )
        )
    return refs


def write_exports(
    collection: str,
    items: Sequence[AnnotationItem],
    labels: Sequence[Label],
    out: str | os.PathLike[str] | None,
    *,
    per_annotator_dir: str | os.PathLike[str] | None = None,
    suffix: str = ".csv",
    min_votes: int = 1,
) -> ExportSummary:
    """Write the majority references to ``out`` and, if asked, one file per annotator."""
    if not items:
        raise InputError(f"the store holds no collection {collection!r}", field="collection")
    majorities = majority_frame(items, labels, min_votes=min_votes)
    files = []
    if out is not None:
        write_table(_reference_frame(majorities), out)
        files.append(str(out))
    annotators = sorted({label.annotator for label in labels})
    per: dict[str, dict[str, int]] = {}
    latest = _latest_by_item(labels)
    for annotator in annotators:
        mine = [by[annotator] for by in latest.values() if annotator in by]
        per[annotator] = {
            "labelled": sum(lab.winner is not None for lab in mine),
            "skipped": sum(lab.winner is None for lab in mine),
            "presses": sum(lab.annotator == annotator for lab in labels),
        }
    if per_annotator_dir is not None:
        folder = Path(per_annotator_dir)
        folder.mkdir(parents=True, exist_ok=True)
        for annotator in annotators:
            path = folder / f"{annotator}{suffix}"
            write_table(annotator_frame(items, labels, annotator), path)
            files.append(str(path))
    outcomes = {o: int((majorities["outcome"] == o).sum()) for o in OUTCOMES}
    return ExportSummary(collection, len(items), outcomes, per, files)
