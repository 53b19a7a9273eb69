"""One rule for secret-looking names; known secret values redacted in every spelling JSON allows."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nepotism import credentials
from nepotism.credentials import REDACTED, Secret, is_secret_name, redact, redact_text, scrub

KEY = "sk-cred/TEST+9f8e7d6c5b4a/xyz"
Secret(KEY)  # registered for the whole test process, as a backend would


@pytest.mark.parametrize(
    "name",
    [
        "api_key",
        "API_KEY",
        "apiKey",
        "apikey",
        "OPENAI_API_KEY",
        "x-api-key",
        "Authorization",
        "proxy-authorization",
        "access_token",
        "hf_token",
        "HF_TOKEN",
        "X-Auth-Token",
        "token",
        "key",
        "client_secret",
        "password",
        "passwd",
        "Ocp-Apim-Subscription-Key",
        "Cookie",
        "set-cookie",
        "private_key",
        "session_key",
        "refresh_token",
        "id_token",
        "bearer",
        "credentials",
    ],
)
def test_credential_names_are_recognised(name):
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "max_tokens",
        "max_new_tokens",
        "total_tokens",
        "prompt_tokens",
        "stop_token_ids",
        "eos_token",
        "stop_token",
        "top_logprobs",
        "temperature",
        "model",
        "cache_key",
        "headers",
        "messages",
        "keywords",
        "top_k",
        "seed",
    ],
)
def test_generation_parameters_are_not_credentials(name):
    assert not is_secret_name(name)


def test_one_rule_only():
    """The backends and the runner share this one function, and no other module defines a rule of its own."""
    import ast
    from pathlib import Path

    import nepotism
    from nepotism.backends import base
    from nepotism.runner import calls

    assert base.is_secret_name is calls.is_secret_name is is_secret_name
    import nepotism.store as store_pkg

    assert not hasattr(store_pkg, "is_secret_key") and not hasattr(store_pkg, "scrub_secrets")
    package = Path(nepotism.__file__).parent
    own_rules = [
        f"{path.relative_to(package)}:{node.name}"
        for path in package.rglob("*.py")
        if path.name != "credentials.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and "secret" in node.name.lower()
    ]
    assert own_rules == []


def _escape_all(text: str, upper: bool = False) -> str:
    out = "".join(f"\\u{ord(c):04x}" for c in text)
    return out.upper().replace("\\U", "\\u") if upper else out


@pytest.mark.parametrize(
    "spelling",
    [
        KEY,
        KEY.replace("/", "\\/"),
        _escape_all(KEY),
        _escape_all(KEY, upper=True),
        KEY.replace("/", "\\u002f"),
        KEY.replace("/", "\\u002F").replace("+", "\\u002b"),
    ],
    ids=["plain", "slash", "all-u", "all-U", "slash-u", "mixed"],
)
def test_raw_text_is_redacted_in_every_json_spelling(spelling):
    body = '{"error": {"message": "invalid header Bearer ' + spelling + '"}}'
    clean = redact_text(body)
    assert clean == '{"error": {"message": "invalid header Bearer ' + REDACTED + '"}}'
    assert KEY not in json.dumps(json.loads(clean))


def test_the_ordinary_json_spellings_decode_to_the_key():
    # the cases above are real: a JSON decoder turns each of them back into the key
    for spelling in (KEY.replace("/", "\\/"), _escape_all(KEY)):
        assert json.loads(f'"{spelling}"') == KEY


def test_characters_outside_the_bmp_and_quotes():
    odd = 'sk-\U0001f511-"quoted\\-0123456789'
    Secret(odd)
    text = json.dumps({"k": odd})  # ensure_ascii: a surrogate pair and escaped quotes
    assert "\\ud83d\\udd11" in text
    assert redact_text(text) == json.dumps({"k": REDACTED})
    assert redact_text(json.dumps({"k": odd}, ensure_ascii=False)) == json.dumps({"k": REDACTED})


def test_decoded_structures_are_redacted_recursively_keys_included():
    value = {"a": [f"x {KEY} y", ("t", KEY)], KEY: {"deep": [[{"s": KEY}]]}, "n": 3, "f": 1.5}
    out = redact(value)
    assert KEY not in json.dumps(out)
    assert out["a"] == [f"x {REDACTED} y", ("t", REDACTED)] and out["n"] == 3
    assert KEY in value["a"][0]  # the input is left alone


def test_scrub_drops_named_credentials_and_redacts_values():
    request = {
        "model": "m",
        "api_key": KEY,
        "headers": {"Authorization": f"Bearer {KEY}", "X-Trace": "1", "weird": f"Bearer {KEY}"},
        "extra": [{"hf_token": KEY, "max_tokens": 3, "note": f"see {KEY}"}],
        "cookie": "a=b",
        "private_key": "pem",
    }
    clean = scrub(request)
    assert clean == {"model": "m", "headers": {"X-Trace": "1"}, "extra": [{"max_tokens": 3, "note": f"see {REDACTED}"}]}
    assert request["api_key"] == KEY


def test_short_values_are_not_redacted_by_value():
    before = credentials.known_secrets()
    Secret("abc")
    assert credentials.known_secrets() == before
    assert redact_text("abc abc") == "abc abc"


def test_secret_repr_never_shows_the_value():
    s = Secret("sk-hidden-value-123")
    assert repr(s) == "<secret>" and "hidden" not in str(s) and s.reveal() == "sk-hidden-value-123"
    with pytest.raises(ValueError):
        Secret("")


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                KEY,
                KEY[:-1],
                KEY[1:],
                "\\",
                "\\u",
                "u",
                "/",
                "\\/",
                '"',
                '\\"',
                "\\\\",
                "x",
                " ",
                "\n",
                "\\n",
                "é",
                KEY.replace("/", "\\/"),
                _escape_all(KEY[:3]) + KEY[3:],
                KEY[:4] + "\\u00" + format(ord(KEY[4]), "x") + KEY[5:],
                "%",
                "%2",
                "%2F",
                "%2f",
                "%2b",
                "\t",
                "\\t",
                KEY.replace("/", "%2F"),
                KEY.replace("/", "%2f", 1),
                KEY.replace("+", "%2B"),
                KEY.replace("-", "%2d"),
            ]
        ),
        max_size=12,
    )
)
def test_the_shortcut_past_the_pattern_never_changes_what_is_redacted(parts):
    """`redact_text` skips the pattern when the text holds no marker (a known secret as it is, or
    an escape that could spell one of its characters): the result is always the pattern's own."""
    text = "".join(parts)
    pattern, _ = credentials._matcher
    assert redact_text(text) == pattern.sub(REDACTED, text)


# a key as it sits in a variable written by `echo "$KEY" > file; export VAR=$(cat file)` or an
# editor: the held Secret is the trimmed key, the variable's text a second spelling (`also`)
TRIMMED = "sk-ws/variant+key-7c6b5a49"
Secret(TRIMMED, also=(TRIMMED + " \n",))


def _percent(text: str, case=str.upper) -> str:
    from urllib.parse import quote

    return re.sub(r"%[0-9A-F]{2}", lambda m: case(m.group()), quote(text, safe=""))


@pytest.mark.parametrize(
    "spelling",
    [
        TRIMMED,
        TRIMMED + " \n",
        TRIMMED + " ",
        json.dumps(TRIMMED + " \n")[1:-1],
        json.dumps(TRIMMED + "\t")[1:-1],
        _percent(TRIMMED),
        _percent(TRIMMED, str.lower),
        _percent(TRIMMED + " \n"),
        _percent(TRIMMED).replace("%2F", "%2f", 1),
        _percent(TRIMMED).replace("%2B", "%2b"),
        "".join(f"%{b:02x}" for b in TRIMMED.encode()),
        _escape_all(TRIMMED + "\n"),
    ],
    ids=[
        "trimmed",
        "as-set",
        "space",
        "json-newline",
        "json-tab",
        "url",
        "url-lower",
        "url-as-set",
        "url-mixed",
        "url-mixed-2",
        "url-every-byte",
        "all-u-newline",
    ],
)
def test_every_spelling_of_a_key_read_with_whitespace_is_redacted(spelling):
    clean = redact_text(f"echo: Bearer {spelling}; done")
    assert clean.startswith("echo: Bearer [redacted]") and clean.endswith("; done")
    assert "variant" not in clean and "7c6b5a49" not in clean


def test_a_secret_registers_itself_without_the_whitespace_around_it():
    Secret("  sk-padded-9e8d7c6b5a\t")
    assert redact_text("Bearer sk-padded-9e8d7c6b5a,") == "Bearer [redacted],"


def test_the_store_keeps_no_spelling_of_a_key_echoed_by_a_server(tmp_path):
    from nepotism.store import Store

    echoed = [TRIMMED, TRIMMED + " \n", json.dumps(TRIMMED + "\n")[1:-1], _percent(TRIMMED), _percent(TRIMMED, str.lower)]
    with Store(tmp_path / "s.db") as store:
        store.put_call(
            "a" * 64,
            request={"backend": "openai", "model": "m", "note": echoed[2]},
            response={"echo": {f"h{i}": f"Bearer {e}" for i, e in enumerate(echoed)}},
            text=" | ".join(echoed),
            usage={"prompt_tokens": 1},
        )
        store.put_call(
            "b" * 64,
            request={"backend": "openai", "model": "m"},
            response=None,
            text=None,
            status="failed",
            error=f"http_4xx:401: bad credentials Bearer {echoed[3]}",
        )
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    for needle in ("variant", "7c6b5a49"):
        assert blob.count(needle.encode()) == 0
    assert blob.count(b"[redacted]") >= len(echoed) + 2
