"""The Request/Completion protocol: validation, cache key material, failure values."""

import json
import math

import pytest

from nepotism.backends import Backend, Completion, Request, failed
from nepotism.backends import base
from nepotism.backends.openai_http import OpenAIHTTPBackend
from nepotism.records import Message

MSG = (Message("user", "Which answer is better?"),)


def test_all_names_exist():
    for module in (base,):
        for name in module.__all__:
            assert hasattr(module, name)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},  # neither messages nor prompt
        {"messages": MSG, "prompt": "x"},  # both
        {"messages": ()},
        {"prompt": "x", "labels": ()},
        {"prompt": "x", "labels": ("A", "A")},
        {"prompt": "x", "labels": ("A", "")},
        {"prompt": "x", "labels": ("A",), "continuation": "y"},
        {"prompt": "x", "continuation": ""},
        {"prompt": "x", "max_tokens": 0},
        {"prompt": "x", "temperature": -0.1},
        {"messages": ("not a message",)},
    ],
)
def test_malformed_requests_are_programming_errors(kwargs):
    with pytest.raises(ValueError):
        Request("m", **kwargs)


def test_request_coerces_lists_and_reports_mode():
    r = Request("m", messages=list(MSG), labels=["A", "B"])
    assert r.messages == MSG and r.labels == ("A", "B")
    assert r.mode == "labels"
    assert Request("m", prompt="p", continuation="c").mode == "continuation"
    assert Request("m", prompt="p").mode == "generate"


def test_key_material_is_json_and_leaves_out_secrets():
    r = Request("m", messages=MSG, seed=3, extra={"top_p": 0.9, "api_key": "sk-x", "stop_token": "</s>"})
    km = r.key_material()
    text = json.dumps(km, sort_keys=True)
    assert "sk-x" not in text
    assert km["extra"] == {"stop_token": "</s>", "top_p": 0.9}
    assert km["messages"] == [{"role": "user", "content": "Which answer is better?"}]
    same = Request("m", messages=MSG, seed=3, extra={"top_p": 0.9, "stop_token": "</s>", "api_key": "other"})
    assert same.key_material() == km
    assert Request("m", messages=MSG, seed=3, labels=("A",)).key_material() != km
    assert Request("m", messages=MSG, seed=4).key_material() != Request("m", messages=MSG, seed=3).key_material()


def test_extra_is_read_only():
    r = Request("m", prompt="p", extra={"a": 1})
    with pytest.raises(TypeError):
        r.extra["a"] = 2  # type: ignore[index]


def test_completion_failure_invariants():
    with pytest.raises(ValueError):
        Completion(text="x", status="failed")
    with pytest.raises(ValueError):
        Completion(text="x", error="timeout")
    with pytest.raises(ValueError):
        Completion(text="x", status="weird")  # type: ignore[arg-type]
    f = failed("http_5xx:503: overloaded", latency_s=0.2)
    assert not f.ok and f.error_class == "http_5xx:503" and f.text is None
    assert Completion(text="x").ok and Completion(text="x").error_class is None


def test_logsumexp():
    assert base.logsumexp([]) == -math.inf
    assert base.logsumexp([-math.inf]) == -math.inf
    assert base.logsumexp([math.log(0.25), math.log(0.5)]) == pytest.approx(math.log(0.75))


def test_http_backend_satisfies_protocol():
    backend = OpenAIHTTPBackend("http://127.0.0.1:9/v1")
    assert isinstance(backend, Backend)


@pytest.mark.parametrize(
    "error,retry",
    [
        (None, False),
        ("timeout", True),
        ("connection: reset", True),
        ("http_429", True),
        ("http_5xx:503: busy", True),
        ("http_4xx:400", False),
        ("malformed_body: x", False),
        ("unsupported:label_logprobs", False),
        ("context_overflow: 9000", False),
    ],
)
def test_retryable_classes(error, retry):
    assert base.is_retryable(error) is retry


def test_in_process_label_warnings():
    from nepotism.backends._inprocess import label_warnings

    seqs = {"A": [(5,), (9, 5)], "B": [(7,)], "10": [(1, 0)], "1": [(1,)]}
    assert label_warnings(seqs, [9, 1, 3]) == ("label_not_in_top_k:B", "labels_overlap")
    assert label_warnings({"A": [(5,)], "B": [(7,)]}, [5, 7]) == ()
