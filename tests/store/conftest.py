"""Shared fixtures for the store tests."""

from __future__ import annotations

import pytest

from nepotism.store import Store


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "test.db") as opened:
        yield opened
