"""`nepotism run --dry-run` (`nepotism.runner.experiment_run.dry_run`): planned a chunk of instances
at a time, the counts and prices of the whole plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nepotism.experiment import load_experiment
from nepotism.runner.experiment_run import dry_run
from nepotism.store import Store
from nepotism.testing.experiments import standin_experiment


def _experiment(tmp_path: Path, *, perplexity: bool) -> Path:
    path = standin_experiment(tmp_path, "http://127.0.0.1:9/v1", items=3)
    # shared prompts (q1, q4; q2, q6), so some calls are planned twice, in different chunks
    prompts = ["Same?", "Two words.", "Other?", "Same?", "Longer prompt, odd length!", "Two words.", "Last."]
    rows = [{"id": f"q{i + 1}", "prompt": p} for i, p in enumerate(prompts)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if perplexity:
        text = path.read_text().replace("[output]", '[perplexity]\nresponses = "judged"\n\n[output]')
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("perplexity", [False, True])
def test_a_plan_in_chunks_counts_and_prices_as_the_whole_plan(tmp_path, perplexity):
    experiment = load_experiment(_experiment(tmp_path, perplexity=perplexity))
    with Store(tmp_path / "plan.db") as store:
        whole = dry_run(experiment, store, chunk_calls=10**6)
        for calls in (1, 5, 9, 13):  # chunks of 1 instance, 1-2, 2-3, ...
            assert dry_run(experiment, store, chunk_calls=calls) == whole
    assert whole["generation_calls"] == 14 and whole["totals"]["shared"] > 0
    assert (whole["perplexity_calls"] > 0) == perplexity


def test_a_models_cost_is_priced_from_its_token_totals(tmp_path):
    """USD per million tokens times the estimated tokens, rounded once. Rounding a running sum to
    six decimals at each call drifted by up to 0.5 µUSD a call: at 0.15 / 0.60 USD per Mtok
    (a small model's price) 1,000 calls of 37 prompt tokens and one output token came to 0.006
    instead of 0.00615, and 1,000 label verdicts at 1.5 USD/Mtok output to 0.001411, not 0.0015."""
    path = _experiment(tmp_path, perplexity=False)
    registry = tmp_path / "standin_models.toml"
    text = registry.read_text()
    assert "price_input_per_mtok = 0.5\nprice_output_per_mtok = 1.5" in text
    registry.write_text(
        text.replace(
            "price_input_per_mtok = 0.5\nprice_output_per_mtok = 1.5", "price_input_per_mtok = 0.15\nprice_output_per_mtok = 0.6"
        )
    )
    experiment = load_experiment(path)
    with Store(tmp_path / "plan.db") as store:
        plan = dry_run(experiment, store)
    prices = {"standin-alpha": (1.0, 4.0), "standin-beta": (0.15, 0.6)}
    for model, (p_in, p_out) in prices.items():
        row = plan["models"][model]
        assert row["cost_usd"] == round((row["prompt_tokens"] * p_in + row["output_tokens"] * p_out) / 1e6, 6)
    assert plan["totals"]["cost_usd"] == round(sum(r["cost_usd"] for r in plan["models"].values()), 6)


def test_tasks_planned_a_chunk_at_a_time_are_the_whole_plans(tmp_path):
    from nepotism.records import Response
    from nepotism.runner.experiment_run import load_dataset
    from nepotism.runner.judge_plan import iter_tasks, plan_tasks

    experiment = load_experiment(_experiment(tmp_path, perplexity=False))
    with Store(tmp_path / "s.db") as store:
        instances, _ = load_dataset(experiment, store)
    responses = [Response(i.id, g, f"{g} on {i.id}") for i in instances for g in ("standin-alpha", "standin-beta")]
    whole = plan_tasks(experiment, instances, responses)
    for calls in (1, 5, 100):
        chunked = list(iter_tasks(experiment, instances, responses, calls=calls))
        assert sorted(map(repr, chunked)) == sorted(map(repr, whole)) and len(chunked) == len(whole) > 0


def test_a_run_shares_the_calls_its_dry_run_counted_as_shared(tmp_path):
    """Instances with one prompt share their generation calls, then their judge calls: the run's
    summary counts them as ``shared`` (its cached + sent fell short of its total) — as many as the
    dry run counted, and it sends what the dry run said it would."""
    import subprocess
    import sys

    from nepotism.testing.standin import StandinConfig, standin_thread

    with standin_thread(StandinConfig(latency_s=0.0)) as (url, server):
        path = _experiment(tmp_path, perplexity=False)
        path.write_text(path.read_text().replace("http://127.0.0.1:9/v1", url), encoding="utf-8")
        with Store(tmp_path / "plan.db") as store:
            plan = dry_run(load_experiment(path), store)
        done = subprocess.run(
            [
                str(Path(sys.executable).with_name("nepotism")),
                "run",
                str(path),
                "--store",
                str(tmp_path / "s.db"),
                "--json",
                "--no-progress",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        text = subprocess.run(
            [
                str(Path(sys.executable).with_name("nepotism")),
                "run",
                str(path),
                "--store",
                str(tmp_path / "s2.db"),
                "--no-progress",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
    summary = json.loads(done.stdout)
    phases = (summary["generation"], summary["judging"])
    for phase in phases:
        assert phase["cached"] + phase["sent"] + phase["shared"] == phase["total"] == phase["done"]
    assert sum(p["shared"] for p in phases) == plan["totals"]["shared"] > 0
    assert sum(p["sent"] for p in phases) == plan["totals"]["to_send"]
    assert "sharing their answers" in text.stdout


def test_a_generation_answer_stored_blank_is_planned_as_the_run_makes_it_no_response(tmp_path):
    """A blank answer stored ok is a failed generation for the run (``empty_text``: its judgments
    are recorded as prevented, no judge call shows it): the dry run plans no judge call for it
    either, and counts as many judge calls as the run then makes."""
    from nepotism.runner.batch import plan_round, read_results, store_results, write_batch
    from nepotism.testing.standin import StandinConfig, standin_thread
    from tests.runner.test_batch import DEAD, answer_batch, nep

    exp = standin_experiment(tmp_path, DEAD, items=3, recognition=False)
    experiment = load_experiment(exp)
    with standin_thread(StandinConfig(latency_s=0.0)) as (url, _):
        with Store(tmp_path / "b.db") as store:
            write_batch(experiment, plan_round(experiment, store), tmp_path / "round1")
            answer_batch(tmp_path / "round1", url, tmp_path / "out1.jsonl")
            lines = [json.loads(x) for x in (tmp_path / "out1.jsonl").read_text().splitlines()]
            lines[0]["response"]["body"]["choices"][0]["message"]["content"] = "  \n"
            (tmp_path / "out1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
            store_results(store, read_results(plan_round(experiment, store), [tmp_path / "out1.jsonl"]))
            plan = dry_run(experiment, store)
            write_batch(experiment, plan_round(experiment, store), tmp_path / "round2")
        answer_batch(tmp_path / "round2", url, tmp_path / "out2.jsonl")
    done = json.loads(
        nep("run", str(exp), "--store", "b.db", "--batch-in", "out2.jsonl", "--json", "--no-progress", cwd=tmp_path).stdout
    )
    assert done["generation_failures"][0]["error"] == "empty_text" and sum(done["prevented"].values()) > 0
    assert plan["judge_calls"] == done["judging"]["total"] > 0
