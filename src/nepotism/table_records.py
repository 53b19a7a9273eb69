"""Recorded tables → records: judgments and references a store can hold.

`table_records` turns a validated `nepotism.tables.Table` into `Judgment` or `Reference` records,
one per row, keeping each row's ``status`` (unparsed and failed rows stay what they are) with its
``reason`` and ``label_mass``. Rubric-item tables describe
instances, not judgments or references, and are refused. This module does not touch a database.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from nepotism.errors import InputError, ValidationError
from nepotism.records import Judgment, Reference
from nepotism.tables import JUDGED_KINDS, Table

__all__ = ["instance_categories", "table_records"]


#: a table row as pandas' ``itertuples`` gives it (a namedtuple of the table's columns)
_Row = Any


def _value(row: _Row, name: str) -> Any:
    value = getattr(row, name, None)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def _label_probs(row: _Row) -> dict[str, float] | None:
    given = {label: _value(row, f"prob_{key}") for label, key in (("A", "a"), ("B", "b"), ("tie", "tie"))}
    probs = {k: float(v) for k, v in given.items() if v is not None}
    return probs or None


def _judgment(kind: str, row: _Row) -> Judgment:
    mass = _value(row, "label_mass")
    common = dict(
        instance_id=row.instance_id,
        judge=row.judge,
        condition=row.condition,
        replicate=int(row.replicate),
        status=row.status,
        reason=_value(row, "reason"),
        label_mass=None if mass is None else float(mass),
    )
    if kind == "pairwise":
        return Judgment(
            protocol="pairwise",
            candidates=(row.model_a, row.model_b),
            verdict=_value(row, "verdict"),
            label_probs=_label_probs(row),
            **common,
        )
    if kind == "pointwise":
        score = _value(row, "score")
        return Judgment(protocol="pointwise", candidates=(row.model,), score=None if score is None else float(score), **common)
    if kind == "recognition":
        claimed = _value(row, "claimed")
        return Judgment(
            protocol="recognition",
            candidates=(row.model,),
            verdict=None if claimed is None else ("yes" if claimed else "no"),
            **common,
        )
    if kind == "recognition-pairwise":
        return Judgment(
            protocol="recognition-pairwise", candidates=(row.model_a, row.model_b), verdict=_value(row, "choice"), **common
        )
    met = _value(row, "met")
    return Judgment(
        protocol="rubric",
        candidates=(row.model,),
        rubric_id=row.rubric_id,
        verdict=None if met is None else ("yes" if met else "no"),
        **common,
    )


def _reference(kind: str, row: _Row, source: str | None) -> Reference:
    if kind == "preference-ref":
        return Reference(
            instance_id=row.instance_id, kind="preference", models=(row.model_a, row.model_b), winner=row.winner, source=source
        )
    if kind == "correctness-ref":
        correct = _value(row, "correct")
        score = _value(row, "score")
        return Reference(
            instance_id=row.instance_id,
            kind="correctness",
            models=(row.model,),
            correct=None if correct is None else bool(correct),
            score=None if score is None else float(score),
            source=source,
        )
    return Reference(
        instance_id=row.instance_id, kind="rubric", models=(row.model,), rubric_id=row.rubric_id, met=bool(row.met), source=source
    )


def table_records(table: Table) -> list[Judgment] | list[Reference]:
    """One record per row of ``table`` (judgment kinds → `Judgment`, reference kinds → `Reference`)."""
    if table.kind == "rubric-items":
        raise InputError("rubric-item tables describe instances; load them with the dataset, not as records", path=table.path)
    rows = table.frame.itertuples(index=False)
    if table.kind in JUDGED_KINDS:
        return [_judgment(table.kind, row) for row in rows]
    return [_reference(table.kind, row, table.path) for row in rows]


def instance_categories(table: Table) -> dict[str, str]:
    """instance id → category from a judged table's ``category`` column (rows without one skipped).

    An instance given two categories is a `ValidationError` at the row of the second one.
    """
    if "category" not in table.frame:
        return {}
    labelled = pd.DataFrame(
        {
            "instance_id": table.frame["instance_id"].astype(str).to_numpy(),
            "category": table.frame["category"].to_numpy(dtype=object),
        }
    )
    labelled = labelled[labelled["category"].map(lambda c: c is not None and c == c and str(c) != "")]
    labelled = labelled.assign(category=labelled["category"].astype(str)).reset_index()  # "index": row position
    distinct = labelled.drop_duplicates(["instance_id", "category"])
    clash = distinct["instance_id"].duplicated()
    if clash.any():
        row = distinct[clash].iloc[0]
        first = distinct[distinct["instance_id"] == row["instance_id"]].iloc[0]["category"]
        raise ValidationError(
            f"instance {row['instance_id']!r} has category {first!r} on an earlier row and {row['category']!r} here",
            **table.where(int(row["index"]), "category"),
        )
    return dict(zip(distinct["instance_id"], distinct["category"]))
