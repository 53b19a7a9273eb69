"""`nepotism.audit` is the one orchestration: `nepotism metrics`, `nepotism report`, `nepotism demo`
(through the installed executable) and the Python call give identical records for every recorded
table kind; frames and files are validated by the same rules, with the same messages."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import nepotism
from nepotism.data import demo_judgments
from nepotism.errors import InputError, ValidationError
from nepotism.simulate import SimulationSpec, simulate

EXE = Path(sys.executable).with_name("nepotism")
BOOT = nepotism.Bootstrap(n_resamples=40, seed=3)
SPEC = SimulationSpec(self_bias=0.8, student_bias=0.5, tie_rate=0.1, n_instances=24, n_rubrics=3)


def run(*args, cwd):
    assert EXE.exists(), f"the nepotism executable is not installed beside {sys.executable}"
    done = subprocess.run([str(EXE), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def canonical(records) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in records)


def _recognition(pairwise: pd.DataFrame):
    mine = pairwise[(pairwise["model_a"] == pairwise["judge"]) | (pairwise["model_b"] == pairwise["judge"])]
    pointwise = pd.DataFrame(
        {
            "instance_id": mine["instance_id"],
            "judge": mine["judge"],
            "model": mine["model_a"],
            "claimed": (mine["model_a"] == mine["judge"]).to_numpy() ^ (np.arange(len(mine)) % 4 == 0),
        }
    )
    paired = mine[["instance_id", "judge", "model_a", "model_b"]].copy()
    paired["choice"] = np.where((mine["model_a"] == mine["judge"]) ^ (np.arange(len(mine)) % 5 == 0), "A", "B")
    return pointwise.drop_duplicates(["instance_id", "judge", "model"]), paired


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tables")
    sim = simulate(SPEC, seed=2, kinds=("pairwise", "rubric", "pointwise"))
    (folder / "models.toml").write_text(SPEC.registry_toml())
    recognition, recognition_pairwise = _recognition(sim.pairwise)
    tables = {
        "pairwise": (sim.pairwise, []),
        "pointwise": (sim.pointwise, []),
        "rubric": (sim.rubric, [("rubric-ref", sim.rubric_ref)]),
        "recognition": (recognition, []),
        "recognition-pairwise": (recognition_pairwise, []),
    }
    out = {}
    for kind, (frame, refs) in tables.items():
        path = folder / f"{kind}.csv"
        frame.to_csv(path, index=False)
        ref_paths = []
        for ref_kind, ref in refs:
            ref_paths.append(folder / f"{ref_kind}.csv")
            ref.to_csv(ref_paths[-1], index=False)
        out[kind] = (frame, path, ref_paths)
    return folder, out


KINDS = ["pairwise", "pointwise", "rubric", "recognition", "recognition-pairwise"]


@pytest.mark.parametrize("kind", KINDS)
def test_metrics_report_and_audit_give_identical_records(recorded, kind, tmp_path):
    folder, tables = recorded
    frame, path, refs = tables[kind]
    models = folder / "models.toml"
    from_path = nepotism.audit(path, references=refs, models=[models], bootstrap=BOOT)
    assert len(from_path) > 0 and from_path.summary["kind"] == kind
    from_frame = nepotism.audit(frame, kind=kind, references=refs, models=[models], bootstrap=BOOT)
    assert canonical(from_frame.to_dicts()) == canonical(from_path.to_dicts())
    boot = ["--bootstrap", "40", "--seed", "3", "--models", models]
    ref_args = [a for r in refs for a in ("--reference", r)]
    document = json.loads(run("metrics", path, *ref_args, *boot, "--json", cwd=tmp_path))
    run("report", path, *ref_args, *boot, "--out", tmp_path / "report", "--json", cwd=tmp_path)
    written = json.loads((tmp_path / "report" / "results.json").read_text())
    expected = canonical(json.loads(json.dumps(from_path.to_dicts(), default=str)))
    assert canonical(document["results"]) == expected
    assert canonical(written["results"]) == expected
    # one results document, one set of verdicts, whichever way the audit came in
    verdicts = [v.to_dict() for v in from_path.verdicts]
    assert document["schema_version"] == written["schema_version"] == 2
    assert json.loads(json.dumps(verdicts, default=str)) == document["verdicts"] == written["verdicts"]


def test_demo_gives_the_records_of_the_python_call(tmp_path):
    demo = json.loads(run("demo", "--bootstrap", "40", "--seed", "3", "--json", "--out", tmp_path / "demo", cwd=tmp_path))
    results = nepotism.audit(demo_judgments(), bootstrap=BOOT)
    assert canonical(demo["results"]) == canonical(json.loads(json.dumps(results.to_dicts(), default=str)))
    assert demo["findings"] == results.findings


def test_a_run_folder_is_audited_with_its_references(recorded):
    folder, tables = recorded
    frame, path, refs = tables["rubric"]
    alone = nepotism.audit(path, references=refs, models=[folder / "models.toml"], bootstrap=BOOT)
    run_folder = folder.parent / "run-output"
    run_folder.mkdir(exist_ok=True)
    for source in (path, *refs):
        (run_folder / source.name).write_bytes(source.read_bytes())
    whole = nepotism.audit(run_folder, models=[folder / "models.toml"], bootstrap=BOOT)
    assert canonical(whole.to_dicts()) == canonical(alone.to_dicts())


def test_a_run_folder_brings_its_tables_references_and_registry(recorded, tmp_path):
    """A folder with run.json (as `nepotism run` writes it) needs no other argument, from Python and
    from `nepotism metrics` / `nepotism report`, and every table it lists is audited."""
    from nepotism.run_folder import write_manifest

    folder, tables = recorded
    out = tmp_path / "run-out"
    out.mkdir()
    listed = {}
    for kind in ("pairwise", "recognition", "rubric"):
        listed[kind] = str(out / tables[kind][1].name)
        Path(listed[kind]).write_bytes(tables[kind][1].read_bytes())
    ref = tables["rubric"][2][0]
    (out / ref.name).write_bytes(ref.read_bytes())
    write_manifest(
        out,
        experiment="planted",
        run_id="r1",
        tables=listed,
        references={"rubric-ref": str(out / ref.name)},
        registry_files=[str(folder / "models.toml")],
    )
    explicit = nepotism.audit([tables[k][1] for k in listed], references=[ref], models=[folder / "models.toml"], bootstrap=BOOT)
    from_folder = nepotism.audit(out, bootstrap=BOOT)
    assert canonical(from_folder.to_dicts()) == canonical(explicit.to_dicts())
    assert {"recognition-accuracy", "mra", "self-preference-ratio"} <= {r.metric for r in from_folder}
    cli = json.loads(run("metrics", out, "--bootstrap", 40, "--seed", 3, "--json", cwd=tmp_path))["results"]
    assert canonical(cli) == canonical(json.loads(json.dumps(explicit.to_dicts(), default=str)))
    run("report", out, "--out", tmp_path / "rep", "--bootstrap", 40, "--seed", 3, cwd=tmp_path)
    reported = json.loads((tmp_path / "rep" / "results.json").read_text())["results"]
    assert {"recognition-accuracy", "mra"} <= {r["metric"] for r in reported}


def _pairwise_frame():
    return pd.DataFrame(
        {
            "instance_id": ["q1", "q1", "q2"],
            "judge": ["gpt-4"] * 3,
            "model_a": ["gpt-4", "claude-2", "gpt-4"],
            "model_b": ["claude-2", "gpt-4", "claude-2"],
            "verdict": ["A", "B", "tie"],
        },
        index=[10, 11, 12],
    )


@pytest.mark.parametrize(
    "change, row, column, message",
    [
        (lambda f: f.assign(verdict=["A", "X", "B"]), 11, "verdict", "unknown verdict 'X'"),
        (
            lambda f: f.assign(instance_id=["q1", "q2", "q2"], model_a=["gpt-4", "gpt-4", "gpt-4"], model_b=["claude-2"] * 3),
            12,
            "instance_id,judge,model_a,model_b,condition,replicate",
            "duplicate row",
        ),
        (lambda f: f.assign(judge=["gpt-4", "gpt-4", "my-own-judge"]), 12, "judge", "not in the model registry"),
    ],
)
def test_an_invalid_frame_is_refused_naming_row_and_column(tmp_path, change, row, column, message):
    frame = change(_pairwise_frame())
    with pytest.raises(ValidationError) as caught:
        nepotism.audit(frame, bootstrap=BOOT)
    err = caught.value
    assert (err.row, err.column) == (row, column) and message in str(err)
    assert str(err).startswith(f"row {row}, column '{column}'")
    # the same rows in a file: the same rule, naming file, line and field
    path = tmp_path / "j.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(ValidationError) as caught:
        nepotism.audit(path, bootstrap=BOOT)
    line = list(frame.index).index(row) + 2
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), line, column)
    assert message in str(caught.value)


def test_report_refuses_an_unknown_judge_in_any_table_kind(recorded, tmp_path):
    folder, tables = recorded
    frame = tables["rubric"][0].astype({"judge": str})
    frame.loc[frame.index[4], "judge"] = "nobody-knows-me"
    path = tmp_path / "rubric.csv"
    frame.to_csv(path, index=False)
    done = subprocess.run(
        [str(EXE), "report", str(path), "--models", str(folder / "models.toml"), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2 and f"{path}, line 6, field 'judge'" in done.stderr
    assert not (tmp_path / "out").exists()


def test_bad_arguments_are_input_errors():
    with pytest.raises(InputError, match="judgment table"):
        nepotism.audit(_pairwise_frame(), references=[_pairwise_frame()], bootstrap=BOOT)
    with pytest.raises(TypeError):
        nepotism.audit(42)
    with pytest.raises(InputError, match="unknown: no-such-metric"):
        nepotism.audit(_pairwise_frame(), correlate=[("win-rate", "no-such-metric")])
