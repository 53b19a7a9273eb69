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
