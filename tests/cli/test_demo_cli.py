"""``nepotism demo``: real bundled judgments, plain words, three files, reproducible numbers."""

import json

from click.testing import CliRunner

from nepotism.cli import main


def run_demo(tmp_path, *args):
    result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path), *args])
    assert result.exit_code == 0, result.output
    return result


def test_demo_writes_json_csv_html_and_explains(tmp_path):
    result = run_demo(tmp_path / "out", "--bootstrap", "200")
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"results.json", "results.csv", "report.html", "report.md"}
    text = result.output
    # the answer first: the verdict table, the registry names of judges named otherwise, the sentences
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("nepotism demo (pairwise)"))
    assert lines[first + 1].split()[:4] == ["judge", "condition", "relation", "verdict"]
    assert "gpt4_1106_preview = gpt-4-1106-preview" in text
    assert "95% CI" in text and "prompts" in text and "left out" in text
    assert "cannot tell favouritism from better answers" in text  # one judge per pair: the judge alone
    assert "gpt4_1106_preview ('weighted_alpaca_eval_gpt4_turbo') prefers its own answers over unrelated models in 80.7%" in text
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    metrics = {r["metric"] for r in document["results"]}
    assert {"win-rate", "self-preference-ratio", "demographic-parity-bias", "paired-win-rate-gap"} <= metrics
    # the headline: GPT-4-1106 prefers its own answers over unrelated models' in most comparisons
    spr = [
        r
        for r in document["results"]
        if r["metric"] == "self-preference-ratio"
        and r["scope"] == "self"
        and r["condition"] == "weighted_alpaca_eval_gpt4_turbo"
        and r["variant"]["opponents"] == "unrelated"
        and "averaging" not in r["variant"]
    ]  # the pooled share, not paper 004's per-evaluatee tables
    assert len(spr) == 1 and 0.75 < spr[0]["value"] < 0.85 and spr[0]["n_clusters"] == 805
    # AlpacaEval randomised the order each judge saw: no position metric, and the text says why
    assert "position-consistency" not in metrics
    assert "random order" in " ".join(text.split())
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<img" in html and "data:image/png;base64," in html and "http://" not in html.replace("http://www.w3.org", "")


def test_demo_same_seed_same_numbers(tmp_path):
    run_demo(tmp_path / "a", "--bootstrap", "100", "--seed", "3")
    run_demo(tmp_path / "b", "--bootstrap", "100", "--seed", "3")
    a = json.loads((tmp_path / "a" / "results.json").read_text())["results"]
    b = json.loads((tmp_path / "b" / "results.json").read_text())["results"]
    assert a == b


def test_demo_json_output(tmp_path):
    result = run_demo(tmp_path / "j", "--bootstrap", "0", "--json")
    document = json.loads(result.output)
    assert document["summary"]["rows"] > 100_000
    assert all(r["ci_low"] is None for r in document["results"])  # --bootstrap 0: no intervals
