"""User journeys through the installed ``nepotism`` executable, chained as the README documents them.

Each test runs real subprocesses (no CliRunner): the stand-in server a user starts with
``nepotism standin``, ``run`` against it, ``metrics`` on what ``run`` wrote, ``report`` and ``card``
on the results; ``import`` then ``metrics``; the demo then ``report`` and ``card``. They assert on
exit codes, on stdout being exactly one JSON document under ``--json``, and on piped output a
person can read in a CI log.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FIXTURES = ROOT / "tests" / "fixtures"
NEPOTISM = str(Path(sys.executable).with_name("nepotism"))


def nep(*args: str, cwd: Path, expect: int | None = 0, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``nepotism ARGS`` as a user would (stdout a pipe, not a terminal)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"COLUMNS": "80"}
    done = subprocess.run([NEPOTISM, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if expect is not None:
        assert done.returncode == expect, f"nepotism {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _example(tmp_path: Path, url: str) -> Path:
    """The README's stand-in example, copied as a user would, pointed at the running stand-in."""
    work = tmp_path / "work"
    shutil.copytree(EXAMPLES, work / "examples", ignore=shutil.ignore_patterns("results", "*.db"))
    exp = work / "examples" / "standin.toml"
    exp.write_text(exp.read_text().replace("http://127.0.0.1:8765/v1", url).replace("[dataset]\n", "[dataset]\nlimit = 3\n"))
    return work


def test_standin_run_metrics_report_card(tmp_path, standin):
    work = _example(tmp_path, standin)
    plan = nep("run", "examples/standin.toml", "--dry-run", "--json", cwd=work)
    assert json.loads(plan.stdout)["judge_calls"] > 0
    first = nep("run", "examples/standin.toml", "--no-progress", cwd=work)
    assert "done" in first.stdout and "wrote" in first.stdout
    again = nep("run", "examples/standin.toml", "--no-progress", "--json", cwd=work)
    summary = json.loads(again.stdout)  # exactly one JSON document on stdout
    assert summary["judging"]["cached"] == summary["judging"]["total"] > 0  # nothing asked twice
    pairwise = summary["exports"]["pairwise"]
    out = Path(pairwise).parent
    assert set(summary["exports"]) == {"pairwise", "recognition"}
    # the output folder describes itself: metrics and report need no other flag
    folder = json.loads(nep("metrics", str(out), "--bootstrap", "0", "--json", cwd=work).stdout)["results"]
    assert {"win-rate", "recognition-accuracy"} <= {r["metric"] for r in folder}
    nep("report", str(out), "--out", "folder-report", "--bootstrap", "0", cwd=work)
    # the dataset's categories survive run → export → metrics
    sliced = json.loads(
        nep(
            "metrics",
            pairwise,
            "--models",
            "examples/standin_models.toml",
            "--slice",
            "category",
            "--bootstrap",
            "0",
            "--json",
            cwd=work,
        ).stdout
    )["results"]
    items = [json.loads(line) for line in (EXAMPLES / "standin_items.jsonl").read_text().splitlines()[:3]]
    assert {r["variant"]["slice"]["category"] for r in sliced if "slice" in r["variant"]} == {item["category"] for item in items}

    table = nep("metrics", pairwise, "--models", "examples/standin_models.toml", "--bootstrap", "100", "--all", cwd=work)
    lines = table.stdout.splitlines()
    assert any(line.startswith("self-preference-ratio ") for line in lines)  # one record per line, unwrapped
    assert not any(ch in table.stdout for ch in "│┃")
    results = nep("metrics", pairwise, "--models", "examples/standin_models.toml", "--bootstrap", "100", "--json", cwd=work)
    records = json.loads(results.stdout)["results"]
    (work / "results.json").write_text(results.stdout)
    assert {"win-rate", "self-preference-ratio", "excluded-verdicts"} <= {r["metric"] for r in records}

    nep("report", "results.json", "--out", "report", cwd=work)
    assert (work / "report" / "report.html").stat().st_size > 0

    spr = [r["value"] for r in records if r["metric"] == "self-preference-ratio" and r["value"] is not None]
    assert spr, "the stand-in run measured no self-preference ratio"
    (work / "lenient.toml").write_text("max_self_preference_ratio = 1.0\n")
    nep("card", "results.json", "--thresholds", "lenient.toml", "--check", cwd=work)
    (work / "strict.toml").write_text(f"max_self_preference_ratio = {max(spr) / 2}\n")
    failed = nep("card", "results.json", "--thresholds", "strict.toml", "--check", cwd=work, expect=1)
    assert "fail" in failed.stdout


def test_a_run_whose_server_fails_every_call_exits_3(tmp_path):
    """A server that is not there: every call fails; the exit status says so in one line."""
    work = _example(tmp_path, "http://127.0.0.1:9/v1")
    exp = work / "examples" / "standin.toml"
    exp.write_text(exp.read_text().replace("max_attempts = 4", "max_attempts = 1"))
    done = nep("run", "examples/standin.toml", "--no-progress", cwd=work, expect=3)
    assert "calls failed" in done.stderr and "--max-failure-rate" in done.stderr
    assert "Traceback" not in done.stderr


def test_import_then_metrics(tmp_path):
    source = FIXTURES / "importers" / "annotations_compact_sample.csv.gz"
    nep("import", str(source), "--format", "alpaca-eval-compact", "--out", "judgments.csv", cwd=tmp_path)
    records = json.loads(nep("metrics", "judgments.csv", "--bootstrap", "50", "--json", cwd=tmp_path).stdout)["results"]
    metrics = {r["metric"] for r in records}
    assert "win-rate" in metrics
    assert "position-consistency" not in metrics  # AlpacaEval randomised the order: no position metric


def test_leakage_audit_demo_then_report(tmp_path):
    """README row `nepotism leakage audit --demo`: one results document (as `metrics --json`), then a
    report and a card from it, as a user chains them."""
    printed = nep("leakage", "audit", "--demo", "--bootstrap", "50", "--json", cwd=tmp_path).stdout
    audit = json.loads(printed)  # exactly one JSON document on stdout
    assert audit["schema_version"] == 2 and [a["judge"] for a in audit["summary"]["audits"]] == ["gpt4_0314", "gpt4_1106_preview"]
    assert {r["metric"] for r in audit["results"]} == {"leaderboard-leakage-bonus", "leaderboard-rank"}
    assert {r["scope"] for r in audit["results"] if r["metric"] == "leaderboard-rank" and r["related"]} <= {
        "self",
        "family",
        "student",
        "family-student",
        "teacher",
    }
    (tmp_path / "audit.json").write_text(printed)
    report = json.loads(nep("report", "audit.json", "--out", "report", "--json", cwd=tmp_path).stdout)
    assert (tmp_path / "report" / "report.html").exists() and report["results"] == len(audit["results"])
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Leaderboard leakage audit" in md and "| entry | relation | win rate against " in md
    # ranks are no verdict: the Summary points at the audit's section, no "not measurable" rows
    assert "No per-judge verdict in these results: see the sections below." in md and "no metric measured it" not in md
    # an older nepotism's list of audits is refused, naming the file and how to remake it
    (tmp_path / "old.json").write_text(json.dumps([{"judge": "j", "records": audit["results"]}]))
    refused = nep("report", "old.json", "--out", "old", cwd=tmp_path, expect=2)
    assert refused.stderr.startswith("error: old.json") and "nepotism leakage audit ... --json" in refused.stderr
    assert "Traceback" not in refused.stderr and not (tmp_path / "old").exists()


def test_demo_then_report_and_card(tmp_path):
    demo = nep("demo", "--out", "demo", "--bootstrap", "50", cwd=tmp_path, timeout=600)
    assert "random order" in " ".join(demo.stdout.split())
    nep("report", "demo/results.json", "--out", "report", cwd=tmp_path)
    (tmp_path / "t.toml").write_text("max_self_preference_ratio = 1.0\n")
    nep("card", "demo/results.json", "--thresholds", "t.toml", "--check", cwd=tmp_path)


def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path):
    (tmp_path / "bad.csv").write_text("instance_id,judge,model_a,model_b,verdict\n1,gpt-4,x,y,maybe\n")
    done = nep("metrics", "bad.csv", "--json", cwd=tmp_path, expect=2)
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1
    assert "bad.csv" in done.stderr and "line 2" in done.stderr and "verdict" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv"]


def test_store_export_partitioned_then_metrics_stream(tmp_path):
    """A pairwise store exported as a judge=NAME dataset, then ``metrics --stream``: the streamed
    metrics are the in-memory ones byte for byte, the others are listed as not computed; bad files
    on the streaming path exit 2 naming file, line, field and partition, printing nothing."""
    import numpy as np
    import pandas as pd
    import pyarrow.parquet as pq

    from nepotism.simulate import SimulationSpec, simulate

    spec = SimulationSpec(judges=("judge-a", "judge-b", "other-1"), n_instances=25, self_bias=0.6, family_bias=0.3, tie_rate=0.1)
    table = simulate(spec, seed=2, kinds=("pairwise",)).pairwise
    table.loc[table.index % 17 == 0, "verdict"] = None
    table.to_csv(tmp_path / "pairwise.csv", index=False)
    (tmp_path / "registry.toml").write_text(spec.registry_toml())
    nep("store", "load", "pairwise.csv", "--store", "s.db", cwd=tmp_path)
    nep("store", "export", "judgments", "--store", "s.db", "--out", "ds", "--partition-by", "judge", cwd=tmp_path)
    common = ("--models", "registry.toml", "--bootstrap", "200", "--json")
    whole = json.loads(nep("metrics", "ds", *common, cwd=tmp_path).stdout)["results"]
    streamed = json.loads(nep("metrics", "ds", "--stream", *common, cwd=tmp_path).stdout)["results"]
    computed = {
        "win-rate",
        "self-preference-ratio",
        "demographic-parity-bias",
        "paired-win-rate-gap",
        "excluded-verdicts",
        "exclusion-share-gap",
        "position-consistency",
        "leaderboard-rank",
    }

    def pooled(r):  # the per-evaluatee SPR (004 Tables 1/3/5) is not streamed: listed as not computed
        return r["metric"] in computed and "averaging" not in r["variant"]

    same = [r for r in whole if pooled(r)]
    assert {r["metric"] for r in same} == computed
    assert json.dumps(same) == json.dumps([r for r in streamed if pooled(r)])
    (per_evaluatee,) = [r for r in streamed if r["metric"] in computed and not pooled(r)]
    assert per_evaluatee["value"] is None and "not computed when streaming" in per_evaluatee["note"]
    skipped = [r for r in streamed if r["metric"] not in computed]
    assert {r["metric"] for r in skipped} >= {"matched-bias"}
    assert all(r["value"] is None and "not computed when streaming" in r["note"] for r in skipped)
    text = nep("metrics", "ds", "--stream", "--models", "registry.toml", "--bootstrap", "50", cwd=tmp_path).stdout
    assert "Not computed when streaming:" in text and "matched-bias (" in text

    files = sorted((tmp_path / "ds").rglob("*.parquet"))
    assert len(files) == 3
    third = files[2]
    original = pq.read_table(third).to_pandas()

    def bad(name, write, *expected):
        shutil.rmtree(tmp_path / "bad", ignore_errors=True)
        shutil.copytree(tmp_path / "ds", tmp_path / "bad")
        write(tmp_path / "bad" / third.relative_to(tmp_path / "ds"))
        before = sorted(p.name for p in tmp_path.iterdir())
        done = nep("metrics", "bad", "--stream", *common, cwd=tmp_path, expect=2)
        assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, name
        for text in (str(Path("bad") / third.relative_to(tmp_path / "ds")), "(partition judge=other-1)", *expected):
            assert text in done.stderr, (name, done.stderr)
        assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written

    def with_cell(column, value):
        def write(path):
            frame = original.copy()
            frame[column] = frame[column].astype(object)
            frame.loc[3, column] = value
            frame.to_parquet(path, index=False)

        return write

    bad("unknown verdict", with_cell("verdict", "maybe"), "line 4", "field 'verdict'", "unknown verdict 'maybe'")
    bad("NaN name", with_cell("model_a", np.nan), "line 4", "field 'model_a'", "empty value")
    bad(
        "infinite probability",
        lambda path: original.assign(prob_a=np.where(original.index == 5, np.inf, 0.5)).to_parquet(path, index=False),
        "line 6",
        "field 'prob_a'",
        "not a finite number",
    )
    bad("empty file", lambda path: path.write_bytes(b""), "not readable as Parquet")
    bad("BOM-ish junk", lambda path: path.write_bytes(b"\xef\xbb\xbfinstance_id,verdict\n1,A\n"), "not readable as Parquet")
    assert pd.read_parquet(tmp_path / "ds").shape[0] == len(table)  # the good dataset is untouched


def _readme_block(heading: str) -> list[str]:
    """The command lines of the first ```bash block under ``heading`` in the README."""
    text = (ROOT / "README.md").read_text()
    block = text.split(heading, 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_the_readme_offline_example_runs_as_written(tmp_path, standin):
    """The README's "Try the engine offline" block, line by line through a shell, in a copy of the
    repository's examples whose base_url points at the running stand-in (the README's port 8765
    may be taken on a test machine)."""
    work = _example(tmp_path, standin)
    lines = _readme_block("### Try the engine offline")
    assert lines[0] == "nepotism standin"  # the fixture runs it
    env = os.environ | {"PATH": f"{Path(NEPOTISM).parent}{os.pathsep}{os.environ['PATH']}"}
    for line in lines[1:]:
        done = subprocess.run(["bash", "-c", line], cwd=work, capture_output=True, text=True, timeout=600, env=env)
        allowed = (0, 1) if " --check" in line else (0,)  # a failing threshold is the gate working
        assert done.returncode in allowed, f"{line} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr, line
    assert (work / "report" / "report.html").is_file()
    assert json.loads((work / "results.json").read_text())


def _readme_commands() -> list[tuple[list[str], list[str]]]:
    """(command words, options) of every row of the README's command table."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Command line", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| `nepotism"):
            continue
        cell = line.split("|")[1]
        for snippet in cell.split("`")[1::2]:
            words = snippet.replace("\\|", "|").split()
            command = [w for w in words[1:3] if w.isalpha() and w.islower() and w not in ("list", "show")][:2]
            options = [w.strip("[]").split("=")[0] for w in words if w.strip("[]").startswith("--")]
            rows.append((command, options))
    return rows


@pytest.mark.parametrize("command, options", _readme_commands(), ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_every_readme_command_exists_with_the_options_it_documents(tmp_path, command, options):
    """A README row naming a command or flag that does not exist is a bug."""
    assert command, "a README command row without a command"
    done = nep(*command, "--help", cwd=tmp_path, expect=None)
    if done.returncode != 0:  # a noun whose second word is an argument, not a verb
        done = nep(command[0], "--help", cwd=tmp_path)
    for option in options:
        assert option in done.stdout, f"README documents {option} for nepotism {' '.join(command)}"


def test_recognition_under_a_perturbation_mitigate_metrics_report(tmp_path, standin):
    """Paper 003: recognition asked again on perturbed texts; metrics and report give it per condition."""
    from nepotism.testing.experiments import standin_experiment

    exp = standin_experiment(tmp_path / "work", standin, items=4)
    text = exp.read_text().replace(
        'protocol = "recognition"\n', 'protocol = "recognition"\npairwise = true\noptions = { mode = "labels" }\n'
    )
    exp.write_text(text + '\n[mitigate]\nn_resamples = 0\n[[mitigate.conditions]]\nname = "synonyms"\nkind = "synonym"\nk = 2\n')
    work = exp.parent
    done = nep("mitigate", "exp.toml", "--store", "s.db", "--no-progress", "--json", cwd=work)
    summary = json.loads(done.stdout)["summary"]
    assert summary["perturbations"]["synonyms"]["recognition_questions"] > 0
    assert set(summary["exports"]) == {"pairwise", "recognition-pairwise"}
    # the perturbed texts beside their originals, as pairs for `nepotism annotate` (the human quality check)
    from nepotism.annotate.pairs import load_pairs

    items = load_pairs(work / "out" / "perturbed-pairs.jsonl")
    assert len(items) == summary["perturbed_pairs"]["items"] > 0
    assert all(i.model_b == f"{i.model_a}@synonyms" and i.text_a != i.text_b for i in items)
    serve = subprocess.Popen(
        [NEPOTISM, "annotate", "serve", "out/perturbed-pairs.jsonl", "--annotator", "ann", "--store", "labels.db", "--port", "0"],
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        url = serve.stdout.readline().split("open ", 1)[1].split("/ ", 1)[0].rstrip("/")
        import httpx

        page = httpx.get(url + "/", follow_redirects=True, timeout=30)
        assert page.status_code == 200 and f"Item 1 of {len(items)}" in page.text
    finally:
        serve.terminate()
        serve.wait(timeout=30)
        serve.stdout.close()
        serve.stderr.close()
    out = work / "out"
    records = json.loads(nep("metrics", str(out), "--bootstrap", "0", "--json", cwd=work).stdout)["results"]
    conditions = {(r["judge"], r["condition"]) for r in records if r["metric"] == "recognition-accuracy"}
    assert conditions == {(j, c) for j in ("standin-alpha", "standin-beta") for c in ("default", f"synonyms:{j}")}
    assert {(r["judge"], r["condition"]) for r in records if r["metric"] == "recognition-preference-association"} == conditions
    nep("report", str(out), "--out", "report", "--bootstrap", "0", cwd=work)
    md = (work / "report" / "report.md").read_text()
    section = md.split("## Self-recognition (paper 003)")[1].split("\n## ")[0]
    for judge in ("standin-alpha", "standin-beta"):
        assert f"| {judge} | default | texts as generated |" in section
        assert f"| {judge} | synonyms | perturbed: synonyms |" in section


def test_perplexity_run_metrics_report_and_a_rerun_that_calls_nothing(tmp_path, standin):
    """Paper 001 §5 from a run: [perplexity] → perplexity.csv and perplexity_a/_b → the folder's metrics
    (Figs. 3–5 records) → the report's perplexity section; the rerun sends no call."""
    from nepotism.testing.experiments import standin_experiment

    exp = standin_experiment(tmp_path / "work", standin, items=6, recognition=False)
    exp.write_text(exp.read_text().replace("[output]", '[perplexity]\nresponses = "all"\n\n[output]'))
    work = exp.parent
    plan = json.loads(nep("run", "exp.toml", "--store", "s.db", "--dry-run", "--json", cwd=work).stdout)
    assert plan["perplexity_calls"] == 2 * 6 * 2  # each judge scores both generators' answers
    first = json.loads(nep("run", "exp.toml", "--store", "s.db", "--no-progress", "--json", cwd=work).stdout)
    # the stand-in may give two models the same answer: one call then scores both (same cache key)
    assert first["perplexity"]["done"] == 24 and 0 < first["perplexity"]["sent"] <= 24
    assert first["perplexity"]["scores"] == {"ok": 24}
    again = json.loads(nep("run", "exp.toml", "--store", "s.db", "--no-progress", "--json", cwd=work).stdout)
    assert again["generation"]["sent"] == again["generation"]["total"] == 0  # the answers are stored
    for phase in ("judging", "perplexity"):
        assert again[phase]["sent"] == 0 and again[phase]["cached"] == again[phase]["total"] > 0
    text = nep("run", "exp.toml", "--store", "s.db", "--no-progress", cwd=work).stdout  # a line per phase
    assert [line.split()[0] for line in text.splitlines()[1:4]] == ["generation", "judging", "perplexity"]
    assert "  perplexity      24 calls: 24 cached, 0 sent" in text
    out = work / "out"
    assert json.loads((out / "run.json").read_text())["references"]["perplexity"] == "perplexity.csv"
    records = json.loads(nep("metrics", str(out), "--bootstrap", "50", "--json", cwd=work).stdout)["results"]
    for judge in ("standin-alpha", "standin-beta"):
        wins = [r for r in records if r["metric"] == "perplexity-win-rate" and r["judge"] == judge]
        assert {r["variant"]["group"] for r in wins} == {"all", "self"}  # judge-vs-others: every pair holds its own
        assert {r["variant"]["difference"] for r in wins} == {"perplexity of A − of B"}
        means = {r["variant"]["responses"]: r for r in records if r["metric"] == "mean-log-perplexity" and r["judge"] == judge}
        assert set(means) == {"own", "other"} and all(m["n"] == 6 and m["ci_low"] is not None for m in means.values())
    logged = nep("metrics", str(out), "--bootstrap", "0", "--perplexity-difference", "log", "--json", cwd=work)
    assert {r["variant"]["difference"] for r in json.loads(logged.stdout)["results"] if r["metric"] == "perplexity-win-rate"} == {
        "log perplexity of A − of B"
    }
    nep("report", str(out), "--out", "report", "--bootstrap", "50", cwd=work)
    html = (work / "report" / "report.html").read_text()
    for figure in ("perplexity-0", "perplexity-1", "perplexity-own-other"):  # Figs. 3–4 per judge, then Fig. 5
        assert f'<figure id="{figure}">' in html


def test_rubric_jury_in_the_experiment_run_metrics_report(tmp_path, standin):
    """Paper 002: ``[reference] jury`` in the experiment → run writes the jury's rubric reference → metrics
    RUN_DIR meta-evaluates every judge against it → report shows the table; the same reference as
    ``nepotism grade --jury`` on the exported verdicts, and a rerun calls no model."""
    from nepotism.testing.experiments import standin_experiment

    judges = ("standin-alpha", "standin-alpha-mini", "standin-beta")
    exp = standin_experiment(tmp_path / "work", standin, items=3, generators=judges, judges=judges, recognition=False)
    work = exp.parent
    rows = [
        {
            "id": f"q{i}",
            "prompt": f"Question {i}: name a prime above {10 * i}.",
            "rubric": [{"id": "prime", "text": "Names a prime.", "points": 2}, {"id": "rude", "text": "Is rude.", "points": -1}],
        }
        for i in range(1, 4)
    ]
    (work / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = exp.read_text().replace(
        'protocol = "pairwise"\npairs = "judge-vs-others"\noptions = { mode = "labels", ways = 2 }', 'protocol = "rubric"'
    )
    exp.write_text(text.replace("[output]", f"[reference]\njury = {json.dumps(list(judges))}\n\n[output]"))
    summary = json.loads(nep("run", "exp.toml", "--store", "s.db", "--no-progress", "--json", cwd=work).stdout)
    assert summary["reference"]["jury"] == list(judges) and summary["reference"]["rows"] > 0
    assert set(summary["exports"]) == {"rubric", "rubric-ref", "rubric-items"}
    assert json.loads((work / "out" / "run.json").read_text())["references"] == {
        "rubric-ref": "rubric-reference.csv",
        "rubric-items": "rubric-items.csv",
    }
    nep("grade", "out/rubric.csv", "--jury", ",".join(judges), "--models", "standin_models.toml", "--out", "ref.csv", cwd=work)
    assert (work / "ref.csv").read_text().splitlines()[1:] != []
    assert sorted((work / "ref.csv").read_text().splitlines()) == sorted(
        (work / "out" / "rubric-reference.csv").read_text().splitlines()
    )
    again = json.loads(nep("run", "exp.toml", "--store", "s.db", "--no-progress", "--json", cwd=work).stdout)
    assert again["judging"]["sent"] == 0 and again["reference"] == summary["reference"]
    records = json.loads(nep("metrics", "out", "--bootstrap", "50", "--json", cwd=work).stdout)["results"]
    meta = [r for r in records if r["metric"] == "rubric-f1" and r["variant"].get("reference") == "jury"]
    assert {(r["judge"], r["variant"]["polarity"]) for r in meta} == {
        (j, p) for j in judges for p in ("all", "positive", "negative")
    }
    assert all(r["in_jury"] for r in meta)
    nep("report", "out", "--out", "report", "--bootstrap", "50", cwd=work)
    md = (work / "report" / "report.md").read_text()
    section = md.split("### Each judge against the rubric reference (paper 002 App. C)")[1].split("\n#")[0]
    for judge in judges:
        assert f"| {judge} | default · single-rubric | jury | negative | yes |" in section


def test_a_user_judge_template_as_a_condition(tmp_path, standin):
    """Paper 000 D.3: the same judges under the shipped and a user's pairwise template (a condition);
    the rerun sends nothing, an edited template is new calls, a bad one exits 2 before anything is written."""
    from nepotism.testing.experiments import standin_experiment

    exp = standin_experiment(
        tmp_path / "work",
        standin,
        items=3,
        recognition=False,
        conditions='["default", { name = "terse", options = { template = "pairwise-terse.toml" } }]',
    )
    work = exp.parent
    shutil.copy(EXAMPLES / "templates" / "pairwise-terse.toml", work)
    first = json.loads(nep("run", "exp.toml", "--store", "s.db", "--no-progress", "--json", cwd=work).stdout)
    again = json.loads(nep("run", "exp.toml", "--store", "s.db", "--no-progress", "--json", cwd=work).stdout)
    assert first["judging"]["sent"] > 0 and again["judging"]["sent"] == 0
    records = json.loads(
        nep("metrics", "out/pairwise.csv", "--models", "standin_models.toml", "--bootstrap", "0", "--json", cwd=work).stdout
    )["results"]
    assert {r["condition"] for r in records if r["metric"] == "excluded-verdicts"} == {"default", "terse"}
    template = work / "pairwise-terse.toml"
    template.write_text(template.read_text().replace("Question:", "The question:"))
    edited = json.loads(nep("run", "exp.toml", "--store", "s.db", "--no-progress", "--json", cwd=work).stdout)
    assert edited["judging"]["sent"] == first["judging"]["sent"] // 2  # the terse condition's calls only
    template.write_text(template.read_text().replace("{{ m.quoted(second) }}", "{{ m.quoted(secnd) }}"))
    bad = nep("run", "exp.toml", "--store", "fresh.db", "--no-progress", cwd=work, expect=2)
    line = template.read_text().splitlines().index("{{ m.quoted(secnd) }}") + 1
    assert f"pairwise-terse.toml, line {line}, field 'template': unknown placeholder {{{{ secnd }}}}" in bad.stderr
    assert not (work / "fresh.db").exists()


def test_a_rerun_after_editing_a_judge_option_exports_the_new_judgments_only(tmp_path, standin):
    """Issue 21: the output folder holds this run's plan, not every judgment of the store: an option
    that changes how a cached call is read (new judgments, no call sent), then one that changes the
    request (new calls, the same judgments read again), each rerun on the same store."""
    from nepotism.store import Store

    work = _example(tmp_path, standin)
    exp = work / "examples" / "standin.toml"
    first = json.loads(nep("run", "examples/standin.toml", "--no-progress", "--json", cwd=work).stdout)
    pairwise = work / first["exports"]["pairwise"]
    rows = len(pairwise.read_text().splitlines())
    assert rows > 1
    exp.write_text(exp.read_text().replace("min_label_mass = 0.2 }", "min_label_mass = 0.25 }"))
    edited = json.loads(nep("run", "examples/standin.toml", "--no-progress", "--json", cwd=work).stdout)
    assert edited["judging"]["sent"] == 0  # the same calls, read under the new option
    assert len(pairwise.read_text().splitlines()) == rows
    nep("metrics", str(pairwise.parent), "--bootstrap", "0", "--json", cwd=work)  # exit 0: no duplicates
    db = work / "examples" / "results" / "standin" / "nepotism.db"
    with Store.read_only(db) as store:
        stored = [j for j in store.judgments(protocol="pairwise")]
    assert len(stored) == 2 * (rows - 1)  # both versions are in the store, one in the folder
    assert sum("minmass0.25" in (j.template_id or "") for j in stored) == rows - 1
    exp.write_text(exp.read_text().replace("min_label_mass = 0.25 }", "min_label_mass = 0.25, temperature = 0.5 }"))
    hotter = json.loads(nep("run", "examples/standin.toml", "--no-progress", "--json", cwd=work).stdout)
    assert hotter["judging"]["sent"] > 0  # new requests; their judgments have the same ids as before
    assert len(pairwise.read_text().splitlines()) == rows
    nep("metrics", str(pairwise.parent), "--bootstrap", "0", "--json", cwd=work)
    with Store.read_only(db) as store:
        latest = {r["id"] for r in store.runs()[-1:]}
        read = [j for j in store.judgments(protocol="pairwise") if "minmass0.25" in (j.template_id or "")]
        keys = {
            k
            for (k,) in store._conn().execute(
                "SELECT call_key FROM judgments WHERE template_id LIKE '%minmass0.25%' AND protocol = 'pairwise'"
            )
        }
        runs = {
            r
            for (r,) in store._conn().execute(
                f"SELECT DISTINCT run_id FROM calls WHERE key IN ({','.join('?' * len(keys))})", list(keys)
            )
        }
    assert len(read) == rows - 1 and runs == latest  # each read from the latest run's call
