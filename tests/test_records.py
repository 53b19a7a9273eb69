"""Records: content ids are stable and content-sensitive; failures cannot carry verdicts."""

import hashlib
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nepotism.records import Instance, Judgment, Message, Response, _canonical, content_id


def test_content_id_ignores_dict_order_and_is_stable():
    assert content_id("k", {"a": 1, "b": [1, 2]}) == content_id("k", {"b": [1, 2], "a": 1})
    # a fixed value: changing the hashing scheme must be a deliberate, visible change
    assert content_id("response", ["1", "gpt-4", "hello"]) == content_id("response", ["1", "gpt-4", "hello"])
    assert len(content_id("k", 1)) == 20
    assert content_id("k", 1) != content_id("j", 1)


def test_content_ids_keep_their_values():
    """Values computed before `content_id` skipped the canonicalising walk for plain lists: a
    stored run's ids must not change."""
    assert content_id("response", ["1", "gpt-4", "hello"]) == "0067abdac7923570e6cb"
    judgment = Judgment(
        instance_id="1",
        judge="j",
        protocol="pairwise",
        candidates=("x", "y"),
        status="parsed",
        verdict="A",
        template_id="t",
        condition="c",
        replicate=2,
    )
    assert judgment.id == "e85f8a837effa2dbceb9"
    assert content_id("k", {"a": [1.5, math.nan], "b": ("x",)}) == "d3ff5231e25dd29a8b81"


def _reference_id(kind, payload, length=20):
    """`content_id` as first written: the canonical walk, then ``json.dumps`` with its options."""
    text = json.dumps(_canonical(payload), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{kind}\x00{text}".encode()).hexdigest()[:length]


_SCALAR = st.none() | st.booleans() | st.integers() | st.text() | st.floats(allow_nan=True)
_PAYLOAD = st.recursive(
    _SCALAR,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.none() | st.booleans() | st.integers() | st.text() | st.lists(st.text(), max_size=3), max_size=8) | _PAYLOAD)
def test_content_id_equals_the_canonical_walk_on_any_payload(payload):
    assert content_id("judgment", payload) == _reference_id("judgment", payload)


@pytest.mark.parametrize("field, value", [("instance_id", "2"), ("generator", "claude"), ("text", "hi!")])
def test_response_id_changes_with_content(field, value):
    base = dict(instance_id="1", generator="gpt-4", text="hi")
    assert Response(**base).id != Response(**{**base, field: value}).id


def test_judgment_id_covers_order_condition_and_replicate():
    base = dict(instance_id="1", judge="j", protocol="pairwise", candidates=("x", "y"), status="parsed", verdict="A")
    ids = {
        Judgment(**base).id,
        Judgment(**{**base, "candidates": ("y", "x")}).id,
        Judgment(**{**base, "condition": "cot"}).id,
        Judgment(**{**base, "replicate": 1}).id,
    }
    assert len(ids) == 4
    # the verdict is not part of the id: a re-judged call replaces, it does not duplicate
    assert Judgment(**base).id == Judgment(**{**base, "verdict": "B"}).id


def test_unparsed_judgment_cannot_carry_a_verdict_or_score():
    with pytest.raises(ValueError):
        Judgment(instance_id="1", judge="j", protocol="pairwise", candidates=("x", "y"), status="unparsed", verdict="tie")
    with pytest.raises(ValueError):
        Judgment(instance_id="1", judge="j", protocol="pointwise", candidates=("x",), status="failed", score=0.0)
    with pytest.raises(ValueError):
        Judgment(instance_id="1", judge="j", protocol="pairwise", candidates=("x", "y"), status="parsed", verdict="C")


def test_instance_messages():
    assert Instance(id="1", prompt="hi").messages == (Message("user", "hi"),)
    chat = (Message("system", "be brief"), Message("user", "hi"))
    assert Instance(id="1", prompt=chat).messages == chat
