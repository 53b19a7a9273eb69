"""The one cache key (`runner.request_key`): stable across releases, sensitive to every part of a
request that changes the answer, blind to credentials and to where the model is served."""

import dataclasses

import pytest

from nepotism.backends.base import Request
from nepotism.records import Message
from nepotism.runner import Endpoint, request_key

SECRET = "sk-PLANTED-d41d8cd98f00b204e9800998ecf8427e"
ENDPOINT = Endpoint("judge-7b", None, "openai", served_model="srv-judge")
REQUEST = Request(
    model="judge-7b",
    messages=(Message("system", "Be fair."), Message("user", "A or B?")),
    max_tokens=16,
    temperature=0.0,
    extra={"stop": ["\n"]},
)


def test_key_is_a_fixed_value():
    # changing how keys are computed silently invalidates every user's cache: this value is pinned
    key = request_key(ENDPOINT, REQUEST)
    assert len(key) == 64 and int(key, 16) >= 0
    assert key == "921cde8c4ea5e1ac2c35771915516054eaf4425f0282235c5034f24daa790dbf"


@pytest.mark.parametrize(
    "change",
    [
        {"messages": (Message("user", "A or B?"),)},
        {"messages": (Message("system", "Be fair."), Message("user", "B or A?"))},
        {"messages": (Message("user", "Be fair."), Message("user", "A or B?"))},
        {"messages": None, "prompt": "A or B?"},
        {"max_tokens": 17},
        {"temperature": 0.7},
        {"seed": 1},
        {"labels": ("A", "B")},
        {"continuation": "A"},
        {"extra": {"stop": ["\n"], "top_p": 0.9}},
        {"extra": {}},
    ],
)
def test_every_part_of_the_request_changes_the_key(change):
    assert request_key(ENDPOINT, dataclasses.replace(REQUEST, **change)) != request_key(ENDPOINT, REQUEST)


@pytest.mark.parametrize("change", [{"kind": "vllm"}, {"model": "judge-8b"}, {"served_model": "other"}])
def test_the_endpoint_identity_changes_the_key(change):
    assert request_key(dataclasses.replace(ENDPOINT, **change), REQUEST) != request_key(ENDPOINT, REQUEST)


def test_replicates_are_separate_calls_and_must_be_non_negative_integers():
    assert request_key(ENDPOINT, REQUEST, 1) != request_key(ENDPOINT, REQUEST)
    for bad in (-1, 1.0, True, "1"):
        with pytest.raises(ValueError):
            request_key(ENDPOINT, REQUEST, bad)


def test_credentials_limits_and_prices_do_not_change_the_key():
    secret = dataclasses.replace(REQUEST, extra={"stop": ["\n"], "api_key": SECRET, "Authorization": f"Bearer {SECRET}"})
    assert request_key(ENDPOINT, secret) == request_key(ENDPOINT, REQUEST)
    priced = dataclasses.replace(ENDPOINT, price_input_per_mtok=3.0)
    assert request_key(priced, REQUEST) == request_key(ENDPOINT, REQUEST)


def test_message_boundaries_are_part_of_the_key():
    split = dataclasses.replace(REQUEST, messages=(Message("user", "ab"), Message("user", "c")))
    moved = dataclasses.replace(REQUEST, messages=(Message("user", "a"), Message("user", "bc")))
    assert request_key(ENDPOINT, split) != request_key(ENDPOINT, moved)
