"""Typed results: `Record` reads and writes exactly the records every output holds; `Results`
selects, flattens and serialises them (with a schema version `nepotism report` reads back)."""

import doctest
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nepotism import results as results_module
from nepotism.data import demo_judgments
from nepotism.metrics import Bootstrap
from nepotism.api import audit
from nepotism.report.inputs import load_results
from nepotism.results import SCHEMA_VERSION, Record, Results

FIXTURES = Path(__file__).parent / "fixtures" / "report"


@pytest.fixture(scope="module")
def demo_records():
    results = audit(demo_judgments(), bootstrap=Bootstrap(n_resamples=30))
    return results.to_dicts(), results.summary, results.findings


def _fixture_records():
    out = []
    for name in ("mitigations.json", "leakage_run.json", "mbpp_metrics.json"):
        document = json.loads((FIXTURES / name).read_text())
        records = document if isinstance(document, list) else document.get("results") or document.get("records")
        out += [(name, r) for r in records]
    return out


def _same(a: dict, b: dict) -> bool:
    return list(a) == list(b) and json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def test_every_demo_record_round_trips_exactly(demo_records):
    records = demo_records[0]
    assert len({r["metric"] for r in records}) >= 6
    for record in records:
        assert _same(Record.from_dict(record).to_dict(), record), record["metric"]


@pytest.mark.parametrize("source, record", _fixture_records(), ids=lambda x: x if isinstance(x, str) else x["metric"])
def test_recorded_outputs_round_trip_exactly(source, record):
    assert _same(Record.from_dict(record).to_dict(), record)


def test_records_are_validated_and_frozen():
    with pytest.raises(TypeError):
        Record(metric="")
    with pytest.raises(ValueError):
        Record(metric="win-rate", n=-1)
    with pytest.raises(TypeError):
        Record(metric="win-rate", value="high")
    with pytest.raises(ValueError):
        Record(metric="win-rate", excluded={"no verdict": 1.5})
    with pytest.raises(ValueError, match="metric"):
        Record.from_dict({"value": 0.5})
    record = Record(metric="win-rate", value=float("nan"), generator="m", variant={"ties": "half"})
    assert record.value is None and not record.defined and record.subject == "m"
    with pytest.raises(AttributeError):
        record.value = 0.5  # type: ignore[misc]
    with pytest.raises(TypeError):
        record.variant["ties"] = "exclude"  # type: ignore[index]
    assert Record(metric="leaderboard-rank", pair=["a", "b"]).subject == "a vs b"


def test_select_frame_and_json(demo_records, tmp_path):
    records, summary, findings = demo_records
    results = Results(records, summary=summary, findings=findings)
    assert len(results) == len(records) and isinstance(results[0], Record)
    spr = results.select(metric="self-preference-ratio", scope="self", opponents="unrelated")
    assert len(spr) > 0 and {(r.metric, r.scope, r.variant["opponents"]) for r in spr} == {
        ("self-preference-ratio", "self", "unrelated")
    }
    both = results.select(metric=["win-rate", "leaderboard-rank"])
    assert {r.metric for r in both} == {"win-rate", "leaderboard-rank"}
    frame = results.frame()
    assert len(frame) == len(records)
    assert {
        "metric",
        "judge",
        "scope",
        "subject",
        "value",
        "ci_low",
        "ci_high",
        "n",
        "n_clusters",
        "excluded",
        "opponents",
    } <= set(frame.columns)
    rows = frame[(frame.metric == "self-preference-ratio") & (frame.scope == "self") & (frame.opponents == "unrelated")]
    assert sorted(rows["value"].dropna()) == sorted(r.value for r in spr if r.value is not None)
    document = json.loads(results.to_json())
    assert document["schema_version"] == SCHEMA_VERSION == 2
    assert document["results"] == json.loads(json.dumps(records, default=str))
    path = tmp_path / "results.json"
    path.write_text(results.to_json())
    back, back_summary, back_findings = load_results(path)
    assert Results(back) == results and back_findings == findings


def test_an_empty_results_has_a_frame_with_the_record_columns():
    frame = Results().frame()
    assert isinstance(frame, pd.DataFrame) and frame.empty and {"metric", "value", "subject"} <= set(frame.columns)


def test_module_examples_run():
    result = doctest.testmod(results_module)
    assert result.attempted >= 3 and result.failed == 0


def test_new_record_is_every_records_key_order():
    from nepotism.metrics.bootstrap import Bootstrap, cluster_bootstrap, ratio_of_totals
    from nepotism.results import new_record

    estimate = cluster_bootstrap(np.array([[1.0, 2.0], [0.0, 1.0]]), ratio_of_totals, n=3, bootstrap=Bootstrap(n_resamples=0))
    record = new_record("win-rate", "j", "default", estimate, judge_id="j-id", generator="g", variant={"ties": "half"}, n_ties=1)
    assert list(record)[:9] == ["metric", "judge", "judge_id", "condition", "generator", "pair", "scope", "variant", "n_ties"]
    assert list(record)[9:] == list(estimate.as_dict())
    assert (record["value"], record["generator"], record["scope"]) == (1 / 3, "g", None)
    assert Record.from_dict(record).to_dict() == record
    assert list(new_record("mra", None, None)) == ["metric", "judge", "condition", "generator", "pair", "scope", "variant"]
