"""``nepotism explain`` (and ``report --texts``) through the installed executable, as a user chains them:
on a dataset the test builds itself (a planted panel with hostile answer texts) and on the gallery's
recorded data (paper 004's MBPP file, arena-bench) with their texts."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / ".." / "shared" / "data"
MBPP = SHARED / "mbpp_selfpref" / "llama-3.3-70b_gpt-4o_eval.jsonl"
ARENA_BENCH = SHARED / "arena_bench_v1"
EXE = Path(sys.executable).with_name("nepotism")
#: Text a hostile answer could hold: a terminal colour escape, a right-to-left override, markup.
HOSTILE = "\x1b[31mred\x1b[0m \u202eevil <script>window.__pwned=1</script>"


def nep(*args, cwd: Path, expect: int | None = 0) -> subprocess.CompletedProcess:
    assert EXE.exists(), f"the nepotism executable is not installed beside {sys.executable}"
    done = subprocess.run([str(EXE), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=600)
    if expect is not None:
        assert done.returncode == expect, f"{args} -> {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr
    return done


def panel_with_texts(folder: Path) -> dict[str, Path]:
    """A planted panel written as a user's files (`write_tables`) and a texts file with every answer,
    judge-b's ending in hostile text."""
    from nepotism.simulate import panel_spec, simulate, write_tables

    sim = simulate(panel_spec(n_instances=60, planted={"self": 1.0, "family": 1.0, "student": 1.0}), seed=4, kinds=("pairwise",))
    paths = {k: Path(v) for k, v in write_tables(sim, folder).items()}
    rows = [
        {
            "instance_id": i,
            "model": m,
            "text": f"answer of {m} to {i}" + (f" {HOSTILE}" if m == "judge-b" else ""),
            "prompt": f"question {i}?",
        }
        for i in sorted(set(sim.pairwise["instance_id"]))
        for m in sim.spec.generators
    ]
    paths["texts"] = folder / "texts.jsonl"
    paths["texts"].write_text("".join(json.dumps(r) + "\n" for r in rows))
    return paths


@pytest.fixture(scope="module")
def panel(tmp_path_factory):
    return panel_with_texts(tmp_path_factory.mktemp("panel"))


def _args(panel):
    return (panel["pairwise"], "--reference", panel["preference-ref"], "--models", panel["registry"], "--bootstrap", "100")


def test_explain_prints_the_verdict_metrics_gives_then_its_cases(panel, tmp_path):
    document = json.loads(nep("metrics", *_args(panel), "--json", cwd=tmp_path).stdout)
    verdict = next(v for v in document["verdicts"] if v["judge"] == "judge-b" and v["scope"] == "self")
    done = nep(
        "explain", *_args(panel), "--judge", "judge-b", "--scope", "self", "--texts", panel["texts"], "--limit", "3", cwd=tmp_path
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "nepotism explain — judge-b, its own answers (condition 'default')"
    assert lines[1] == f"Verdict: {verdict['sentence']}"
    assert lines[2].startswith("Cases: matched-bias's comparisons")
    assert any(line.startswith("Kinder to its relative than the unrelated judges: ") for line in lines)
    assert any(line.startswith("Harsher on its relative than the unrelated judges: ") for line in lines)
    assert "every other judge: judge-a (" in done.stdout and "the reference: " in done.stdout
    assert "     answer of judge-b:" in done.stdout and "       | question " in done.stdout
    assert sum(line.startswith("  1. prompt ") for line in lines) == 2  # one list per direction
    assert sum(line.lstrip().startswith(("1. prompt", "2. prompt", "3. prompt")) for line in lines) == 6

    as_json = nep("explain", *_args(panel), "--judge", "judge-b", "--texts", panel["texts"], "--json", cwd=tmp_path)
    found = json.loads(as_json.stdout)  # exactly one document
    assert found["verdict"] == verdict
    assert found["reading"]["metric"] == "matched-bias" and found["reading"]["rung"] == "matched"
    kinder = found["groups"][0]
    assert kinder["name"] == "kinder" and kinder["shown"] == 5 and kinder["n"] > found["groups"][1]["n"]
    first = kinder["cases"][0]
    assert first["text_related"] == f"answer of judge-b to {first['instance_id']} {HOSTILE}"
    assert first["text_other"] == f"answer of {first['other']} to {first['instance_id']}"
    assert first["prompt"] == f"question {first['instance_id']}?"
    assert found["texts"]["answers_missing"] == 0


def test_hostile_texts_are_printed_as_visible_escapes(panel, tmp_path):
    done = nep("explain", *_args(panel), "--judge", "judge-b", "--texts", panel["texts"], "--limit", "1", cwd=tmp_path)
    assert "\\x1b[31mred\\x1b[0m \\u202eevil <script>" in done.stdout
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout


def test_a_relation_without_evidence_says_why(panel, tmp_path):
    done = nep("explain", *_args(panel), "--judge", "judge-c", "--scope", "family", cwd=tmp_path)
    assert "not measurable" in done.stdout and "no cases: no generator of its family" in done.stdout
    found = json.loads(nep("explain", *_args(panel), "--judge", "judge-c", "--json", cwd=tmp_path).stdout)
    assert found["groups"] == [] and found["note"].startswith("no cases: its own answers are not among")


def test_bad_choices_and_bad_texts_exit_2_naming_what_is_wrong(panel, tmp_path):
    done = nep("explain", *_args(panel), "--judge", "judge-z", cwd=tmp_path, expect=2)
    assert done.stdout == "" and "judge-a, judge-b, judge-c, judge-d, judge-e" in done.stderr
    assert "--judge" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = nep("explain", *_args(panel), "--judge", "judge-b", "--scope", "cousins", cwd=tmp_path, expect=2)
    assert "self" in done.stderr and "family-student" in done.stderr and done.stdout == ""
    bad = tmp_path / "bad-texts.jsonl"
    bad.write_text(
        '{"instance_id": "x00000", "model": "judge-b", "text": "fine"}\n\n{"instance_id": "x00001", "model": "judge-b"}\n'
    )
    done = nep("explain", *_args(panel), "--judge", "judge-b", "--texts", bad, "--json", cwd=tmp_path, expect=2)
    assert done.stdout == "" and f"{bad}, line 3, field 'text'" in done.stderr
    results = tmp_path / "results.json"
    results.write_text(nep("metrics", *_args(panel), "--json", cwd=tmp_path).stdout)
    done = nep("explain", results, "--judge", "judge-b", cwd=tmp_path, expect=2)
    assert "not judgments" in done.stderr and done.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad-texts.jsonl", "results.json"]


def test_report_shows_the_cases_behind_the_summary(panel, tmp_path):
    nep("report", *_args(panel), "--texts", panel["texts"], "--out", "report", cwd=tmp_path)
    html = (tmp_path / "report" / "report.html").read_text()
    assert 'href="#cases-judge-b-self">cases behind it</a>' in html and 'id="cases-judge-b-self"' in html
    assert html.count('<details class="case">') > 10 and 'class="case-text case-related"' in html
    assert "<script>window.__pwned" not in html and "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "## Cases behind the verdicts" in markdown and "### judge-b, its own answers (condition default)" in markdown
    nep("report", *_args(panel), "--out", "plain", cwd=tmp_path)  # without texts: the cases, no answers
    plain = (tmp_path / "plain" / "report.html").read_text()
    assert 'id="cases-judge-b-self"' in plain and "Texts not given" in plain and "case-related" not in plain
    nep("report", *_args(panel), "--cases", "0", "--out", "none", cwd=tmp_path)
    assert 'id="cases"' not in (tmp_path / "none" / "report.html").read_text()
    done = nep("report", "report/results.json", "--texts", panel["texts"], "--out", "again", cwd=tmp_path, expect=2)
    assert "--texts" in done.stderr and not (tmp_path / "again").exists()


# ----------------------------------------------------------------------------------- the gallery's data
@pytest.mark.skipif(not MBPP.exists(), reason="../shared/data/mbpp_selfpref is absent")
def test_explain_on_paper_004s_mbpp_file_with_its_texts(tmp_path):
    nep(
        "import",
        MBPP,
        "--format",
        "mbpp-selfpref",
        "--canonical",
        "--out",
        "judgments.csv",
        "--reference-out",
        "correctness.csv",
        "--texts-out",
        "texts.jsonl",
        cwd=tmp_path,
    )
    args = (
        "judgments.csv",
        "--reference",
        "correctness.csv",
        "--judge",
        "llama-3.3-70b-instruct",
        "--texts",
        "texts.jsonl",
        "--bootstrap",
        "100",
    )
    found = json.loads(nep("explain", *args, "--json", cwd=tmp_path).stdout)
    # probabilities read by default (paper 004): 48 problems where exactly one program passes, enough for
    # the reference rung (equal-opportunity bias against the correctness reference)
    assert found["verdict"]["rung"] == "reference" and found["reading"]["metric"] == "equal-opportunity-bias"
    assert found["texts"]["answers_missing"] == 0
    harmful = found["groups"][0]
    assert harmful["name"] == "for-relative-against-reference" and harmful["n"] > 0
    for case in harmful["cases"]:  # it picked its own failing code over GPT-4o's passing code
        assert case["related"] == "llama-3.3-70b-instruct" and case["other"] == "gpt-4o" and case["truth"] == -1.0
        assert case["text_related"] and case["text_other"] and "Your code should satisfy these tests" in case["prompt"]
    assert found["groups"][1]["name"] == "against-relative-against-reference"
    plain = nep("explain", *args, cwd=tmp_path).stdout
    assert "the reference: gpt-4o is better" in plain and "answer of gpt-4o:" in plain


def _arena_texts(path: Path) -> Path:
    """arena-bench's answers as a texts file (the fastchat-single importer carries none): FastChat's
    model_answer files joined with question.jsonl, keyed as the importer keys its rows."""
    with gzip.open(ARENA_BENCH / "question.jsonl.gz", "rt", encoding="utf-8") as handle:
        questions = {q["question_id"]: q["turns"][0] for q in map(json.loads, handle)}
    with open(path, "w", encoding="utf-8") as out:
        for file in sorted((ARENA_BENCH / "model_answer").glob("*.jsonl.gz")):
            with gzip.open(file, "rt", encoding="utf-8") as handle:
                for answer in map(json.loads, handle):
                    out.write(
                        json.dumps(
                            {
                                "instance_id": f"fastchat/{answer['question_id']}",
                                "model": answer["model_id"],
                                "text": answer["choices"][0]["turns"][0],
                                "prompt": questions.get(answer["question_id"]),
                            }
                        )
                        + "\n"
                    )
    return path


@pytest.mark.skipif(not ARENA_BENCH.exists(), reason="../shared/data/arena_bench_v1 is absent")
def test_explain_on_arena_bench_with_its_answers(tmp_path):
    judgments = sorted((ARENA_BENCH / "model_judgment").glob("*.jsonl.gz"))
    nep("import", *judgments, "--format", "fastchat-single", "--out", "grades.csv", cwd=tmp_path)
    texts = _arena_texts(tmp_path / "texts.jsonl")
    args = ("grades.csv", "--judge", "gpt-4", "--texts", texts, "--bootstrap", "100", "--limit", "2")
    found = json.loads(nep("explain", *args, "--scope", "family", "--json", cwd=tmp_path).stdout)
    assert found["reading"]["kind"] == "pointwise" and found["verdict"]["rung"] == "alone"
    assert found["texts"]["answers_missing"] == 0
    for group in found["groups"]:
        for case in group["cases"]:
            own = next(j for j in case["judges"] if j["judge"] == "gpt-4")
            assert case["value"] == own["related_score"] - own["other_score"]
            assert case["text_related"] and case["text_other"] and case["prompt"]
    gaps = [abs(c["value"]) for c in found["groups"][0]["cases"]]
    assert gaps == sorted(gaps, reverse=True) and gaps[0] == 9  # a 10 against a 1: the largest gap a 1-10 scale has
    self_scope = nep("explain", *args, cwd=tmp_path).stdout
    assert "no cases: its own answers are not among the 16 generators it judged" in self_scope


def test_a_pair_judged_twice_is_one_case_and_a_long_prompt_id_one_short_line(tmp_path):
    """Cases are pairs (their verdicts averaged), the record counts comparisons: when a judge gave some
    pair two verdicts the two counts differ and explain says so instead of calling both "comparisons"
    (on EloBench's battles, 1,033 pairs against the verdict's 1,037 comparisons). A prompt id that is the
    prompt itself (a user mapping instance_id to a question column) prints on one line, cut short."""
    long_id = "Write a poem\nabout the sea,\n\n" + "with many words " * 20
    rows = ["instance_id,judge,model_a,model_b,verdict,replicate"]
    for i in range(40):
        ident = f'"{long_id} {i}"' if i < 3 else f"q{i}"
        rows.append(f"{ident},gpt-4,gpt-4,claude-2,{'A' if i % 3 else 'B'},0")
    rows.append("q5,gpt-4,gpt-4,claude-2,B,1")  # the same pair judged again
    table = tmp_path / "pairs.csv"
    table.write_text("\n".join(rows) + "\n")
    document = json.loads(nep("metrics", table, "--json", "--bootstrap", "50", cwd=tmp_path).stdout)
    verdict = next(v for v in document["verdicts"] if v["scope"] == "self")
    assert verdict["n"] == 41
    done = nep("explain", table, "--judge", "gpt-4", "--scope", "self", "--bootstrap", "50", "--json", cwd=tmp_path)
    reading = json.loads(done.stdout)["reading"]
    assert (reading["n"], reading["record_n"], reading["unit"]) == (40, 41, "pair")
    lines = nep(
        "explain", table, "--judge", "gpt-4", "--scope", "self", "--bootstrap", "50", "--limit", "40", cwd=tmp_path
    ).stdout.splitlines()
    cases = next(line for line in lines if line.startswith("Cases:"))
    assert "40 pairs (the record counts 41 comparisons: a pair the judge gave more than one verdict is one case" in cases
    assert not any(line.strip().endswith("comparisons") for line in lines if line and not line.startswith(" "))
    shown = [
        line
        for line in lines
        if line.lstrip().startswith(("1. prompt", "2. prompt", "3. prompt")) or "prompt Write a poem" in line
    ]
    assert shown and all(len(line) < 160 and "characters)" in line for line in shown if "Write a poem" in line)
    assert "about the sea," not in [line.strip() for line in lines]  # no prompt id breaks a case's line
    report = tmp_path / "report"
    nep("report", table, "--out", report, "--bootstrap", "50", cwd=tmp_path)
    markdown = (report / "report.md").read_text()
    assert "40 pairs (the record counts 41 comparisons" in markdown and "\nabout the sea," not in markdown
