"""`openai_wire.parse_json`: the standard library's value (or error) for every body, faster.

Compared against ``json.loads(body.decode("utf-8", errors="replace"))``, which is what the HTTP
backend parsed answers with before: same values (types, key order, float bits), same exceptions
with the same messages, and the same stored rows and `Completion` values.
"""

import json
import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nepotism.backends import Request
from nepotism.backends.openai_wire import parse_json, read_body
from nepotism.records import Message
from nepotism.store._codec import dumps


def reference(content: bytes):
    return json.loads(content.decode("utf-8", errors="replace"))


def same(a, b) -> bool:
    """Equal values of the same types, dicts in the same key order, floats bit for bit."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def outcome(parse, content: bytes):
    try:
        return "ok", parse(content)
    except Exception as exc:  # noqa: BLE001 - the exception is what is compared
        return type(exc), str(exc)


def assert_same_as_reference(content: bytes) -> None:
    got, want = outcome(parse_json, content), outcome(reference, content)
    if want[0] == "ok":
        assert got[0] == "ok" and same(got[1], want[1]), content
    else:
        assert got == want, content


EDGES = [
    b'{"a": NaN}',
    b'{"a": -Infinity}',
    b"[Infinity]",
    b'{"a": 1e400}',
    b'{"a": -1e-400}',
    b'{"a": 123456789012345678901234567890}',
    b'{"a": 18446744073709551615}',
    b'{"a": 18446744073709551616}',
    b'{"a": -9223372036854775809}',
    b'{"a": -9223372036854775808}',
    b'{"id": "chatcmpl-12345678901234567890"}',
    b'{"a": 0.1234567890123456789012}',
    b'{"a":1,"b":2,"a":3}',
    b'{"a": "\\ud800"}',
    b'{"a": "\\udc00x"}',
    b'{"a": "\\ud83d\\ude00"}',
    b'\xef\xbb\xbf{"a": 1}',
    b'{"a": "\xff\xfe"}',
    b'{"a": "caf\xc3\xa9"}',
    b'{"a": "\x01"}',
    b'{"a": 1,}',
    b'{"a": 1} x',
    b"",
    b"   ",
    b"not json",
    b"<html>gateway</html>",
    b"0123",
    b"-0",
    b"[-0.0, 0.0, 1E2, 1e-05, 5e-324, 1.7976931348623157e308]",
    b'"just a string"',
    b"null",
    b"[" * 2000 + b"]" * 2000,
    b'{"a": true, "b": false, "c": null}',
    b'\t{"a" :\r\n1 }\n',
]


@pytest.mark.parametrize("content", EDGES)
def test_edge_cases_parse_as_the_standard_library_parses_them(content):
    assert_same_as_reference(content)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(JSON_VALUES, st.booleans())
def test_any_json_text_parses_as_the_standard_library_parses_it(value, ascii_only):
    assert_same_as_reference(json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", errors="surrogatepass"))


@settings(max_examples=300, deadline=None)
@given(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["{!r}", "{:.17g}", "{:.6f}", "{:.3e}", "{:.20e}", "{:.12g}"]),
)
def test_floats_round_to_the_same_double(x, spelling):
    assert_same_as_reference(f'{{"logprob": {spelling.format(x)}}}'.encode())


def label_body(lps) -> bytes:
    top = [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in lps]
    body = {
        "id": "standin-1",
        "object": "chat.completion",
        "created": 1795676630,
        "model": "j",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": top[0]["token"]},
                "logprobs": {"content": [{**top[0], "top_logprobs": top}]},
                "finish_reason": "length",
            }
        ],
        "usage": {"prompt_tokens": 180, "completion_tokens": 1, "total_tokens": 181},
    }
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    "lps",
    [
        [("A", -0.8773082326030341), (" B", -1.0773082326030352), ("tie", -2.197308232603034)]
        + [(f"t{i}", -3.0 - i / 7) for i in range(17)],
        [("A", -1e-05), ("B", -11.512925464970229), ("C", -0.0)],
        [("A", float("nan")), ("B", float("-inf"))],  # json writes NaN / -Infinity: the standard library reads them
    ],
)
def test_a_label_answer_gives_the_same_completion_and_stored_row(lps):
    request = Request("j", messages=(Message("user", "A or B?"),), labels=("A", "B"))
    content = label_body(lps)
    got, want = read_body(parse_json(content), request, 0.1), read_body(reference(content), request, 0.1)
    assert got.label_logprobs.keys() == want.label_logprobs.keys()
    assert all(same(got.label_logprobs[k], want.label_logprobs[k]) for k in want.label_logprobs)
    assert (got.text, got.usage, got.warnings, got.finish_reason) == (want.text, want.usage, want.warnings, want.finish_reason)
    assert dumps(got.raw) == dumps(want.raw)
