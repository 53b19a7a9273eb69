from __future__ import annotations

import json

from click.testing import CliRunner

from nepotism.cli import main
from nepotism.cli import models as models_cli


def _run(*args):
    return CliRunner().invoke(main, ["models", *args])


def test_module_api():
    assert models_cli.__all__ == ["command"]
    assert models_cli.command.name == "models"


def test_list_table_and_default_verb():
    for args in (["list"], []):
        result = _run(*args)
        assert result.exit_code == 0, result.output
        assert "gpt-4-1106-preview" in result.output and "openai-gpt" in result.output


def test_list_json_with_user_file(tmp_path):
    extra = tmp_path / "mine.toml"
    extra.write_text('[models."my-model"]\nfamily = "llama"\nparent = "llama-2-7b"\n')
    result = _run("list", "--json", "--models", str(extra))
    assert result.exit_code == 0, result.output
    rows = {row["id"]: row for row in json.loads(result.output)}
    assert rows["my-model"]["parent"] == "llama-2-7b"
    assert rows["alpaca-7b"]["teachers"] == ["text-davinci-003"]
    grouped = _run("--json", "--models", str(extra))
    assert grouped.exit_code == 0 and "my-model" in {r["id"] for r in json.loads(grouped.output)}


def test_show_human_and_json():
    result = _run("show", "alpaca-7b_concise")
    assert result.exit_code == 0, result.output
    assert "alpaca-7b" in result.output and "text-davinci-003" in result.output and "source: parent" in result.output
    data = json.loads(_run("show", "gpt4_1106_preview", "--json").output)
    assert data["id"] == "gpt-4-1106-preview" and data["family"] == "openai-gpt" and data["series"] == "gpt-4"


def test_show_unknown_is_exit_2():
    result = _run("show", "no-such-model")
    assert result.exit_code == 2
    assert "unknown model name" in result.output


def test_relation_human_and_json():
    result = _run("relation", "gpt-4", "zephyr-7b-beta")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "gpt-4 -> zephyr-7b-beta: student"
    data = json.loads(_run("relation", "gpt4_1106_preview", "vicuna-13b", "--json").output)
    assert data["relation"] == "family_student" and data["judge_id"] == "gpt-4-1106-preview"
    assert data["scopes"] == {"self": False, "family": False, "student": False, "teacher": False, "lineage": False}
    unknown = json.loads(_run("relation", "gpt-4", "mystery", "--json").output)
    assert unknown["relation"] == "unknown" and unknown["model_id"] is None and unknown["scopes"] is None


def test_bad_registry_file_is_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[models."vicuna-x"]\nfamily = "llama"\nteachers = ["gpt-9"]\n')
    result = _run("list", "--models", str(bad))
    assert result.exit_code == 2
    assert str(bad) in result.output and 'models."vicuna-x".teachers' in result.output
