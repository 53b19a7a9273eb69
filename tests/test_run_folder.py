"""run.json lists a folder's result-record files (``results``) beside its tables; a listed file must exist."""

from __future__ import annotations

import json

import pytest

from nepotism.errors import InputError
from nepotism.metrics import Bootstrap
from nepotism.report.inputs import folder_results
from nepotism.results import Results
from nepotism.run_folder import read_manifest, write_manifest


def _folder(tmp_path, **results):
    (tmp_path / "pairwise.csv").write_text("instance_id,judge,model_a,model_b,verdict\n")
    (tmp_path / "models.toml").write_text("")
    for name, records in results.items():  # a results document; JSON Lines records as an older `mitigate` wrote
        (tmp_path / name).write_text(
            Results(records).to_json() if name.endswith(".json") else "".join(json.dumps(r) + "\n" for r in records)
        )
    write_manifest(
        tmp_path,
        experiment="e",
        run_id="r",
        tables={"pairwise": str(tmp_path / "pairwise.csv")},
        references={},
        registry_files=[str(tmp_path / "models.toml")],
        results={"mitigation-effects": str(tmp_path / next(iter(results)))} if results else {},
    )
    return tmp_path


def test_listed_results_round_trip_and_the_report_adds_what_the_audit_did_not_measure(tmp_path):
    effect = {"metric": "mitigation-effect", "judge": "j", "value": 0.1, "variant": {"scope": "family"}}
    accuracy = {"metric": "judge-accuracy", "judge": "j", "value": 0.5}
    folder = _folder(tmp_path, **{"mitigations.json": [effect, accuracy]})
    assert read_manifest(folder).results == {"mitigation-effects": folder / "mitigations.json"}
    added = folder_results(folder, audited=[{"metric": "judge-accuracy"}])
    assert [r["metric"] for r in added] == ["mitigation-effect"]  # judge accuracy: the audit's own number
    assert folder_results(folder / "pairwise.csv", audited=[]) == []  # not a run folder: nothing added


def test_a_folder_without_results_reads_as_before_and_a_missing_listed_file_is_named(tmp_path):
    folder = _folder(tmp_path)
    assert "results" not in json.loads((folder / "run.json").read_text()) and read_manifest(folder).results == {}
    (tmp_path / "b").mkdir()
    folder = _folder(tmp_path / "b", **{"mitigations.json": []})
    (folder / "mitigations.json").unlink()
    with pytest.raises(InputError, match="mitigations.json, which is missing") as err:
        read_manifest(folder)
    assert err.value.field == "results.mitigation-effects"


def test_records_instead_finds_result_records_given_as_judgments_and_nothing_else(tmp_path):
    from nepotism.report.inputs import records_instead

    judgments = tmp_path / "judgments"
    judgments.mkdir()
    (judgments / "pairwise.csv").write_text("instance_id,judge,model_a,model_b,verdict\nq1,j,a,b,A\n")
    (judgments / "results.json").write_text(Results([{"metric": "win-rate", "judge": "j", "value": 0.5}]).to_json())
    assert records_instead(judgments) is None  # a folder's .json is not read as a table
    assert records_instead(judgments / "pairwise.csv") is None
    assert records_instead(judgments / "results.json") == (judgments / "results.json",) * 2
    leak = tmp_path / "leak"
    leak.mkdir()
    (leak / "results.csv").write_text("metric,judge,value,ci_low,ci_high\nwin-rate,j,0.5,,\n")
    assert records_instead(leak) == (leak / "results.csv", None)  # no JSON form beside it
    (leak / "results.json").write_text(Results([{"metric": "win-rate", "judge": "j", "value": 0.5}]).to_json())
    assert records_instead(leak) == (leak / "results.csv", leak / "results.json")
    (judgments / "old.json").write_text(json.dumps([{"metric": "win-rate", "judge": "j", "value": 0.5}]))
    assert records_instead(judgments / "old.json") is None  # an older bare list is no results document
    (judgments / "old.jsonl").write_text(json.dumps({"metric": "win-rate", "value": 0.5, "ci_low": None, "ci_high": None}) + "\n")
    assert records_instead(judgments / "old.jsonl") == (judgments / "old.jsonl", None)  # records, no document


def test_report_records_of_a_run_folder_are_its_audit_plus_the_results_it_lists(tmp_path):
    from nepotism.report.inputs import report_records

    effect = {"metric": "mitigation-effect", "judge": "j", "value": 0.1, "variant": {"scope": "family"}}
    folder = _folder(tmp_path, **{"mitigations.json": [effect]})
    rows = "".join(f"q{i},j,{a},{b},{v}\n" for i in range(6) for a, b, v in (("j", "k", "A" if i % 3 else "B"), ("k", "j", "B")))
    (folder / "pairwise.csv").write_text("instance_id,judge,model_a,model_b,verdict\n" + rows)
    (folder / "models" / "00-models.toml").write_text('[models.j]\nfamily = "F"\n[models.k]\nfamily = "G"\n')
    records, summary, _ = report_records(folder, bootstrap=Bootstrap(n_resamples=0))
    metrics = {r["metric"] for r in records}
    assert "mitigation-effect" in metrics and "win-rate" in metrics  # the listed effect beside the audit
    assert [r for r in records if r["metric"] == "mitigation-effect"] == [{**effect, "condition": "default"}]
    alone, _, _ = report_records(folder / "mitigations.json")  # a results file: loaded as it is
    assert [r["metric"] for r in alone] == ["mitigation-effect"]


def test_an_older_folder_listing_json_lines_records_is_refused_naming_the_file(tmp_path):
    """A run folder of an older `nepotism mitigate` lists mitigations.jsonl: the report says which
    file and which command remakes it, instead of guessing the records' shape."""
    from nepotism.report.inputs import report_records

    effect = {"metric": "mitigation-effect", "judge": "j", "value": 0.1, "ci_low": None, "ci_high": None}
    folder = _folder(tmp_path, **{"mitigations.jsonl": [effect]})
    with pytest.raises(InputError, match="nepotism mitigate EXPERIMENT --json") as err:
        folder_results(folder, audited=[])
    assert err.value.path == str(folder / "mitigations.jsonl")
    with pytest.raises(InputError, match="not a results document") as err:
        report_records(folder / "mitigations.jsonl")
    assert err.value.path == str(folder / "mitigations.jsonl")


def test_the_registry_copy_replaces_a_link_at_its_name(tmp_path):
    victim = tmp_path / "victim.toml"
    victim.write_text("mine\n")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "00-models.toml").symlink_to(victim)
    folder = _folder(tmp_path)
    assert victim.read_text() == "mine\n"
    assert not (folder / "models" / "00-models.toml").is_symlink()


def test_an_output_folder_that_cannot_be_written_is_named_before_a_run(tmp_path):
    from nepotism.run_folder import check_output_dir

    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "file").write_text("x")
    for name, message in (("dangling", "symbolic link to"), ("file", "taken by a file")):
        with pytest.raises(InputError, match=message) as err:
            check_output_dir(tmp_path / name)
        assert err.value.field == "output.dir" and err.value.path == str(tmp_path / name)
    before = sorted(tmp_path.rglob("*"))
    check_output_dir(tmp_path / "new" / "out")  # a missing folder: checked where the run will create it
    assert sorted(tmp_path.rglob("*")) == before  # nothing made (a run refused later leaves no folder)
    with pytest.raises(InputError, match="is a file"):
        check_output_dir(tmp_path / "file" / "out")  # a file where a folder above it must be
