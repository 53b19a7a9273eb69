"""The store's JSON columns: `_codec.dumps` writes what ``json.dumps`` with the store's options
writes, byte for byte (stored rows and exports must not change with the faster encoder)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nepotism.store import _codec


def _reference(value: object) -> str:
    return json.dumps(value, default=_codec._default, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_scalars = (st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text())
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=5)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=5), max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_dumps_matches_json_dumps(value):
    assert _codec.dumps(value) == (None if value is None else _reference(value))


@dataclass
class _Point:
    x: float
    label: str


@pytest.mark.parametrize("value", [
    "plain", "quote \" backslash \\ newline \n control \x01 unicode é 漢 \U0001f600 \ud800",
    {"b": 1, "a": [1.5, -math.inf, math.inf], "é": {"z": None, "y": True}},
    {"labels": {"A": -2.0354442876683376, "B": 1e-05, "C": 1e16}},
    [(1, 2), ("x",)],
    {"point": _Point(1.0, "p"), "set": {"b", "a"}, "np": np.float64(0.25), "arr": np.arange(3)},
    0, -7, 3.0, True, False,
])
def test_dumps_matches_json_dumps_on_edge_values(value):
    assert _codec.dumps(value) == _reference(value)


def test_dumps_keeps_json_dumps_errors():
    with pytest.raises(TypeError, match="cannot store a value of type object"):
        _codec.dumps({"x": object()})
    with pytest.raises(TypeError):
        _codec.dumps({1: "a", "b": 2})  # keys that cannot be sorted together
