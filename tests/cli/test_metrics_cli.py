"""``nepotism metrics`` on recorded files: records, errors with exit status 2, nothing written."""

import json

import pytest

from click.testing import CliRunner

from nepotism.cli import main

HEADER = "instance_id,judge,model_a,model_b,verdict\n"


def write_judgments(path, n=30):
    lines = [HEADER]
    for i in range(n):
        lines.append(f"p{i},gpt-4o-2024-05-13,gpt-4o-2024-05-13,claude-3-opus-20240229,{'A' if i % 3 else 'B'}\n")
        lines.append(f"p{i},gpt-4o-2024-05-13,claude-3-opus-20240229,gpt-4o-2024-05-13,{'B' if i % 4 else 'tie'}\n")
    path.write_text("".join(lines))
    return path


def test_metrics_json_records(tmp_path):
    path = write_judgments(tmp_path / "j.csv")
    result = CliRunner().invoke(main, ["metrics", str(path), "--json", "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["schema_version"] == 2 and document["verdicts"] and document["findings"]
    records = document["results"]
    spr = [
        r
        for r in records
        if r["metric"] == "self-preference-ratio"
        and r["scope"] == "self"
        and r["variant"]["opponents"] == "unrelated"
        and "averaging" not in r["variant"]
    ]  # pooled, not 004's tables
    assert len(spr) == 1
    for key in ("metric", "judge", "variant", "value", "ci_low", "ci_high", "n", "n_excluded"):
        assert key in spr[0]
    assert spr[0]["n"] == 30 and spr[0]["n_clusters"] == 30


def test_piped_output_keeps_every_record_on_one_unwrapped_line(tmp_path):
    """Piped (a CI log, `| cat`): no box drawing, no wrapping at 80 columns, the verdicts first, then
    with --all one line per record, and an undefined value says why."""
    path = write_judgments(tmp_path / "j.csv")
    result = CliRunner().invoke(main, ["metrics", str(path), "--bootstrap", "50", "--all"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    records = json.loads(CliRunner().invoke(main, ["metrics", str(path), "--bootstrap", "50", "--json"]).output)["results"]
    lines = result.output.splitlines()
    assert not any(ch in result.output for ch in "│┃━─")
    header = next(i for i, line in enumerate(lines) if line.startswith("metric "))
    rows = lines[header + 1 : header + 1 + len(records)]
    assert [row.split()[0] for row in rows] == [r["metric"] for r in records]
    undefined = [row for row, r in zip(rows, records) if r["value"] is None]
    assert all("— (" in row for row in undefined)
    assert lines[0].startswith("nepotism metrics") and lines[1].split()[:2] == ["judge", "relation"]
    tsv = CliRunner().invoke(main, ["metrics", str(path), "--bootstrap", "50", "--format", "tsv", "--all"])
    table = [line.split("\t") for line in tsv.output.splitlines()]
    first = next(i for i, row in enumerate(table) if row[0] == "metric")
    assert len(table) - first == len(records) + 1 and {len(row) for row in table[first:]} == {10}
    verdicts = CliRunner().invoke(main, ["metrics", str(path), "--bootstrap", "50", "--format", "tsv"])
    rows = [line.split("\t") for line in verdicts.output.splitlines()]
    assert rows[0] == ["judge", "relation", "verdict", "value", "95% CI", "prompts", "evidence"]
    assert {len(row) for row in rows} == {7} and len(rows) == 1 + 4


def test_metrics_table_output(tmp_path):
    path = write_judgments(tmp_path / "j.csv")
    result = CliRunner().invoke(main, ["metrics", str(path), "--bootstrap", "50"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "self-preference-ratio" in result.output


def test_unknown_judge_is_exit_2_naming_file_line_field(tmp_path):
    path = tmp_path / "j.csv"
    path.write_text(HEADER + "p1,gpt-4o-2024-05-13,x,y,A\np2,my-secret-judge,x,y,B\n")
    result = CliRunner().invoke(main, ["metrics", str(path)])
    assert result.exit_code == 2
    assert f"{path}, line 3, field 'judge'" in result.output
    assert "not in the model registry" in result.output


def test_judge_from_user_registry_file(tmp_path):
    registry = tmp_path / "models.toml"
    registry.write_text('[models."my-judge"]\nfamily = "mine"\n')
    path = tmp_path / "j.csv"
    path.write_text(HEADER + "p1,my-judge,my-judge,gpt-4o-2024-05-13,A\n")
    result = CliRunner().invoke(main, ["metrics", str(path), "--models", str(registry), "--json", "--bootstrap", "0"])
    assert result.exit_code == 0, result.output


def test_malformed_input_writes_nothing(tmp_path):
    path = tmp_path / "j.csv"
    path.write_text(HEADER + "p1,gpt-4o-2024-05-13,x,y,perhaps\n")
    before = set(tmp_path.iterdir())
    result = CliRunner().invoke(main, ["metrics", str(path)])
    assert result.exit_code == 2 and "unknown verdict" in result.output
    assert set(tmp_path.iterdir()) == before


# ---------------------------------------------------------------- every table kind, options, record shape
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

MODELS = ("judge-a", "judge-b", "other-1", "other-2")
RECORD_KEYS = {"metric", "judge", "generator", "pair", "variant", "value", "ci_low", "ci_high", "n", "n_excluded"}


def registry_file(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text("\n".join(f'[models."{m}"]\nfamily = "{m}"\n' for m in MODELS))
    return path


def run(args, tmp_path):
    result = CliRunner().invoke(main, ["metrics", *map(str, args), "--models", str(registry_file(tmp_path))])
    assert result.exit_code == 0, result.output
    return result


def run_json(args, tmp_path):
    return json.loads(run([*args, "--json"], tmp_path).output)["results"]


def pairwise_files(tmp_path, n=40, perplexity=False):
    rng = np.random.default_rng(0)
    rows, refs = [], []
    for i in range(n):
        for x, y in (("judge-a", "other-1"), ("judge-a", "other-2"), ("other-1", "other-2")):
            refs.append({"instance_id": f"p{i}", "model_a": x, "model_b": y, "winner": x if rng.random() < 0.5 else y})
            for judge in ("judge-a", "judge-b"):
                for a, b in ((x, y), (y, x)):
                    p_a = (
                        0.8
                        if (judge == "judge-a" and a == "judge-a")
                        else 0.2
                        if (judge == "judge-a" and b == "judge-a")
                        else 0.5
                    )
                    row = {
                        "instance_id": f"p{i}",
                        "judge": judge,
                        "model_a": a,
                        "model_b": b,
                        "verdict": "A" if rng.random() < p_a else "B",
                    }
                    if perplexity:
                        row["perplexity_a"], row["perplexity_b"] = rng.uniform(2, 9, 2)
                    rows.append(row)
    judgments, ref = tmp_path / "pairwise.csv", tmp_path / "pref.csv"
    pd.DataFrame(rows).to_csv(judgments, index=False)
    pd.DataFrame(refs).to_csv(ref, index=False)
    return judgments, ref


def test_pairwise_with_references_json_shape(tmp_path):
    judgments, ref = pairwise_files(tmp_path, perplexity=True)
    records = run_json([judgments, "--reference", ref, "--bootstrap", "50"], tmp_path)
    metrics = {r["metric"] for r in records}
    assert {
        "win-rate",
        "self-preference-ratio",
        "equal-opportunity-bias",
        "error-bias",
        "mipa",
        "ranking-difference",
        "perplexity-win-rate",
        "position-consistency",
    } <= metrics
    for r in records:
        assert RECORD_KEYS <= set(r)
        assert isinstance(r["variant"], dict)
    spr = [r for r in records if r["metric"] == "self-preference-ratio" and r["judge"] == "judge-a" and r["scope"] == "self"][0]
    assert spr["value"] > 0.6


def test_same_seed_same_numbers_other_seed_other_intervals(tmp_path):
    judgments, ref = pairwise_files(tmp_path)
    base = [judgments, "--reference", ref, "--bootstrap", "60", "--confidence", "0.9"]
    a = run_json([*base, "--seed", "5"], tmp_path)
    b = run_json([*base, "--seed", "5"], tmp_path)
    c = run_json([*base, "--seed", "6"], tmp_path)
    assert a == b
    assert [r["ci_low"] for r in a] != [r["ci_low"] for r in c]
    # (undefined audit records carry the default level: analyses/audit.py does not pass it on)
    assert {r["confidence"] for r in a if r["value"] is not None} == {0.9}
    assert {r["n_resamples"] for r in a if r["value"] is not None and r.get("ci_low") is not None} == {60}


def rubric_files(tmp_path, n=30):
    rng = np.random.default_rng(1)
    rows, refs, items = [], [], []
    for i in range(n):
        for k in range(4):
            items.append(
                {"instance_id": f"x{i}", "rubric_id": f"r{k}", "text": "word " * (k + 2), "points": -2 if k == 3 else k + 1}
            )
            for model in MODELS:
                truth = bool(rng.random() < 0.5)
                refs.append({"instance_id": f"x{i}", "model": model, "rubric_id": f"r{k}", "met": truth})
                for judge in ("judge-a", "judge-b"):
                    lenient = 0.6 if (judge == "judge-a" and model == "judge-a") else 0.15
                    met = truth or bool(rng.random() < lenient)
                    rows.append(
                        {
                            "instance_id": f"x{i}",
                            "judge": judge,
                            "model": model,
                            "rubric_id": f"r{k}",
                            "met": met,
                            "category": "even" if i % 2 == 0 else "odd",
                        }
                    )
    paths = [tmp_path / name for name in ("rubric.csv", "rubric_ref.csv", "items.csv")]
    for frame, path in zip((rows, refs, items), paths):
        pd.DataFrame(frame).to_csv(path, index=False)
    return paths


def test_rubric_with_reference_committee_and_slices(tmp_path):
    judgments, ref, items = rubric_files(tmp_path)
    records = run_json(
        [
            judgments,
            "--reference",
            ref,
            "--reference",
            items,
            "--bootstrap",
            "40",
            "--committee",
            "judge-a,judge-b",
            "--slice",
            "category",
            "--slice",
            "rubric-polarity",
            "--agreement",
            "0.9",
        ],
        tmp_path,
    )
    assert any(r["variant"].get("agreement_at_least") == 0.9 for r in records)
    metrics = {r["metric"] for r in records}
    assert {"mra", "overestimation-rate", "hspp-ratio", "mipa", "score-delta", "ranking-difference"} <= metrics
    judges = {r["judge"] for r in records}
    assert "committee(judge-a+judge-b)" in judges
    assert any(r["condition"] == "default | committee(judge-a+judge-b)" for r in records)
    slices = [r["variant"]["slice"] for r in records if "slice" in r["variant"]]
    assert {"category": "even"} in slices and {"rubric-polarity": "negative"} in slices
    hspp = [
        r
        for r in records
        if r["metric"] == "hspp-ratio"
        and r["judge"] == "judge-a"
        and r["scope"] == "self"
        and r["condition"] == "default"
        and r["variant"] == {"level": "rubric", "denominator": "not-family"}
    ][0]
    assert hspp["value"] > 1.5


def test_pointwise_with_leaderboard_and_rank_against(tmp_path):
    rng = np.random.default_rng(2)
    rows = [
        {"instance_id": f"x{i}", "judge": j, "model": m, "score": float(rng.integers(1, 11))}
        for i in range(30)
        for j in ("judge-a", "judge-b")
        for m in MODELS
    ]
    path, board = tmp_path / "scores.jsonl", tmp_path / "board.csv"
    pd.DataFrame(rows).to_json(path, orient="records", lines=True)
    board.write_text("model,score\njudge-a,4\njudge-b,3\nother-1,2\nother-2,1\n")
    records = run_json([path, "--leaderboard", board, "--rank-against", "judge-b", "--bootstrap", "30"], tmp_path)
    assert {r["metric"] for r in records} == {
        "self-preference-ratio",
        "ranking-difference",
        "excluded-verdicts",
        "leaderboard-rank",
        "matched-bias",
        "exclusion-share-gap",
    }  # the same records as nepotism report
    against = {r["variant"]["against"] for r in records if r["metric"] == "ranking-difference"}
    assert against == {"leaderboard", "judge judge-b"}
    assert all(r["variant"].get("paradigm") == "pointwise" for r in records if r["metric"] == "self-preference-ratio")


def test_recognition_with_pairwise_and_correlate(tmp_path):
    judgments, _ = pairwise_files(tmp_path)
    frame = pd.read_csv(judgments)
    recog = frame[frame["model_a"].eq("judge-a") | frame["model_b"].eq("judge-a")].drop(columns="verdict").copy()
    recog["choice"] = np.where(recog["model_a"] == "judge-a", "A", "B")
    recog.loc[recog.index[::5], "choice"] = np.where(recog["model_a"].iloc[::5] == "judge-a", "B", "A")
    rec_path = tmp_path / "recognition.csv"
    recog.to_csv(rec_path, index=False)
    records = run_json(
        [rec_path, judgments, "--bootstrap", "30", "--correlate", "recognition-accuracy,self-preference-ratio"], tmp_path
    )
    acc = [r for r in records if r["metric"] == "recognition-accuracy" and r["judge"] == "judge-a"][0]
    assert acc["value"] == pytest.approx(0.8, abs=0.02)
    assert any(r["metric"] == "recognition-preference-association" for r in records)
    corr = [r for r in records if r["metric"] == "correlation"][0]
    assert corr["variant"]["x"] == "recognition-accuracy" and RECORD_KEYS <= set(corr)


def test_table_output_for_rubric(tmp_path):
    judgments, ref, _ = rubric_files(tmp_path, n=10)
    result = CliRunner().invoke(
        main,
        [
            "metrics",
            str(judgments),
            "--reference",
            str(ref),
            "--bootstrap",
            "20",
            "--models",
            str(registry_file(tmp_path)),
            "--all",
        ],
        env={"COLUMNS": "250"},
    )
    assert result.exit_code == 0, result.output
    assert "hspp-ratio" in result.output and result.output.startswith("nepotism metrics")


def test_bad_options_are_exit_2(tmp_path):
    judgments, ref = pairwise_files(tmp_path, n=5)
    cases = [
        ["--committee", "judge-a"],
        ["--committee", "judge-a,nobody"],
        ["--correlate", "win-rate,unknown-metric"],
        ["--reference", judgments],
    ]
    for extra in cases:
        result = CliRunner().invoke(main, ["metrics", str(judgments), *map(str, extra), "--models", str(registry_file(tmp_path))])
        assert result.exit_code == 2, (extra, result.output)
    board = tmp_path / "bad.csv"
    board.write_text("model,points\na,1\n")
    result = CliRunner().invoke(
        main, ["metrics", str(judgments), "--leaderboard", str(board), "--models", str(registry_file(tmp_path))]
    )
    assert result.exit_code == 2 and "field 'score'" in result.output


def test_two_judges_and_sixty_generators_fit_on_one_screen(tmp_path):
    """The answer first and short: a table of two judges of one family and sixty generators prints at
    most 80 lines by default (verdicts, sentences, what each judge saw, exclusions), every record
    only with --all."""
    import random

    rng = random.Random(0)
    generators = ["gpt-4-0613", "gpt-3.5-turbo-0613"] + [f"chatbot-{i}" for i in range(58)]
    lines = [HEADER]
    for judge in ("gpt-4-0613", "gpt-3.5-turbo-0613"):
        for i in range(200):
            a, b = rng.sample(generators, 2)
            verdict = rng.choice("AB")
            lines.append(f"p{i},{judge},{a},{b},{verdict}\n")
            lines.append(f"p{i},{judge},{b},{a},{'B' if verdict == 'A' else 'A'}\n")
    path = tmp_path / "sixty.csv"
    path.write_text("".join(lines))
    result = CliRunner().invoke(main, ["metrics", str(path), "--bootstrap", "50"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    out = result.output.splitlines()
    assert len(out) <= 80, "\n".join(out)
    assert out[0].startswith("nepotism metrics") and "how much each judge favours its relatives" in out[0]
    assert out[1].split()[:3] == ["judge", "relation", "verdict"]
    assert {line.split()[0] for line in out[2:10]} == {"gpt-4-0613", "gpt-3.5-turbo-0613"}
    assert "58" in result.output and "--all" in out[-1]  # the unknown generators, counted once; the way to the rest
    everything = CliRunner().invoke(main, ["metrics", str(path), "--bootstrap", "50", "--all"], env={"COLUMNS": "100"})
    assert len(everything.output.splitlines()) > 200
