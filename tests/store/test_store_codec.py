"""The store's JSON columns: `_codec.dumps` writes what ``json.dumps`` with the store's options
writes, byte for byte (stored rows and exports must not change with the faster encoder)."""

from __future__ import annotations

import enum
import json
import math
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nepotism.store import _codec


def _reference(value: object) -> str:
    return json.dumps(value, default=_codec._default, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_json = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5), max_leaves=30
)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_dumps_matches_json_dumps(value):
    assert _codec.dumps(value) == (None if value is None else _reference(value))


@dataclass
class _Point:
    x: float
    label: str


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        'quote " backslash \\ newline \n control \x01 unicode é 漢 \U0001f600 \ud800',
        {"b": 1, "a": [1.5, -math.inf, math.inf], "é": {"z": None, "y": True}},
        {"labels": {"A": -2.0354442876683376, "B": 1e-05, "C": 1e16}},
        [(1, 2), ("x",)],
        {"point": _Point(1.0, "p"), "set": {"b", "a"}, "np": np.float64(0.25), "arr": np.arange(3)},
        0,
        -7,
        3.0,
        True,
        False,
    ],
)
def test_dumps_matches_json_dumps_on_edge_values(value):
    assert _codec.dumps(value) == _reference(value)


def test_dumps_keeps_json_dumps_errors():
    with pytest.raises(TypeError, match="cannot store a value of type object"):
        _codec.dumps({"x": object()})
    with pytest.raises(TypeError):
        _codec.dumps({1: "a", "b": 2})  # keys that cannot be sorted together


# -- the orjson path: the same bytes, or the standard library --------------------------------------


def _floats_of_every_binade() -> list[float]:
    out = []
    for exponent in range(-1074, 1024):
        for mantissa in (0.5, 0.6180339887498949, 0.7071067811865476, 0.9999999999999999):
            x = math.ldexp(mantissa, exponent)
            if x and math.isfinite(x):
                out += [x, -x]
    for decimal in range(-324, 309):  # the powers of ten and their neighbours (format thresholds)
        x = float(f"1e{decimal}")
        if x and math.isfinite(x):
            out += [x, math.nextafter(x, 0.0), math.nextafter(x, math.inf), -x]
    return out


def test_orjson_path_spells_every_float_as_python_does():
    floats = _floats_of_every_binade()
    text = _codec._orjson_dumps(floats)
    assert text is not None  # finite floats go through orjson (re-spelled where it differs)
    assert text == _reference(floats)
    assert _codec.dumps({"x": floats}) == _reference({"x": floats})


_numberlike = st.text(alphabet='0123456789.e-+,:[]{}" ', max_size=12)
_floats_and_lookalikes = st.recursive(
    st.floats(allow_nan=False, allow_infinity=False) | st.floats(min_value=1e-11, max_value=1e-3) | _numberlike,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_numberlike, inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(_floats_and_lookalikes)
def test_dumps_matches_json_dumps_with_small_floats_and_numberlike_text(value):
    assert _codec.dumps(value) == _reference(value)


def _nested(depth: int) -> list:
    value: list = [1]
    for _ in range(depth):
        value = [value]
    return value


class _Colour(enum.Enum):
    RED = "red"


class _Level(enum.IntEnum):
    LOW = 1


@pytest.mark.parametrize(
    "value",
    [
        [float("nan"), 1.0],
        {"x": [math.inf]},
        {"a": None, "b": -math.inf},  # orjson would write null
        [uuid.UUID(int=7)],
        {"c": _Colour.RED},
        {"when": datetime(2026, 1, 2, tzinfo=UTC)},  # _default refuses
        {"level": _Level.LOW},
        [_Level.LOW, 2],
        [2**64, -(2**63) - 1],
        {"big": 10**30},  # beyond orjson's integers
        {1: "a", 2: "b"},
        {True: 1},
        {None: 1},  # keys the standard library turns into strings
        {"t": (1, (2, 3))},
        [{"s": frozenset({"b", "a"})}],
        {"text": "x,1e-7]", "n": 1e-7},
        ["0.00001", 1e-5, ":0.00001}"],  # look-alikes inside strings
        ["lone \ud800 surrogate"],
        _nested(300),  # deeper than orjson writes
    ],
)
def test_dumps_matches_json_dumps_where_orjson_differs_or_refuses(value):
    try:
        expected = _reference(value)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            _codec.dumps(value)
        return
    assert _codec.dumps(value) == expected


def test_a_stored_label_answer_goes_through_orjson():
    top = [
        {"token": t, "logprob": lp, "bytes": list(t.encode())}
        for t, lp in [("A", -0.7648311587524497), ("tie", -1.174431158752449), (" B", -3.1e-07), ("1", -2.5e-05), ("The", -12.25)]
    ]
    answer = {
        "body": {
            "id": "x",
            "object": "chat.completion",
            "created": 1795698101,
            "model": "judge",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "A"},
                    "logprobs": {"content": [{"token": "A", "logprob": -1e-06, "bytes": [65], "top_logprobs": top}]},
                    "finish_reason": "length",
                }
            ],
            "usage": {"prompt_tokens": 402, "completion_tokens": 1, "total_tokens": 403},
        },
        "attempts": 1,
        "errors": [],
    }
    assert _codec._orjson_dumps(answer) == _reference(answer)
