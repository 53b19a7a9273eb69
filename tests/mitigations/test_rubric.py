import pandas as pd

from nepotism.mitigations.config import MitigationConfig
from nepotism.metrics import Bootstrap
from nepotism.mitigations.rubric import agreement_records, rubric_rows
from nepotism.records import Judgment

BOOT = Bootstrap(n_resamples=200, seed=0)


def _j(judge, inst, item, model, verdict):
    status = "parsed" if verdict else "unparsed"
    return Judgment(inst, judge, "rubric", (model,), status, verdict=verdict, rubric_id=item)


def test_rows_count_unparsed():
    failed = Judgment("i", "a", "rubric", ("b",), "failed", rubric_id="r1", reason="generation:timeout")
    frame, missing = rubric_rows([_j("a", "i", "r1", "a", "yes"), _j("a", "i", "r2", "a", None), failed])
    assert len(frame) == 1 and bool(frame["met"].iloc[0])
    assert missing == {"failed-generation:timeout": 1, "unparsed": 1}  # the labels every metric counts


def test_filtering_disputed_items_removes_their_overestimation():
    judgments = []
    for inst in ("i1", "i2"):
        # r1: every judge agrees it is not met (a 'no' from all, on every model)
        # r2: judge a says met on its own answer while b and c say not: disputed -> low agreement
        for model in ("a", "b"):
            for judge in ("a", "b", "c"):
                judgments.append(_j(judge, inst, "r1", model, "no"))
                judgments.append(_j(judge, inst, "r2", model, "yes" if judge == "a" else "no"))
    frame, _ = rubric_rows(judgments)
    cfg = MitigationConfig("agree", "rubric-agreement", {"threshold": 0.9})
    records, info = agreement_records(frame.assign(condition="default"), cfg, ["a", "b"], "default", BOOT)
    by_judge = {r["judge"]: r for r in records}
    assert info["kept"] == 2 and info["items"] == 4
    assert by_judge["a"]["value_baseline"] == 0.5 and by_judge["a"]["value_mitigated"] == 0.0
    assert by_judge["a"]["value"] == -0.5
    assert by_judge["b"]["value"] == 0.0
    assert by_judge["a"]["variant"] == {
        "mitigation": "rubric-agreement",
        "base_metric": "rubric-self-overestimation",
        "scope": "self",
    }


def test_no_rubric_judgments():
    records, info = agreement_records(
        pd.DataFrame(columns=["judge", "condition", "instance_id", "rubric_id", "model", "met"]),
        MitigationConfig("agree", "rubric-agreement", {}),
        ["a"],
        "default",
        BOOT,
    )
    assert records == [] and "note" in info
