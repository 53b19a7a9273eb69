"""OpenAIHTTPBackend over httpx.MockTransport: request bodies and malformed or unusual answers."""

import asyncio
import json
import math

import httpx
import pytest

from nepotism.backends import Request
from nepotism.backends.openai_http import OpenAIHTTPBackend
from nepotism.records import Message

MSG = (Message("user", "Pick A or B."),)
KEY = "sk-mock-93b1c0ffee"


def call(handler, request, **kwargs):
    seen = []

    def wrapped(req: httpx.Request) -> httpx.Response:
        seen.append((req.url.path, json.loads(req.content), req.headers.get("authorization")))
        return handler(req)

    backend = OpenAIHTTPBackend("http://mock/v1", transport=httpx.MockTransport(wrapped), **kwargs)

    async def go():
        try:
            return await backend.complete(request)
        finally:
            await backend.aclose()

    return asyncio.run(go()), seen


def ok_chat(content="[[A]]", **choice):
    body = {
        "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop", **choice}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }
    return lambda req: httpx.Response(200, json=body)


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(200, text="not json at all"),
        httpx.Response(200, text="<html>gateway</html>"),
        httpx.Response(200, json=[1, 2, 3]),
        httpx.Response(200, json={"id": "x"}),
        httpx.Response(200, json={"choices": []}),
        httpx.Response(200, json={"choices": "nope"}),
        httpx.Response(200, json={"choices": [{"message": {"content": 42}}]}),
        httpx.Response(200, json={"choices": [{"message": None}]}),
        httpx.Response(200, json={"choices": [{"no_message": 1}]}),
    ],
)
def test_malformed_bodies(response):
    c, _ = call(lambda req: response, Request("m", messages=MSG))
    assert c.status == "failed" and c.error_class == "malformed_body" and c.text is None


def test_generation_body_and_parse():
    c, seen = call(
        ok_chat(),
        Request("m", messages=MSG, max_tokens=7, seed=5, extra={"top_p": 0.5}),
        model="srv",
        extra={"top_p": 0.9, "stop": ["x"]},
    )
    path, body, _ = seen[0]
    assert path == "/v1/chat/completions"
    assert body == {
        "model": "srv",
        "messages": [{"role": "user", "content": "Pick A or B."}],
        "max_tokens": 7,
        "temperature": 0.0,
        "seed": 5,
        "top_p": 0.5,
        "stop": ["x"],
    }
    assert c.ok and c.text == "[[A]]" and c.finish_reason == "stop" and c.usage["total_tokens"] == 4


def test_request_body_bytes_are_the_json_of_the_built_body():
    """The bytes sent are `encode_body` of the built body: the JSON value ``json.dumps`` writes
    (orjson's spelling of it); a body orjson cannot write alike (a NaN) is json.dumps' bytes."""
    from nepotism.backends.openai_wire import build_body, encode_body

    for extra in ({"stop": ["\u2028"], "top_p": 0.5}, {"top_p": math.nan}):
        sent = []
        backend_request = Request(
            "m", messages=(Message("user", 'Ünïcode "quoted" \\ \n é 漢'),), labels=("A", "B"), seed=3, extra=extra
        )

        def handler(req: httpx.Request) -> httpx.Response:
            sent.append(req.content)
            return ok_chat()(req)

        call(handler, backend_request, model="srv", extra={"n": 1})
        _, body = build_body(backend_request, model="srv", extra={"n": 1}, top_logprobs=20)
        old = json.dumps(body, ensure_ascii=False).encode()
        assert sent == [encode_body(body)]
        if math.isnan(extra["top_p"]):
            assert sent == [old]
        else:
            assert json.loads(sent[0]) == json.loads(old) and list(json.loads(sent[0])) == list(body)


def test_label_request_body_and_spellings_summed():
    top = [
        {"token": "A", "logprob": math.log(0.5)},
        {"token": " A", "logprob": math.log(0.1)},
        {"token": "B", "logprob": math.log(0.3)},
    ]
    handler = ok_chat("A", logprobs={"content": [{"token": "A", "logprob": math.log(0.5), "top_logprobs": top}]})
    c, seen = call(handler, Request("m", messages=MSG, labels=("A", "B", "tie"), max_tokens=99), top_logprobs=5)
    body = seen[0][1]
    assert body["max_tokens"] == 1 and body["logprobs"] is True and body["top_logprobs"] == 5
    assert c.label_logprobs["A"] == pytest.approx(math.log(0.6))
    assert c.label_logprobs["B"] == pytest.approx(math.log(0.3))
    assert c.label_logprobs["tie"] == -math.inf and c.warnings == ("label_not_in_top_k:tie",)


def test_label_request_without_logprobs_is_unsupported():
    c, _ = call(ok_chat("A"), Request("m", messages=MSG, labels=("A", "B")))
    assert c.error_class == "unsupported:label_logprobs"


def test_legacy_completion_labels():
    body = {
        "choices": [
            {"text": "B", "logprobs": {"tokens": ["B"], "token_logprobs": [-0.2], "top_logprobs": [{"B": -0.2, "A": -1.9}]}}
        ]
    }
    c, seen = call(lambda r: httpx.Response(200, json=body), Request("m", prompt="Verdict:", labels=("A", "B")))
    assert seen[0][0] == "/v1/completions" and seen[0][1]["logprobs"] == 20
    assert c.label_logprobs == {"A": -1.9, "B": -0.2}


def test_continuation_tokens_straddling_the_boundary():
    prompt, cont = "ab", "cd ef"
    # tokens: "a", "bc" (straddles: belongs to the continuation), "d", " ef", generated "!"
    lp = {
        "tokens": ["a", "bc", "d", " ef", "!"],
        "text_offset": [0, 1, 3, 4, 7],
        "token_logprobs": [None, -1.0, -2.0, -3.0, -4.0],
    }
    body = {"choices": [{"text": prompt + cont + "!", "logprobs": lp}]}
    c, seen = call(lambda r: httpx.Response(200, json=body), Request("m", prompt=prompt, continuation=cont))
    assert seen[0][1]["echo"] is True and seen[0][1]["prompt"] == "abcd ef" and seen[0][1]["max_tokens"] == 1
    assert c.continuation_logprobs == (-1.0, -2.0, -3.0)


@pytest.mark.parametrize(
    "response,expected",
    [
        (httpx.Response(200, json={"choices": [{"text": "x", "logprobs": None}]}), "unsupported:continuation_logprobs"),
        (
            httpx.Response(
                200,
                json={"choices": [{"text": "x", "logprobs": {"tokens": ["x"], "text_offset": [99], "token_logprobs": [-1.0]}}]},
            ),
            "unsupported:continuation_logprobs",
        ),
        (httpx.Response(400, json={"error": {"message": "echo is not supported"}}), "unsupported:continuation_logprobs"),
        (
            httpx.Response(
                200,
                json={
                    "choices": [
                        {"text": "x", "logprobs": {"tokens": ["a", "b"], "text_offset": [0], "token_logprobs": [None, -1.0]}}
                    ]
                },
            ),
            "malformed_body",
        ),
    ],
)
def test_continuation_failures(response, expected):
    c, _ = call(lambda r: response, Request("m", prompt="a", continuation="b"))
    assert c.error_class == expected


@pytest.mark.parametrize(
    "exc,expected",
    [
        (httpx.ReadTimeout("slow"), "timeout"),
        (httpx.ConnectTimeout("slow"), "timeout"),
        (httpx.ConnectError("refused"), "connection"),
        (httpx.RemoteProtocolError("eof"), "connection"),
    ],
)
def test_transport_errors(exc, expected):
    def handler(req):
        raise exc

    c, _ = call(handler, Request("m", messages=MSG))
    assert c.error_class == expected


@pytest.mark.parametrize(
    "status,expected", [(429, "http_429"), (500, "http_5xx:500"), (502, "http_5xx:502"), (404, "http_4xx:404"), (302, "http_302")]
)
def test_status_classes(status, expected):
    c, _ = call(lambda r: httpx.Response(status, text="nope"), Request("m", messages=MSG))
    assert c.error_class == expected and c.raw["status_code"] == status


def test_a_server_echoing_the_key_is_redacted(monkeypatch):
    monkeypatch.setenv("MOCK_KEY", KEY)

    def echo(req):
        auth = req.headers["authorization"]
        return httpx.Response(401, json={"error": {"message": f"invalid header {auth}"}})

    c, seen = call(echo, Request("m", messages=MSG), api_key_env="MOCK_KEY")
    assert seen[0][2] == f"Bearer {KEY}"
    assert KEY not in repr(c) and "[redacted]" in c.error

    def echo_ok(req):
        return httpx.Response(200, json={"choices": [{"message": {"content": req.headers["authorization"]}}]})

    c, _ = call(echo_ok, Request("m", messages=MSG), api_key_env="MOCK_KEY")
    assert c.ok and KEY not in json.dumps(c.raw) and KEY not in c.text


def test_a_lone_surrogate_in_an_answer_is_read_as_u_fffd_and_the_call_can_be_stored(tmp_path):
    """A body escaping half of a surrogate pair (a server cutting an emoji) parses to a string no UTF-8
    can hold: the store's writer raised UnicodeEncodeError and the run died with a traceback, on every
    rerun again. Read as U+FFFD, as bytes that are not UTF-8 are."""
    from nepotism.runner.calls import Endpoint, call_record, plan_call
    from nepotism.store import Store

    text = b'{"choices": [{"message": {"role": "assistant", "content": "ok \\ud83d [[A]]"}, "finish_reason": "stop"}]}'
    request = Request("m", messages=MSG)
    c, _ = call(lambda req: httpx.Response(200, content=text, headers={"content-type": "application/json"}), request)
    assert c.ok and c.text == "ok \ufffd [[A]]" and c.raw["choices"][0]["message"]["content"] == c.text
    error = b'{"error": {"message": "bad \\udc80 input"}}'
    failed, _ = call(lambda req: httpx.Response(500, content=error), request)
    assert failed.status == "failed" and "\ufffd" in failed.error
    endpoint = Endpoint("m", None, "openai", "m")
    with Store(tmp_path / "s.db") as store:
        for completion in (c, failed):
            record = call_record(endpoint, plan_call(endpoint, request), completion)
            store.put_call(record.pop("key"), **record)


def _chat_reply(tokens, tops):
    content = [
        {"token": t, "logprob": -0.1, "top_logprobs": [{"token": k, "logprob": v} for k, v in top]}
        for t, top in zip(tokens, tops)
    ]
    return {
        "choices": [{"message": {"content": "".join(tokens)}, "logprobs": {"content": content}, "finish_reason": "stop"}],
        "usage": {"completion_tokens": len(tokens)},
    }


def test_labels_after_read_the_last_marker_and_say_what_went_wrong():
    from nepotism.backends.openai_wire import build_body, read_body

    request = Request("m", messages=(Message("user", "q"),), labels=("A", "B"), labels_after="[[", max_tokens=256)
    path, body = build_body(request, model=None, extra={}, top_logprobs=20)
    assert path == "/chat/completions" and body["max_tokens"] == 256 and body["logprobs"] and body["top_logprobs"] == 20
    quoted = ["I", " saw", " [[", "B", "]]", " quoted;", " mine:", " [[", "A", "]]"]
    tops = [[]] * 8 + [[("A", math.log(0.7)), ("B", math.log(0.2))], []]
    c = read_body(_chat_reply(quoted, tops), request, 0.1)
    assert c.label_logprobs == pytest.approx({"A": math.log(0.7), "B": math.log(0.2)})
    assert c.warnings == ("label_marker_repeated",) and c.text == "".join(quoted)
    none = read_body(_chat_reply(["No", " verdict"], [[], []]), request, 0.1)
    assert none.ok and none.label_logprobs is None and none.warnings == ("no_label_marker",)
    joined = read_body(_chat_reply(["So", " [[A", "]]"], [[], [], []]), request, 0.1)
    assert joined.label_logprobs is None and joined.warnings == ("label_marker_inside_token",)
    raw = Request("m", prompt="q", labels=("A", "B"), labels_after="[[", max_tokens=8)
    completion = {
        "choices": [
            {
                "text": "so [[B]]",
                "finish_reason": "stop",
                "logprobs": {"tokens": ["so", " [[", "B", "]]"], "top_logprobs": [{}, {}, {"B": -0.2, "A": -1.9}, {}]},
            }
        ]
    }
    c = read_body(completion, raw, 0.1)
    assert c.label_logprobs == pytest.approx({"A": -1.9, "B": -0.2}) and c.text == "so [[B]]"
