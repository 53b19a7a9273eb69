"""The table importer (``--format table``): any file's columns and values mapped onto a recorded table,
with the same validation and messages as every importer, chained through the installed executable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nepotism.errors import InputError
from nepotism.importers import import_source

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))

#: Crowd votes in a layout no importer knows: left / right / winner with left, right, tie, several
#: votes per pair, generator names as a leaderboard spells them.
VOTES = """question,left,right,winner,voter,org_left,org_right
q1,GPT 4,Claude 2,left,u1,OpenAI,Anthropic
q1,GPT 4,Claude 2,right,u2,OpenAI,Anthropic
q1,Claude 2,GPT 4,tie,u3,Anthropic,OpenAI
q2,Koala 13B,GPT 4,right,u1,Berkeley,OpenAI
q2,Koala 13B,GPT 4,,u2,Berkeley,OpenAI
q3,GPT 4,GPT 4,left,u1,OpenAI,OpenAI
"""
PAIRWISE = [
    "--map",
    "instance_id=question",
    "--map",
    "model_a=left",
    "--map",
    "model_b=right",
    "--map",
    "verdict=winner",
    "--values",
    "verdict:left=A,right=B,tie=tie",
]


def _run(*args, cwd=None):
    return subprocess.run([NEPOTISM, *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture
def votes(tmp_path):
    path = tmp_path / "votes.csv"
    path.write_text(VOTES)
    return path


def _pairwise(path, **options):
    return import_source("table", [path], map=PAIRWISE[1::2][:4], values=[PAIRWISE[-1]], **options)


def test_pairwise_votes_by_mapping(votes):
    imported = _pairwise(votes, judge="GPT 4")
    frame = imported.tables["pairwise"]
    assert imported.main == "pairwise" and len(frame) == 6
    assert frame["verdict"].tolist() == ["A", "B", "tie", "B", None, "A"]
    assert frame["status"].tolist()[4] == "unparsed" and frame["reason"].tolist()[4] == "no_verdict"
    assert frame["replicate"].tolist() == [0, 1, 0, 0, 1, 0]  # a second vote of one pair and order: replicate 1
    assert frame.loc[5, ["model_a", "model_b"]].tolist() == ["GPT 4@a", "GPT 4@b"]
    assert frame["source_line"].tolist() == [2, 3, 4, 5, 6, 7] and set(frame["judge"]) == {"GPT 4"}
    assert imported.counts["repeated_keys_numbered"] == 2 and imported.counts["self_pairs_tagged"] == 1


def test_human_votes_as_a_preference_reference(votes):
    imported = import_source(
        "table",
        [votes],
        map=["instance_id=question", "model_a=left", "model_b=right", "winner=winner", "annotator=voter"],
        values=["winner:left=A,right=B,tie=tie"],
    )
    frame = imported.tables["preference-ref"]
    assert frame["winner"].tolist() == ["GPT 4", "Claude 2", "tie", "GPT 4", "GPT 4@a"]
    assert frame["annotator"].tolist() == ["u1", "u2", "u3", "u1", "u1"]
    assert imported.counts["votes_missing"] == 1 and "repeated_keys_numbered" not in imported.counts


def test_a_mapping_file_gives_the_same_table_and_the_command_line_adds_to_it(votes, tmp_path):
    mapping = tmp_path / "votes.toml"
    mapping.write_text(
        'kind = "pairwise"\njudge = "GPT 4"\n[columns]\ninstance_id = "question"\nmodel_a = "left"\n'
        'model_b = "right"\nverdict = "winner"\n[values.verdict]\nleft = "A"\nright = "B"\n'
    )
    with pytest.raises(InputError) as err:  # tie is not in the file's value map
        import_source("table", [votes], mapping=mapping)
    assert err.value.line == 4 and err.value.field == "winner" and "add it to --values" in err.value.message
    by_file = import_source("table", [votes], mapping=mapping, values=["verdict:tie=tie"])
    assert by_file.tables["pairwise"].equals(_pairwise(votes, judge="GPT 4").tables["pairwise"])


def test_pointwise_rubric_and_correctness_kinds(tmp_path):
    grades = tmp_path / "grades.jsonl"
    grades.write_text(
        '{"item": "a", "who": "gpt-4o", "grader": "claude-3-opus-20240229", "stars": "5/5", "ok": "yes"}\n'
        '{"item": "a", "who": "claude-3-haiku-20240307", "grader": "claude-3-opus-20240229", '
        '"stars": "n/a", "ok": "no"}\n'
    )
    point = import_source(
        "table", [grades], map=["instance_id=item", "model=who", "judge=grader", "score=stars"], values=["score:5/5=5,4/5=4,n/a="]
    )
    assert point.main == "pointwise" and point.tables["pointwise"]["score"].tolist() == ["5", None]
    ref = import_source("table", [grades], map=["instance_id=item", "model=who", "correct=ok"])
    assert ref.main == "correctness-ref"
    rubric = import_source(
        "table", [grades], map=["instance_id=item", "model=who", "judge=grader", "met=ok", "rubric_id=grader"], kind="rubric"
    )
    assert rubric.main == "rubric" and rubric.tables["rubric"]["met"].tolist() == ["yes", "no"]


@pytest.mark.parametrize(
    ("options", "field", "words"),
    [
        ({"map": ["instance_id=question", "model_a=lft"]}, "--map model_a=lft", "no column 'lft'"),
        ({"map": ["modl_a=left"]}, "--map", "no column of a recorded table"),
        ({"map": ["instance_id"]}, "--map", "RECORDED=COLUMN"),
        ({"map": ["instance_id=question"]}, "--map", "make no table"),
        ({"map": PAIRWISE[1::2][:4], "values": ["verdict:left"]}, "--values", "COLUMN:RAW=VALUE"),
        ({"map": PAIRWISE[1::2][:4], "values": ["category:x=y"]}, "--values", "no column is mapped"),
        ({"map": PAIRWISE[1::2][:4]}, "winner", "unknown verdict 'left'"),
        ({"map": PAIRWISE[1::2][:4] + ["judge=voter"], "judge": "GPT 4"}, "--judge", "keep one"),
        ({"map": PAIRWISE[1::2][:4], "kind": "scores"}, "--kind", "unknown kind"),
    ],
)
def test_mistakes_name_the_file_line_and_field(votes, options, field, words):
    options.setdefault("judge", None if "judge=voter" in options.get("map", []) else "GPT 4")
    with pytest.raises(InputError) as err:
        import_source("table", [votes], **options)
    assert err.value.field == field and words in err.value.message
    if field == "winner":  # a value the table does not take: the source line, and the fix
        assert err.value.path == str(votes) and err.value.line == 2 and "--values verdict:" in err.value.message


def test_votes_repeated_across_files_are_numbered_across_them(votes, tmp_path):
    copy = tmp_path / "more.csv"
    copy.write_text(VOTES)
    imported = import_source("table", [votes, copy], map=PAIRWISE[1::2][:4], values=[PAIRWISE[-1]], judge="GPT 4")
    assert len(imported.tables["pairwise"]) == 12 and imported.counts["repeated_keys_numbered"] == 8
    assert sorted(imported.tables["pairwise"]["replicate"].unique()) == [0, 1, 2, 3]


def test_import_metrics_report_with_aliases_and_families(votes, tmp_path):
    """The issue's user journey, with no pandas and no renamed data: map the columns, name the
    generators in a models file ([aliases] for the known, families read from a column for the
    rest), then metrics and report."""
    models = tmp_path / "names.toml"
    models.write_text('[aliases]\n"GPT 4" = "gpt-4"\n"Claude 2" = "claude-2"\n')
    out, families = tmp_path / "pairwise.csv", tmp_path / "families.toml"
    done = _run(
        "import",
        votes,
        "--format",
        "table",
        *PAIRWISE,
        "--judge",
        "GPT 4",
        "--map",
        "family_a=org_left",
        "--map",
        "family_b=org_right",
        "--models",
        models,
        "--models-out",
        families,
        "--out",
        out,
    )
    assert done.returncode == 0, done.stderr
    assert "wrote families of 1 names" in done.stdout and "not in the model registry" not in done.stdout
    assert families.read_text().splitlines()[-1] == '"Berkeley" = ["Koala 13B"]'
    done = _run("metrics", out, "--models", models, "--models", families, "--json", "--bootstrap", "100")
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)["results"]  # the results document's records
    own = [r for r in records if r["metric"] == "win-rate" and r["generator"] == "GPT 4"]
    assert own and own[0]["judge"] == "GPT 4"
    assert {r["scope"] for r in records if r["metric"] == "self-preference-ratio"} >= {"self"}
    done = _run("report", out, "--models", models, "--models", families, "--out", tmp_path / "report", "--bootstrap", "100")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "report" / "report.html").is_file()


def test_unknown_names_are_listed_with_the_fix(votes, tmp_path):
    done = _run("import", votes, "--format", "table", *PAIRWISE, "--judge", "GPT 4", "--out", tmp_path / "p.csv")
    assert done.returncode == 0, done.stderr
    assert "3 names are not in the model registry: 'Claude 2', 'GPT 4', 'Koala 13B'" in done.stdout
    assert "[aliases]" in done.stdout and "[families]" in done.stdout
    done = _run("metrics", tmp_path / "p.csv")
    assert done.returncode == 2 and "judge 'GPT 4' is not in the model registry" in done.stderr
    assert '[aliases] "GPT 4" = ' in done.stderr
    aliases = tmp_path / "names.toml"
    aliases.write_text('[aliases]\n"GPT 4" = "gpt-4"\n"Claude 2" = "claude-2"\n')
    done = _run("metrics", tmp_path / "p.csv", "--models", aliases, "--bootstrap", "0")
    assert done.returncode == 0, done.stderr
    assert "1 generator is not in the model registry, so no judge counts it as a relative: 'Koala 13B'" in done.stdout


def test_a_bad_value_through_the_executable_writes_nothing(votes, tmp_path):
    out = tmp_path / "p.csv"
    done = _run("import", votes, "--format", "table", *PAIRWISE[:-2], "--judge", "GPT 4", "--out", out)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert f"{votes}, line 2, field 'winner'" in done.stderr and not out.exists()
    done = _run("import", votes, "--format", "fastchat-pair", "--map", "x=y", "--out", out)
    assert done.returncode == 2 and "--map is not an option of --format fastchat-pair" in done.stderr
