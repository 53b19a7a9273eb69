"""Paper 001 §5 in the suite: a ``perplexity`` table feeds the binned win rates and Fig. 5's records."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nepotism.analyses.suite import SuiteOptions, run_suite
from nepotism.metrics._suite_recognition import perplexity_records, with_slot_perplexities
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.models import load_registry

MODELS = """
[models.judge-a]
family = "fa"
[models.other-b]
family = "fb"
[models.other-c]
family = "fc"
"""


@pytest.fixture
def registry(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text(MODELS)
    return load_registry([str(path)])


def _table():
    # judge-a scores its own answers at log-PPL 1 and 2, the others' at 3, 5 (and one failed call)
    rows = [
        ("q1", "judge-a", "judge-a", 1.0),
        ("q2", "judge-a", "judge-a", 2.0),
        ("q1", "judge-a", "other-b", 3.0),
        ("q2", "judge-a", "other-b", 5.0),
        ("q1", "judge-a", "other-c", None),
    ]
    return pd.DataFrame(
        {
            "instance_id": [r[0] for r in rows],
            "scorer": [r[1] for r in rows],
            "model": [r[2] for r in rows],
            "perplexity": [np.nan if r[3] is None else np.exp(r[3]) for r in rows],
            "log_perplexity": [np.nan if r[3] is None else r[3] for r in rows],
            "status": ["ok"] * 4 + ["failed"],
            "reason": [None] * 4 + ["timeout"],
        }
    )


def _pairs():
    return pd.DataFrame(
        {
            "instance_id": ["q1", "q1", "q2", "q1"],
            "judge": "judge-a",
            "model_a": ["judge-a", "other-b", "judge-a", "other-b"],
            "model_b": ["other-b", "judge-a", "other-b", "other-c"],
            "verdict": ["A", "B", "A", "A"],
            "condition": "default",
        }
    )


def test_the_judges_own_scores_fill_the_slot_columns():
    out = with_slot_perplexities(_pairs(), _table())
    assert np.allclose(np.log(out["perplexity_a"]), [1.0, 3.0, 2.0, 3.0])
    assert np.allclose(np.log(out["perplexity_b"][:3]), [3.0, 1.0, 5.0]) and np.isnan(out["perplexity_b"].iloc[3])
    other = _pairs().assign(judge="other-b")  # another judge scored nothing: no column value
    assert with_slot_perplexities(other, _table())["perplexity_a"].isna().all()


def test_fig5_records_come_from_every_scored_response_with_failures_counted(registry):
    records = perplexity_records(_pairs(), registry, Bootstrap(n_resamples=0), perplexity=_table())
    gap = [r for r in records if r["metric"] == "log-perplexity-gap"]
    assert len(gap) == 1 and gap[0]["value"] == pytest.approx(1.5 - 4.0)
    assert gap[0]["excluded"] == {"no perplexity": 1} and gap[0]["variant"]["source"] == "the perplexity table"
    means = {r["variant"]["responses"]: r for r in records if r["metric"] == "mean-log-perplexity"}
    assert means["own"]["value"] == pytest.approx(1.5) and means["other"]["value"] == pytest.approx(4.0)
    assert means["other"]["n"] == 2 and means["other"]["excluded"] == {"no perplexity": 1}
    wins = [r for r in records if r["metric"] == "perplexity-win-rate"]
    assert wins and {r["variant"]["difference"] for r in wins} == {"perplexity of A − of B"}


def test_difference_is_the_papers_perplexity_difference_by_default_and_log_on_request(registry):
    rng = np.random.default_rng(1)
    n = 400
    ppl_a, ppl_b = np.exp(rng.normal(1.5, 0.8, n)), np.exp(rng.normal(1.5, 0.8, n))
    frame = pd.DataFrame(
        {
            "instance_id": [f"q{i}" for i in range(n)],
            "judge": "judge-a",
            "model_a": "other-b",
            "model_b": "other-c",
            "verdict": np.where(ppl_a < ppl_b, "A", "B"),
            "condition": "default",
            "perplexity_a": ppl_a,
            "perplexity_b": ppl_b,
        }
    )
    boot = Bootstrap(n_resamples=0)

    def edges(records):
        rows = sorted(
            (r for r in records if r["metric"] == "perplexity-win-rate" and r["variant"]["group"] == "all"),
            key=lambda r: r["variant"]["bin"],
        )
        return [r["variant"]["low"] for r in rows] + [rows[-1]["variant"]["high"]]

    raw = edges(perplexity_records(frame, registry, boot, bins=4))
    log = edges(perplexity_records(frame, registry, boot, bins=4, difference="log"))
    assert raw == pytest.approx(np.quantile(ppl_a - ppl_b, np.linspace(0, 1, 5)))
    assert log == pytest.approx(np.quantile(np.log(ppl_a) - np.log(ppl_b), np.linspace(0, 1, 5)))
    with pytest.raises(ValueError, match="difference"):
        perplexity_records(frame, registry, boot, difference="ratio")
    # the suite passes the option through, and a perplexity table works as a reference
    records = run_suite(
        frame.drop(columns=["perplexity_a", "perplexity_b"]),
        "pairwise",
        registry,
        references={
            "perplexity": pd.DataFrame(
                {
                    "instance_id": list(frame["instance_id"]) * 2,
                    "scorer": "judge-a",
                    "model": ["other-b"] * n + ["other-c"] * n,
                    "perplexity": np.concatenate([ppl_a, ppl_b]),
                }
            )
        },
        options=SuiteOptions(bootstrap=boot, perplexity_bins=4, perplexity_difference="log"),
    ).records
    assert edges(records) == pytest.approx(log)
    judge = [
        r["value"]
        for r in sorted(
            (r for r in records if r["metric"] == "perplexity-win-rate" and r["variant"]["group"] == "all"),
            key=lambda r: r["variant"]["bin"],
        )
    ]
    # this judge always picks the lower perplexity: A in the bins below zero, B above
    assert judge[:2] == [1.0, 1.0] and judge[3] == 0.0 and judge[2] < 0.5


def test_each_comparison_is_binned_once_by_the_datasets_a_minus_b(registry):
    """001 §5 bins the dataset's PPL(A) − PPL(B) once per comparison (both orders averaged), A being
    the human label's response A. Binning presentation rows put every comparison in two mirrored
    bins: a human who always prefers the dataset's A read as ½ on average, the curves symmetric."""
    rng = np.random.default_rng(3)
    n = 200
    ppl_x, ppl_y = np.exp(rng.normal(1.5, 0.8, n)), np.exp(rng.normal(1.5, 0.8, n))
    ids = [f"q{i}" for i in range(n)]
    forward = pd.DataFrame(
        {
            "instance_id": ids,
            "judge": "judge-a",
            "model_a": "other-b",
            "model_b": "other-c",
            "verdict": np.where(ppl_x < ppl_y, "A", "B"),
            "condition": "default",
            "perplexity_a": ppl_x,
            "perplexity_b": ppl_y,
        }
    )
    backward = pd.DataFrame(
        {
            "instance_id": ids,
            "judge": "judge-a",
            "model_a": "other-c",
            "model_b": "other-b",
            "verdict": np.where(ppl_x < ppl_y, "B", "A"),
            "condition": "default",
            "perplexity_a": ppl_y,
            "perplexity_b": ppl_x,
        }
    )
    human = pd.DataFrame({"instance_id": ids, "model_a": "other-b", "model_b": "other-c", "winner": "other-b"})
    records = perplexity_records(
        pd.concat([backward, forward], ignore_index=True), registry, Bootstrap(n_resamples=0), preference=human, bins=4
    )
    rows = sorted(
        (r for r in records if r["metric"] == "perplexity-win-rate" and r["variant"]["group"] == "all"),
        key=lambda r: (r["variant"]["rater"], r["variant"]["bin"]),
    )
    humans = [r for r in rows if r["variant"]["rater"] == "human"]
    judge = [r for r in rows if r["variant"]["rater"] == "judge"]
    assert sum(r["n"] for r in judge) == n  # one row per comparison, not per presentation
    assert [r["value"] for r in humans] == [1.0] * 4  # the dataset's A, as the human label orients it
    edges = [r["variant"]["low"] for r in judge] + [judge[-1]["variant"]["high"]]
    assert edges == pytest.approx(np.quantile(ppl_x - ppl_y, np.linspace(0, 1, 5)))
    # the judge picks the lower perplexity whatever the order: A below zero, B above
    assert judge[0]["value"] == 1.0 and judge[-1]["value"] == 0.0
