"""Atomic writes: a file appears complete or not at all; nothing is left behind on failure."""

import pytest

from nepotism._files import atomic_write, write_files


def test_write_files_creates_the_folder_and_returns_each_path(tmp_path):
    paths = write_files(tmp_path / "new" / "dir", {"a.txt": b"one", "b.bin": b"\x00\x01"})
    assert {name: p.read_bytes() for name, p in paths.items()} == {"a.txt": b"one", "b.bin": b"\x00\x01"}
    assert sorted(p.name for p in (tmp_path / "new" / "dir").iterdir()) == ["a.txt", "b.bin"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")

    def boom(tmp):
        tmp.write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(target, boom)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_a_json_line_with_an_escaped_surrogate_pair_is_text_and_a_lone_one_is_refused():
    from nepotism._files import parse_json_line
    from nepotism.errors import InputError

    assert parse_json_line('{"t": "smile \\ud83d\\ude00", "u": "\\u00e9"}', "f.jsonl", 1) == {"t": "smile 😀", "u": "é"}
    assert parse_json_line('{"t": "a \\\\ud800 literal"}', "f.jsonl", 1) == {"t": "a \\ud800 literal"}
    for text, field in [('{"t": "\\ud83d"}', "t"), ('{"m": [{"x": "\\uDE00 y"}]}', "m"), ('["\\udc80"]', None)]:
        with pytest.raises(InputError, match="surrogate") as err:
            parse_json_line(text, "f.jsonl", 7)
        assert err.value.line == 7 and err.value.field == field
