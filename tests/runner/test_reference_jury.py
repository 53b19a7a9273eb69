"""``[reference] jury = [...]`` in an experiment file (paper 002 §4): parsing, the run's jury step on a
planted rubric table (relatives excluded by the registry), and the suite's per-judge meta-evaluation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nepotism.analyses.suite import SuiteOptions, run_suite
from nepotism.errors import InputError
from nepotism.experiment import load_experiment
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.models import load_registry
from nepotism.records import Instance, RubricItem
from nepotism.runner.reference_step import jury_step
from nepotism.store import Store
from nepotism.tables import read_table, write_table

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MODELS = EXAMPLES / "standin_models.toml"
ALPHA, MINI, BETA = "standin-alpha", "standin-alpha-mini", "standin-beta"


def _experiment(tmp_path: Path, reference: str, *, protocol: str = "rubric", grading: str = "") -> Path:
    (tmp_path / "items.jsonl").write_text('{"id": "q", "prompt": "hi"}\n')
    models = "".join(f'[models.{m}]\nbackend = "openai"\nbase_url = "http://127.0.0.1:1/v1"\n' for m in (ALPHA, MINI, BETA))
    path = tmp_path / "exp.toml"
    path.write_text(f"""[experiment]
name = "t"
registry = ["{MODELS}"]
[dataset]
path = "items.jsonl"
{models}
[judging]
judges = ["{ALPHA}", "{MINI}", "{BETA}"]
[[judging.protocols]]
protocol = "{protocol}"
{grading}
{reference}
[output]
dir = "out"
""")
    return path


def test_the_jury_is_parsed_with_registry_ids(tmp_path):
    exp = load_experiment(_experiment(tmp_path, f'[reference]\njury = ["{ALPHA}", "{BETA}"]\n'))
    assert exp.reference.jury == (ALPHA, BETA) and exp.reference.exclude_related is False  # paper 002: all vote
    excl = load_experiment(_experiment(tmp_path, f'[reference]\njury = ["{ALPHA}", "{BETA}"]\nexclude_related = true\n'))
    assert excl.reference.exclude_related is True
    assert load_experiment(_experiment(tmp_path, "")).reference is None


@pytest.mark.parametrize(
    "reference, protocol, grading, words",
    [
        (f'[reference]\njury = ["{ALPHA}"]\n', "rubric", "", "at least two"),
        (f'[reference]\njury = ["{ALPHA}", "{ALPHA}"]\n', "rubric", "", "twice"),
        ('[reference]\njury = ["standin-alpha", "gpt-4o"]\n', "rubric", "", "no [models] entry"),
        (f'[reference]\njury = ["{ALPHA}", "{BETA}"]\n', "pairwise", "", 'protocol = "rubric"'),
        (f'[reference]\njury = ["{ALPHA}", "{BETA}"]\n', "rubric", '[grading]\ntask = "ifeval"\n', "ifeval"),
        (f'[reference]\njury = ["{ALPHA}", "{BETA}"]\nkeep = true\n', "rubric", "", "unknown key"),
        (f'[reference]\njury = ["{ALPHA}", "{BETA}"]\nexclude_related = "no"\n', "rubric", "", "true or false"),
        (f'[reference]\njury = ["{ALPHA}", "{BETA}"]\nkeep_related = true\n', "rubric", "", "exclude_related = true"),
    ],
)
def test_a_bad_jury_names_the_file_and_the_key(tmp_path, reference, protocol, grading, words):
    path = _experiment(tmp_path, reference, protocol=protocol, grading=grading)
    with pytest.raises(InputError) as err:
        load_experiment(path)
    assert err.value.path == str(path) and err.value.field.startswith("reference.")
    assert words in str(err.value)


def test_a_juror_must_be_a_judge(tmp_path):
    path = _experiment(tmp_path, f'[reference]\njury = ["{ALPHA}", "{BETA}"]\n')
    path.write_text(path.read_text().replace(f'judges = ["{ALPHA}", "{MINI}", "{BETA}"]', f'judges = ["{ALPHA}", "{MINI}"]'))
    with pytest.raises(InputError, match="not one of judging.judges") as err:
        load_experiment(path)
    assert err.value.field == "reference.jury"


def _planted() -> pd.DataFrame:
    """Rubric verdicts of the three stand-in judges on one prompt (alpha and alpha-mini share a family).

    answers of alpha:  only beta may vote (alpha is itself, mini its family): r1 beta yes → met;
                       r2 beta no → not met
    answers of beta:   alpha and mini vote (beta is itself): r1 yes/yes → met; r2 yes/no → even, left out
    """
    rows = [
        ("q1", ALPHA, ALPHA, "r1", False),
        ("q1", MINI, ALPHA, "r1", False),
        ("q1", BETA, ALPHA, "r1", True),
        ("q1", ALPHA, ALPHA, "r2", True),
        ("q1", MINI, ALPHA, "r2", True),
        ("q1", BETA, ALPHA, "r2", False),
        ("q1", ALPHA, BETA, "r1", True),
        ("q1", MINI, BETA, "r1", True),
        ("q1", BETA, BETA, "r1", False),
        ("q1", ALPHA, BETA, "r2", True),
        ("q1", MINI, BETA, "r2", False),
        ("q1", BETA, BETA, "r2", True),
    ]
    return pd.DataFrame(rows, columns=["instance_id", "judge", "model", "rubric_id", "met"])


def _jury_step(tmp_path, extra: str = ""):
    """The run's jury step on the planted verdicts: (counts, files written, stored references)."""
    exp = load_experiment(_experiment(tmp_path, f'[reference]\njury = ["{ALPHA}", "{MINI}", "{BETA}"]\n{extra}'))
    (tmp_path / "out").mkdir()
    write_table(_planted(), tmp_path / "out" / "rubric.csv")
    instances = [Instance("q1", "hi", rubric=(RubricItem("r1", "Is right.", 2.0), RubricItem("r2", "Is rude.", -1.0)))]
    with Store(tmp_path / "s.db") as store:
        counts, written = jury_step(
            exp, store, load_registry([str(MODELS)]), {"rubric": str(tmp_path / "out" / "rubric.csv")}, instances
        )
        stored = {(r.models[0], r.rubric_id): (r.met, r.source) for r in store.references()}
    return counts, written, stored


def test_the_jury_step_lets_every_juror_vote_and_writes_the_reference(tmp_path):
    """Paper 002's reference by default: a plain majority of every juror, relatives included
    (before, relatives were left out unless keep_related = true)."""
    counts, written, stored = _jury_step(tmp_path)
    # every juror votes: alpha's r1 is 2 no (alpha, mini) to 1 yes → not met; nothing excluded
    assert counts["exclude_related"] is False and counts["counts"].get("excluded_verdicts", 0) == 0
    ref = read_table(written["rubric-ref"], kind="rubric-ref").frame.set_index(["model", "rubric_id"])["met"]
    assert ref.to_dict() == {(ALPHA, "r1"): False, (ALPHA, "r2"): True, (BETA, "r1"): True, (BETA, "r2"): True}
    assert stored[(ALPHA, "r1")] == (False, f"jury:{ALPHA},{MINI},{BETA}") and len(stored) == 4
    items = read_table(written["rubric-items"], kind="rubric-items").frame
    assert items.set_index("rubric_id")["points"].to_dict() == {"r1": 2.0, "r2": -1.0}


def test_the_jury_step_without_relatives_is_a_named_variant(tmp_path):
    counts, written, _ = _jury_step(tmp_path, "exclude_related = true\n")
    assert counts["rows"] == 3 and counts["counts"]["vote-tie"] == 1 and counts["counts"]["excluded_verdicts"] == 6
    ref = read_table(written["rubric-ref"], kind="rubric-ref").frame
    got = {(m, r): (bool(v), j) for m, r, v, j in ref[["model", "rubric_id", "met", "jurors"]].itertuples(index=False)}
    assert got == {(ALPHA, "r1"): (True, BETA), (ALPHA, "r2"): (False, BETA), (BETA, "r1"): (True, f"{ALPHA},{MINI}")}


def test_the_suite_meta_evaluates_every_judge_against_the_jury():
    """Against the planted jury reference (alpha r1 met, alpha r2 not met, beta r1 met):

    alpha:  says r1/alpha no (FN), r2/alpha yes (FP), r1/beta yes (TP); r2/beta has no reference
            → precision 1/2, recall 1/2, F1 2/4
    beta:   r1/alpha yes (TP), r2/alpha no (TN), r1/beta no (FN) → precision 1/1, recall 1/2, F1 2/3
    Under a second condition alpha says yes to all three: precision 2/3, recall 1.
    """
    frame = _planted().assign(condition="default", replicate=0)
    other = frame[frame["judge"] == ALPHA].assign(condition="strict", met=True)
    reference = pd.DataFrame(
        {
            "instance_id": ["q1"] * 3,
            "model": [ALPHA, ALPHA, BETA],
            "rubric_id": ["r1", "r2", "r1"],
            "met": [True, False, True],
            "jurors": [BETA, BETA, f"{ALPHA},{MINI}"],
        }
    )
    records = run_suite(
        pd.concat([frame, other], ignore_index=True),
        "rubric",
        load_registry([str(MODELS)]),
        references={"rubric-ref": reference},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0)),
    ).records
    got = {(r["judge"], r["condition"], r["metric"]): r for r in records if r["metric"].startswith("rubric-")}
    assert got[(ALPHA, "default", "rubric-precision")]["value"] == pytest.approx(0.5)
    assert got[(ALPHA, "default", "rubric-recall")]["value"] == pytest.approx(0.5)
    assert got[(ALPHA, "default", "rubric-f1")]["value"] == pytest.approx(0.5)
    assert got[(ALPHA, "default", "rubric-f1")]["excluded"] == {"no reference verdict": 1}
    assert got[(BETA, "default", "rubric-precision")]["value"] == 1.0
    assert got[(BETA, "default", "rubric-f1")]["value"] == pytest.approx(2 / 3)
    assert got[(ALPHA, "strict", "rubric-precision")]["value"] == pytest.approx(2 / 3)
    assert got[(ALPHA, "strict", "rubric-recall")]["value"] == 1.0
    assert got[(ALPHA, "default", "rubric-f1")]["in_jury"] and got[(BETA, "default", "rubric-f1")]["in_jury"]
    assert got[(ALPHA, "default", "rubric-f1")]["variant"] == {"polarity": "all", "reference": "jury"}


def test_a_judge_split_over_its_replicates_has_no_verdict():
    from nepotism.grading.rubric_reference import meta_evaluation

    frame = pd.DataFrame(
        {
            "instance_id": ["q1", "q1", "q1"],
            "judge": [ALPHA] * 3,
            "model": [BETA] * 3,
            "rubric_id": ["r1", "r1", "r2"],
            "met": [True, False, None],
            "replicate": [0, 1, 0],
        }
    )
    reference = pd.DataFrame({"instance_id": ["q1", "q1"], "model": [BETA, BETA], "rubric_id": ["r1", "r2"], "met": [True, True]})
    records = meta_evaluation(frame, reference, reference_name="rubric-ref", bootstrap=Bootstrap(n_resamples=0))
    f1 = next(r for r in records if r["metric"] == "rubric-f1")
    assert f1["n"] == 0 and f1["excluded"] == {"no judge verdict": 2}
    assert f1["value"] is None or np.isnan(f1["value"])
    assert f1["in_jury"] is False
