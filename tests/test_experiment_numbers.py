"""Every numeric option of an experiment file is finite and in range: exit 2 naming the file, the
field and the allowed range, with nothing written (no store, no output folder)."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nepotism.cli import main
from nepotism.errors import InputError
from nepotism.experiment import load_experiment
from nepotism.testing.experiments import standin_experiment

MODEL = "models.standin-alpha"

# (table header the line goes under, the line, the field named, words of the allowed range)
CASES = [
    ("[models.standin-alpha]", "rpm = nan", f"{MODEL}.rpm", "(0, "),
    ("[models.standin-alpha]", "rpm = inf", f"{MODEL}.rpm", "(0, "),
    ("[models.standin-alpha]", "rpm = -5", f"{MODEL}.rpm", "(0, "),
    ("[models.standin-alpha]", "rpm = 0", f"{MODEL}.rpm", "(0, "),
    ("[models.standin-alpha]", "tpm = nan", f"{MODEL}.tpm", "(0, "),
    ("[models.standin-alpha]", "tpm = -inf", f"{MODEL}.tpm", "(0, "),
    ("[models.standin-alpha]", "retry_max_delay_s = nan", f"{MODEL}.retry_max_delay_s", "[0, 86400] seconds"),
    ("[models.standin-alpha]", "retry_max_delay_s = inf", f"{MODEL}.retry_max_delay_s", "[0, 86400] seconds"),
    ("[models.standin-alpha]", "retry_max_delay_s = -1", f"{MODEL}.retry_max_delay_s", "[0, 86400] seconds"),
    ("[models.standin-alpha]", "retry_base_delay_s = nan", f"{MODEL}.retry_base_delay_s", "[0, 3600] seconds"),
    ("[models.standin-alpha]", "retry_base_delay_s = 1e9", f"{MODEL}.retry_base_delay_s", "[0, 3600] seconds"),
    ("[models.standin-alpha]", "timeout = inf", f"{MODEL}.timeout", "(0, 86400] seconds"),
    ("[models.standin-alpha]", "timeout = nan", f"{MODEL}.timeout", "(0, 86400] seconds"),
    ("[models.standin-alpha]", "timeout = 0", f"{MODEL}.timeout", "(0, 86400] seconds"),
    ("[models.standin-alpha]", "timeout = 1e300", f"{MODEL}.timeout", "(0, 86400] seconds"),
    ("[models.standin-alpha]", "max_response_mb = 0", f"{MODEL}.max_response_mb", "(0, 4096] MiB"),
    ("[models.standin-alpha]", "max_response_mb = nan", f"{MODEL}.max_response_mb", "(0, 4096] MiB"),
    ("[models.standin-alpha]", "max_response_mb = 1e6", f"{MODEL}.max_response_mb", "(0, 4096] MiB"),
    ("[models.standin-alpha]", "concurrency = 0", f"{MODEL}.concurrency", "[1, 4096]"),
    ("[models.standin-alpha]", "concurrency = 100000", f"{MODEL}.concurrency", "[1, 4096]"),
    ("[models.standin-alpha]", "concurrency = 2.5", f"{MODEL}.concurrency", "an integer"),
    ("[models.standin-alpha]", "max_attempts = 0", f"{MODEL}.max_attempts", "[1, 100]"),
    ("[models.standin-alpha]", "max_attempts = 1000", f"{MODEL}.max_attempts", "[1, 100]"),
    ("[models.standin-alpha]", "params = { top_p = nan }", f"{MODEL}.params.top_p", "finite"),
    ("[models.standin-alpha]", "params = { stop = [1.0, inf] }", f"{MODEL}.params.stop[1]", "finite"),
    ("[generation]", "temperature = nan", "generation.temperature", "[0, 10]"),
    ("[generation]", "temperature = -0.5", "generation.temperature", "[0, 10]"),
    ("[generation]", "temperature = inf", "generation.temperature", "[0, 10]"),
    ("[generation]", "temperature = 50", "generation.temperature", "[0, 10]"),
    ("[experiment]", "seed = -1", "experiment.seed", "an integer in [0, "),
    ("[experiment]", "seed = nan", "experiment.seed", "an integer"),
    ("[experiment]", "replicates = 0", "experiment.replicates", "[1, 10000]"),
    ("[experiment]", "replicates = 100000", "experiment.replicates", "[1, 10000]"),
    ("[dataset]", "limit = 0", "dataset.limit", "an integer in [1, "),
    ("[dataset]", "limit = -3", "dataset.limit", "an integer in [1, "),
    ("[[judging.protocols]]", "replicates = 0", "judging.protocols[0].replicates", "[1, 10000]"),
    (
        "[[judging.protocols]]",
        'options = { mode = "labels", ways = 2, min_label_mass = nan }',
        "judging.protocols[0].options.min_label_mass",
        "finite",
    ),
    ("[judging]", 'conditions = [{ name = "c", options = { x = inf } }]', "judging.conditions[0].options.x", "finite"),
]
GENERATION_CASES = [  # max_tokens sits in [generation] already: replace the line
    ("max_tokens = 32", "max_tokens = 0", "generation.max_tokens", "[1, 1048576] tokens"),
    ("max_tokens = 32", "max_tokens = 99999999", "generation.max_tokens", "[1, 1048576] tokens"),
]


def _file(tmp_path: Path, header: str, line: str, *, replace: str | None = None) -> Path:
    path = standin_experiment(tmp_path / "exp", "http://127.0.0.1:9/v1", recognition=False)
    text = path.read_text()
    if replace is not None:
        text = text.replace(replace, line)
    else:
        assert header in text
        key = line.split(" = ")[0]  # the generated file may set the key already: drop it
        text = "\n".join(x for x in text.split("\n") if not x.startswith(key + " = "))
        head, tail = text.split(header + "\n", 1)
        text = f"{head}{header}\n{line}\n{tail}"
    path.write_text(text)
    return path


def _check(tmp_path: Path, path: Path, field: str, allowed: str) -> None:
    before = sorted(p.name for p in (tmp_path / "exp").iterdir())
    store = tmp_path / "exp" / "s.db"
    result = CliRunner().invoke(main, ["run", str(path), "--store", str(store), "--no-progress"])
    assert result.exit_code == 2, result.output
    message = result.output.strip()
    assert len(message.splitlines()) == 1, message
    assert str(path) in message and f"field '{field}'" in message and allowed in message, message
    assert "Traceback" not in message
    assert sorted(p.name for p in (tmp_path / "exp").iterdir()) == before  # nothing written


@pytest.mark.parametrize("header,line,field,allowed", CASES, ids=[f"{c[0]}{c[1]}" for c in CASES])
def test_bad_number_exits_2_naming_file_field_and_range(tmp_path, header, line, field, allowed):
    _check(tmp_path, _file(tmp_path, header, line), field, allowed)


@pytest.mark.parametrize("old,line,field,allowed", GENERATION_CASES, ids=[c[1] for c in GENERATION_CASES])
def test_bad_max_tokens(tmp_path, old, line, field, allowed):
    _check(tmp_path, _file(tmp_path, "", line, replace=old), field, allowed)


@pytest.mark.parametrize("line,field", [("n_ctx = 0", "n_ctx"), ("n_threads = 0", "n_threads"), ("n_ctx = 10000000", "n_ctx")])
def test_bad_gguf_numbers(tmp_path, line, field):
    path = _file(tmp_path, "[models.standin-alpha]", "")
    text = path.read_text().replace(
        'backend = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "standin-alpha"\n',
        f'backend = "gguf"\npath = "x.gguf"\n{line}\n',
        1,
    )
    text = text.replace("timeout = 5.0\n", "", 1)
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_experiment(path)
    assert err.value.field == f"{MODEL}.{field}" and "an integer in [1, " in str(err.value)


def test_grading_timeout(tmp_path):
    path = _file(tmp_path, "[output]", "")
    path.write_text(path.read_text() + '\n[grading]\ntask = "math"\ntimeout = inf\n')
    with pytest.raises(InputError) as err:
        load_experiment(path)
    assert err.value.field == "grading.timeout" and "(0, 86400] seconds" in str(err.value)


def test_good_numbers_are_kept(tmp_path):
    path = standin_experiment(tmp_path, "http://127.0.0.1:9/v1", retry_max_delay_s=0, model_options="rpm = 600\ntpm = 1e6")
    exp = load_experiment(path)
    alpha = exp.models["standin-alpha"]
    assert (alpha.rpm, alpha.tpm, alpha.retry_max_delay_s) == (600.0, 1e6, 0.0)
    assert all(math.isfinite(v) for v in (alpha.timeout, alpha.retry_base_delay_s))


def test_through_the_installed_executable(tmp_path):
    exe = shutil.which("nepotism", path=str(Path(sys.executable).parent))
    assert exe is not None
    path = _file(tmp_path, "[models.standin-alpha]", "rpm = nan")
    run = subprocess.run([exe, "run", str(path), "--store", str(tmp_path / "s.db")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "rpm" in run.stderr + run.stdout
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize(
    "make",
    [
        lambda: __import__("nepotism.runner.retry", fromlist=["x"]).RetryPolicy(max_delay_s=math.nan),
        lambda: __import__("nepotism.runner.retry", fromlist=["x"]).RetryPolicy(base_delay_s=math.inf),
        lambda: __import__("nepotism.runner.limits", fromlist=["x"]).TokenBucket(math.nan),
        lambda: __import__("nepotism.runner.limits", fromlist=["x"]).Limiter(2, rpm=math.inf),
        lambda: __import__("nepotism.backends.openai_http", fromlist=["x"]).OpenAIHTTPBackend(
            "http://127.0.0.1:9/v1", timeout=math.inf
        ),
        lambda: __import__("nepotism.backends.openai_http", fromlist=["x"]).OpenAIHTTPBackend(
            "http://127.0.0.1:9/v1", timeout=math.nan
        ),
    ],
)
def test_the_library_refuses_non_finite_settings_too(make):
    with pytest.raises(ValueError):
        make()
