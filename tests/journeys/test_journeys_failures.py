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

    return standin_experiment(
        folder, url, items=3, attempts=1, generators=("standin-alpha", "standin-alpha-mini", "standin-beta")
    )


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
        assert row["status"] == "failed" and "standin-alpha-mini" in (row.get("model"), row.get("model_a"), row.get("model_b"))
        assert (row.get("verdict") or row.get("claimed") or "") == ""  # never a verdict, a tie or a zero
    assert all(
        r["reason"] != "generation:connection"
        for rows in tables.values()
        for r in rows
        if "standin-alpha-mini" not in (r.get("model"), r.get("model_a"), r.get("model_b"))
    )
    out = work / "out"
    records = json.loads(nep("metrics", str(out), "--bootstrap", "0", "--json", cwd=work).stdout)["results"]
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
    records = json.loads(nep("metrics", "out", "--bootstrap", "0", "--json", cwd=work).stdout)["results"]
    rates = [r for r in records if r["metric"] == "win-rate"]
    assert rates and all(r["value"] is None and r["n"] == 0 and r["n_excluded"] > 0 for r in rates)
    assert all(r["note"] == f"no data: all {r['n_excluded']:,} excluded" for r in rates)
    # the plain answer: each judge's own answers are not measurable because every comparison was left
    # out, and the exclusions say why; --all prints each record's row with its note
    answer = nep("metrics", "out", "--bootstrap", "0", cwd=work).stdout.splitlines()
    own = [line for line in answer if " own answers " in line]
    assert len(own) == 2 and all(
        "not measurable" in line and "of its comparisons were left out" in line and "failed-generation:connection" in line
        for line in own
    ), answer  # the reason
    exclusions = [line for line in answer if line.startswith("  ") and "failed-generation:connection" in line]
    assert len(exclusions) == 4, answer  # 2 judges x 2 tables
    document = json.loads(nep("metrics", "out", "--bootstrap", "0", "--json", cwd=work).stdout)
    needs = [v["needs"] for v in document["verdicts"] if v["scope"] == "self"]
    assert needs and all(n and "calls that succeed" in n[0] for n in needs)  # not "verdicts the parser can read"
    table = nep("metrics", "out", "--bootstrap", "0", "--all", cwd=work).stdout
    assert "no data: all " in table


def _failing_item(folder: Path, index: int = 1) -> None:
    """Item ``index`` of ``folder/items.jsonl`` gets a prompt the stand-in fails every call of."""
    rows = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    rows[index]["prompt"] += " <<standin:fault=http_500>>"
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_mitigate_counts_the_comparisons_a_failed_generation_prevented_in_every_condition(tmp_path, standin):
    """``nepotism mitigate`` with an item whose responses cannot be generated: the comparisons they
    would have been in are failed rows of the exports under every condition they would have been
    judged in, and every effect counts them in its exclusions under metrics' label (before, n
    shrank and nothing said why)."""
    from nepotism.testing.experiments import standin_experiment

    exp = standin_experiment(tmp_path / "work", standin, items=4, recognition=False, attempts=1)
    work = exp.parent
    _failing_item(work)
    # every verdict parses (min_label_mass 0): the failed generation is the one thing left out
    exp.write_text(
        exp.read_text().replace("ways = 2 }", "ways = 2, min_label_mass = 0.0 }")
        + '\n[mitigate]\nn_resamples = 0\n[[mitigate.conditions]]\nname = "impartial"\n'
        'kind = "judge-option"\noptions = { impartial = true }\n'
        '[[mitigate.conditions]]\nname = "synonyms"\nkind = "synonym"\nk = 2\n'
    )
    # two generation calls failed: exit 3, as `nepotism run` (its one JSON document printed first)
    done = json.loads(nep("mitigate", "exp.toml", "--store", "s.db", "--no-progress", "--json", cwd=work, expect=3).stdout)
    summary = done["summary"]
    assert summary["generation_failures"] == 2 and summary["prevented"] == {"generation:http_5xx:500": 12}
    generation = [p for p in summary["calls"] if p["phase"] == "generate"]
    assert sum(p["failed"] for p in generation) == 2 and generation[0]["errors"] == {"http_5xx:500": 2}
    rows = _rows(work / "out" / "pairwise.csv")
    assert len(rows) == summary["judge_calls"] + 12 == 4 * 12  # every planned comparison is a row
    failed = [r for r in rows if r["instance_id"] == "q2"]
    assert all(r["status"] == "failed" and r["reason"] == "generation:http_5xx:500" and not r["verdict"] for r in failed)
    assert {r["condition"] for r in failed} == {"default", "impartial", "synonyms:standin-alpha", "synonyms:standin-beta"}
    assert all(r["status"] == "parsed" for r in rows if r["instance_id"] != "q2")
    effects = [r for r in done["results"] if r["metric"] == "mitigation-effect" and r["variant"]["scope"] == "self"]
    assert effects
    for r in effects:  # one self-evaluation pair an item and judge; q2's is excluded, with its reason
        pairs = 2 if r["judge"] == "all" else 1
        assert r["excluded"].get("failed-generation:http-5xx:500") == pairs, r
        assert r["n"] + r["n_excluded"] == 4 * pairs
    label = "failed-generation:http-5xx:500"  # the label `nepotism metrics` counts them under
    records = json.loads(nep("metrics", "out", "--bootstrap", "0", "--json", cwd=work).stdout)["results"]
    assert sum(r["excluded"].get(label, 0) for r in records if r["metric"] == "excluded-verdicts") == 12
    done = nep("mitigate", "exp.toml", "--store", "s.db", "--no-progress", cwd=work, expect=3)
    assert "2 responses could not be generated: 12 judgments they would have shown are exported as failed" in done.stdout
    assert "error: 2 of " in done.stderr and "http_5xx:500 2" in done.stderr
    # allowed: the same run exits 0
    nep("mitigate", "exp.toml", "--store", "s.db", "--no-progress", "--max-failure-rate", "0.5", cwd=work)


def _held_out_mitigation(tmp_path, standin, failing: tuple[int, ...], condition: str) -> dict:
    """``nepotism mitigate --json`` (exit 3) on a four-item stand-in experiment whose items at
    ``failing`` cannot be generated, with the one mitigation condition ``condition`` (TOML after
    ``[[mitigate.conditions]]``). The experiment's seed splits the items so that q1 and q3 are
    evaluated and q2 and q4 held out; the document printed is returned."""
    from nepotism.mitigations.calibration import split_heldout
    from nepotism.testing.experiments import standin_experiment

    exp = standin_experiment(tmp_path / "work", standin, items=4, recognition=False, attempts=1)
    work = exp.parent
    split = split_heldout(["q1", "q2", "q3", "q4"], 0.5, seed=0)  # the experiment's seed
    assert [split[q] for q in ("q1", "q2", "q3", "q4")] == ["evaluation", "heldout", "evaluation", "heldout"]
    for index in failing:
        _failing_item(work, index)
    exp.write_text(
        exp.read_text().replace("ways = 2 }", "ways = 2, min_label_mass = 0.0 }")
        + f"\n[mitigate]\nn_resamples = 0\n[[mitigate.conditions]]\n{condition}\n"
    )
    return json.loads(nep("mitigate", "exp.toml", "--store", "s.db", "--no-progress", "--json", cwd=work, expect=3).stdout)


def test_mitigate_calibration_counts_prevented_comparisons_in_both_halves(tmp_path, standin):
    """Calibration splits the items into a held-out half it fits on and an evaluation half it reports
    on. A failed generation in each half: the evaluation half's effects count its comparison under
    metrics' label, and each judge's fit counts the held-out one under the same label (before, the
    fit left it out without a count)."""
    done = _held_out_mitigation(tmp_path, standin, (0, 1), 'name = "calibrated"\nkind = "calibration"')
    label = "failed-generation:http-5xx:500"
    effects = [r for r in done["results"] if r["condition"] == "calibrated"]
    assert effects
    for r in effects:  # the evaluation half: q1's self-evaluation pair is out, with its reason
        pairs = 2 if r["judge"] == "all" else 1
        assert r["excluded"].get(label) == pairs, r
    fit = done["summary"]["analysis"]["calibrated"]
    for judge in ("standin-alpha", "standin-beta"):  # the held-out half: q2's pair, with its reason
        # q4's pair has a score but no truth (the items cannot be graded)
        assert fit[judge]["n_fit"] == 0 and fit[judge]["fit_excluded"] == {label: 1, "no truth": 1}


def test_mitigate_weighted_jury_counts_the_held_out_comparisons_its_weights_could_not_use(tmp_path, standin):
    """A weighted jury weighs each juror by its accuracy on the held-out half. A failed generation
    in that half: each juror's weight fit counts the comparison it prevented under metrics' label,
    beside how many comparisons the weight was fitted on (before, the fit left it out without a
    count)."""
    done = _held_out_mitigation(tmp_path, standin, (1,), 'name = "weighted"\nkind = "jury"\nvote = "weighted"')
    label = "failed-generation:http-5xx:500"
    jury = done["summary"]["analysis"]["weighted"]
    # each juror judged one pair an item: q2's was prevented, q4's has verdicts but no truth (the
    # items cannot be graded), so no juror has a weight, and the counts say why
    assert jury["weights"] == {}
    assert jury["n_fit"] == {"standin-alpha": 0, "standin-beta": 0}
    assert jury["fit_excluded"] == {"standin-alpha": {label: 1, "no truth": 1}, "standin-beta": {label: 1, "no truth": 1}}
    # no juror has a say, and the summary and every effect record of the jury say which and why
    silent = {
        j: {"reason": "no usable held-out comparison", "n_fit": 0, "fit_excluded": {label: 1, "no truth": 1}}
        for j in ("standin-alpha", "standin-beta")
    }
    assert jury["jurors_without_weight"] == silent
    effects = [r for r in done["results"] if r.get("condition") == "weighted"]
    assert effects and all(r["jurors_without_weight"] == silent for r in effects)
    # so it decides nothing, and counts each comparison once
    assert jury["comparisons_without_jury_verdict"] == jury["jury_comparisons"] > 0


def test_leakage_counts_the_comparisons_a_failed_student_answer_prevented(tmp_path, standin):
    """``nepotism leakage`` with an instruction no student can answer: the comparisons and
    recognition questions its answers would have been in are stored as failed judgments, and the
    PLS, win-rate and recognition records count them in their exclusions under metrics' label."""
    from tests.journeys.test_journeys_leakage import _leakage_experiment

    exp = _leakage_experiment(tmp_path / "work", standin)
    work = exp.parent
    exp.write_text(
        exp.read_text()
        .replace('options = { mode = "text", reasoning = "cot" }', 'options = { mode = "labels", min_label_mass = 0.0 }')
        .replace("recognition = []", 'recognition = ["pairwise"]')
        .replace("dimensions = true", "dimensions = false")
        .replace('ablations = ["style", "format"]', "ablations = []")
        .replace('model = "standin-base"\n', 'model = "standin-base"\nmax_attempts = 1\n')
    )
    rows = [json.loads(line) for line in (work / "eval.jsonl").read_text().splitlines()]
    rows[1]["prompt"] += " <<standin:fault=http_500>>"  # every student's answer to e1 fails
    (work / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = json.loads(nep("leakage", "exp.toml", "--no-progress", "--json", cwd=work, expect=3).stdout)
    summary = result["summary"]  # the results document: the run's facts in its summary
    assert sum(p["failed"] for p in summary["calls"]) == 6  # exit 3: calls failed, as `nepotism run`
    label = "failed-generation:http-5xx:500"
    assert summary["generation_failures"] == 6  # three entries' two students
    # 3 groups x 1 pair x 2 judges x 2 orders of e1's comparisons, and its recognition questions
    assert summary["prevented"] == {"generation:http_5xx:500": 24}
    assert summary["judgments"] == {
        "pairwise:failed": 12,
        "pairwise:parsed": 24,
        "recognition:failed": 12,
        "recognition:parsed": 24,
    }
    scored = [
        r for r in result["results"] if r["metric"] in ("preference-leakage-score", "win-rate", "student-recognition-accuracy")
    ]
    assert scored and all(r["excluded"].get(label, 0) > 0 for r in scored)
    for r in scored:
        if r["metric"] == "win-rate":  # a judge's verdicts on one student: e1's comparison is out
            assert r["n"] == 2 and r["excluded"] == {label: 1}
    failed = []
    for protocol in ("pairwise", "recognition-pairwise"):  # in the store, as failed judgments with the reason
        nep("store", "export", "judgments", "--protocol", protocol, "--store", "s.db", "--out", f"{protocol}.csv", cwd=work)
        failed += [r for r in _rows(work / f"{protocol}.csv") if r["status"] == "failed"]
    assert len(failed) == 24 and {(r["instance_id"], r["reason"]) for r in failed} == {("e1", "generation:http_5xx:500")}
