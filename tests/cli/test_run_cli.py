import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nepotism.cli import main
from nepotism.testing.standin import StandinConfig, standin_thread

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _exp(tmp_path: Path, url: str) -> Path:
    text = (EXAMPLES / "standin.toml").read_text()
    text = text.replace("http://127.0.0.1:8765/v1", url)
    text = text.replace('"standin_models.toml"', json.dumps(str(EXAMPLES / "standin_models.toml")))
    text = text.replace('"standin_items.jsonl"', json.dumps(str(EXAMPLES / "standin_items.jsonl")))
    text = text.replace("limit = ", "limit = ")
    text = text.replace("[dataset]\n", "[dataset]\nlimit = 3\n")
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return path


def test_help_names_the_options():
    result = CliRunner().invoke(main, ["run", "--help"])
    assert result.exit_code == 0
    for word in ("--dry-run", "--store", "--json", "resumes"):
        assert word in result.output


def test_bad_experiment_file_is_one_line_and_exit_2(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[experiment]\nname = "x"\n')
    result = CliRunner().invoke(main, ["run", str(path), "--store", str(tmp_path / "s.db")])
    assert result.exit_code == 2
    assert "dataset" in result.output and len(result.output.strip().splitlines()) == 1


def test_dry_run_then_run_then_cached_rerun(tmp_path):
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, server):
        exp = _exp(tmp_path, url)
        store = tmp_path / "s.db"
        runner = CliRunner()
        dry = runner.invoke(main, ["run", str(exp), "--store", str(store), "--dry-run", "--json"])
        assert dry.exit_code == 0, dry.output
        plan = json.loads(dry.output)
        assert server.stats["requests"] == 1  # one GET of /models: the server is reachable; no completion
        assert plan["problems"] == {}
        assert plan["instances"] == 3 and plan["generation_calls"] == 9
        # per judge: 2 own-vs-other pairs x 2 orders x 3 items x 2 conditions, plus recognition
        # of 3 responses x 3 items x 2 conditions
        assert plan["judge_calls"] == 2 * (24 + 18)
        assert plan["totals"]["cached"] == 0 and plan["totals"]["cost_usd"] > 0
        assert plan["models"]["standin-alpha"]["prompt_tokens"] > 0

        done = runner.invoke(main, ["run", str(exp), "--store", str(store), "--json", "--no-progress"])
        assert done.exit_code == 0, done.output
        summary = json.loads(done.output)
        assert summary["status"] == "done" and summary["judging"]["total"] == 84
        assert summary["judging"]["spend_usd"] > 0
        exports = summary["exports"]
        assert set(exports) == {"pairwise", "recognition"}
        sent = server.stats["requests"]

        again = runner.invoke(main, ["run", str(exp), "--store", str(store), "--json", "--no-progress"])
        assert json.loads(again.output)["judging"]["cached"] == 84
        assert server.stats["requests"] == sent  # nothing was asked twice

        dry2 = runner.invoke(main, ["run", str(exp), "--store", str(store), "--dry-run"])
        assert dry2.exit_code == 0 and "cached" in dry2.output
        assert "total" in dry2.output

    metrics = runner.invoke(
        main, ["metrics", exports["pairwise"], "--bootstrap", "0", "--json", "--models", str(EXAMPLES / "standin_models.toml")]
    )
    assert metrics.exit_code == 0, metrics.output


def test_human_summary(tmp_path):
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, _server):
        exp = _exp(tmp_path, url)
        result = CliRunner().invoke(main, ["run", str(exp), "--store", str(tmp_path / "s.db"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "done" in result.output and "judgments" in result.output and "wrote" in result.output


@pytest.mark.parametrize("flag", ["--dry-run"])
def test_missing_api_key_variable_is_an_input_error(tmp_path, flag, monkeypatch):
    monkeypatch.delenv("NEPOTISM_NO_SUCH_KEY", raising=False)
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, server):
        exp = _exp(tmp_path, url)
        exp.write_text(exp.read_text().replace('model = "alpha"\n', 'model = "alpha"\napi_key_env = "NEPOTISM_NO_SUCH_KEY"\n'))
        result = CliRunner().invoke(main, ["run", str(exp), "--store", str(tmp_path / "s.db")])
        assert result.exit_code == 2 and "NEPOTISM_NO_SUCH_KEY" in result.output
        # a dry run needs no key, writes no file and sends no paid call
        dry = CliRunner().invoke(main, ["run", str(exp), "--store", str(tmp_path / "dry.db"), flag])
        assert dry.exit_code == 0, dry.output
        assert not (tmp_path / "dry.db").exists()
        assert server.stats["requests"] == 1  # one GET of /models (all models share the server), no completion


def test_dry_run_says_which_model_cannot_be_reached_or_loaded(tmp_path):
    exp = _exp(tmp_path, "http://127.0.0.1:9/v1")
    beta = '[models.standin-beta]\nbackend = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "beta"\n'
    assert beta in exp.read_text()
    exp.write_text(exp.read_text().replace(beta, '[models.standin-beta]\nbackend = "gguf"\npath = "no-such-file.gguf"\n'))
    dry = CliRunner().invoke(main, ["run", str(exp), "--store", str(tmp_path / "s.db"), "--dry-run"])
    assert dry.exit_code == 2, dry.output
    assert "model 'standin-alpha' cannot be used: cannot reach http://127.0.0.1:9/v1" in dry.output
    assert "model 'standin-beta' cannot be used" in dry.output and "no-such-file.gguf" in dry.output
    assert not (tmp_path / "s.db").exists()


def test_a_run_whose_calls_fail_exits_3_naming_the_cause(tmp_path):
    """A server that answers every call with HTTP 500: the summary still prints, every failure is
    stored, and the exit status says the run is not complete; --max-failure-rate 1 accepts it."""
    with standin_thread(StandinConfig(latency_s=0.001, fault_rates={"http_500": 1.0})) as (url, _server):
        exp = _exp(tmp_path, url)
        exp.write_text(exp.read_text().replace("concurrency = 8\n", "concurrency = 8\nretry_base_delay_s = 0\n"))
        store = tmp_path / "s.db"
        failed = CliRunner().invoke(main, ["run", str(exp), "--store", str(store), "--no-progress", "--json"])
        assert failed.exit_code == 3, failed.output
        summary = json.loads(failed.stdout)  # stdout is still exactly one JSON document
        assert summary["generation"]["failed"] == summary["generation"]["total"] > 0
        assert "calls failed" in failed.stderr and "--max-failure-rate" in failed.stderr
        allowed = CliRunner().invoke(main, ["run", str(exp), "--store", str(store), "--no-progress", "--max-failure-rate", "1"])
        assert allowed.exit_code == 0, allowed.output
        first = allowed.stdout.splitlines()[0]  # the summary's first line does not say "done" over failed calls
        assert "ended with" in first and "calls failed" in first and "done" not in first, first
