"""What commands share: --json keeps stdout for one document, tables readable when piped."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import click
from click.testing import CliRunner

from nepotism.cli import main
from nepotism.cli._common import echo_json, print_table

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))


def test_json_stdout_sends_library_prints_to_stderr():
    """A library or trainer that prints to stdout (transformers' loss dicts) must not spoil the
    JSON document of a --json command."""

    @click.command("noisy")
    @click.option("--json", "as_json", is_flag=True)
    def noisy(as_json):
        print({"loss": "2.683"})  # what a trainer's log callback does
        if as_json:
            echo_json({"ok": True})
        else:
            click.echo("done")

    main.add_command(noisy)
    try:
        result = CliRunner().invoke(main, ["noisy", "--json"])
        plain = CliRunner().invoke(main, ["noisy"])
    finally:
        main.commands.pop("noisy")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"ok": True}
    assert "loss" in result.stderr
    assert "loss" in plain.stdout and "done" in plain.stdout  # without --json nothing is moved


def test_print_table_plain_and_tsv(capsys):
    rows = [["win-rate", "a very long cell " * 10], ["x", "tab\there\nnext"]]
    print_table("title", ["metric", "value"], rows, output_format="plain")
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "title" and out[1].split() == ["metric", "value"]
    assert out[2].startswith("win-rate") and out[2].endswith("a very long cell")
    print_table("title", ["metric", "value"], rows, output_format="tsv")
    out = capsys.readouterr().out.splitlines()
    assert out == ["metric\tvalue", "win-rate\t" + " ".join(["a very long cell"] * 10), "x\ttab here next"]


def test_a_long_cell_overflows_its_own_row_only(capsys):
    why = "— (no comparison of a self candidate with an unrelated model, and nothing else to say)"
    rows = [["win-rate", "0.482", "257"], ["self-preference-ratio", why, "0"], ["win-rate", "0.518", "257"]]
    print_table("t", ["metric", "value", "n"], rows, output_format="plain")
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "win-rate               0.482  257"
    assert lines[3] == f"self-preference-ratio  {why}  0" and len(lines[3]) > 40
    assert len(lines[4]) == len(lines[2])


def test_a_json_document_arrives_whole_through_a_non_blocking_pipe_read_slowly():
    """stdout shared with something that made it non-blocking (uvloop does, a sibling process may):
    CPython's text stream keeps what a full pipe takes (64 KiB) and drops the rest with exit 0."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    with subprocess.Popen([NEPOTISM, "models", "list", "--json"], stdout=write_end,
                          stderr=subprocess.PIPE) as proc:
        os.close(write_end)
        time.sleep(1.0)  # the reader is late: the pipe fills before anything is read
        chunks = []
        while chunk := os.read(read_end, 1 << 15):
            chunks.append(chunk)
        os.close(read_end)
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    data = b"".join(chunks)
    assert len(data) > 1 << 17  # more than two pipes' worth
    assert len(json.loads(data)) > 100


def _read_late(command: list[str], *, env: dict | None = None) -> tuple[bytes, int, bytes]:
    """Run ``command`` with stdout a pipe that something sharing it made non-blocking; read it
    only after a second, so the pipe fills (64 KiB) before anything is taken."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    with subprocess.Popen(command, stdout=write_end, stderr=subprocess.PIPE, env=env) as proc:
        os.close(write_end)
        time.sleep(1.0)
        chunks = []
        while chunk := os.read(read_end, 1 << 15):
            chunks.append(chunk)
        os.close(read_end)
        code = proc.wait(timeout=60)
        return b"".join(chunks), code, proc.stderr.read()


def test_a_table_arrives_whole_through_a_non_blocking_pipe_read_late(tmp_path):
    """Tables and every other line the commands print go through one writer: before, only --json
    did, and a table of 3,262 models piped into a non-blocking pipe stopped at 64 KiB, exit 0."""
    extra = tmp_path / "many.toml"
    extra.write_text("".join(f'[models."local-model-{i:04d}"]\nfamily = "family-{i % 97}"\nparent = "llama-2-7b"\n'
                             f'teachers = ["gpt-4-0613", "gpt-3.5-turbo"]\n' for i in range(3000)))
    data, code, err = _read_late([NEPOTISM, "models", "list", "--models", str(extra)])
    assert code == 0, err
    lines = data.decode().splitlines()
    assert len(data) > 1 << 17 and lines[0] == "3262 models"
    assert len(lines) == 2 + 3262 and lines[-1].split()[0] == "zephyr-7b-beta"
    assert b"\x1b[" not in data  # piped: no colour codes


def test_a_closed_reader_exits_1_as_click_does(tmp_path):
    """A reader gone before the table is written (``| head -1``): exit status 1 and no traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    done = subprocess.run([NEPOTISM, "models", "list"], stdout=write_end, stderr=subprocess.PIPE, timeout=60)
    os.close(write_end)
    assert done.returncode == 1 and b"Traceback" not in done.stderr and b"Exception ignored" not in done.stderr


_RICH_TABLE = """
from nepotism.cli._common import print_table, whole_stdout
rows = [[f"metric-{i}", f"{i / 7:.6f}", "a cell with some words in it " * 2] for i in range(3000)]
with whole_stdout():
    print_table("rich", ["metric", "value", "note"], rows, output_format="table")
"""


def test_a_rich_table_arrives_whole_and_without_colour_codes_when_piped():
    """``--format table`` piped: rich writes through the same whole writer, and a pipe is not a
    terminal, so no colour codes."""
    data, code, err = _read_late([sys.executable, "-c", _RICH_TABLE], env={**os.environ, "COLUMNS": "120"})
    assert code == 0, err
    text = data.decode()
    assert len(data) > 1 << 18 and "metric-2999" in text and text.rstrip().endswith("┘")
    assert "\x1b[" not in text
