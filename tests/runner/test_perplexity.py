"""The ``[perplexity]`` step of a run: plan, cached continuation calls, failures as data, exports."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from nepotism.backends.base import failed
from nepotism.cli import main
from nepotism.errors import InputError
from nepotism.experiment import load_experiment
from nepotism.runner.experiment_run import build_endpoints, run_experiment
from nepotism.runner.perplexity import perplexity_of, perplexity_request
from nepotism.records import Instance, Message, Response
from nepotism.store import Store
from nepotism.tables import read_table
from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, standin_thread


def _with_perplexity(exp: Path, table: str) -> Path:
    exp.write_text(exp.read_text().replace("[output]", f"{table}\n[output]"), encoding="utf-8")
    return exp


def test_perplexity_is_exp_of_the_mean_negative_log_probability():
    ppl, log_ppl, tokens = perplexity_of([-1.0, -2.0, -3.0])
    assert (log_ppl, tokens) == (2.0, 3) and ppl == pytest.approx(math.exp(2.0))
    assert perplexity_of([0.0, 0.0])[0] == 1.0
    assert perplexity_of([]) == "no_logprobs" and perplexity_of(None) == "no_logprobs"
    assert perplexity_of([-1.0, float("nan")]) == "non_finite_logprob"
    assert perplexity_of([-1.0, float("-inf")]) == "non_finite_logprob"
    assert perplexity_of([0.5]) == "positive_logprob"
    assert perplexity_of([-800.0]) == "perplexity_overflow"


def test_the_request_conditions_on_the_prompt_as_chat_in_process_and_raw_over_http():
    inst = Instance("q1", "What is 2+2?")
    resp = Response("q1", "m", "Four.")
    chat = perplexity_request("judge", "gguf", inst, resp)
    assert chat.messages == (Message("user", "What is 2+2?"),) and chat.continuation == "Four."
    raw = perplexity_request("judge", "openai", inst, resp)
    assert raw.prompt == "What is 2+2?\n\n" and raw.continuation == "Four." and raw.mode == "continuation"
    assert perplexity_request("judge", "gguf", inst, resp, "raw").prompt == "What is 2+2?\n\n"
    # only a server that scores raw continuations gets text: LiteLLM, transformers and a name no
    # module declares (a test's stand-in) get chat messages, as before the backends were registered
    for kind in ("litellm", "transformers", "a-test-stand-in"):
        assert perplexity_request("judge", kind, inst, resp).messages == (Message("user", "What is 2+2?"),), kind


@pytest.mark.parametrize(
    ("table", "field", "message"),
    [
        ('[perplexity]\nresponses = "some"', "perplexity.responses", "judged"),
        ('[perplexity]\nscorers = ["nobody"]', "perplexity.scorers", "no [models] entry"),
        ("[perplexity]\nscorers = []", "perplexity.scorers", "at least one"),
        ('[perplexity]\nprompt = "chat"', "perplexity.prompt", "over HTTP"),
        ('[perplexity]\nprompt = "template"', "perplexity.prompt", "auto"),
        ("[perplexity]\nbins = 5", "perplexity.bins", "unknown key"),
        ('[perplexity]\ngenerators = "standin-alpha"', "perplexity.generators", "list"),
    ],
)
def test_a_bad_perplexity_table_names_the_file_and_field(tmp_path, table, field, message):
    exp = _with_perplexity(standin_experiment(tmp_path, "http://127.0.0.1:9/v1", recognition=False), table)
    with pytest.raises(InputError) as err:
        load_experiment(exp)
    assert err.value.field == field and message in str(err.value) and str(exp) in str(err.value)


def test_defaults_are_the_judges_scoring_what_they_judge(tmp_path):
    exp = load_experiment(_with_perplexity(standin_experiment(tmp_path, "http://127.0.0.1:9/v1"), "[perplexity]"))
    assert exp.perplexity is not None
    assert (exp.perplexity.scorers, exp.perplexity.responses, exp.perplexity.prompt) == ((), "judged", "auto")


def test_run_scores_each_judged_response_once_exports_both_tables_and_a_rerun_sends_nothing(tmp_path):
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, server):
        exp = _with_perplexity(standin_experiment(tmp_path, url, items=3, recognition=False), "[perplexity]")
        store = tmp_path / "s.db"
        plan = CliRunner().invoke(main, ["run", str(exp), "--store", str(store), "--dry-run", "--json"])
        assert plan.exit_code == 0, plan.output
        assert json.loads(plan.output)["perplexity_calls"] == 2 * 3 * 2  # 2 judges × 3 items × 2 responses
        done = CliRunner().invoke(main, ["run", str(exp), "--store", str(store), "--json", "--no-progress"])
        assert done.exit_code == 0, done.output
        sent = server.stats["requests"]
        again = CliRunner().invoke(main, ["run", str(exp), "--store", str(store), "--json", "--no-progress"])
        assert again.exit_code == 0, again.output
        assert server.stats["requests"] == sent  # the rerun makes no model call
    first, second = json.loads(done.output), json.loads(again.output)
    assert first["perplexity"]["scores"] == {"ok": 12} and first["perplexity"]["sent"] == 12
    assert second["perplexity"]["cached"] == 12 and second["perplexity"]["sent"] == 0
    table = read_table(first["exports"]["perplexity"])
    assert table.kind == "perplexity" and len(table) == 12
    assert set(table.frame["scorer"]) == {"standin-alpha", "standin-beta"}
    assert (table.frame["perplexity"] >= 1).all()
    assert table.frame["perplexity"].to_numpy() == pytest.approx(table.frame["log_perplexity"].map(math.exp).to_numpy())
    # different scorers find the same text differently familiar
    wide = table.frame.pivot_table(index=["instance_id", "model"], columns="scorer", values="perplexity")
    assert (wide["standin-alpha"] != wide["standin-beta"]).all()
    pairwise = read_table(first["exports"]["pairwise"]).frame
    own = {(r.scorer, r.instance_id, r.model): r.perplexity for r in table.frame.itertuples()}
    for row in pairwise.itertuples():
        assert row.perplexity_a == pytest.approx(own[(row.judge, row.instance_id, row.model_a)])
        assert row.perplexity_b == pytest.approx(own[(row.judge, row.instance_id, row.model_b)])
    manifest = json.loads((Path(first["exports"]["pairwise"]).parent / "run.json").read_text())
    assert manifest["references"]["perplexity"] == "perplexity.csv"


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_the_slot_columns_are_added_in_every_output_format(tmp_path, fmt):
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, _):
        exp = _with_perplexity(standin_experiment(tmp_path, url, items=2, recognition=False, output_format=fmt), "[perplexity]")
        done = CliRunner().invoke(main, ["run", str(exp), "--store", str(tmp_path / "s.db"), "--json", "--no-progress"])
    assert done.exit_code == 0, done.output
    exports = json.loads(done.output)["exports"]
    pairwise = read_table(exports["pairwise"]).frame
    assert pairwise["perplexity_a"].notna().all() and pairwise["perplexity_b"].notna().all()
    assert read_table(exports["perplexity"]).kind == "perplexity"


class _NoContinuation:
    """A backend whose continuation calls fail (as a server without echo would); the rest pass through."""

    def __init__(self, inner):
        self.inner = inner

    async def complete(self, request):
        if request.mode == "continuation":
            return failed("unsupported:continuation_logprobs: no echo")
        return await self.inner.complete(request)

    async def aclose(self):
        await self.inner.aclose()


def test_a_failed_scoring_call_is_a_failed_row_with_its_reason_never_a_number(tmp_path):
    from nepotism.models import load_registry

    with standin_thread(StandinConfig(latency_s=0.001)) as (url, _):
        exp_path = _with_perplexity(
            standin_experiment(tmp_path, url, items=2, recognition=False),
            '[perplexity]\nscorers = ["standin-alpha", "standin-beta"]\nresponses = "all"',
        )
        exp = load_experiment(exp_path)
        registry = load_registry(exp.registry_files)
        endpoints = build_endpoints(exp, registry)
        endpoints["standin-beta"].backend = _NoContinuation(endpoints["standin-beta"].backend)
        with Store(tmp_path / "s.db") as store:
            summary = asyncio.run(run_experiment(exp, store, registry=registry, endpoints=endpoints))
    assert summary.perplexity["scores"] == {"ok": 4, "failed": 4}
    table = read_table(summary.exports["perplexity"]).frame
    bad = table[table["scorer"] == "standin-beta"]
    assert (bad["status"] == "failed").all() and bad["perplexity"].isna().all()
    assert bad["reason"].str.startswith("unsupported:continuation_logprobs").all()
    pairwise = read_table(summary.exports["pairwise"]).frame
    beta = pairwise[pairwise["judge"] == "standin-beta"]
    assert beta["perplexity_a"].isna().all() and beta["perplexity_b"].isna().all()
    assert pairwise[pairwise["judge"] == "standin-alpha"]["perplexity_a"].notna().all()


def test_generators_and_responses_all_choose_what_is_scored(tmp_path):
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, _):
        exp = _with_perplexity(
            standin_experiment(tmp_path, url, items=2, recognition=False, judges=("standin-alpha",)),
            '[perplexity]\nscorers = ["standin-beta"]\ngenerators = ["standin-alpha"]',
        )
        done = CliRunner().invoke(main, ["run", str(exp), "--store", str(tmp_path / "s.db"), "--json", "--no-progress"])
    assert done.exit_code == 0, done.output
    frame = pd.read_csv(json.loads(done.output)["exports"]["perplexity"])
    # standin-beta judges nothing: it scores the candidates of every task, here only standin-alpha's
    assert set(zip(frame["scorer"], frame["model"])) == {("standin-beta", "standin-alpha")} and len(frame) == 2
