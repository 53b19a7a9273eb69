"""``nepotism demo --live``: a real experiment on the packaged local models, audited and reported.

Slow (real models on CPU); skipped with the reason when the `local` extra is not installed. Run
under 1 and 2 model threads (`conftest.model_env`; the bundled experiment's batch size and
attention kernel stay the defaults), it asserts the run's structure, never what the tiny models
answered or preferred.
"""

import json

import pytest
from click.testing import CliRunner

from nepotism.cli import main

pytestmark = pytest.mark.slow


def _local_models() -> bool:
    try:
        import llama_cpp  # noqa: F401

        from nepotism.backends.local_models import model_path

        model_path("smollm2-135m-instruct")
        model_path("qwen2.5-coder-0.5b-instruct")
        return True
    except Exception:  # noqa: BLE001 - any failure means the local models are not available here
        return False


@pytest.mark.skipif(not _local_models(), reason="the `local` extra (llama-cpp-python + packaged models) is absent")
def test_live_demo_runs_audits_reports_and_resumes_without_calls(tmp_path, model_env):
    out = tmp_path / "live"
    first = CliRunner().invoke(main, ["demo", "--live", "--items", "2", "--out", str(out), "--bootstrap", "100"])
    assert first.exit_code == 0, first.output
    assert "How weak tiny judges are" in first.output and "Position check" in first.output
    assert {"report.html", "report.md", "results.json", "results.csv", "nepotism.db"} <= {p.name for p in out.iterdir()}
    results = json.loads((out / "results.json").read_text())["results"]
    # each judge's own answer against the other model's on 2 items (both orders combined): 2
    # comparisons, each used or excluded with its reason (SmolLM2's verdicts are often unparsed for
    # low label mass), a value exactly when one was used — whichever the tiny models preferred
    spr = {
        r["judge"]: r
        for r in results
        if r["metric"] == "self-preference-ratio" and r["scope"] == "self" and r["variant"] == {"opponents": "any"}
    }
    assert set(spr) == {"smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct"}
    for r in spr.values():
        assert r["n"] + r["n_excluded"] == 2 and r["n_excluded"] == sum(r["excluded"].values()), r
        assert (r["value"] is None) == (r["n"] == 0) and (r["value"] is None or 0 <= r["value"] <= 1), r
    # 2 items x 2 generators; 2 judges x 2 items x 1 opponent x 2 orders
    again = CliRunner().invoke(main, ["demo", "--live", "--items", "2", "--out", str(out), "--json", "--bootstrap", "0"])
    assert again.exit_code == 0, again.output
    run = json.loads(again.stdout)["summary"]["run"]  # stdout: the one document (output has stderr too)
    assert run["judging"]["total"] == 8 and run["judging"]["sent"] == 0 and run["judging"]["cached"] == 8
    assert run["generation"]["sent"] == 0 and sum(run["judgments"].values()) == 8 and "failed" not in run["judgments"]
