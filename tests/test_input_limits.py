"""Limits on reading user files (`nepotism.input_limits`): each refused with its file, line, field
and option; nothing read past a limit; the readers of every format go through them.

The executable's side (exit status 2, nothing written, peak memory) is tests/test_bad_inputs.py.
"""

import gzip
import io

import pytest

from nepotism import input_limits
from nepotism.errors import InputError
from nepotism.input_limits import InputLimits, applied, check_value, numbered_lines, parse_toml, read_toml


def _bomb(path, inflated: int, row: bytes = b"q1,j,m,7\n") -> None:
    """A gzip file of ``inflated`` bytes of ``row`` (repeated members of 1 MiB: a few KB on disk)."""
    member = gzip.compress(row * ((1 << 20) // len(row)), compresslevel=9)
    with open(path, "wb") as handle:
        handle.write(gzip.compress(b"instance_id,judge,model,score\n"))
        for _ in range(-(-inflated // (1 << 20))):
            handle.write(member)


def test_the_defaults_and_their_bounds():
    limits = input_limits.current()
    assert limits == InputLimits() == input_limits.DEFAULTS
    assert (limits.decompressed, limits.line, limits.cell, limits.depth) == (1 << 30, 64 << 20, 16 << 20, 100)
    for bad in (
        {"line": 0},
        {"cell": -1},
        {"depth": input_limits.MAX_DEPTH + 1},
        {"cell": input_limits.MAX_CELL + 1},
        {"decompressed": 1.5},
        {"depth": True},
    ):
        with pytest.raises(ValueError):
            InputLimits(**bad)


def test_applied_sets_the_limits_for_a_block_only():
    with applied(InputLimits(line=10)) as limits:
        assert input_limits.current() is limits
    assert input_limits.current() == InputLimits()


def test_a_gzip_file_inflating_past_the_limit_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "t.csv.gz"
    _bomb(path, 3 << 20)
    with applied(InputLimits(decompressed=2 << 20)), pytest.raises(InputError) as err:
        input_limits.open_text(path)
    assert err.value.path == str(path) and "inflates to more than 2,097,152 bytes" in err.value.message
    assert "--max-decompressed" in err.value.message and "2Mi" in err.value.message
    with applied(InputLimits(decompressed=4 << 20)), input_limits.open_text(path) as handle:
        assert handle.readline() == "instance_id,judge,model,score\n"


def test_a_file_that_is_not_gzip_is_left_to_its_reader(tmp_path):
    path = tmp_path / "t.csv.gz"
    path.write_bytes(b"plain text")
    with pytest.raises(OSError), input_limits.open_text(path) as handle:  # gzip's own error, reworded by the readers
        handle.read()


def test_a_long_line_is_refused_having_read_no_more_than_the_limit():
    text = "short\n" + "x" * 1000 + "\nnever read\n"
    handle = io.StringIO(text)
    with applied(InputLimits(line=100)):
        lines = numbered_lines(handle, "f.jsonl")
        assert next(lines) == (1, "short\n")
        with pytest.raises(InputError) as err:
            next(lines)
    assert (err.value.path, err.value.line) == ("f.jsonl", 2) and "longer than 100 characters" in err.value.message
    assert handle.tell() <= len("short\n") + 102
    with applied(InputLimits(line=5)):  # a line of exactly the limit, its ending beyond it, is whole
        assert list(numbered_lines(io.StringIO("12345\r\n123\n"), "f")) == [(1, "12345\r\n"), (2, "123\n")]


def test_check_value_names_the_field_of_a_long_string_and_of_deep_nesting():
    with applied(InputLimits(cell=5, depth=3)):
        check_value({"a": [{"b": "12345"}]}, "f.jsonl", 2)
        with pytest.raises(InputError) as err:
            check_value({"prompt": [{"role": "user", "content": "123456"}]}, "f.jsonl", 2)
        assert (err.value.line, err.value.field) == (2, "prompt[0].content") and "--max-cell" in err.value.message
        with pytest.raises(InputError) as err:
            check_value({"k" * 6: 1}, "f.jsonl", 2)  # a key is a string too
        assert err.value.field is None
        with pytest.raises(InputError) as err:
            check_value({"meta": [[[1]]]}, "f.toml")
        assert err.value.field == "meta" and "more than 3 levels" in err.value.message
        check_value({"meta": [[1]]}, "f.toml")


def test_check_value_does_not_walk_what_its_text_shows_is_within_the_limits():
    value = {"a": "x" * 10}
    with applied(InputLimits(cell=5)):
        check_value(value, "f", text="[1]")  # the text says no string can be longer than 3
        with pytest.raises(InputError):
            check_value(value, "f", text='{"a": "xxxxxxxxxx"}')


@pytest.mark.parametrize(
    "text, field",
    [
        ("a = " + "[" * 5000 + "]" * 5000, None),  # beyond the parser's recursion
        ("a = " + "[" * 150 + "]" * 150, "a"),  # within it, beyond the limit
        ("[" + ".".join(["t"] * 300) + "]\nx = 1", "t"),  # dotted tables nest without recursing
        ("z = " + "{a = " * 3000 + "1" + "}" * 3000, None),
    ],
)
def test_deep_toml_is_an_input_error_naming_the_file(text, field):
    with pytest.raises(InputError, match="nested") as err:
        parse_toml(text, "exp.toml")
    assert err.value.path == "exp.toml" and err.value.field == field and "--max-depth" in err.value.message


def test_read_toml_says_what_is_missing_and_where_utf8_breaks(tmp_path):
    with pytest.raises(InputError, match="thresholds file not found"):
        read_toml(tmp_path / "absent.toml", what="thresholds file")
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"a = 1\n\n" + b"b" * 5_000_000 + b'\nc = "\xff"\n')
    with pytest.raises(InputError, match="UTF-8") as err:
        read_toml(bad)
    assert err.value.line == 4
    good = tmp_path / "good.toml"
    good.write_bytes(b"\xef\xbb\xbfa = { b = [1, 2] }\n")
    assert read_toml(good) == {"a": {"b": [1, 2]}}


def test_bad_utf8_line_counts_lines_of_any_length(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"a\n" + b"x" * (3 << 20) + b"\n" + "é".encode() * 700_000 + b"\xc3\n")
    assert input_limits.bad_utf8_line(path) == 3
    gz = tmp_path / "t.csv.gz"
    gz.write_bytes(gzip.compress(b"a\nb\n\xe2\x82"))  # cut inside a character at the end
    assert input_limits.bad_utf8_line(gz) == 3
    (tmp_path / "ok.csv").write_bytes("a\né\n".encode())
    assert input_limits.bad_utf8_line(tmp_path / "ok.csv") is None


def test_every_toml_reader_of_user_files_goes_through_parse_toml():
    """No module parses TOML but `input_limits` (the bundled judge templates are the package's own)."""
    from pathlib import Path

    package = Path(input_limits.__file__).parent
    parsers = sorted(
        str(p.relative_to(package)) for p in package.rglob("*.py") if "tomllib.load" in p.read_text(encoding="utf-8")
    )
    assert parsers == ["input_limits.py", "judging/templates.py"]
    assert (package / "judging/templates.py").read_text(encoding="utf-8").count("tomllib.load") == 1  # bundled only
