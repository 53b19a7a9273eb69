"""``nepotism import``: outputs, validation, exit status 2, and nothing written on failure."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nepotism.cli import main
from nepotism.tables import read_table

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
MBPP = FIXTURES / "llama-3.3-70b_gpt-4o_eval.jsonl"
ARENA = (
    FIXTURES
    / "dataset=judgebench,response_model=claude-3-5-sonnet-20240620,judge_name=arena_hard,judge_model=claude-3-haiku-20240307.jsonl.gz"
)


def run(*args):
    return CliRunner().invoke(main, ["import", *map(str, args)])


def test_list_shows_every_format():
    result = run("--list")
    assert result.exit_code == 0
    for name in (
        "alpaca-eval-compact",
        "judgebench",
        "fastchat-single",
        "fastchat-pair",
        "mt-bench-human",
        "arena-hard",
        "arena-battles",
        "reward-pairs",
    ):
        assert f"{name}\n" in result.output
    listed = json.loads(run("--list", "--json").output)
    assert {row["format"] for row in listed} >= {"fastchat-single", "reward-pairs"}
    assert all(row["summary"] and row["tables"] and row["upstream"] for row in listed)


def test_mbpp_all_outputs(tmp_path):
    out, ref, texts = tmp_path / "j.csv", tmp_path / "ref.csv", tmp_path / "texts.jsonl.gz"
    result = run(MBPP, "--format", "mbpp-selfpref", "--out", out, "--reference-out", ref, "--texts-out", texts, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["outputs"][str(out)] == {"kind": "pairwise", "rows": 12}
    assert read_table(out).kind == "pairwise" and read_table(ref).kind == "correctness-ref"
    lines = [json.loads(line) for line in gzip.open(texts, "rt")]
    assert len(lines) == 12 and lines[0]["instance_id"].startswith("mbpp/") and isinstance(lines[0]["tests"], list)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.csv", "ref.csv", "texts.jsonl.gz"]  # no temp files left


def test_mbpp_verdicts_from_probabilities_by_default(tmp_path):
    out, replies = tmp_path / "j.csv", tmp_path / "r.csv"
    result = run(MBPP, "--format", "mbpp-selfpref", "--out", out, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["counts"]["unparsed"] == 0
    assert read_table(out).frame["verdict"].notna().all()
    by_reply = run(MBPP, "--format", "mbpp-selfpref", "--out", replies, "--verdicts", "reply", "--json")
    assert by_reply.exit_code == 0 and json.loads(by_reply.output)["counts"]["unparsed"] > 0


def test_verdicts_option_is_only_for_mbpp(tmp_path):
    result = run(
        FIXTURES / "annotations_compact_sample.csv.gz",
        "--format",
        "alpaca-eval-compact",
        "--out",
        tmp_path / "x.csv",
        "--verdicts",
        "probabilities",
    )
    assert result.exit_code == 2 and "--verdicts" in result.output
    assert not list(tmp_path.iterdir())


def test_compact_parquet_and_human_summary(tmp_path):
    out = tmp_path / "ae.parquet"
    result = run(FIXTURES / "annotations_compact_sample.csv.gz", "--format", "alpaca-eval-compact", "--out", out)
    assert result.exit_code == 0, result.output
    assert "pairwise rows" in result.output and "duplicates_dropped: 1" in result.output
    assert len(read_table(out)) == 23


def test_reference_not_written_is_reported(tmp_path):
    result = run(ARENA, "--format", "judgebench", "--out", tmp_path / "p.csv")
    assert result.exit_code == 0 and "--reference-out" in result.output


def test_malformed_source_exit_2(tmp_path):
    bad = tmp_path / "llama-3.3-70b_gpt-4o_eval.jsonl"
    bad.write_text(MBPP.read_text().splitlines()[0] + "\n{not json\n")
    result = run(bad, "--format", "mbpp-selfpref", "--out", tmp_path / "j.csv")
    assert result.exit_code == 2
    assert "line 2" in result.output and str(bad) in result.output


def test_nothing_written_on_failure(tmp_path):
    """A failure after the main table was produced leaves no output and no temp file."""
    out, ref = tmp_path / "j.csv", tmp_path / "ref.csv"
    out.write_text("old content\n")
    # a texts output for a format without texts fails after the tables were built
    result = run(ARENA, "--format", "judgebench", "--out", out, "--reference-out", ref, "--texts-out", tmp_path / "t.jsonl")
    assert result.exit_code == 2
    assert out.read_text() == "old content\n" and not ref.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.csv"]


def test_invalid_output_table_writes_nothing(tmp_path, monkeypatch):
    """If the re-read validation of any table fails, no output replaces its target."""
    import dataclasses

    import nepotism.importers as importers

    spec = importers.get_format("mbpp-selfpref")

    def broken(path, **options):
        result = spec.read(path, **options)
        result.tables["correctness-ref"].loc[0, "model"] = None  # the reference table is now invalid
        return result

    monkeypatch.setattr(importers, "_REGISTRY", {**importers.formats(), "mbpp-selfpref": dataclasses.replace(spec, read=broken)})
    out, ref = tmp_path / "j.csv", tmp_path / "ref.csv"
    result = run(MBPP, "--format", "mbpp-selfpref", "--out", out, "--reference-out", ref)
    assert result.exit_code == 2 and "invalid correctness-ref" in result.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("option", "name"),
    [
        ("--out", "j.txt"),
        ("--out", "imp"),
        ("--out", "j.parquet.gz"),
        ("--out", ".csv"),
        ("--reference-out", "ref"),
        ("--texts-out", "texts.csv"),
    ],
)
def test_bad_output_extension_exit_2(tmp_path, option, name):
    """The error names the user's path (never a temporary file) and the suffixes allowed."""
    target = tmp_path / name
    args = {"--out": tmp_path / "j.csv", option: target}
    result = run(MBPP, "--format", "mbpp-selfpref", *[x for pair in args.items() for x in pair])
    assert result.exit_code == 2
    assert f"{target}, field '{option}': unknown output type (the name must end in " in result.output
    assert (".jsonl, .jsonl.gz)" if option == "--texts-out" else ".csv, .jsonl, .parquet, .csv.gz") in result.output
    assert list(tmp_path.iterdir()) == []


def test_same_target_twice_refused(tmp_path):
    out = tmp_path / "j.csv"
    result = run(MBPP, "--format", "mbpp-selfpref", "--out", out, "--reference-out", out)
    assert result.exit_code == 2 and not out.exists()


def test_alpaca_json_with_texts(tmp_path):
    out, texts = tmp_path / "a.jsonl", tmp_path / "t.jsonl"
    result = run(
        FIXTURES / "alpaca_eval_annotations.json",
        "--format",
        "alpaca-eval",
        "--out",
        out,
        "--texts-out",
        texts,
        "--instructions",
        FIXTURES / "alpaca_eval_instructions.json",
    )
    assert result.exit_code == 0, result.output
    frame = read_table(out).frame
    assert frame["instance_id"].str.match(r"^alpaca_eval/\d+$").all()
    assert "\\/" not in texts.read_text()


def test_canonical_names(tmp_path):
    pytest.importorskip("nepotism.models", reason="model registry not installed")
    from nepotism import models

    if not hasattr(models, "default_registry"):
        pytest.skip("nepotism.models.default_registry is not available yet")
    out = tmp_path / "a.csv"
    result = run(
        FIXTURES / "annotations_compact_sample.csv.gz", "--format", "alpaca-eval-compact", "--out", out, "--canonical", "--json"
    )
    assert result.exit_code == 0, result.output
    frame = read_table(out).frame
    registry = models.default_registry()
    assert set(frame["judge"]) == {registry.resolve(n) for n in ("gpt4_0314", "gpt4_0613", "gpt4_1106_preview", "claude-2")}
    tagged = frame[frame["model_a"].str.contains("@output_1")]
    assert len(tagged) == 2 and all(m.split("@")[0] in registry.ids() for m in tagged["model_a"])


UPSTREAM = FIXTURES / "upstream"


def _lines_with(source: Path, line: int, old: str, new: str) -> str:
    rows = source.read_text(encoding="utf-8").splitlines()
    assert old in rows[line - 1]
    rows[line - 1] = rows[line - 1].replace(old, new)
    return "\n".join(rows) + "\n"


def _record_with(source: Path, record: int, key: str, value) -> str:
    rows = json.loads(source.read_text(encoding="utf-8"))
    rows[record - 1][key] = value
    return json.dumps(rows)


MALFORMED = [
    # (format, file name, malformed text, options, where: "line N" / "record N", field)
    (
        "fastchat-single",
        "gpt-4_single.jsonl",
        lambda: _lines_with(UPSTREAM / "gpt-4_single.jsonl", 2, '"score": 10', '"score": "ten"'),
        (),
        "line 2",
        "score",
    ),
    (
        "fastchat-pair",
        "gpt-4_pair.jsonl",
        lambda: _lines_with(UPSTREAM / "gpt-4_pair.jsonl", 3, '"g2_winner": "model_1"', '"g2_winner": "B"'),
        (),
        "line 3",
        "g2_winner",
    ),
    (
        "mt-bench-human",
        "mt_bench_human.jsonl",
        lambda: _lines_with(UPSTREAM / "mt_bench_human.jsonl", 4, '"winner": "tie (bothbad)"', '"winner": "neither"'),
        (),
        "line 4",
        "winner",
    ),
    (
        "arena-hard",
        "judgment.jsonl",
        lambda: _lines_with(UPSTREAM / "arena-hard-v2.0_gpt-4o-mini.jsonl", 2, '"baseline": "gemini-2.0-flash-001", ', ""),
        (),
        "line 2",
        "baseline",
    ),
    (
        "arena-battles",
        "clean_battle.json",
        lambda: _record_with(UPSTREAM / "clean_battle_sample.json", 3, "winner", "model_c"),
        (),
        "record 3",
        "winner",
    ),
    (
        "reward-pairs",
        "LLMBar.json",
        lambda: _record_with(UPSTREAM / "LLMBar__Natural_sample.json", 2, "label", 0),
        (),
        "record 2",
        "label",
    ),
    (
        "reward-pairs",
        "scores.jsonl",
        lambda: '{"prompt": "p", "chosen": "a", "rejected": "b", "score_chosen": 1.5, "score_rejected": "low", "model": "rm"}\n',
        (),
        "line 1",
        "score_rejected",
    ),
    (
        "alpaca-eval",
        "annotations.json",
        lambda: _record_with(FIXTURES / "alpaca_eval_annotations.json", 2, "preference", "first"),
        (),
        "record 2",
        "preference",
    ),
]


@pytest.mark.parametrize(
    ("fmt", "name", "text", "options", "where", "field"), MALFORMED, ids=[f"{m[0]}-{m[1]}" for m in MALFORMED]
)
def test_malformed_upstream_files_name_file_place_and_field(tmp_path, fmt, name, text, options, where, field):
    source = tmp_path / "in" / name
    source.parent.mkdir()
    source.write_text(text(), encoding="utf-8")
    out = tmp_path / "out" / "table.csv"
    result = run(source, "--format", fmt, *options, "--out", out)
    assert result.exit_code == 2, result.output
    assert f"{source}, {where}, field '{field}'" in result.output
    assert not out.parent.exists() or not list(out.parent.iterdir())


def test_both_judgebench_companions_are_written_in_order_or_by_name(tmp_path):
    out, pref, corr = tmp_path / "j.csv", tmp_path / "pref.csv", tmp_path / "corr.csv"
    result = run(ARENA, "--format", "judgebench", "--out", out, "--reference-out", pref, "--reference-out", corr, "--json")
    assert result.exit_code == 0, result.output
    outputs = json.loads(result.output)["outputs"]
    assert outputs[str(pref)]["kind"] == "preference-ref" and outputs[str(corr)]["kind"] == "correctness-ref"
    assert read_table(corr, kind="correctness-ref").kind == "correctness-ref"
    named = tmp_path / "named.csv"
    result = run(ARENA, "--format", "judgebench", "--out", out, "--reference-out", f"correctness-ref={named}")
    assert result.exit_code == 0, result.output
    assert read_table(named).kind == "correctness-ref"
    assert "not written: the preference-ref table (add --reference-out preference-ref=FILE)" in result.output


@pytest.mark.parametrize(
    "values, message",
    [
        (["rubric-ref={ref}"], "no rubric-ref table"),
        (["{ref}", "{ref2}", "{ref3}"], "3 --reference-out files for 2 companion tables"),
        (["correctness-ref={ref}", "correctness-ref={ref2}"], "named twice"),
    ],
)
def test_reference_outputs_that_do_not_fit_the_companions_are_refused(tmp_path, values, message):
    out = tmp_path / "j.csv"
    names = {k: tmp_path / f"{k}.csv" for k in ("ref", "ref2", "ref3")}
    args = [a for v in values for a in ("--reference-out", v.format(**names))]
    result = run(ARENA, "--format", "judgebench", "--out", out, *args)
    assert result.exit_code == 2 and message in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == []
