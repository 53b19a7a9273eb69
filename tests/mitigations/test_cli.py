import json
from pathlib import Path

from click.testing import CliRunner

from nepotism.cli import main
from nepotism.testing.standin import StandinConfig, standin_thread

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mitigations" / "mitigations.toml"


def _cli():
    return main


def test_dry_run_lists_the_conditions_without_calling_anything():
    out = CliRunner().invoke(_cli(), ["mitigate", str(EXAMPLE), "--dry-run", "--json"])
    assert out.exit_code == 0, out.output
    listing = json.loads(out.output)
    assert len(listing["conditions"]) >= 15 and listing["rewriter"] == "qwen2.5-coder-0.5b-instruct"


def test_a_file_without_mitigations_is_an_input_error(tmp_path):
    bad = tmp_path / "exp.toml"
    bad.write_text('[experiment]\nname = "x"\n')
    out = CliRunner().invoke(_cli(), ["mitigate", str(bad), "--dry-run"])
    assert out.exit_code == 2


def test_end_to_end_against_the_loopback_standin(tmp_path):
    items = [{"id": f"q{i}", "prompt": f"Question {i}?\nA. yes\nB. no", "reference_answer": "A"} for i in range(3)]
    human = [{**it, "model": "human-written", "text": "Answer: A\nBecause it is so."} for it in items]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items + human))
    (tmp_path / "models.toml").write_text('[models."human-written"]\nfamily = "human"\n')
    with standin_thread(StandinConfig(latency_s=0.0)) as (url, _server):
        models = "".join(
            f'[models."{m}"]\nbackend = "openai"\nbase_url = "{url}"\nmodel = "{m}"\n'
            for m in ("qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct")
        )
        (tmp_path / "exp.toml").write_text(f"""
[experiment]
name = "standin"
registry = ["models.toml"]
[dataset]
path = "items.jsonl"
{models}
[generation]
generators = ["qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct"]
max_tokens = 32
[judging]
judges = ["qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct"]
[[judging.protocols]]
protocol = "pairwise"
pairs = "judge-vs-others"
options = {{ mode = "labels", ways = 2 }}
[output]
dir = "out"
[mitigate]
rewriter = "qwen2.5-coder-0.5b-instruct"
n_resamples = 20
[[mitigate.conditions]]
name = "para"
kind = "paraphrase"
[[mitigate.conditions]]
name = "imp"
kind = "judge-option"
options = {{ impartial = true }}
[[mitigate.conditions]]
name = "jury"
kind = "jury"
[[mitigate.conditions]]
name = "cal"
kind = "calibration"
[[mitigate.conditions]]
name = "typos"
kind = "spelling"
rate = 0.2
""")
        out = CliRunner().invoke(
            _cli(), ["mitigate", str(tmp_path / "exp.toml"), "--store", str(tmp_path / "s.db"), "--no-progress"]
        )
    assert out.exit_code == 0, out.output
    written = json.loads((tmp_path / "out" / "mitigations.json").read_text())  # the results document
    assert written["schema_version"] == 2 and written["summary"]["exports"] and written["summary"]["run_id"]
    assert json.loads((tmp_path / "out" / "run.json").read_text())["results"] == {"mitigation-effects": "mitigations.json"}
    records = written["results"]
    effects = [r for r in records if r["metric"] == "mitigation-effect"]
    assert {r["condition"] for r in effects} == {"para", "imp", "jury", "cal", "typos"}
    # the answers are graded (multiple choice): the baseline's accuracy figures come along (paper 003)
    assert {r["metric"] for r in records if r["metric"] != "mitigation-effect"} == {
        "judge-accuracy",
        "task-accuracy",
        "own-win-rate",
        "win-rate-overestimation",
        "self-third-party-change-ratio",
    }
    # paper 003 Fig. 15's ratio comes with each perturbation (the paraphrase and the typos), not the others
    assert {r["condition"] for r in records if r["metric"] == "self-third-party-change-ratio"} == {"para", "typos"}
    assert "baseline accuracy" in out.output
    assert "typos: " in out.output and "pairs perturbed" in out.output
    assert "pairs perturbed" in out.output
    assert not list((tmp_path / "out").glob(".*.tmp"))


def test_rule_strict_from_the_command_line_and_a_bad_rule_in_the_file(tmp_path):
    out = CliRunner().invoke(_cli(), ["mitigate", str(EXAMPLE), "--dry-run", "--json", "--rule", "strict"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["rule"] == "strict"
    default = json.loads(CliRunner().invoke(_cli(), ["mitigate", str(EXAMPLE), "--dry-run", "--json"]).output)
    assert default["rule"] == "consistent"
    import shutil

    shutil.copytree(EXAMPLE.parent, tmp_path / "ex")
    bad = tmp_path / "ex" / "bad.toml"
    bad.write_text(EXAMPLE.read_text().replace("[mitigate]\n", '[mitigate]\nrule = "lenient"\n', 1))
    out = CliRunner().invoke(_cli(), ["mitigate", str(bad), "--dry-run"])
    assert out.exit_code == 2 and "mitigate.rule" in out.output
