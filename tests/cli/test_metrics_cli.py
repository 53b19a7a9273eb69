"""``nepotism metrics`` on recorded files: records, errors with exit status 2, nothing written."""

import json

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
    records = json.loads(result.output)
    spr = [r for r in records if r["metric"] == "self-preference-ratio" and r["scope"] == "self"
           and r["variant"]["opponents"] == "unrelated"]
    assert len(spr) == 1
    for key in ("metric", "judge", "variant", "value", "ci_low", "ci_high", "n", "n_excluded"):
        assert key in spr[0]
    assert spr[0]["n"] == 30 and spr[0]["n_clusters"] == 30


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
