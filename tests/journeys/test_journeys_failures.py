"""Failures are data, through the installed ``nepotism``: a response that could not be generated
leaves its comparisons in the exported tables as failed rows with the reason, so ``metrics`` on
the output folder counts them in its exclusions, and the report shows them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tests.journeys.test_journeys import nep

DEAD = "http://127.0.0.1:9/v1"  # nothing listens there: every call fails with "connection"


def _experiment(folder: Path, url: str) -> Path:
    """Three generators (standin-alpha-mini generates only), two judges, one attempt per call."""
    from nepotism.testing.experiments import standin_experiment

    return standin_experiment(folder, url, items=3, attempts=1,
                              generators=("standin-alpha", "standin-alpha-mini", "standin-beta"))


def _server_of_alpha_mini(exp: Path, old: str, new: str) -> None:
    head, tail = exp.read_text().split("[models.standin-alpha-mini]\n", 1)
    exp.write_text(head + "[models.standin-alpha-mini]\n" + tail.replace(old, new, 1))


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_failed_generation_is_counted_in_the_exports_metrics_and_report(tmp_path, standin):
    exp = _experiment(tmp_path / "work", standin)
    work = exp.parent
    plan = json.loads(nep("run", exp.name, "--dry-run", "--json", cwd=work).stdout)
    _server_of_alpha_mini(exp, standin, DEAD)  # its server goes away
    done = nep("run", exp.name, "--no-progress", "--json", cwd=work, expect=3)
    summary = json.loads(done.stdout)
    assert {f["generator"] for f in summary["generation_failures"]} == {"standin-alpha-mini"}
    tables = {kind: _rows(Path(work, path)) for kind, path in summary["exports"].items()}
    # every planned comparison is a row: none missing, whatever became of it
    assert sum(map(len, tables.values())) == plan["judge_calls"] == 42
    prevented = [r for rows in tables.values() for r in rows if r["reason"] == "generation:connection"]
    assert summary["prevented"] == {"generation:connection": len(prevented)} and len(prevented) == 18
    for row in prevented:
        assert row["status"] == "failed" and "standin-alpha-mini" in (row.get("model"), row.get("model_a"),
                                                                        row.get("model_b"))
        assert (row.get("verdict") or row.get("claimed") or "") == ""  # never a verdict, a tie or a zero
    assert all(r["reason"] != "generation:connection" for rows in tables.values() for r in rows
               if "standin-alpha-mini" not in (r.get("model"), r.get("model_a"), r.get("model_b")))
    out = work / "out"
    records = json.loads(nep("metrics", str(out), "--bootstrap", "0", "--json", cwd=work).stdout)
    excluded = [r for r in records if r["metric"] == "excluded-verdicts"]
    assert sum(r["excluded"].get("failed-generation:connection", 0) for r in excluded) == 18
    assert sum(r["n"] for r in excluded) == 42
    nep("report", str(out), "--out", "report", "--bootstrap", "0", cwd=work)
    assert "failed-generation:connection" in (work / "report" / "report.md").read_text()
    text = nep("run", exp.name, "--no-progress", cwd=work, expect=3).stdout  # the same again
    assert "18 judgments they would have shown are exported as failed (generation:connection 18)" in text

    # the server is back: the rerun makes the responses and their judgments, and ends where a
    # fresh run of the repaired experiment ends
    _server_of_alpha_mini(exp, DEAD, standin)
    again = json.loads(nep("run", exp.name, "--no-progress", "--json", cwd=work).stdout)
    assert again["generation"]["sent"] == 3 and again["prevented"] == {}
    fresh = _experiment(tmp_path / "fresh", standin)
    nep("run", fresh.name, "--no-progress", cwd=fresh.parent)
    for kind in again["exports"]:
        assert (out / f"{kind}.csv").read_bytes() == (fresh.parent / "out" / f"{kind}.csv").read_bytes()


def test_a_run_whose_every_call_failed_says_so_and_its_metrics_say_why_there_is_no_value(tmp_path):
    """No server answers: the run exits 3, its summary says no judgment was read (not an empty
    line), and every metric on its output folder says why it has no value: all of its
    comparisons were excluded (the failed-generation rows), not just "no data"."""
    exp = _experiment(tmp_path / "work", DEAD)
    work = exp.parent
    text = nep("run", exp.name, "--no-progress", cwd=work, expect=3).stdout
    assert "  judgments  none\n" in text
    records = json.loads(nep("metrics", "out", "--bootstrap", "0", "--json", cwd=work).stdout)
    rates = [r for r in records if r["metric"] == "win-rate"]
    assert rates and all(r["value"] is None and r["n"] == 0 and r["n_excluded"] > 0 for r in rates)
    assert all(r["note"] == f"no data: all {r['n_excluded']:,} excluded" for r in rates)
    table = nep("metrics", "out", "--bootstrap", "0", cwd=work).stdout
    assert "no data: all " in table
