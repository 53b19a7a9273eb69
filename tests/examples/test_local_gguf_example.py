"""examples/local_gguf.toml: two packaged GGUF models generate, judge each other and score each
other's answers' perplexity (paper 001 §5), run through the installed ``nepotism`` executable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nepotism.cli import main
from nepotism.experiment import load_experiment

ROOT = Path(__file__).resolve().parents[2]
TOML = ROOT / "examples" / "local_gguf.toml"
NEPOTISM = str(Path(sys.executable).with_name("nepotism"))
MODELS = ("smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct")


def _models_available() -> bool:
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        return False
    from nepotism.backends.local_models import model_path

    try:
        return all(Path(model_path(m)).is_file() for m in MODELS)
    except Exception:  # a model package is missing
        return False


def test_the_example_scores_perplexity_with_every_judge():
    exp = load_experiment(TOML)
    assert exp.judges == MODELS and exp.perplexity is not None
    assert (exp.perplexity.scorers, exp.perplexity.responses, exp.perplexity.prompt) == ((), "all", "auto")


def test_dry_run_plans_one_perplexity_call_per_judge_and_answer(tmp_path):
    done = CliRunner().invoke(main, ["run", str(TOML), "--dry-run", "--json", "--store", str(tmp_path / "s.db")])
    assert done.exit_code == 0, done.output
    plan = json.loads(done.output)
    assert plan["perplexity_calls"] == 2 * 6 * 2  # judges × items × answers
    assert all(plan["models"][m]["perplexity"] == 12 for m in MODELS)


def nep(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([NEPOTISM, *args], cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"nepotism {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.slow
@pytest.mark.skipif(not _models_available(), reason="needs llama-cpp-python and the packaged SmolLM2 and Qwen models")
def test_two_items_run_metrics_report_and_a_rerun_that_calls_nothing(tmp_path, model_env):
    """Under both settings of `conftest.MODEL_SETTINGS` (threads, batch size, attention kernel)."""
    work = tmp_path / "examples"
    work.mkdir()
    (work / "standin_items.jsonl").write_text((ROOT / "examples" / "standin_items.jsonl").read_text())
    text = TOML.read_text().replace("[dataset]\n", "[dataset]\nlimit = 2\n")
    text = text.replace("n_ctx = 2048\n", "n_ctx = 2048\n" + model_env.toml())
    assert text.count(model_env.toml()) == 2 and "n_threads" not in text
    (work / "local_gguf.toml").write_text(text)
    first = json.loads(nep("run", "local_gguf.toml", "--no-progress", "--json", cwd=work).stdout)
    assert first["perplexity"]["scores"] == {"ok": 8} and first["perplexity"]["failed"] == 0
    again = json.loads(nep("run", "local_gguf.toml", "--no-progress", "--json", cwd=work).stdout)
    assert again["perplexity"]["sent"] == again["judging"]["sent"] == again["generation"]["sent"] == 0
    out = work / "results" / "local_gguf"
    records = json.loads(nep("metrics", str(out), "--bootstrap", "100", "--json", cwd=work).stdout)["results"]
    for judge in MODELS:
        means = {
            r["variant"]["responses"]: r["value"] for r in records if r["metric"] == "mean-log-perplexity" and r["judge"] == judge
        }
        # greedy answers scored under the chat template they were generated with are the judge's most
        # likely text: its own answers are far more familiar than the other model's (paper 001 Fig. 5)
        assert means["own"] < means["other"], (judge, means)
        assert [r for r in records if r["metric"] == "perplexity-win-rate" and r["judge"] == judge]
    nep("report", str(out), "--out", "report", "--bootstrap", "100", cwd=work)
    assert '<figure id="perplexity-own-other">' in (work / "report" / "report.html").read_text()
