"""The annotation app over HTTP (a real server in a thread, no browser): escaping, headers,
form token, origin and host checks, resume and jump, concurrent annotators."""

from __future__ import annotations

import html
import re
import threading

import httpx
import pytest

from nepotism.store import Store
from nepotism.store.annotations import latest_labels

pytest.importorskip("starlette")
import nepotism.annotate.app as app_module  # noqa: E402


def _token(page: str) -> str:
    return re.search(r'name="token" value="([^"]+)"', page).group(1)


def test_all_is_exported():
    for name in app_module.__all__:
        assert hasattr(app_module, name)


def test_pages_escape_text_hide_models_and_send_a_strict_policy(make_collection, server_factory, model_names):
    store_path, items = make_collection(4, hostile=2)
    server = server_factory(store_path, "alice")
    with httpx.Client(base_url=server.url) as client:
        page = client.get("/item/2")
        assert page.status_code == 200
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "default-src 'none'" in policy
        assert "unsafe-inline" not in policy
        assert page.headers["x-content-type-options"] == "nosniff"
        assert "<script>document" not in page.text and "<img src" not in page.text
        assert "&lt;script&gt;document.title" in page.text
        assert "&lt;b&gt;bold&lt;/b&gt; &amp; more?" in page.text
        assert re.findall(r"<script[^>]*>", page.text) == ['<script src="/static/app.js" defer>']
        for name in model_names:
            for path in ("/item/1", "/item/2", "/items", "/done"):
                assert name not in client.get(path).text
        script = client.get("/static/app.js")
        assert script.status_code == 200 and "keydown" in script.text


def test_labels_need_the_token_and_a_same_origin_post(make_collection, server_factory):
    store_path, _ = make_collection(3)
    server = server_factory(store_path, "alice")
    with httpx.Client(base_url=server.url) as client:
        token = _token(client.get("/item/1").text)
        assert client.post("/item/1", data={"label": "A", "token": "wrong"}).status_code == 403
        evil = {"origin": "http://evil.example"}
        assert client.post("/item/1", data={"label": "A", "token": token}, headers=evil).status_code == 403
        assert client.get("/item/1", headers={"host": "evil.example"}).status_code == 400
        assert client.post("/item/1", data={"label": "Z", "token": token}).status_code == 400
        assert client.post("/item/9", data={"label": "A", "token": token}).status_code == 404
        assert client.get("/item/0").status_code == 404
        assert client.get("/jump", params={"n": "x"}).status_code == 400
        with Store(store_path) as store:
            assert latest_labels(store, "pairs") == []
        done = client.post("/item/1", data={"label": "T", "token": token, "elapsed_ms": "2500"})
        assert done.status_code == 303 and done.headers["location"] == "/item/2"
        with Store(store_path) as store:
            (label,) = latest_labels(store, "pairs")
        assert label.winner == "tie" and label.elapsed_ms == 2500


def test_resume_jump_and_done(make_collection, server_factory):
    store_path, _ = make_collection(3)
    server = server_factory(store_path, "alice", order_seed=4)
    with httpx.Client(base_url=server.url) as client:
        token = _token(client.get("/item/1").text)
        client.get("/item/2")
        assert client.post("/item/2", data={"label": "A", "token": token}).headers["location"] == "/item/3"
        assert client.get("/").headers["location"] == "/item/1"
        client.get("/item/3")
        assert client.post("/item/3", data={"label": "S", "token": token}).headers["location"] == "/item/1"
        assert client.post("/item/1", data={"label": "B", "token": token}).headers["location"] == "/done"
        assert client.get("/").headers["location"] == "/item/3"  # the skipped one
        assert client.get("/jump", params={"n": "2"}).headers["location"] == "/item/2"
        page = client.get("/item/2").text
        assert 'data-label="A"' in page and 'aria-pressed="true"' in page
        listing = client.get("/items").text
        assert listing.count('class="labelled"') == 2 and listing.count('class="skipped"') == 1
        assert "Nothing left to label" in client.get("/done").text


def test_order_seed_fixes_the_order_and_text_follows_it(make_collection, server_factory):
    store_path, items = make_collection(6)
    server = server_factory(store_path, "carol", order_seed=11)
    with httpx.Client(base_url=server.url) as client:
        seen = []
        for position in range(1, 7):
            page = client.get(f"/item/{position}").text
            first = re.search(r'id="text-a">(.*?)</div>', page, re.S).group(1)
            seen.append(html.unescape(first) == items[position - 1].text_a)
    assert len(set(seen)) == 2  # both orders occur across six items with this seed
    with Store(store_path) as store:
        orders = dict(
            store._conn().execute("SELECT item_id, shown_first FROM annotation_orders WHERE annotator = 'carol'").fetchall()
        )
    assert [orders[i.item_id] == "model_a" for i in items] == seen


def test_two_annotators_posting_at_the_same_time(make_collection, server_factory):
    store_path, items = make_collection(12)
    servers = {name: server_factory(store_path, name) for name in ("ann1", "ann2")}
    errors = []

    def annotate(name, key):
        try:
            with httpx.Client(base_url=servers[name].url) as client:
                token = _token(client.get("/item/1").text)
                for position in range(1, 13):
                    client.get(f"/item/{position}")
                    reply = client.post(f"/item/{position}", data={"label": key, "token": token})
                    assert reply.status_code == 303
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=annotate, args=a) for a in (("ann1", "A"), ("ann2", "B"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with Store(store_path) as store:
        labels = latest_labels(store, "pairs")
    assert sorted((lab.annotator, lab.pressed) for lab in labels) == [("ann1", "A")] * 12 + [("ann2", "B")] * 12
