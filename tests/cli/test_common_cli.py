"""What commands share: --json keeps stdout for one document, tables readable when piped, every
numeric option checked by one of the option types (finite, in range)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from nepotism.cli import main
from nepotism.cli._common import Finite, Size, echo_json, print_table

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
    with subprocess.Popen([NEPOTISM, "models", "list", "--json"], stdout=write_end, stderr=subprocess.PIPE) as proc:
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


def _read_late(command: list[str], *, env: dict | None = None, stream: str = "stdout") -> tuple[bytes, int, bytes]:
    """Run ``command`` with ``stream`` (stdout or stderr) a pipe that something sharing it made
    non-blocking; read it only after a second, so the pipe fills (64 KiB) before anything is
    taken. Returns what arrived there, the exit status and the other stream."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    other = "stderr" if stream == "stdout" else "stdout"
    with subprocess.Popen(command, env=env, **{stream: write_end, other: subprocess.PIPE}) as proc:
        os.close(write_end)
        time.sleep(1.0)
        chunks = []
        while chunk := os.read(read_end, 1 << 15):
            chunks.append(chunk)
        os.close(read_end)
        code = proc.wait(timeout=60)
        return b"".join(chunks), code, getattr(proc, other).read()


def test_a_table_arrives_whole_through_a_non_blocking_pipe_read_late(tmp_path):
    """Tables and every other line the commands print go through one writer: before, only --json
    did, and a table of 3,262 models piped into a non-blocking pipe stopped at 64 KiB, exit 0."""
    extra = tmp_path / "many.toml"
    extra.write_text(
        "".join(
            f'[models."local-model-{i:04d}"]\nfamily = "family-{i % 97}"\nparent = "llama-2-7b"\n'
            f'teachers = ["gpt-4-0613", "gpt-3.5-turbo"]\n'
            for i in range(3000)
        )
    )
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


_BROKEN_REGISTRY = """
import nepotism.models
from nepotism.credentials import Secret


def _broken(*args, **kwargs):
    key = Secret("sk-test-0123456789abcdef")  # registered for redaction, as an endpoint's key is
    raise RuntimeError("cannot read the registry (key " + key.reveal() + ") " + "detail " * 20000 + "end")


nepotism.models.default_registry = _broken
"""


def test_an_unexpected_exception_prints_through_the_one_writer_with_secrets_redacted(tmp_path):
    """A bug in a command (here the registry reader raises; a ``sitecustomize`` on PYTHONPATH breaks
    it in the installed ``nepotism``): its traceback is written through the same writer as every
    other line, so a 140 KB message reaches a non-blocking stderr read late whole, the key in it is
    redacted, it ends with one line saying it is a bug, and the exit status is 70, not 1 (click's
    abort, ``card --check``'s failure). Before, Python printed the traceback after the streams
    were put back: cut at the pipe's 64 KiB, the key shown, exit 1."""
    (tmp_path / "sitecustomize.py").write_text(_BROKEN_REGISTRY)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    data, code, out = _read_late([NEPOTISM, "models", "list", "--json"], env=env, stream="stderr")
    text = data.decode()
    assert code == 70, text[-2000:]
    assert out == b""  # --json: no document, as for bad input
    assert len(data) > 1 << 17 and text.startswith("Traceback (most recent call last):")
    assert "RuntimeError: cannot read the registry (key [redacted]) " in text and "sk-test-" not in text
    assert ") " + "detail " * 20000 + "end\n" in text  # the whole message, not cut
    assert text.splitlines()[-1].startswith("error: internal error (RuntimeError): a bug in nepotism")


_RICH_TABLE = """
from nepotism.cli._common import print_table, whole_output
rows = [[f"metric-{i}", f"{i / 7:.6f}", "a cell with some words in it " * 2] for i in range(3000)]
with whole_output():
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


def test_a_long_warning_arrives_whole_through_a_non_blocking_stderr_read_late(tmp_path):
    """Stderr goes through the same one writer as stdout: ``store merge`` of a store holding 4,000
    unfinished runs warns naming each (108 KB on stderr). Before, stderr piped into a
    non-blocking pipe read late lost what the full pipe did not take (65,536 bytes arrived, exit 0)."""
    import socket

    from nepotism.store import Store

    store = tmp_path / "shard.db"
    with Store(store) as opened:
        opened._conn().executemany(
            "INSERT INTO runs (id, started_at, config, status, pid, host) VALUES (?, ?, '{}', 'running', 1, ?)",
            [(f"20261126T000000Z-{i:08x}", "2026-11-26T00:00:00+00:00", f"not-{socket.gethostname()}") for i in range(4000)],
        )
    data, code, out = _read_late([NEPOTISM, "store", "merge", str(store), "--out", str(tmp_path / "m.db")], stream="stderr")
    assert code == 0, data[-2000:]
    assert b"merged 1 stores" in out
    (line,) = data.decode().splitlines()
    assert len(data) > 1 << 16 and line.startswith("warning: 4000 run(s) had not ended")
    assert line.count("20261126T000000Z-") == 4000 and line.endswith("the merge holds what they had stored")


def test_a_terminal_keeps_the_progress_bar_and_a_pipe_gets_none(tmp_path):
    """Through the whole writer, stderr still says whether it is a terminal: ``nepotism run`` with
    stderr on a pseudo-terminal draws rich's progress bar (cursor hidden, bar drawn, cursor shown
    again); with stderr a pipe it writes no bar and no escape codes."""
    import pty
    import threading

    from nepotism.testing.experiments import standin_experiment
    from nepotism.testing.standin import StandinConfig, standin_thread

    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160"}
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, _server):
        exp = standin_experiment(tmp_path, url, items=2, recognition=False)
        primary, secondary = pty.openpty()
        chunks: list[bytes] = []

        def read() -> None:
            while True:
                try:
                    chunk = os.read(primary, 1 << 14)
                except OSError:  # EIO: the terminal's last holder closed it
                    return
                if not chunk:
                    return
                chunks.append(chunk)

        reader = threading.Thread(target=read)
        reader.start()
        with subprocess.Popen(
            [NEPOTISM, "run", str(exp), "--store", str(tmp_path / "tty.db")], stdout=subprocess.PIPE, stderr=secondary, env=env
        ) as proc:
            os.close(secondary)
            out = proc.stdout.read()
            code = proc.wait(timeout=300)
        reader.join(timeout=60)
        os.close(primary)
        piped = subprocess.run(
            [NEPOTISM, "run", str(exp), "--store", str(tmp_path / "pipe.db")], capture_output=True, env=env, timeout=300
        )
    terminal = b"".join(chunks)
    assert code == 0, terminal[-2000:]
    assert b"\x1b[?25l" in terminal and b"\x1b[?25h" in terminal  # a live display hid the cursor
    assert "━".encode() in terminal and b"generat" in terminal.lower()
    assert piped.returncode == 0, piped.stderr[-2000:]
    assert b"\x1b[" not in piped.stderr and "━".encode() not in piped.stderr
    assert out.strip() and b"\x1b[" not in out


def test_a_boxed_table_wraps_between_words_never_inside_one():
    """On a 100-column terminal the boxed table keeps every word whole (a newcomer saw
    `self-pref/erence-ra/tio` and `gpt-4o-20/24-05-13`): columns are at least as wide as their
    longest word and wrap at spaces."""
    code = (
        "from nepotism.cli._common import print_table\n"
        "rows = [['self-preference-ratio', 'gpt-4o-2024-05-13', 'claude-3-5-sonnet-20240620', "
        "'a long explanation with many ordinary words that has to wrap somewhere on a narrow terminal']] * 3\n"
        "print_table('t', ['metric', 'judge', 'generator', 'note'], rows, output_format='table')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "COLUMNS": "100", "TERM": "dumb"}
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    text = "\n".join(lines)
    for word in ("self-preference-ratio", "gpt-4o-2024-05-13", "claude-3-5-sonnet-20240620"):
        assert text.count(word) == 3, (word, text)


# ------------------------------------------------------------------------------- numeric options


def _commands(group=main, path=()):
    """(command path, command) of every command of the command line."""
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def _numeric_options():
    """(command path, option name, type) of every numeric option, the top-level ones too."""
    for path, command in [((), main), *_commands()]:
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(
                param.type, (click.types.FloatParamType, click.types.IntParamType, Size)
            ):
                yield path, param.opts[0], param.type


def test_every_numeric_option_is_one_of_the_checked_types():
    """A float option is a `Finite` (click's FloatRange lets nan through every bound; a bare float
    takes nan and infinities), an integer one an IntRange with a lower bound (a negative seed or
    count was a traceback), a size a `Size`: one place checks them all."""
    found = list(_numeric_options())
    assert len(found) >= 30  # every command's, not none
    loose = [
        (" ".join(path), name, type(kind).__name__)
        for path, name, kind in found
        if not (isinstance(kind, (Finite, Size)) or (isinstance(kind, click.IntRange) and kind.min is not None))
    ]
    assert loose == []


FLOATS = sorted({(path, name) for path, name, kind in _numeric_options() if isinstance(kind, Finite)})


@pytest.mark.parametrize("path, name", FLOATS, ids=[" ".join((*p, n)) for p, n in FLOATS])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_no_float_option_takes_nan_or_an_infinity(path, name, value):
    """Each float option of every command refuses nan and the infinities: exit status 2 naming
    the option (before, ``--confidence nan`` was an internal error, exit 70, and
    ``--max-failure-rate nan`` allowed no failure at all)."""
    result = CliRunner().invoke(main, [*path, f"{name}={value}"])
    assert result.exit_code == 2, result.output
    assert name in result.output and "Traceback" not in result.output


def test_sizes_take_units_and_refuse_the_rest():
    size = Size(maximum=1 << 30)
    assert size.convert("16Mi", None, None) == 16 << 20 and size.convert("16MiB", None, None) == 16 << 20
    assert size.convert("1G", None, None) == 10**9 and size.convert("1.5Ki", None, None) == 1536
    assert size.convert(" 1000 ", None, None) == 1000
    for bad in ("0", "-1", "nan", "inf", "1Qi", "", "2Gi"):
        with pytest.raises(click.BadParameter):
            size.convert(bad, None, None)


def test_the_limit_options_bound_the_command_that_follows(tmp_path):
    """``nepotism --max-cell 4Ki metrics FILE``: the command reads within the limit (exit status 2
    naming the option); after it, the defaults hold again. A limit below what nepotism's own files
    need is refused."""
    from nepotism import input_limits

    table = tmp_path / "t.csv"
    table.write_text('instance_id,judge,model,score\nq1,gpt-4,claude-2,7,"' + "x" * 5000 + '"\n')
    result = CliRunner().invoke(main, ["--max-cell", "4Ki", "metrics", str(table)])
    assert result.exit_code == 2 and "--max-cell" in result.output and "line 2" in result.output, result.output
    assert input_limits.current() == input_limits.DEFAULTS
    for option, low in [
        ("--max-depth", "15"),
        ("--max-cell", "4095"),
        ("--max-line", "1Ki"),
        ("--max-decompressed", "1000"),
    ]:  # below what nepotism's own files need
        result = CliRunner().invoke(main, [option, low, "metrics", str(table)])
        assert result.exit_code == 2 and option in result.output, result.output
        assert "least" in result.output or "range" in result.output, result.output


def test_nan_options_through_the_executable_exit_2_and_write_nothing(tmp_path):
    """As a user types them: ``metrics --confidence nan`` and ``run --max-failure-rate nan``."""
    from nepotism.testing.experiments import standin_experiment

    exp = standin_experiment(tmp_path / "exp", "http://127.0.0.1:9/v1", items=2, recognition=False)
    table = tmp_path / "t.csv"
    table.write_text("instance_id,judge,model,score\nq1,gpt-4,claude-2,7\n")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    for args, option in [
        (["metrics", str(table), "--confidence", "nan"], "--confidence"),
        (["run", str(exp), "--store", str(tmp_path / "s.db"), "--max-failure-rate", "nan"], "--max-failure-rate"),
        (["plan", "--judges", "gpt-4", "--generators", "gpt-4,claude-2", "--effect", "self=nan"], "--effect"),
    ]:
        done = subprocess.run([NEPOTISM, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert done.returncode == 2, done.stderr[-2000:]
        assert option in done.stderr and "nan" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
