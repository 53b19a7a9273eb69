"""How many CPU threads an in-process model computes with (`backends._inprocess.model_threads`):
an experiment's ``n_threads``, else ``$NEPOTISM_MODEL_THREADS``, else 2; a bad variable stops a run
with exit 2 before its store exists; the experiment's ``n_batch`` and ``flash_attn`` reach the GGUF
backend. No model is loaded here."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nepotism.backends._inprocess import THREADS_ENV, model_threads
from nepotism.cli import main
from nepotism.errors import InputError
from nepotism.experiment import load_experiment
from nepotism.models import load_registry
from nepotism.runner.experiment_run import build_endpoints

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))


def test_the_argument_wins_then_the_variable_then_two(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert model_threads() == 2 and model_threads(5) == 5
    monkeypatch.setenv(THREADS_ENV, " 3 ")
    assert model_threads() == 3 and model_threads(1) == 1
    monkeypatch.setenv(THREADS_ENV, "")
    assert model_threads() == 2  # set but empty: as if unset


@pytest.mark.parametrize("raw", ["0", "-1", "two", "2.5", "1025", "1e3"])
def test_a_bad_variable_names_itself(monkeypatch, raw):
    monkeypatch.setenv(THREADS_ENV, raw)
    with pytest.raises(InputError) as err:
        model_threads()
    assert err.value.field == THREADS_ENV and repr(raw) in str(err.value) and "from 1 to 1024" in str(err.value)


@pytest.mark.parametrize("bad", [0, -2, 1025, True, 2.0, "2"])
def test_a_bad_argument_is_a_programming_error(bad):
    with pytest.raises(ValueError, match="threads must be an integer"):
        model_threads(bad)


def _experiment(tmp_path: Path, model_lines: str) -> Path:
    (tmp_path / "items.jsonl").write_text('{"id": "q1", "prompt": "Say hi."}\n')
    path = tmp_path / "exp.toml"
    path.write_text(f"""
[experiment]
name = "threads"
[dataset]
path = "items.jsonl"
[models."smollm2-135m-instruct"]
backend = "gguf"
path = "no-such-file.gguf"
{model_lines}
[judging]
judges = ["smollm2-135m-instruct"]
[[judging.protocols]]
protocol = "pointwise"
""")
    return path


def test_the_experiment_passes_its_setting_or_none_to_the_backend(tmp_path, monkeypatch):
    pytest.importorskip("llama_cpp")  # building a gguf endpoint needs the `local` extra
    monkeypatch.setenv(THREADS_ENV, "1")
    unset = load_experiment(_experiment(tmp_path, ""))
    cfg = unset.models["smollm2-135m-instruct"]
    assert (cfg.n_threads, cfg.n_batch, cfg.flash_attn) == (None, 512, False)
    registry = load_registry(unset.registry_files)
    (endpoint,) = build_endpoints(unset, registry).values()
    backend = endpoint.backend
    assert (backend.n_threads, backend.n_batch, backend.flash_attn) == (1, 512, False)  # the machine's threads
    named = load_experiment(_experiment(tmp_path, "n_threads = 2\nn_batch = 64\nflash_attn = true"))
    (endpoint,) = build_endpoints(named, registry).values()
    backend = endpoint.backend
    assert (backend.n_threads, backend.n_batch, backend.flash_attn) == (2, 64, True)  # the file's, whatever the variable


def test_a_run_with_a_bad_variable_exits_2_and_writes_nothing(tmp_path, monkeypatch):
    exp = _experiment(tmp_path, "")
    for extra in ([], ["--dry-run"]):
        done = subprocess.run(
            [NEPOTISM, "run", str(exp), "--store", str(tmp_path / "s.db"), "--json", *extra],
            capture_output=True,
            text=True,
            timeout=120,
            env=os.environ | {THREADS_ENV: "lots"},
        )
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"field '{THREADS_ENV}': must be an integer from 1 to 1024, got 'lots'" in done.stderr
        assert "Traceback" not in done.stderr and done.stdout == "" and not (tmp_path / "s.db").exists()
    monkeypatch.setenv(THREADS_ENV, "lots")
    # a model whose file names its threads does not read the variable
    named = _experiment(tmp_path, "n_threads = 1")
    dry = CliRunner().invoke(main, ["run", str(named), "--store", str(tmp_path / "s.db"), "--dry-run", "--json"])
    assert THREADS_ENV not in dry.output and json.loads(dry.stdout)["problems"]  # the missing file, as before


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("n_threads = 0", "n_threads"),
        ("n_batch = 0", "n_batch"),
        ("n_batch = 70000", "n_batch"),
        ("n_threads = 1.5", "n_threads"),
        ("flash_attn = 1", "flash_attn"),
        ('flash_attn = "yes"', "flash_attn"),
    ],
)
def test_bad_numbers_in_the_file_name_their_key(tmp_path, line, why):
    with pytest.raises(InputError) as err:
        load_experiment(_experiment(tmp_path, line))
    assert err.value.field == f"models.smollm2-135m-instruct.{why}"
