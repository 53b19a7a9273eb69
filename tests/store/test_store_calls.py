"""The call cache: round trips, no double storage, secrets (keys: tests/runner/test_request_key.py)."""

from __future__ import annotations

import pytest

import nepotism.store.calls as calls_mod
from nepotism.store import Store
from tests.store.keys import opaque_key

SECRET = "sk-PLANTED-d41d8cd98f00b204e9800998ecf8427e"
BASE = {
    "backend": "openai",
    "model": "judge-7b",
    "parameters": {"temperature": 0.0, "max_tokens": 16, "stop": ["\n"]},
    "messages": [{"role": "system", "content": "Be fair."}, {"role": "user", "content": "A or B?"}],
    "replicate": 0,
}


def _key(**changes):
    return opaque_key(repr(sorted(changes.items())))


def _put(store, key, text="A", **kw):
    store.put_call(key, request={"backend": "openai", "model": "judge-7b"}, response={"t": text}, text=text, **kw)


def test_public_names():
    assert set(calls_mod.__all__) == {"CALL_STATUSES", "CachedCall"}


def test_put_get_round_trip(store):
    key = _key()
    store.put_call(
        key,
        request=BASE | {"extra_body": {"x": [1, 2]}},
        response={"choices": [{"text": "A"}], "id": "cmpl-1"},
        text="A",
        logprobs=[{"token": "A", "logprob": -0.01}],
        usage={"prompt_tokens": 12, "completion_tokens": 1},
        latency_s=0.25,
    )
    got = store.get_call(key)
    assert got is not None and got.ok
    assert (got.key, got.backend, got.model, got.text) == (key, "openai", "judge-7b", "A")
    assert got.request["extra_body"] == {"x": [1, 2]}
    assert got.request["messages"] == BASE["messages"]
    assert got.response == {"choices": [{"text": "A"}], "id": "cmpl-1"}
    assert got.logprobs == [{"token": "A", "logprob": -0.01}]
    assert got.usage == {"prompt_tokens": 12, "completion_tokens": 1}
    assert got.latency_s == 0.25 and got.error is None and got.run_id is None
    assert store.get_call(_key(replicate=5)) is None


def test_second_put_of_an_ok_call_is_a_no_op(store):
    key = _key()
    _put(store, key, text="first")
    _put(store, key, text="second")
    store.put_call(key, request={}, response=None, text=None, status="failed", error="timeout")
    assert store.get_call(key).text == "first"
    assert store.get_call(key).ok
    assert store.info()["counts"]["calls"] == 1


def test_failed_call_is_replaced_by_a_later_ok_one(store):
    key = _key()
    store.put_call(key, request={"model": "m"}, response=None, text=None, status="failed", error="HTTP 503")
    failed = store.get_call(key)
    assert failed.status == "failed" and failed.error == "HTTP 503" and failed.text is None
    store.put_call(key, request={"model": "m"}, response=None, text=None, status="failed", error="timeout")
    assert store.get_call(key).error == "timeout"
    _put(store, key, text="B")
    again = store.get_call(key)
    assert again.ok and again.text == "B" and again.error is None
    assert store.info()["call_status"] == {"ok": 1}


def test_put_validates_its_arguments(store):
    with pytest.raises(ValueError, match="64"):
        _put(store, "abc")
    with pytest.raises(ValueError, match="status"):
        _put(store, _key(), status="maybe")
    with pytest.raises(ValueError, match="error"):
        _put(store, _key(), status="failed")
    with pytest.raises(ValueError, match="run_id"):
        _put(store, _key(), run_id="no-such-run")
    assert store.info()["counts"]["calls"] == 0


def test_calls_link_to_their_run(store):
    run = store.start_run({"judge": "x"})
    _put(store, _key(), run_id=run)
    assert store.get_call(_key()).run_id == run


def test_batched_lookup(store):
    keys = [_key(replicate=i) for i in range(1200)]
    for i, key in enumerate(keys[:700]):
        _put(store, key, text=str(i))
    wanted = keys[650:1200] + keys[:3] + keys[:3]  # spans several batches, with duplicates
    found = store.get_calls(wanted)
    assert set(found) == set(keys[650:700]) | set(keys[:3])
    assert all(found[k].text == str(keys.index(k)) for k in found)
    assert store.get_calls([]) == {}


def test_no_secret_reaches_the_file(tmp_path):
    path = tmp_path / "secret.db"
    with Store(path) as store:
        run = store.start_run({"judge": {"model": "m", "api_key": SECRET}, "token": SECRET})
        for replicate in range(3):
            store.put_call(
                _key(replicate=replicate),
                request={
                    "backend": "openai",
                    "model": "m",
                    "api_key": SECRET,
                    "headers": {"Authorization": f"Bearer {SECRET}", "x-api-key": SECRET},
                    "parameters": {"temperature": 0, "access_token": SECRET},
                },
                response={"ok": True},
                text="A",
                run_id=run,
            )
        assert store.runs()[0]["config"] == {"judge": {"model": "m"}}
    files = [p for p in tmp_path.iterdir() if p.name.startswith("secret.db")]
    assert files
    needle = SECRET.encode()
    for file in files:
        assert needle not in file.read_bytes()
    assert b"sk-PLANTED" not in b"".join(p.read_bytes() for p in files)


def test_put_calls_in_one_transaction(store):
    keys = [_key(replicate=i) for i in range(5)]
    batch = [
        {"key": k, "request": {"model": "m", "api_key": SECRET}, "response": None, "text": str(i)} for i, k in enumerate(keys)
    ]
    batch.append({"key": keys[0], "request": {}, "text": "dup"})  # no-op: ok already stored
    batch.append({"key": _key(model="z"), "request": {}, "status": "failed", "error": "timeout"})
    assert store.put_calls(batch) == 6
    found = store.get_calls(keys)
    assert [found[k].text for k in keys] == ["0", "1", "2", "3", "4"]
    assert found[keys[0]].request == {"model": "m"}
    assert store.get_call(_key(model="z")).error == "timeout"
    with pytest.raises(ValueError, match="error"):
        store.put_calls([{"key": _key(model="q"), "request": {}}, {"key": _key(model="r"), "request": {}, "status": "failed"}])
    with pytest.raises(TypeError):
        store.put_calls([{"key": _key(model="s"), "request": {}, "txt": "typo"}])
    assert store.get_calls([_key(model="q"), _key(model="s")]) == {}
