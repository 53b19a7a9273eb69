"""`openai_wire.encode_body`: the JSON value ``json.dumps(body, ensure_ascii=False)`` wrote, or
its very bytes (and its very errors) where orjson would write another value.

A body orjson writes (`_same_in_orjson`) parses to what the standard library's bytes parse to:
same types, same key order, floats bit for bit. Every other body (NaN, infinities, integers
beyond 64 bits, enums, UUIDs, non-string keys, lone surrogates, subclasses) gets exactly the
standard library's bytes, or raises the standard library's exception.
"""

import enum
import json
import math
import struct
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from nepotism.backends.openai_wire import _same_in_orjson, encode_body


def reference(body):
    return json.dumps(body, ensure_ascii=False).encode()


def same(a, b) -> bool:
    """Equal values of the same types, dicts in the same key order, floats bit for bit."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def outcome(encode, body):
    try:
        return "ok", encode(body)
    except Exception as exc:  # noqa: BLE001 - the exception is what is compared
        return type(exc), str(exc)


def assert_like_the_standard_library(body) -> None:
    got, want = outcome(encode_body, body), outcome(reference, body)
    if want[0] != "ok":
        assert got[0] == want[0], body
        return
    assert got[0] == "ok"
    if _same_in_orjson(body):
        assert same(json.loads(got[1]), json.loads(want[1])), body
    else:
        assert got[1] == want[1], body


class Colour(enum.Enum):
    RED = "red"


class Text(str):
    pass


DEEP: list = [1]
for _ in range(40):
    DEEP = [DEEP]

EDGES = [
    {"temperature": math.nan},
    {"temperature": math.inf},
    {"x": [-math.inf]},
    {"n": 2**64},
    {"n": 2**64 - 1},
    {"n": -(2**63)},
    {"n": -(2**63) - 1},
    {"n": 10**30},
    {"e": Colour.RED},
    {"u": uuid.UUID(int=7)},
    {"k": {1: "one"}},
    {"k": {True: 1}},
    {"s": "\ud800"},
    {"s": "a\udc00"},
    {"s": Text("sub")},
    {"t": (1, 2.5, "x")},
    {"f": 1e-7},
    {"f": -1.2e-05},
    {"f": 1e16},
    {"f": 5e-324},
    {"f": -0.0},
    {"f": 1.7976931348623157e308},
    {"deep": DEEP},
    {"deep": DEEP[0]},
    {"ctl": '\x00\x1f\x7f\u2028\u2029"\\/\b\f\n\r\t'},
    {"emoji": "\U0001f600 漢 é"},
    {},
    {"b": True, "n": None},
]


def test_edge_bodies_encode_like_the_standard_library():
    for body in EDGES:
        assert_like_the_standard_library(body)


def test_a_body_the_standard_library_refuses_is_refused_alike():
    for body in ({"x": object()}, {"x": {1.5j}}, {"s": "\ud800"}):
        got, want = outcome(encode_body, body), outcome(reference, body)
        assert want[0] != "ok" and got[0] == want[0]


scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(max_size=8), values, max_size=6))
def test_any_body_encodes_like_the_standard_library(body):
    assert_like_the_standard_library(body)


@settings(max_examples=200, deadline=None)
@given(st.text(), st.floats(min_value=0, max_value=2, allow_nan=False), st.integers(1, 4096))
def test_a_chat_body_is_written_by_orjson_with_the_same_value(content, temperature, max_tokens):
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "temperature": temperature,
        "seed": 0,
    }
    assert _same_in_orjson(body)  # (a lone surrogate: orjson refuses it, json.dumps' error is raised)
    assert_like_the_standard_library(body)
