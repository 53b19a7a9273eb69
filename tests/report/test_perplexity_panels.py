"""Paper 001 §5's panels from suite records: Figs. 3–4 per judge, Fig. 5 across judges."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nepotism.analyses.suite import SuiteOptions, run_suite
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.models import load_registry
from nepotism.report import plots


def _records(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text('[models.judge-a]\nfamily = "fa"\n[models.other-b]\nfamily = "fb"\n[models.other-c]\nfamily = "fc"\n')
    registry = load_registry([str(path)])
    rng = np.random.default_rng(2)
    n = 300
    ids = [f"q{i}" for i in range(n)]
    models = ["judge-a", "other-b", "other-c"]
    log_ppl = {m: rng.normal(1.0 if m == "judge-a" else 1.6, 0.4, n) for m in models}
    table = pd.DataFrame(
        {
            "instance_id": ids * 3,
            "scorer": "judge-a",
            "model": np.repeat(models, n),
            "perplexity": np.exp(np.concatenate([log_ppl[m] for m in models])),
        }
    )
    a = np.where(rng.random(n) < 0.5, "judge-a", "other-b")
    b = np.where(a == "judge-a", "other-b", "other-c")
    pa = np.array([np.exp(log_ppl[m][i]) for i, m in enumerate(a)])
    pb = np.array([np.exp(log_ppl[m][i]) for i, m in enumerate(b)])
    frame = pd.DataFrame(
        {"instance_id": ids, "judge": "judge-a", "model_a": a, "model_b": b, "verdict": np.where(pa < pb, "A", "B")}
    )
    human = pd.DataFrame({"instance_id": ids, "model_a": a, "model_b": b, "winner": np.where(rng.random(n) < 0.5, a, b)})
    return run_suite(
        frame,
        "pairwise",
        registry,
        references={"perplexity": table, "preference-ref": human},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=30)),
    ).records


def test_figs_3_to_5_are_drawn_from_the_suite_records(tmp_path):
    records = _records(tmp_path)
    groups = {r["variant"]["group"] for r in records if r["metric"] == "perplexity-win-rate"}
    assert groups == {"all", "self", "other"}
    out = plots.perplexity(records)
    assert [p["id"] for p in out] == ["perplexity-0", "perplexity-own-other"]
    assert all(p["png"] for p in out)
    assert "Fig. 4" in out[0]["caption"] and "perplexity of A − of B" in out[0]["caption"]
    assert "Own − other: judge-a: gap -" in out[1]["caption"]  # the judge's own answers are more familiar
    means = {r["variant"]["responses"]: r["value"] for r in records if r["metric"] == "mean-log-perplexity"}
    assert means["own"] < means["other"]


def test_no_perplexity_records_no_panel():
    assert plots.perplexity([{"metric": "win-rate", "judge": "j", "value": 0.5}]) == []
