"""One results document from every command, read back by ``report`` and ``card`` as the only shape.

Through the installed ``nepotism`` executable as a user chains it: ``leakage audit --json`` prints
exactly one results document that ``report`` and ``card`` take; a file an older version wrote (a
bare list of records, ``{"summary", "records"}``, a list of audits, JSON Lines records) is refused
with exit status 2, naming the file and the command that remakes it, and nothing is written.
(`mitigate --json` and `leakage run` are chained the same way in tests/journeys/test_journeys_leakage.py,
against the stand-in server.)
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.journeys.test_journeys import nep


def _board(path, seed=0):
    """A pointwise leaderboard: gpt-4 grading its relative, an unrelated model and a third; claude-2 too."""
    rng = np.random.default_rng(seed)
    models = ("gpt-4-1106-preview", "mistralai/Mixtral-8x7B-Instruct-v0.1", "claude-2.1")
    rows = [
        {"instance_id": f"q{i}", "judge": judge, "model": m, "score": float(rng.integers(1, 11))}
        for judge in ("gpt-4", "claude-2")
        for i in range(30)
        for m in models
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    work = tmp_path_factory.mktemp("audit")
    _board(work / "board.csv")
    done = nep("leakage", "audit", "board.csv", "--judge", "gpt-4", "--bootstrap", "40", "--seed", "3", "--json", cwd=work)
    return work, done.stdout


def test_leakage_audit_json_is_one_results_document_that_report_and_card_read(audited):
    work, printed = audited
    document = json.loads(printed)  # the whole of stdout is one JSON document
    assert document["schema_version"] == 2 and set(document) == {"schema_version", "summary", "findings", "verdicts", "results"}
    assert document["summary"]["options"] == {"n_resamples": 40, "confidence": 0.95, "method": "percentile", "seed": 3}
    ranks = {r["generator"]: r for r in document["results"] if r["metric"] == "leaderboard-rank"}
    assert ranks["gpt-4-1106-preview"]["scope"] == "family" and ranks["gpt-4-1106-preview"]["related"]
    assert all(r["n_resamples"] == 40 for r in document["results"])
    (work / "audit.json").write_text(printed)
    report = json.loads(nep("report", "audit.json", "--out", "report", "--json", cwd=work).stdout)
    assert report["results"] == len(document["results"])
    assert "## Leaderboard leakage audit" in (work / "report" / "report.md").read_text()
    (work / "t.toml").write_text("max_self_preference_ratio = 0.9\n")
    nep("card", "audit.json", "--thresholds", "t.toml", cwd=work)
    again = nep(
        "leakage", "audit", "board.csv", "--judge", "gpt-4", "--bootstrap", "40", "--seed", "3", "--json", cwd=work
    ).stdout
    assert again == printed  # the same seed, the same document


@pytest.mark.parametrize(
    "name, shape",
    [
        ("list.json", "bare list"),  # an older `metrics --json`
        ("records.json", "summary-records"),  # an older `mitigate --json` / `leakage run` results.json
        ("audits.json", "audits"),  # an older `leakage audit --json`
        ("mitigations.jsonl", "json-lines"),  # an older `mitigate --out` / output folder
    ],
)
def test_an_older_shape_is_refused_naming_the_file_and_how_to_remake_it(audited, name, shape):
    work, printed = audited
    records = json.loads(printed)["results"]
    text = {
        "bare list": json.dumps(records),
        "summary-records": json.dumps({"summary": {}, "records": records}),
        "audits": json.dumps([{"judge": "gpt-4", "records": records}]),
        "json-lines": "".join(json.dumps(r) + "\n" for r in records),
    }[shape]
    (work / name).write_text(text)
    for command in (["report", name, "--out", f"out-{name}"], ["card", name, "--thresholds", "t.toml"]):
        (work / "t.toml").write_text("max_self_preference_ratio = 0.9\n")
        refused = nep(*command, cwd=work, expect=2)
        assert refused.stderr.startswith(f"error: {name}") and "Traceback" not in refused.stderr
        assert "nepotism mitigate EXPERIMENT --json" in refused.stderr and refused.stdout == ""
        assert not (work / f"out-{name}").exists()
