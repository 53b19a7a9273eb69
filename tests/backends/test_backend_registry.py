"""Backends are registered by name: every module of `nepotism.backends` declaring ``BACKEND`` is
found by `nepotism.backends.registry`, and an experiment file names each of the four (openai,
litellm, gguf, transformers), run here through the installed ``nepotism`` executable. An unknown
name and a backend whose extra is missing stop with exit 2 before anything is written."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import nepotism.backends
from nepotism.backends import registry
from nepotism.backends.local_models import ModelFileError, model_path
from nepotism.cli import main
from nepotism.extras import EXTRAS, missing
from nepotism.testing.experiments import STANDIN_MODELS, standin_experiment
from nepotism.testing.standin import StandinConfig, standin_thread

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))
PACKAGE = Path(nepotism.backends.__file__).parent
SMOL = "smollm2-135m-instruct"


def _declares_backend(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(node, (ast.Assign, ast.AnnAssign))
        and "BACKEND"
        in [t.id for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)]
        for node in tree.body
    )


def test_the_registry_lists_every_module_that_declares_a_backend():
    declaring = {f"nepotism.backends.{p.stem}" for p in PACKAGE.glob("*.py") if _declares_backend(p)}
    assert {spec.module for spec in registry.specs()} == declaring
    assert registry.names() == ("gguf", "litellm", "openai", "transformers")
    for spec in registry.specs():  # what the experiment file and the runner read of each
        assert registry.get(spec.name) is not None and spec.summary and callable(spec.build)
        assert spec.extra is None or not missing(spec.extra) or spec.extra in ("litellm", "local", "train")
        assert set(spec.one_of) <= {o.name for o in spec.options}
    assert [s.name for s in registry.specs() if s.in_process] == ["gguf", "transformers"]
    with pytest.raises(KeyError, match="known: gguf, litellm, openai, transformers"):
        registry.get("vllm")


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([NEPOTISM, *args], capture_output=True, text=True, cwd=cwd, timeout=900, stdin=subprocess.DEVNULL)


def _nothing_written(folder: Path) -> None:
    assert not (folder / "s.db").exists() and not (folder / "out").exists()


def test_an_unknown_backend_is_exit_2_naming_the_file_field_and_known_names(tmp_path):
    exp = standin_experiment(tmp_path, "http://127.0.0.1:9/v1")
    text = exp.read_text()
    exp.write_text(text.replace('backend = "openai"', 'backend = "vllm"', 1))
    done = _run("run", str(exp), "--store", str(tmp_path / "s.db"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert str(exp) in done.stderr and "models.standin-alpha.backend" in done.stderr
    assert "gguf, litellm, openai, transformers" in done.stderr and "'vllm'" in done.stderr
    assert "Traceback" not in done.stderr
    _nothing_written(tmp_path)


@pytest.fixture
def standin():
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, _server):
        yield url


def test_openai_through_an_experiment_file(tmp_path, standin):
    exp = standin_experiment(tmp_path, standin, items=2, recognition=False)
    done = _run("run", str(exp), "--store", str(tmp_path / "s.db"), "--no-progress", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["judging"]["total"] > 0 and summary["judging"].get("failed", 0) == 0
    pairwise = pd.read_csv(tmp_path / "out" / "pairwise.csv")
    assert set(pairwise["judge"]) == {"standin-alpha", "standin-beta"} and set(pairwise["status"]) == {"parsed"}


def _litellm_experiment(folder: Path, url: str) -> Path:
    exp = standin_experiment(folder, url, items=2, recognition=False)
    text = exp.read_text()
    for model in ("standin-alpha", "standin-beta"):
        old = f'[models.{model}]\nbackend = "openai"\nbase_url = "{url}"\nmodel = "{model}"\n'
        assert old in text
        text = text.replace(
            old,
            f'[models.{model}]\nbackend = "litellm"\nbase_url = "{url}"\n'
            f'model = "openai/{model}"\napi_key_env = "NEPOTISM_TEST_LITELLM_KEY"\n',
        )
    exp.write_text(text)
    return exp


def test_litellm_through_an_experiment_file(tmp_path, standin, monkeypatch):
    """Without the ``litellm`` extra (it is not in ``test``) the run stops before anything is
    written, naming the install command; with it, LiteLLM's OpenAI provider calls the stand-in."""
    exp = _litellm_experiment(tmp_path, standin)
    monkeypatch.setenv("NEPOTISM_TEST_LITELLM_KEY", "sk-test-not-a-real-key")
    done = _run("run", str(exp), "--store", str(tmp_path / "s.db"), "--no-progress", "--json", cwd=tmp_path)
    if missing("litellm"):
        assert done.returncode == 2, done.stderr
        assert "model 'standin-alpha' (backend litellm" in done.stderr
        assert "pip install 'nepotism[litellm]'" in done.stderr and "Traceback" not in done.stderr
        assert done.stdout == ""
        _nothing_written(tmp_path)
        dry = _run("run", str(exp), "--store", str(tmp_path / "s.db"), "--dry-run", cwd=tmp_path)
        assert dry.returncode == 2 and "model 'standin-beta' cannot be used" in dry.stdout + dry.stderr
        assert "pip install 'nepotism[litellm]'" in dry.stdout + dry.stderr
        _nothing_written(tmp_path)
        return
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["judging"]["total"] > 0
    assert set(pd.read_csv(tmp_path / "out" / "pairwise.csv")["status"]) == {"parsed"}


@pytest.mark.parametrize("backend", ["gguf", "litellm", "transformers"])
def test_a_missing_extra_stops_the_run_first_naming_the_install_command(tmp_path, monkeypatch, backend):
    """Each backend's own extra (`BackendSpec.extra`) is checked before the store or the output
    folder exists; the extras are reported missing here by `nepotism.extras.missing`'s finder."""
    spec = registry.get(backend)
    exp = standin_experiment(tmp_path, "http://127.0.0.1:9/v1", items=1, recognition=False)
    text = exp.read_text()
    start = text.index("[models.standin-beta]")
    table = {
        "gguf": f'backend = "gguf"\nmodel = "{SMOL}"\n',
        "transformers": f'backend = "transformers"\nmodel = "{SMOL}"\n',
        "litellm": 'backend = "litellm"\nmodel = "openai/standin-beta"\n',
    }[backend]
    exp.write_text(text[:start] + "[models.standin-beta]\n" + table + text[text.index("\n\n", start) :])
    real, hidden = importlib.util.find_spec, set(EXTRAS[spec.extra])
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a, **k: None if name.split(".")[0] in hidden else real(name, *a, **k)
    )
    result = CliRunner().invoke(main, ["run", str(exp), "--store", str(tmp_path / "s.db")])
    assert result.exit_code == 2, result.output
    assert f"model 'standin-beta' (backend {backend}" in result.output
    assert f"pip install 'nepotism[{spec.extra}]'" in result.output
    _nothing_written(tmp_path)


def _smol_available() -> bool:
    try:
        model_path(SMOL)
    except ModelFileError:
        return False
    return not missing("local") and not missing("train")


@pytest.mark.slow
@pytest.mark.skipif(
    not _smol_available(),
    reason="the packaged SmolLM2 model, llama-cpp-python (local) or torch/transformers (train) is not installed",
)
def test_gguf_and_transformers_through_one_experiment_file(tmp_path, model_env):
    """One judge served by llama.cpp, the other by transformers, both on the packaged SmolLM2 file,
    judging recorded answers: every call answered, every verdict read, each judge's rows its own."""
    (tmp_path / "models.toml").write_text(STANDIN_MODELS, encoding="utf-8")
    rows = [
        {"id": f"q{i}", "prompt": f"What is {i} + {i}?", "model": model, "text": text}
        for i in (1, 2)
        for model, text in (("standin-alpha", f"{2 * i}"), ("standin-beta", f"{2 * i + 1}"))
    ]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "exp.toml").write_text(
        f"""
[experiment]
name = "two-local-backends"
registry = ["models.toml"]
[dataset]
path = "items.jsonl"
[models.standin-alpha]
backend = "gguf"
model = "{SMOL}"
concurrency = 1
n_ctx = 1024
{model_env.toml()}
[models.standin-beta]
backend = "transformers"
model = "{SMOL}"
concurrency = 1
[judging]
judges = ["standin-alpha", "standin-beta"]
[[judging.protocols]]
protocol = "pairwise"
pairs = "judge-vs-others"
both_orders = false
options = {{ mode = "labels", ways = 2 }}
[output]
dir = "out"
""",
        encoding="utf-8",
    )
    done = _run("run", "exp.toml", "--store", str(tmp_path / "s.db"), "--no-progress", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["judging"]["total"] == 4 and summary["judging"].get("failed", 0) == 0, summary["judging"]
    pairwise = pd.read_csv(tmp_path / "out" / "pairwise.csv")
    assert sorted(pairwise["judge"]) == ["standin-alpha"] * 2 + ["standin-beta"] * 2
    assert set(pairwise["status"]) == {"parsed"} and pairwise["label_mass"].between(0, 1).all()
