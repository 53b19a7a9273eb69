"""Fixtures for the annotation tests: pairs files, stores, servers in threads, headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nepotism.annotate.pairs import load_pairs
from nepotism.store import Store
from nepotism.store.annotations import add_collection

#: Model names that must never reach a page.
MODEL_A, MODEL_B = "zeta-secret-model", "omega-hidden-model"
SCRIPT = "<script>document.title = 'pwned'; window.__pwned = 1;</script>"
IMG = '<img src="x" onerror="window.__pwned = 2">'


def pair_records(n: int, *, hostile: int | None = None) -> list[dict]:
    rows = []
    for i in range(1, n + 1):
        text_b = f"Second answer to question {i}."
        if hostile == i:
            text_b = f"Look: {SCRIPT} and {IMG} end."
        rows.append(
            {
                "instance_id": f"q{i:02d}",
                "prompt": f"Question number {i}: explain <b>bold</b> & more?",
                "model_a": MODEL_A,
                "model_b": MODEL_B,
                "text_a": f"First answer to question {i}.\n  indented line",
                "text_b": text_b,
            }
        )
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def model_names() -> tuple[str, str]:
    """The two model names of `pair_records` (they must never appear on a page)."""
    return MODEL_A, MODEL_B


@pytest.fixture
def pairs_file(tmp_path):
    """``pairs_file(n, hostile=None, name="pairs")`` -> path of a pairs JSONL file."""

    def make(n: int = 6, *, hostile: int | None = None, name: str = "pairs") -> Path:
        return write_jsonl(tmp_path / f"{name}.jsonl", pair_records(n, hostile=hostile))

    return make


@pytest.fixture
def make_collection(tmp_path):
    """``make_collection(n, hostile=None, name="pairs")`` -> (store path, items)."""

    def make(n: int = 6, *, hostile: int | None = None, name: str = "pairs"):
        pairs = write_jsonl(tmp_path / f"{name}.jsonl", pair_records(n, hostile=hostile))
        store_path = tmp_path / "labels.db"
        items = load_pairs(pairs)
        with Store(store_path) as store:
            add_collection(store, name, items)
        return store_path, items

    return make


@pytest.fixture
def server_factory():
    """Start annotation apps on free loopback ports in threads; all are stopped afterwards."""
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    from nepotism.annotate.app import create_app
    from nepotism.annotate.server import BackgroundServer

    servers = []

    def start(store_path, annotator, collection="pairs", **kwargs):
        server = BackgroundServer(create_app(store_path, collection, annotator, **kwargs)).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
