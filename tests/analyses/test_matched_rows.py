"""`nepotism.analyses.matched`: recorded tables + registry → matched-bias rows and records."""

import pandas as pd
import pytest

from nepotism.analyses import matched as module
from nepotism.analyses.matched import MatchedOptions, pair_values, matched_rows, run_matched, truth_codes
from nepotism.analyses.suite import SuiteOptions, run_suite
from nepotism.models import load_registry
from nepotism.metrics import Bootstrap

REGISTRY = """
[models.alpha]
family = "a"
[models.alpha-mini]
family = "a"
[models.pupil]
family = "p"
teachers = ["alpha"]
[models.beta]
family = "b"
[models.gamma]
family = "g"
[models.x1]
family = "x1"
[models.x2]
family = "x2"
"""
OPTS = MatchedOptions(bootstrap=Bootstrap(n_resamples=200))


@pytest.fixture()
def registry(tmp_path):
    path = tmp_path / "registry.toml"
    path.write_text(REGISTRY)
    return load_registry([str(path)])


def _both_orders(instance, judge, x, y, preference):
    """Two order rows whose aggregation gives ``preference`` for x (1, 0.5 or 0)."""
    if preference == 1:
        return [(instance, judge, x, y, "A"), (instance, judge, y, x, "B")]
    if preference == 0:
        return [(instance, judge, x, y, "B"), (instance, judge, y, x, "A")]
    return [(instance, judge, x, y, "A"), (instance, judge, y, x, "A")]  # opposite decisive → tie


def _table(spec):
    rows = [r for item in spec for r in _both_orders(*item)]
    return pd.DataFrame(rows, columns=["instance_id", "judge", "model_a", "model_b", "verdict"])


def test_all_exported():
    for name in module.__all__:
        assert hasattr(module, name)


def test_self_scope_value_against_unrelated_references(registry):
    frame = _table(
        [
            ("i1", "alpha", "alpha", "x1", 1),
            ("i1", "beta", "alpha", "x1", 0),
            ("i1", "gamma", "alpha", "x1", 0.5),
            ("i2", "alpha", "alpha", "x1", 0.5),
            ("i2", "beta", "alpha", "x1", 0.5),
            ("i2", "gamma", "alpha", "x1", 0.5),
            ("i3", "alpha", "alpha", "x1", 1),
        ]
    )  # i3: no reference judge
    records = run_matched(frame, "pairwise", registry, options=OPTS)
    rec = next(r for r in records if r["judge"] == "alpha" and r["scope"] == "self")
    # i1: 1 − mean(0, ½) = ¾ ; i2: ½ − ½ = 0 → mean ⅜
    assert rec["value"] == pytest.approx(3 / 8)
    assert rec["n"] == 2 and rec["n_items"] == 2 and rec["n_items_excluded"] == 1
    assert rec["excluded"] == {"no reference judge": 1}
    assert rec["reference_judges"] == ["beta", "gamma"] and rec["n_reference_judges"] == 2
    assert rec["variant"] == {"kind": "pairwise", "subset": "all"} and rec["p_value"] is not None


def test_orientation_when_related_model_sorts_second(registry):
    # pupil sorts before x2: the related candidate is model_x
    frame = _table([("i1", "alpha", "pupil", "x2", 0), ("i1", "beta", "pupil", "x2", 1)])
    rows = matched_rows_of(frame, registry).frame
    row = rows[(rows.judge == "alpha") & (rows.scope == "student")].iloc[0]
    assert (row.related, row.other, row.judge_value, row.reference_value) == ("pupil", "x2", 0.0, 1.0)
    # beta's own answer sorts after alpha (related is model_y): values are flipped to beta's side
    frame = _table([("i1", "beta", "alpha", "beta", 1), ("i1", "gamma", "alpha", "beta", 0)])
    rows = matched_rows_of(frame, registry).frame
    row = rows[(rows.judge == "beta") & (rows.scope == "self")].iloc[0]
    assert (row.related, row.other, row.judge_value, row.reference_value) == ("beta", "alpha", 0.0, 1.0)


def _values(frame):
    values, centre = pair_values(frame, "pairwise")
    return values, centre


def matched_rows_of(frame, registry):
    values, centre = _values(frame)
    return matched_rows(values, registry, centre=centre)


def test_no_unrelated_reference_at_all_says_so(registry):
    # alpha-mini is alpha's relative, so it cannot referee alpha vs x1
    frame = _table([("i1", "alpha", "alpha", "x1", 1), ("i1", "alpha-mini", "alpha", "x1", 1)])
    rec = next(
        r for r in run_matched(frame, "pairwise", registry, options=OPTS) if r["judge"] == "alpha" and r["scope"] == "self"
    )
    assert rec["value"] is None and "no reference" in rec["note"] and rec["n_reference_judges"] == 0


def test_unknown_models_are_never_unrelated(registry):
    frame = _table([("i1", "alpha", "alpha", "mystery", 1), ("i1", "beta", "alpha", "mystery", 0)])
    assert run_matched(frame, "pairwise", registry, options=OPTS) == []


def test_unparsed_verdict_is_counted_not_a_tie(registry):
    frame = _table(
        [
            ("i1", "alpha", "alpha", "x1", 1),
            ("i1", "beta", "alpha", "x1", 0),
            ("i2", "alpha", "alpha", "x1", 1),
            ("i2", "beta", "alpha", "x1", 0),
        ]
    )
    frame.loc[4, "verdict"] = None  # alpha's first order on i2 unparsed
    rec = next(r for r in run_matched(frame, "pairwise", registry, options=OPTS) if r["scope"] == "self")
    assert rec["value"] == pytest.approx(1.0) and rec["excluded"] == {"no verdict": 1}
    frame.loc[2, "verdict"] = None  # beta's first order on i1: i1 loses its only reference
    rec = next(r for r in run_matched(frame, "pairwise", registry, options=OPTS) if r["scope"] == "self")
    assert rec["value"] is None and rec["excluded"] == {"no verdict": 1, "no reference judge": 1}
    assert rec["n_items_excluded"] == 2


def test_subsets_and_sensitivity_check_from_correctness(registry):
    frame = _table(
        [
            ("i1", "alpha", "alpha", "x1", 1),
            ("i1", "beta", "alpha", "x1", 1),
            ("i2", "alpha", "alpha", "x1", 1),
            ("i2", "beta", "alpha", "x1", 0),
            ("i1", "alpha", "x1", "x2", 1),
            ("i1", "beta", "x1", "x2", 0.5),
        ]
    )
    truth = pd.DataFrame(
        {
            "instance_id": ["i1", "i1", "i1", "i2", "i2"],
            "model": ["alpha", "x1", "x2", "alpha", "x1"],
            "correct": [True, False, False, False, True],
        }
    )
    records = run_matched(frame, "pairwise", registry, references={"correctness-ref": truth}, options=OPTS)
    by = {(r["judge"], r["scope"], r["variant"].get("subset", r["variant"].get("check"))): r for r in records}
    assert by[("alpha", "self", "legitimate")]["value"] == pytest.approx(0.0)  # i1: both prefer the correct alpha
    assert by[("alpha", "self", "harmful")]["value"] == pytest.approx(1.0)  # i2: alpha wrong, still preferred
    assert by[("alpha", "self", "all")]["value"] == pytest.approx(0.5)
    # x1 vs x2 is neutral for alpha but equal by truth (both incorrect): no ordered row
    assert by[("alpha", "neutral", "sensitivity")]["value"] is None


def test_truth_codes_priority():
    pref = pd.DataFrame({"instance_id": ["i1"], "model_a": ["b"], "model_b": ["a"], "winner": ["b"]})
    codes = truth_codes(
        {"preference-ref": pref, "correctness-ref": pd.DataFrame({"instance_id": ["i1"], "model": ["a"], "correct": [True]})}
    )
    assert codes.to_dict("records") == [{"instance_id": "i1", "model_x": "a", "model_y": "b", "truth": -1.0}]
    assert truth_codes(None) is None


def test_pointwise_leniency_cancels_and_bias_shows(registry):
    rows = []
    for i in range(40):
        quality = {"alpha": 1.0 + (i % 3), "x1": float(i % 5), "x2": 2.0}
        for judge, lenient, own in (("alpha", 3.0, 1.0), ("beta", 0.0, 0.0), ("gamma", 0.0, 0.0)):
            for model, q in quality.items():
                rows.append((f"i{i}", judge, model, q + lenient + (own if model == judge else 0.0)))
    frame = pd.DataFrame(rows, columns=["instance_id", "judge", "model", "score"])
    records = run_matched(frame, "pointwise", registry, options=OPTS)
    by = {(r["judge"], r["scope"]): r for r in records}
    assert by[("alpha", "self")]["value"] == pytest.approx(1.0)  # leniency 3 gone, self bonus 1 left
    assert by[("alpha", "self")]["variant"]["kind"] == "pointwise"


def test_rubric_met_rate_difference(registry):
    rows = []
    for i in range(10):
        for judge in ("alpha", "beta"):
            for model in ("alpha", "x1"):
                for k in range(4):
                    met = k < 2 or (judge == "alpha" and model == "alpha" and k == 2)
                    rows.append((f"i{i}", judge, model, f"r{k}", met))
    frame = pd.DataFrame(rows, columns=["instance_id", "judge", "model", "rubric_id", "met"])
    rec = next(r for r in run_matched(frame, "rubric", registry, options=OPTS) if r["scope"] == "self")
    assert rec["value"] == pytest.approx(0.25)


def test_suite_reports_matched_bias_for_pairwise(registry):
    frame = _table([(f"i{i}", j, "alpha", "x1", p) for i in range(6) for j, p in (("alpha", 1), ("beta", i % 2))])
    frame["condition"], frame["replicate"] = "default", 0
    result = run_suite(frame, "pairwise", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=50)))
    rows = [r for r in result.records if r["metric"] == "matched-bias"]
    assert rows and rows[0]["value"] == pytest.approx(0.5)


def test_unknown_kind_is_rejected():
    with pytest.raises(ValueError):
        pair_values(pd.DataFrame(), "recognition")


# ------------------------------------------------------- the coded path against the plain names path
def _names_response_values(frame, kind):
    """The plain reading of `response_values` on names: a group-by of the four key columns."""
    raw = pd.to_numeric(frame["score"], errors="coerce") if kind == "pointwise" else frame["met"].map({True: 1.0, False: 0.0})
    keys = pd.DataFrame(
        {
            "judge": frame["judge"].astype(str),
            "condition": frame["condition"].astype(str) if "condition" in frame else "default",
            "instance_id": frame["instance_id"].astype(str),
            "model": frame["model"].astype(str),
            "value": raw.astype(float).to_numpy(),
        }
    )
    out = keys.groupby(["judge", "condition", "instance_id", "model"], sort=False)["value"].mean().reset_index()
    return out.astype({c: object for c in ["judge", "condition", "instance_id", "model"]})  # names stay objects


def _names_pair_values(frame, kind):
    """The plain reading of `pair_values` for scores and met-rates: every response against every other."""
    per = _names_response_values(frame, kind)
    merged = per.merge(per, on=["judge", "condition", "instance_id"], suffixes=("_x", "_y"))
    merged = merged[merged["model_x"] < merged["model_y"]]
    out = merged[["judge", "condition", "instance_id", "model_x", "model_y"]].assign(value=merged["value_x"] - merged["value_y"])
    return out.reset_index(drop=True).astype({c: object for c in ["judge", "condition", "instance_id", "model_x", "model_y"]})


@pytest.mark.parametrize("seed", range(12))
def test_the_coded_pairs_are_the_plain_group_by_on_names(seed):
    """`pair_values` / `response_values` form pairs on integer codes (issue 37's rubric benchmark:
    3.96M pairs): same rows, same order, same values as the group-by on names — whatever the order
    names first appear in, with replicates, missing verdicts, and with or without a condition column."""
    import numpy as np

    rng = np.random.default_rng(seed)
    kind = ("pointwise", "rubric")[seed % 2]
    n = int(rng.integers(1, 400))
    models = ["zeta", "alpha", "Beta", "m10", "m9", "é"]
    frame = pd.DataFrame(
        {
            "instance_id": rng.choice(["q3", "q10", "q1", "q2"], size=n),
            "judge": rng.choice(["judge-b", "judge-a", "j"], size=n),
            "model": rng.choice(models[: int(rng.integers(1, len(models) + 1))], size=n),
        }
    )
    if seed % 3:
        frame["condition"] = rng.choice(["terse", "default"], size=n)
    if kind == "pointwise":
        frame["score"] = np.where(rng.random(n) < 0.1, np.nan, rng.integers(1, 11, size=n) / 2)
    else:
        frame["met"] = pd.Series(rng.choice(np.array([True, False, None], dtype=object), size=n), dtype=object)
    pd.testing.assert_frame_equal(module.response_values(frame, kind), _names_response_values(frame, kind))
    got, centre = pair_values(frame, kind)
    pd.testing.assert_frame_equal(got, _names_pair_values(frame, kind))
    assert centre == 0.0


@pytest.mark.parametrize("seed", range(8))
def test_the_coded_pairwise_values_are_the_plain_group_by_on_names(seed):
    """A pairwise table's `pair_values` are coded from the comparisons without a text copy: the same
    rows, order and values as the mean over replicates grouped by name (first appearance), with
    both orders, single orders, ties, missing verdicts and ids that sort differently as text."""
    import numpy as np

    from nepotism.analyses.comparisons import build_comparisons
    from nepotism.tables import validate

    rng = np.random.default_rng(100 + seed)
    models = ["zeta", "alpha", "Beta", "m10", "m9"]
    rows = []
    for _ in range(int(rng.integers(1, 120))):
        a, b = rng.choice(models, size=2, replace=False)
        key = {"instance_id": str(rng.choice(["q3", "q10", "q1"])), "judge": str(rng.choice(["judge-b", "j"]))}
        replicate = int(rng.integers(0, 1 + seed % 3))
        for first, second in ((a, b), (b, a))[: int(rng.integers(1, 3))]:
            verdict = rng.choice(["A", "B", "tie", None])
            rows.append(key | {"model_a": first, "model_b": second, "verdict": verdict, "replicate": replicate})
    frame = pd.DataFrame(rows).drop_duplicates(["instance_id", "judge", "model_a", "model_b", "replicate"])
    if seed % 2:
        frame["condition"] = rng.choice(["terse", "default"], size=len(frame))
    frame = validate(frame.reset_index(drop=True), "pairwise").frame
    got, centre = pair_values(frame, "pairwise")
    comp = build_comparisons(module._defaults(frame)).frame
    keys = ["judge", "condition", "instance_id", "model_x", "model_y"]
    plain = comp[keys].astype(str).assign(value=(comp["outcome"] + 1.0) / 2.0)
    want = plain.groupby(keys, sort=False)["value"].mean().reset_index().astype({c: object for c in keys})
    pd.testing.assert_frame_equal(got, want)
    assert centre == 0.5
