"""Journeys through the installed ``nepotism`` executable for the leakage and mitigation keys of
paper 000 (§5.2 inheritance, §5.6 judgment dimensions, §5.7 spurious features, §5.8 mitigations on a
relative with human labels), against the loopback stand-in as a user runs them: the dry run, the run,
a rerun that sends nothing, then ``report`` and ``card`` (leakage) or ``metrics RUN_DIR`` and
``report`` (mitigate). The stand-in is no model: its verdicts are arbitrary but deterministic, so
what is checked is what each key does (which students exist and what they learned from, which
conditions are judged, which calls are made, which records and tables come out), not the sizes.
"""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter
from pathlib import Path

import httpx
import pytest

from nepotism.leakage.categories import DIMENSIONS
from nepotism.testing.experiments import STANDIN_MODELS, standin_experiment
from tests.journeys.test_journeys import EXAMPLES, nep

pytestmark = pytest.mark.slow


def _answered(url: str) -> int:
    """How many model requests the stand-in has answered."""
    return httpx.get(url.removesuffix("/v1") + "/standin/stats", timeout=30).json().get("ok", 0)


def _leakage_experiment(work: Path, url: str) -> Path:
    """Two generators (= judges) teach ICL students on a third stand-in model; two entries inherit from
    the first one's students (the training instructions again, and the inherit_pool's); the rewriter
    removes style and format from every student answer; the categoriser asks one yes/no question per
    dimension of each rationale."""
    work.mkdir(parents=True)
    (work / "models.toml").write_text(STANDIN_MODELS + '\n[models."standin-base"]\nfamily = "standin-c"\n')

    def pool(name, prefix, n, **extra):
        (work / name).write_text(
            "".join(
                json.dumps({"id": f"{prefix}{i}", "prompt": f"{prefix} question {i}: describe thing number {i}.", **extra}) + "\n"
                for i in range(n)
            )
        )

    pool("train.jsonl", "t", 4, response="a human answer")
    pool("eval.jsonl", "e", 3)
    pool("inherit.jsonl", "h", 3)
    models = "".join(
        f'[models.{m}]\nbackend = "openai"\nbase_url = "{url}"\nmodel = "{m}"\n'
        for m in ("standin-alpha", "standin-beta", "standin-base")
    )
    student = '[[leakage.students]]\nmethod = "icl"\nbase = "standin-base"\nk = 2\n'
    (work / "exp.toml").write_text(f"""[experiment]
name = "leakage-journey"
registry = ["models.toml"]
store = "s.db"
[dataset]
path = "eval.jsonl"
{models}
[generation]
generators = ["standin-alpha", "standin-beta"]
max_tokens = 32
[judging]
judges = ["standin-alpha", "standin-beta"]
[[judging.protocols]]
protocol = "pairwise"
options = {{ mode = "text", reasoning = "cot" }}
[output]
dir = "out"
[leakage]
train_pool = "train.jsonl"
inherit_pool = "inherit.jsonl"
n_resamples = 100
{student}name = "first"
{student}name = "second"
inherit = "first"
{student}inherit = "first"
instructions = "different"
[leakage.analyses]
recognition = []
classifier = false
question_types = false
categoriser = "standin-base"
dimensions = true
dimension_labels = "several"
ablations = ["style", "format"]
rewriter = "standin-base"
""")
    return work / "exp.toml"


def test_leakage_inheritance_ablations_and_several_dimensions_run_rerun_report_card(tmp_path, standin):
    exp = _leakage_experiment(tmp_path / "work", standin)
    work = exp.parent
    plan = json.loads(nep("leakage", "exp.toml", "--dry-run", "--json", cwd=work).stdout)
    students = {s["id"]: s for s in plan["students"]}
    assert len(students) == 6
    groups = Counter(s["group"] for s in students.values())
    assert groups == {
        "first:standin-base": 2,
        "second:standin-base:inherit=first,instructions=same": 2,
        "icl:standin-base:inherit=first,instructions=different": 2,
    }
    # the generators' answers to the 4 training instructions, each parent student's answers to the
    # instructions its inheritors learn from (4 again, and the 3 of the inherit_pool), every student's
    # answers to the 3 evaluation instructions; each answer rewritten twice; 3 pairs x 2 orders x 2
    # judges x 3 instructions, once as generated and once per ablation
    assert plan["generation_calls"] == 4 * 2 + 2 * (4 + 3) + 3 * 6
    assert plan["rewrite_calls"] == 3 * 6 * 2 and plan["judge_calls"] == 3 * 2 * 2 * 3 * 3
    text = nep("leakage", "exp.toml", "--dry-run", cwd=work).stdout
    assert "~40 generation, 36 rewrite and 108 pairwise judge calls" in text
    assert sorted(p.name for p in work.iterdir()) == [
        "eval.jsonl",
        "exp.toml",
        "inherit.jsonl",
        "models.toml",
        "train.jsonl",
    ]  # the dry runs left no file behind

    before = _answered(standin)
    table = nep("leakage", "exp.toml", "--no-progress", cwd=work).stdout
    made = _answered(standin) - before
    assert made > 0
    # the printed table names each condition, and lists the change under each ablation
    rows = [line.split() for line in table.splitlines()]
    for group in ("first:standin-base", "second:standin-base:inherit=first,instru"):
        assert {r[1] for r in rows if r and r[0] == group} >= {"default", "no-style", "no-format"}
        assert sum(1 for r in rows if r and r[0] == group and r[2:4] == ["−", "default"]) == 2
    assert "note: no-style:" in table and "written: out/results.json, out/results.csv" in table

    result = json.loads((work / "out" / "results.json").read_text())  # the results document
    assert result["schema_version"] == 2
    by_id = {s["id"]: s for s in result["summary"]["students"]}
    parents = {s["generator"]: s["id"] for s in by_id.values() if s["group"] == "first:standin-base"}
    for s in by_id.values():
        if s["variant"]:  # an inheriting student learned from its generator's first-entry student
            assert s["teacher"] == parents[s["generator"]]
            assert s["how"]["examples"] == (4 if s["variant"]["instructions"] == "same" else 3)
    # the registry written beside the results follows the chain: generator → student → grand-student
    grand = next(s for s in by_id.values() if s["variant"].get("instructions") == "different")
    relation = json.loads(
        nep(
            "models",
            "relation",
            grand["generator"],
            grand["id"],
            "--models",
            "models.toml",
            "--models",
            "out/students.toml",
            "--json",
            cwd=work,
        ).stdout
    )
    assert relation["relation"] == "student"
    # the parents answered the inherit_pool's instructions (stored, exported as responses)
    nep("store", "export", "responses", "--store", "s.db", "--out", "responses.csv", cwd=work)
    with open(work / "responses.csv", newline="") as fh:
        answered = {(r["instance_id"], r["generator"]) for r in csv.DictReader(fh)}
    assert {(f"h{i}", p) for i in range(3) for p in parents.values()} <= answered

    records = result["results"]
    pls = [r for r in records if r["metric"] == "preference-leakage-score" and "slice" not in r["variant"]]
    change = [r for r in records if r["metric"] == "preference-leakage-change"]
    assert {(r["variant"]["group"], r["condition"]) for r in pls} == {
        (g, c) for g in groups for c in ("default", "no-style", "no-format")
    }
    assert {(r["variant"]["group"], r["condition"], r["variant"]["against"]) for r in change} == {
        (g, c, "default") for g in groups for c in ("no-style", "no-format")
    }
    assert all("n" in r and "ci_low" in r and "excluded" in r for r in pls + change)
    # a rewrite that failed its checks is counted, never judged as if it were the original
    assert any(note.startswith("no-style: ") and " of 18 rewrites unusable" in note for note in result["summary"]["notes"])

    # dimension_labels = "several": one yes/no question per dimension for every rationale
    nep("store", "export", "judgments", "--protocol", "categorise", "--store", "s.db", "--out", "dims.csv", cwd=work)
    with open(work / "dims.csv", newline="") as fh:
        dims = list(csv.DictReader(fh))
    asked = {f"dimension:{name}" for name, _ in DIMENSIONS if name != "other"}
    per_rationale = Counter(r["candidates"] for r in dims)
    assert dims and {r["condition"] for r in dims} == asked
    assert set(per_rationale.values()) == {len(asked)}
    unreadable = sum(1 for r in dims if not r["verdict"])
    assert all(r["reason"] for r in dims if not r["verdict"])  # an unread answer has its reason
    if unreadable:
        assert f"dimensions: {unreadable} labels unreadable (those rationales left out of them)" in result["summary"]["notes"]

    # the rerun: every call is stored, nothing is sent, the same records come out
    before = _answered(standin)
    again = json.loads(nep("leakage", "exp.toml", "--no-progress", "--json", cwd=work).stdout)
    assert _answered(standin) == before
    assert again["schema_version"] == 2 and again["results"] == records  # --json prints results.json's document

    # the folder holds results, not judgments: `metrics` says which file and what to run instead
    for given in ("out", "out/results.csv", "out/results.json"):
        refused = nep("metrics", given, cwd=work, expect=2)
        assert refused.stderr.startswith("error: out/results.") and "not judgments" in refused.stderr
        assert "`nepotism report out/results.json --out report`" in refused.stderr and "Traceback" not in refused.stderr
    nep("report", "out/results.json", "--out", "report", "--bootstrap", "0", cwd=work)
    md = (work / "report" / "report.md").read_text()
    section = md.split("## Preference leakage", 1)[1].split("\n## ", 1)[0]
    assert "| judges | group | condition | students |" in section
    assert "| second:standin-base:inherit=first,instructions=same | no-format |" in section
    assert '<figure id="leakage-pls">' in (work / "report" / "report.html").read_text()

    # a CI gate on the leakage: PLS (ties ½) of the students as generated
    rule = (
        '[[card.rule]]\nmetric = "preference-leakage-score"\ncondition = "default"\n'
        'variant = {{ ties = "half", preference = "verdict" }}\nmax = {}\n'
    )
    (work / "lenient.toml").write_text(rule.format(1.0))
    nep("card", "out/results.json", "--thresholds", "lenient.toml", "--check", cwd=work)
    (work / "strict.toml").write_text(rule.format(-1.0))
    failed = nep("card", "out/results.json", "--thresholds", "strict.toml", "--check", cwd=work, expect=1)
    assert "fail" in failed.stdout


def test_two_unnamed_student_entries_of_one_base_exit_2_before_any_call(tmp_path, standin):
    """They would make students with the same ids: the file is refused, naming the entry."""
    exp = _leakage_experiment(tmp_path / "work", standin)
    text = exp.read_text().replace('name = "first"\n', "", 1).replace('name = "second"\ninherit = "first"\n', "", 1)
    exp.write_text(text.replace('inherit = "first"\ninstructions = "different"\n', ""))
    before = _answered(standin)
    done = nep("leakage", "exp.toml", "--no-progress", cwd=exp.parent, expect=2)
    assert "field 'leakage.students[1]'" in done.stderr and "give one of the entries a name" in done.stderr
    assert "Traceback" not in done.stderr and _answered(standin) == before
    assert not (exp.parent / "out").exists()


def test_the_leakage_examples_dry_run_as_its_readme_shows(tmp_path):
    """examples/leakage/README.md's first command, from a copy of the examples (no model is loaded)."""
    shutil.copytree(EXAMPLES, tmp_path / "examples", ignore=shutil.ignore_patterns("results", "*.db"))
    text = nep("leakage", "examples/leakage/leakage.toml", "--dry-run", cwd=tmp_path).stdout
    assert text.startswith("leakage-local: 16 training and 12 evaluation instructions, 4 students")
    assert "(sft, group sft:smollm2-135m-instruct)" in text and "(icl, group icl:gemma-3-270m)" in text
    assert not (tmp_path / "examples" / "leakage" / "results").exists()  # no store, no students.toml


def _mitigate_experiment(work: Path, url: str, *, target: str = "family") -> Path:
    """standin-alpha judges the pairs holding its family member (standin-alpha-mini) against the
    unrelated standin-beta, at baseline and told to be impartial, with calibration; two annotators'
    labels are the truth of each pair."""
    exp = standin_experiment(
        work,
        url,
        items=6,
        generators=("standin-alpha-mini", "standin-beta"),
        judges=("standin-alpha", "standin-beta"),
        recognition=False,
    )
    text = (
        exp.read_text()
        .replace('pairs = "judge-vs-others"', 'pairs = "all"')
        .replace('options = { mode = "labels", ways = 2 }', 'options = { mode = "labels", ways = 2, min_label_mass = 0.2 }')
    )
    exp.write_text(
        text
        + f"""
[mitigate]
target = "{target}"
preference_ref = ["humans.csv"]
n_resamples = 100
[[mitigate.conditions]]
name = "impartial"
kind = "judge-option"
options = {{ impartial = true }}
[[mitigate.conditions]]
name = "calibrated"
kind = "calibration"
"""
    )
    rows = ["instance_id,model_a,model_b,winner,annotator"]
    for i in range(1, 7):
        winner = "standin-alpha-mini" if i % 2 else "standin-beta"
        rows += [f"q{i},standin-alpha-mini,standin-beta,{winner},h1", f"q{i},standin-alpha-mini,standin-beta,{winner},h2"]
    (work / "humans.csv").write_text("\n".join(rows) + "\n")
    return exp


def test_mitigate_on_the_judges_family_with_human_labels_metrics_report(tmp_path, standin):
    """Paper 000 §5.8 with ``target = "family"``: only the pairs holding the judge's relative are judged
    again under the mitigation, every effect is measured from the relative's side, the humans decide
    which answer is right; the output folder is a run folder for ``metrics`` and ``report``."""
    work = tmp_path / "work"
    _mitigate_experiment(work, standin)
    before = _answered(standin)
    summary = json.loads(nep("mitigate", "exp.toml", "--store", "s.db", "--no-progress", "--json", cwd=work).stdout)
    first = summary["summary"]
    # baseline: each judge on the one pair, both orders, 6 items; the impartial condition only for
    # standin-alpha (standin-beta has no relative among the generators); calibration calls nothing
    assert first["judge_calls"] == 6 * 2 * 2 + 6 * 2
    assert _answered(standin) - before > 0
    with open(work / "out" / "pairwise.csv", newline="") as fh:
        judged = Counter((r["judge"], r["condition"]) for r in csv.DictReader(fh))
    assert judged == {("standin-alpha", "default"): 12, ("standin-beta", "default"): 12, ("standin-alpha", "impartial"): 12}
    assert summary["schema_version"] == 2  # `mitigate --json`: the results document
    effects = [r for r in summary["results"] if r["metric"] == "mitigation-effect"]
    assert {r["condition"] for r in effects} == {"impartial", "calibrated"}
    assert {r["variant"]["scope"] for r in effects} == {"family"}  # the relation measured, not "self"
    beta = [r for r in effects if r["judge"] == "standin-beta"]
    assert beta and all(r["value"] is None and r["n"] == 0 for r in beta)  # no relative: nothing measured
    alpha = {(r["condition"], r["variant"]["base_metric"]): r for r in effects if r["judge"] == "standin-alpha"}
    assert {"error-bias", "judge-accuracy"} <= {m for _, m in alpha}
    # the humans are the truth: no comparison of the relative's pairs is left out for want of one
    assert all("no truth" not in (r.get("excluded") or {}) for r in alpha.values())
    assert any(r["n"] > 0 for (c, m), r in alpha.items() if m == "judge-accuracy")

    before = _answered(standin)
    again = json.loads(nep("mitigate", "exp.toml", "--store", "s.db", "--no-progress", "--json", cwd=work).stdout)
    assert _answered(standin) == before and again["summary"]["judge_calls"] == first["judge_calls"]
    assert [r["value"] for r in again["results"]] == [r["value"] for r in summary["results"]]

    records = json.loads(nep("metrics", "out", "--bootstrap", "0", "--json", cwd=work).stdout)["results"]
    assert {r["condition"] for r in records if r["metric"] == "excluded-verdicts"} == {"default", "impartial"}
    (work / "printed.json").write_text(json.dumps(again))  # `mitigate --json > printed.json`, then the report
    nep("report", "printed.json", "--out", "printed", "--bootstrap", "0", cwd=work)
    nep("report", "out/mitigations.json", "--out", "report", "--bootstrap", "0", cwd=work)
    md = (work / "report" / "report.md").read_text()
    section = md.split("## Mitigation effects", 1)[1].split("\n## ", 1)[0]
    printed = (work / "printed" / "report.md").read_text()
    assert printed.split("## Mitigation effects", 1)[1].split("\n## ", 1)[0] == section
    # the folder's run.json lists mitigations.json: the folder's report has the same section beside its audit
    assert json.loads((work / "out" / "run.json").read_text())["results"] == {"mitigation-effects": "mitigations.json"}
    nep("report", "out", "--out", "folder-report", "--bootstrap", "0", cwd=work)
    folder_md = (work / "folder-report" / "report.md").read_text()
    assert "## Mitigation effects" in folder_md and "## Verdicts left out" in folder_md
    assert folder_md.split("## Mitigation effects", 1)[1].split("\n## ", 1)[0] == section
    assert "| impartial | judge-option |" in section and "| calibrated | calibration |" in section
    assert "| impartial | judge-option | standin-alpha | family | self-preference |" in section
    assert "| self |" not in section
    html = (work / "report" / "report.html").read_text()
    assert "win rate for its family member&#39;s answer" in html or "win rate for its family member's answer" in html


@pytest.mark.parametrize("target", ["family", "student"])
def test_mitigate_on_a_relative_with_pairs_of_the_judge_only_exits_2(tmp_path, standin, target):
    """``pairs = "judge-vs-others"`` pairs only the judge's own answers, so a relative is never among
    them: every effect came out undefined, silently. Now the file is refused before any call."""
    work = tmp_path / "work"
    exp = _mitigate_experiment(work, standin, target=target)
    exp.write_text(exp.read_text().replace('pairs = "all"', 'pairs = "judge-vs-others"'))
    before = _answered(standin)
    done = nep("mitigate", "exp.toml", "--store", "s.db", "--no-progress", cwd=work, expect=2)
    assert "field 'judging.protocols[0].pairs'" in done.stderr and 'use pairs = "all"' in done.stderr
    assert _answered(standin) == before and not (work / "s.db").exists() and not (work / "out").exists()


def test_leakage_recognition_reads_label_verdicts_with_the_judging_min_label_mass(tmp_path, standin):
    """The pairwise protocol's ``min_label_mass`` reads every label verdict of the run: with a
    threshold no stand-in verdict reaches, the student-recognition questions are unparsed too (they
    took the default 0.5 and counted verdicts the comparisons refused)."""
    exp = _leakage_experiment(tmp_path / "work", standin)
    exp.write_text(
        exp.read_text()
        .replace('options = { mode = "text", reasoning = "cot" }', 'options = { mode = "labels", min_label_mass = 0.999 }')
        .replace("recognition = []", 'recognition = ["pairwise"]')
        .replace("dimensions = true", "dimensions = false")
        .replace('ablations = ["style", "format"]', "ablations = []")
    )
    result = json.loads(nep("leakage", "exp.toml", "--no-progress", "--json", cwd=exp.parent).stdout)
    assert result["summary"]["judgments"] == {"pairwise:unparsed": 36, "recognition:unparsed": 36}
    recognition = [r for r in result["results"] if r["metric"] == "student-recognition-accuracy"]
    assert recognition and all(r["n"] == 0 and r["value"] is None for r in recognition)


def test_mitigate_says_how_many_rewrite_and_judge_calls_were_sent_and_how_many_came_from_the_cache(tmp_path, standin):
    """A paraphrase condition rewrites through the rewriter: the summary keeps the planned counts
    (``rewrite_calls``, ``judge_calls``) and says how many were sent and how many the store's cache
    answered; a rerun sends nothing and says so."""
    exp = standin_experiment(tmp_path / "work", standin, items=4, recognition=False)
    exp.write_text(
        exp.read_text() + '\n[mitigate]\nrewriter = "standin-beta"\nn_resamples = 0\n'
        '[[mitigate.conditions]]\nname = "para"\nkind = "paraphrase"\n'
    )
    work = exp.parent

    def run():
        before = _answered(standin)
        summary = json.loads(nep("mitigate", "exp.toml", "--store", "s.db", "--no-progress", "--json", cwd=work).stdout)
        return summary["summary"], _answered(standin) - before

    first, answered = run()
    assert first["rewrite_calls"] > 0 and 0 < first["rewrite_calls_sent"] <= first["rewrite_calls"]
    assert first["rewrite_calls_sent"] + first["judge_calls_sent"] == answered - 4 * 2  # and 4 x 2 answers
    again, answered = run()
    assert answered == 0 and again["rewrite_calls"] == first["rewrite_calls"]
    assert again["rewrite_calls_sent"] == 0 and again["rewrite_calls_cached"] == again["rewrite_calls"]
    assert again["judge_calls_sent"] == 0 and again["judge_calls_cached"] == again["judge_calls"]
    text = nep("mitigate", "exp.toml", "--store", "s.db", "--no-progress", cwd=work).stdout.splitlines()
    assert text[0].endswith(f"{again['judge_calls']} judge calls (0 sent, {again['judge_calls']} from the store's cache)")
    assert text[1] == (
        f"  rewrites: {again['rewrite_calls']} rewrite calls (0 sent, {again['rewrite_calls']} from "
        "the store's cache), 0 without a usable text"
    )
