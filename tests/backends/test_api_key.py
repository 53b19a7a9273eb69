"""API keys read from their environment variable: whitespace around the key is removed with one
warning naming the variable (never the key), a key no HTTP header can carry is refused by name,
and every spelling of the variable's text is redacted."""

from __future__ import annotations

import logging

import pytest

from nepotism.backends import base
from nepotism.backends.base import read_api_key
from nepotism.credentials import REDACTED, redact_text
from nepotism.errors import InputError

KEY = "sk-env/key+trailing-3e2d1c0b"


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setattr(base, "_TRIMMED", set())


@pytest.mark.parametrize("around", [" ", "\t", "\n", "\r\n", " \n", "\n\n", "\t "])
def test_whitespace_around_the_key_is_removed_with_one_warning_naming_the_variable(monkeypatch, caplog, around):
    raw = (" " if around == "\t " else "") + KEY + around
    monkeypatch.setenv("NEPOTISM_TEST_KEY_WS", raw)
    with caplog.at_level(logging.WARNING, logger="nepotism"):
        first = read_api_key("NEPOTISM_TEST_KEY_WS")
        second = read_api_key("NEPOTISM_TEST_KEY_WS")  # (a run reads it twice: checked, then used)
    assert first is not None and second is not None
    assert first.reveal() == second.reveal() == KEY
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "NEPOTISM_TEST_KEY_WS" in warnings[0] and "whitespace" in warnings[0]
    assert "env/key" not in warnings[0] and "3e2d1c0b" not in warnings[0]
    # the variable's text as it was is redacted too (a server that echoes the header untrimmed)
    assert redact_text(f"[Bearer {raw}]") == f"[Bearer {REDACTED}]"


def test_a_key_without_whitespace_gives_no_warning(monkeypatch, caplog):
    monkeypatch.setenv("NEPOTISM_TEST_KEY_WS", KEY)
    with caplog.at_level(logging.WARNING, logger="nepotism"):
        assert read_api_key("NEPOTISM_TEST_KEY_WS").reveal() == KEY
    assert caplog.records == []


@pytest.mark.parametrize("value", [KEY[:10] + "\n" + KEY[10:], KEY[:10] + " " + KEY[10:], KEY + "é", "\x7f" + KEY])
def test_a_key_no_header_can_carry_is_refused_naming_the_variable_not_the_key(monkeypatch, value):
    monkeypatch.setenv("NEPOTISM_TEST_KEY_BAD", value)
    with pytest.raises(InputError) as err:
        read_api_key("NEPOTISM_TEST_KEY_BAD")
    message = str(err.value)
    assert "NEPOTISM_TEST_KEY_BAD" in message and "header cannot carry" in message
    assert "env/key" not in message and "3e2d1c0b" not in message


@pytest.mark.parametrize("value", [None, "", "  \n"])
def test_an_unset_empty_or_blank_variable_is_an_input_error(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("NEPOTISM_TEST_KEY_NONE", raising=False)
    else:
        monkeypatch.setenv("NEPOTISM_TEST_KEY_NONE", value)
    with pytest.raises(InputError, match="NEPOTISM_TEST_KEY_NONE is not set"):
        read_api_key("NEPOTISM_TEST_KEY_NONE")
