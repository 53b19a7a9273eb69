"""Errors a user can act on: where (file, line, field) and what, in one printable line."""

from nepotism.errors import InputError, ValidationError, printable


def test_printable_escapes_every_control_character_and_keeps_text():
    assert (
        printable("A\x00 B\n\t\x1b[2J\x7f\x85\u202e\u2028\udcff é 中 😀")
        == "A\\x00 B\\n\\t\\x1b[2J\\x7f\\x85\\u202e\\u2028\\udcff é 中 😀"
    )
    err = InputError("unknown verdict 'A\x00'", path="t\n.csv", line=2, field="ver\x1bdict")
    assert str(err) == "t\\n.csv, line 2, field 'ver\\x1bdict': unknown verdict 'A\\x00'"
    assert err.message == "unknown verdict 'A\x00'"  # the value itself is kept as given
    assert str(ValidationError("bad \x1b[31m", row="r\x00", field="c")) == "row 'r\\x00', column 'c': bad \\x1b[31m"
