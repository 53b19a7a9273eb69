import os

import numpy as np
import pandas as pd
import pytest

from nepotism.analyses import suite
from nepotism.analyses.suite import SuiteOptions, agreement_filter, committee, run_suite
from nepotism.metrics.catalogue import METRICS
from nepotism.models import load_registry
from nepotism.simulate import SimulationSpec, simulate


def _setup(tmp_path, **kwargs):
    spec = SimulationSpec(n_instances=60, **kwargs)
    path = os.path.join(tmp_path, "r.toml")
    with open(path, "w") as handle:
        handle.write(spec.registry_toml())
    return spec, simulate(spec, seed=2), load_registry([path])


def test_all_exported():
    for name in suite.__all__:
        assert hasattr(suite, name)


def test_records_use_catalogue_ids_and_fields(tmp_path):
    spec, sim, registry = _setup(tmp_path, self_bias=0.5)
    result = run_suite(
        sim.rubric,
        "rubric",
        registry,
        references={"rubric-ref": sim.rubric_ref, "rubric-items": sim.rubric_items},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=50)),
    )
    frame = result.frame()
    assert set(frame["metric"]) <= set(METRICS)
    for column in ("metric", "judge", "variant", "value", "ci_low", "ci_high", "n", "n_excluded"):
        assert column in frame
    weights = {r["variant"].get("weighting") for r in result.records if r["metric"] == "score-delta"}
    assert weights == {"count", "points"}
    # centred deltas of one judge sum to zero
    deltas = frame[
        (frame.metric == "score-delta")
        & (frame.judge == "judge-a")
        & (frame.variant.map(lambda v: v.get("weighting")) == "count")
    ]
    assert abs(deltas["value"].sum()) < 1e-9


def test_row_order_does_not_change_records(tmp_path):
    spec, sim, registry = _setup(tmp_path)
    options = SuiteOptions(bootstrap=Bootstrap(n_resamples=30))
    a = run_suite(sim.pairwise, "pairwise", registry, references={"preference-ref": sim.preference_ref}, options=options)
    shuffled = sim.pairwise.sample(frac=1.0, random_state=1).reset_index(drop=True)
    b = run_suite(shuffled, "pairwise", registry, references={"preference-ref": sim.preference_ref}, options=options)
    key = lambda r: (r["metric"], r["judge"], str(r.get("generator")), str(r.get("pair")), str(r.get("scope")), str(r["variant"]))  # noqa: E731
    va = {key(r): r["value"] for r in a.records}
    vb = {key(r): r["value"] for r in b.records}
    assert va.keys() == vb.keys()
    for k in va:
        assert (va[k] is None and vb[k] is None) or np.isclose(va[k], vb[k])


def test_committee_and_agreement_filter():
    frame = pd.DataFrame(
        {
            "instance_id": ["x"] * 6,
            "model": ["m"] * 6,
            "rubric_id": ["r1"] * 3 + ["r2"] * 3,
            "judge": ["a", "b", "c"] * 2,
            "met": [True, True, False, True, False, None],
            "condition": "default",
            "replicate": 0,
        }
    )
    votes = committee(frame, ["a", "b", "c"], name="panel")
    panel = votes[votes.judge == "panel"].set_index("rubric_id")["met"]
    assert panel["r1"] is True or panel["r1"] == True  # noqa: E712
    assert panel["r2"] is None  # split vote among parsed verdicts → unparsed
    kept, agreement = agreement_filter(frame, 0.3)
    assert set(kept["rubric_id"]) == {"r1"}
    assert np.isclose(agreement.set_index("rubric_id")["agreement"]["r1"], 1 / 3)


def test_slices_add_records(tmp_path):
    spec, sim, registry = _setup(tmp_path)
    frame = sim.rubric.copy()
    frame["category"] = np.where(frame["instance_id"].astype(str) < "x00030", "a", "b")
    result = run_suite(
        frame,
        "rubric",
        registry,
        references={"rubric-ref": sim.rubric_ref},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=20), slices=("category",)),
    )
    sliced = {r["variant"]["slice"]["category"] for r in result.records if "slice" in r["variant"]}
    assert sliced == {"a", "b"}


# ---------------------------------------------------------------- new table kinds and options
from scipy.special import expit  # noqa: E402

from nepotism.analyses.suite import correlate, read_leaderboard  # noqa: E402
from nepotism.metrics import rubric as rubric_metrics  # noqa: E402
from nepotism.metrics import Bootstrap

MODELS = ("judge-a", "judge-b", "other-1", "other-2", "other-3")


def _registry(tmp_path):
    path = os.path.join(tmp_path, "models.toml")
    with open(path, "w") as handle:
        handle.write("\n".join(f'[models."{m}"]\nfamily = "{m}"\n' for m in MODELS))
    return load_registry([path])


def _pointwise(n=300, self_bias=1.5, seed=0):
    """DA scores: quality + noise, and judge-a adds ``self_bias`` to its own answers."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(n, len(MODELS)))
    rows = []
    for judge in ("judge-a", "judge-b"):
        noise = rng.normal(scale=0.5, size=quality.shape)
        bias = np.array([self_bias if (m == judge and judge == "judge-a") else 0.0 for m in MODELS])
        scores = np.round(5 + 2 * (quality + noise + bias), 1)
        for g, model in enumerate(MODELS):
            rows.append(
                pd.DataFrame({"instance_id": [f"x{i}" for i in range(n)], "judge": judge, "model": model, "score": scores[:, g]})
            )
    frame = pd.concat(rows, ignore_index=True)
    ref = pd.DataFrame(
        {
            "instance_id": np.tile([f"x{i}" for i in range(n)], len(MODELS)),
            "model": np.repeat(MODELS, n),
            "score": quality.T.ravel(),
        }
    )
    return frame, ref


def _by(records, metric, **match):
    out = []
    for r in records:
        if r["metric"] != metric:
            continue
        ok = all(
            (r.get(k) == v) if k != "variant" else all(r["variant"].get(a) == b for a, b in v.items()) for k, v in match.items()
        )
        if ok:
            out.append(r)
    return out


def test_pointwise_self_preference_and_instance_metrics(tmp_path):
    registry = _registry(tmp_path)
    frame, ref = _pointwise()
    records = run_suite(
        frame,
        "pointwise",
        registry,
        references={"correctness-ref": ref},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=200)),
    ).records
    assert set(r["metric"] for r in records) <= set(METRICS)
    biased = _by(records, "self-preference-ratio", judge="judge-a", scope="self")[0]
    fair = _by(records, "self-preference-ratio", judge="judge-b", scope="self")[0]
    assert biased["ci_low"] > 0.6 and fair["ci_low"] < 0.5 < fair["ci_high"]
    hspp_a = _by(records, "hspp-ratio", judge="judge-a", scope="self", variant={"level": "instance"})[0]
    hspp_b = _by(records, "hspp-ratio", judge="judge-b", scope="self", variant={"level": "instance"})[0]
    assert hspp_a["ci_low"] > 1.5 and hspp_b["ci_low"] < 1 < hspp_b["ci_high"]
    assert _by(records, "mipa", judge="judge-b", variant={"paradigm": "DA"})[0]["value"] > 0.6
    deltas = _by(records, "score-delta", judge="judge-a")
    assert abs(sum(r["value"] for r in deltas)) < 1e-9
    own = _by(records, "score-delta", judge="judge-a", generator="judge-a")[0]
    assert own["value"] > 0 and own["variant"]["weighting"] == "raw scale"
    rank = _by(records, "ranking-difference", judge="judge-a", generator="judge-a", variant={"against": "correctness-ref"})[0]
    assert rank["value"] >= 0


def test_pointwise_without_reference_and_unparsed_scores(tmp_path):
    registry = _registry(tmp_path)
    frame, _ = _pointwise(n=50)
    frame.loc[::7, "score"] = np.nan
    records = run_suite(frame, "pointwise", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0))).records
    # matched-bias too: judge-a against the other judge on the same items (score differences)
    assert {r["metric"] for r in records} == {"self-preference-ratio", "excluded-verdicts", "matched-bias", "exclusion-share-gap"}
    for r in _by(records, "excluded-verdicts"):  # the unparsed scores, counted (no reason was recorded)
        assert r["n_excluded"] == r["excluded"].get("unparsed", 0) and r["n"] > 0
    spr = _by(records, "self-preference-ratio", judge="judge-a", scope="self")[0]
    assert spr["n_excluded"] > 0 and spr["n"] + spr["n_excluded"] == 50 * 4  # 4 unrelated opponents


def test_pointwise_scope_without_generators_says_why(tmp_path):
    """A judge that graded only other models: the self scope is a record without a value and a reason."""
    registry = _registry(tmp_path)
    frame, _ = _pointwise(n=40)
    frame = frame[frame["model"] != "judge-a"]
    records = run_suite(frame, "pointwise", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=20))).records
    own = _by(records, "self-preference-ratio", judge="judge-a", scope="self")[0]
    assert own["value"] is None and own["n"] == 0
    assert own["note"] == "not measurable: the judge's own answers are not among the 4 generators it scored"
    family = _by(records, "self-preference-ratio", judge="judge-a", scope="family")[0]
    assert family["value"] is None and "no family generator of the judge" in family["note"]
    assert _by(records, "self-preference-ratio", judge="judge-b", scope="self")[0]["value"] is not None


def test_pointwise_ties_count_half_in_a_variant(tmp_path):
    """Equal scores: not a preference (default), or half of one (variant ties = half)."""
    registry = _registry(tmp_path)
    rows = [
        {"instance_id": f"x{i}", "judge": "judge-a", "model": m, "score": s}
        for i in range(4)
        for m, s in (("judge-a", 5.0), ("other-1", [5.0, 5.0, 4.0, 6.0][i]))
    ]
    records = run_suite(
        pd.DataFrame(rows), "pointwise", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0))
    ).records
    strict = _by(records, "self-preference-ratio", scope="self", variant={"ties": "not preferred"})[0]
    half = _by(records, "self-preference-ratio", scope="self", variant={"ties": "half"})[0]
    assert (strict["value"], half["value"]) == (0.25, 0.5) and strict["n"] == half["n"] == 4


def test_rubric_batch_matches_standalone_functions(tmp_path):
    spec, sim, registry = _setup(tmp_path, self_bias=0.7)
    records = run_suite(
        sim.rubric,
        "rubric",
        registry,
        references={"rubric-ref": sim.rubric_ref},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0)),
    ).records
    judged = sim.rubric[sim.rubric.judge == "judge-a"].reset_index(drop=True)
    truth = judged[["instance_id", "model", "rubric_id"]].merge(sim.rubric_ref, how="left")["met"].astype(float)
    met = judged["met"].astype(float).to_numpy()
    mra = rubric_metrics.mra(met, truth.to_numpy(), judged["instance_id"].astype(str).to_numpy(), n_resamples=0)
    assert _by(records, "mra", judge="judge-a")[0]["value"] == pytest.approx(mra.value)
    sel = (judged["model"] == "other-1").to_numpy()
    over = rubric_metrics.overestimation_rate(
        2 * met[sel] - 1, 2 * truth.to_numpy()[sel] - 1, judged["instance_id"].astype(str).to_numpy()[sel], n_resamples=0
    )
    rec = _by(records, "overestimation-rate", judge="judge-a", generator="other-1", variant={"level": "rubric"})[0]
    assert rec["value"] == pytest.approx(over.value)


def test_same_seed_same_numbers_and_intervals(tmp_path):
    spec, sim, registry = _setup(tmp_path, self_bias=0.7)
    refs = {"rubric-ref": sim.rubric_ref}
    a = run_suite(
        sim.rubric, "rubric", registry, references=refs, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=100, seed=3))
    )
    b = run_suite(
        sim.rubric, "rubric", registry, references=refs, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=100, seed=3))
    )
    c = run_suite(
        sim.rubric, "rubric", registry, references=refs, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=100, seed=4))
    )
    assert [r["ci_low"] for r in a.records] == [r["ci_low"] for r in b.records]
    assert [r["ci_low"] for r in a.records] != [r["ci_low"] for r in c.records]


def _recognition(n=200, accuracy=0.9, seed=1):
    rng = np.random.default_rng(seed)
    rows, pairs = [], []
    for i in range(n):
        other = MODELS[2 + i % 3]
        own_first = i % 2 == 0
        a, b = ("judge-a", other) if own_first else (other, "judge-a")
        right = rng.random() < accuracy
        choice = ("A" if own_first else "B") if right else ("B" if own_first else "A")
        pairs.append({"instance_id": f"x{i}", "judge": "judge-a", "model_a": a, "model_b": b, "choice": choice})
        rows.append({"instance_id": f"x{i}", "judge": "judge-a", "model": "judge-a", "claimed": bool(right)})
        rows.append({"instance_id": f"x{i}", "judge": "judge-a", "model": other, "claimed": bool(rng.random() > accuracy)})
    return pd.DataFrame(rows), pd.DataFrame(pairs)


def test_recognition_accuracy_recovers_planted_accuracy(tmp_path):
    registry = _registry(tmp_path)
    pointwise, pairwise_rec = _recognition(n=600, accuracy=0.8)
    records = run_suite(pointwise, "recognition", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=200))).records
    own = _by(records, "recognition-accuracy", variant={"mode": "pointwise", "answers": "own"})[0]
    assert own["ci_low"] <= 0.8 <= own["ci_high"]
    records = run_suite(
        pairwise_rec, "recognition-pairwise", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=200))
    ).records
    acc = _by(records, "recognition-accuracy", variant={"mode": "pairwise"})[0]
    assert acc["ci_low"] <= 0.8 <= acc["ci_high"] and acc["n"] == 600


def test_recognition_preference_association(tmp_path):
    registry = _registry(tmp_path)
    _, rec = _recognition(n=300, accuracy=0.6, seed=3)
    right = np.where(rec["model_a"] == "judge-a", rec["choice"] == "A", rec["choice"] == "B")
    # the judge prefers its own answer exactly when it recognised it: r = 1 on parsed items
    verdict = np.where(right, np.where(rec["model_a"] == "judge-a", "A", "B"), np.where(rec["model_a"] == "judge-a", "B", "A"))
    pairwise = rec.drop(columns="choice").assign(verdict=verdict)
    correct = pd.DataFrame(
        {
            "instance_id": np.repeat(rec["instance_id"], 2),
            "model": np.ravel(np.column_stack([rec["model_a"], rec["model_b"]])),
            "correct": np.ravel(np.column_stack([rec["model_a"] != "judge-a", rec["model_b"] != "judge-a"])),
        }
    )
    records = run_suite(
        rec,
        "recognition-pairwise",
        registry,
        references={"pairwise": pairwise, "correctness-ref": correct},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=100)),
    ).records
    assoc = _by(records, "recognition-preference-association")
    assert {r["variant"]["subset"] for r in assoc} == {"all own-vs-other comparisons", "harmful (own wrong, other right)"}
    for r in assoc:
        assert r["value"] == pytest.approx(1.0) and r["chi2_p_value"] < 1e-6 and r["n"] == 300


def test_perplexity_win_rate_bins_and_self_split(tmp_path):
    registry = _registry(tmp_path)
    rng = np.random.default_rng(5)
    n = 2000
    others = np.array(MODELS[1:])
    a = np.where(rng.random(n) < 0.5, "judge-a", rng.choice(others, n))
    b = np.array([rng.choice([m for m in others if m != x]) for x in a])
    log_diff = rng.normal(size=n)
    says_a = rng.random(n) < expit(-2 * log_diff)  # the judge prefers the lower-perplexity answer
    frame = pd.DataFrame(
        {
            "instance_id": [f"x{i}" for i in range(n)],
            "judge": "judge-a",
            "model_a": a,
            "model_b": b,
            "verdict": np.where(says_a, "A", "B"),
            "perplexity_a": np.exp(1 + log_diff / 2),
            "perplexity_b": np.exp(1 - log_diff / 2),
        }
    )
    human = pd.DataFrame(
        {"instance_id": frame["instance_id"], "model_a": a, "model_b": b, "winner": np.where(rng.random(n) < 0.5, a, b)}
    )
    records = run_suite(
        frame,
        "pairwise",
        registry,
        references={"preference-ref": human},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=50), perplexity_bins=4),
    ).records
    judge_rates = [
        r["value"]
        for r in sorted(
            _by(records, "perplexity-win-rate", variant={"group": "all", "rater": "judge"}), key=lambda r: r["variant"]["bin"]
        )
    ]
    assert len(judge_rates) == 4 and judge_rates[0] > 0.7 > 0.3 > judge_rates[-1]
    humans = _by(records, "perplexity-win-rate", variant={"group": "all", "rater": "human"})
    assert all(abs(r["value"] - 0.5) < 0.1 for r in humans)
    assert _by(records, "perplexity-win-rate", variant={"group": "self"}) and _by(
        records, "perplexity-win-rate", variant={"group": "other"}
    )


def test_ranking_difference_against_leaderboard_humans_and_judge(tmp_path):
    spec, sim, registry = _setup(tmp_path, self_bias=2.0, ability={"judge-a": -0.7})
    board = tmp_path / "board.csv"
    board.write_text("model,score\n" + "\n".join(f"{m},{i}" for i, m in enumerate(spec.generators)) + "\n")
    leaderboard = read_leaderboard(board)
    records = run_suite(
        sim.pairwise,
        "pairwise",
        registry,
        references={"preference-ref": sim.preference_ref},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=30), leaderboard=leaderboard, rank_against="judge-b"),
    ).records
    against = {r["variant"]["against"] for r in records if r["metric"] == "ranking-difference"}
    assert against == {"preference-ref", "leaderboard", "judge judge-b"}
    own = _by(records, "ranking-difference", judge="judge-a", generator="judge-a", variant={"against": "preference-ref"})[0]
    assert own["value"] > 0  # a strong self-bias lifts the judge's own answers up its leaderboard
    rows = _by(records, "ranking-difference", judge="judge-a", variant={"against": "leaderboard"})
    assert len(rows) == len(spec.generators)


def test_read_leaderboard_rejects_bad_rows(tmp_path):
    from nepotism.errors import InputError

    path = tmp_path / "b.csv"
    path.write_text("model,score\na,1\nb,high\n")
    with pytest.raises(InputError) as err:
        read_leaderboard(path)
    assert err.value.line == 3


def test_pairwise_committee_and_member_copies(tmp_path):
    spec, sim, registry = _setup(tmp_path, self_bias=1.0)
    votes = committee(sim.pairwise, ["judge-a", "judge-b"], name="panel")
    assert set(votes["judge"]) == {"panel", "judge-a", "judge-b"}
    member = votes[votes["judge"] == "judge-a"]
    assert set(member["condition"]) == {"default | panel"}
    two = pd.DataFrame(
        {
            "instance_id": ["x"] * 2,
            "judge": ["a", "b"],
            "model_a": "m",
            "model_b": "n",
            "verdict": ["A", "B"],
            "condition": "default",
            "replicate": 0,
        }
    )
    assert committee(two, ["a", "b"], name="p").query("judge == 'p'")["verdict"].iloc[0] is None


def test_rubric_polarity_and_length_slices(tmp_path):
    spec, sim, registry = _setup(tmp_path)
    items = sim.rubric_items.copy()
    items["text"] = [" ".join(["word"] * (2 + 3 * int(r[1:]))) for r in items["rubric_id"].astype(str)]
    refs = {"rubric-ref": sim.rubric_ref, "rubric-items": items}
    result = run_suite(
        sim.rubric,
        "rubric",
        registry,
        references=refs,
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0), slices=("rubric-polarity", "rubric-length")),
    )
    polarity = {
        r["variant"]["slice"]["rubric-polarity"] for r in result.records if "rubric-polarity" in r["variant"].get("slice", {})
    }
    assert polarity == {"negative", "positive"}
    lengths = {r["variant"]["slice"]["rubric-length"] for r in result.records if "rubric-length" in r["variant"].get("slice", {})}
    assert len(lengths) == 3


def test_correlate_across_judges():
    records = [
        {
            "metric": "judge-accuracy",
            "judge": j,
            "condition": "default",
            "generator": None,
            "pair": None,
            "scope": "self",
            "variant": {},
            "value": v,
        }
        for j, v in zip("abcde", [0.5, 0.6, 0.7, 0.8, 0.9])
    ]
    records += [
        {
            "metric": "self-preference-ratio",
            "judge": j,
            "condition": "default",
            "generator": None,
            "pair": None,
            "scope": "self",
            "variant": {},
            "value": v,
        }
        for j, v in zip("abcde", [0.9, 0.7, 0.65, 0.5, 0.4])
    ]
    records += [
        {
            "metric": "self-preference-ratio",
            "judge": "a",
            "condition": "default",
            "generator": None,
            "pair": None,
            "scope": "self",
            "variant": {"opponents": "any"},
            "value": 0.0,
        }
    ]  # not the headline
    result = correlate(records, "judge-accuracy", "self-preference-ratio")
    assert result["n"] == 5 and result["r"] < -0.95
    assert result["ci_low"] < result["r"] < result["ci_high"]


def test_rubric_setups_are_measured_apart_never_pooled(tmp_path):
    # the same verdicts twice: once as single-rubric calls, once with every verdict "met" as if
    # asked all at once; each setup keeps its own numbers, tagged variant.setup
    spec, sim, registry = _setup(tmp_path, self_bias=0.7)
    single = sim.rubric.assign(setup="single-rubric")
    every = sim.rubric.assign(setup="all-rubrics", met=True)
    both = pd.concat([single, every], ignore_index=True)
    refs = {"rubric-ref": sim.rubric_ref}
    records = run_suite(
        both, "rubric", registry, references=refs, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0))
    ).records
    alone = run_suite(
        sim.rubric, "rubric", registry, references=refs, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0))
    ).records
    for judge in ("judge-a", "judge-b"):
        (mra_single,) = _by(records, "mra", judge=judge, variant={"setup": "single-rubric"})
        (mra_alone,) = _by(alone, "mra", judge=judge)
        assert mra_single["value"] == pytest.approx(mra_alone["value"])
        (mra_all,) = _by(records, "mra", judge=judge, variant={"setup": "all-rubrics"})
        truth_met = sim.rubric_ref["met"].astype(float).mean()
        assert mra_all["value"] == pytest.approx(truth_met, abs=0.1)  # "always met" is right when the truth is met
    assert all("setup" in r["variant"] for r in records)


def test_d_diff_metrics_for_unrelated_and_any_opponents(tmp_path):
    # judge-a compares its answer with other-1 (unrelated) and with student-a (its student); its
    # own answer is wrong and the other right on every item, and it always prefers its own
    _, _, registry = _setup(tmp_path)
    rows, truth = [], []
    for i in range(20):
        for other in ("other-1", "student-a"):
            rows += [(f"q{i}", "judge-a", "judge-a", other, "A"), (f"q{i}", "judge-a", other, "judge-a", "B")]
            truth.append((f"q{i}", other, True))
        truth.append((f"q{i}", "judge-a", False))
    frame = pd.DataFrame(rows, columns=["instance_id", "judge", "model_a", "model_b", "verdict"])
    frame = frame.assign(condition="default", replicate=0)
    ref = pd.DataFrame(truth, columns=["instance_id", "model", "correct"])
    records = run_suite(
        frame, "pairwise", registry, references={"correctness-ref": ref}, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0))
    ).records
    unrelated = _by(
        records, "harmful-self-preference-propensity", judge="judge-a", variant={"averaging": "pooled", "opponents": "unrelated"}
    )[0]
    anyone = _by(
        records, "harmful-self-preference-propensity", judge="judge-a", variant={"averaging": "pooled", "opponents": "any"}
    )[0]
    assert unrelated["value"] == pytest.approx(1.0) and unrelated["n"] == 20
    assert anyone["value"] == pytest.approx(1.0) and anyone["n"] == 40


def test_hspp_ratio_denominators_and_an_unmeasurable_family(tmp_path):
    spec, sim, registry = _setup(tmp_path, self_bias=0.7)
    records = run_suite(
        sim.rubric,
        "rubric",
        registry,
        references={"rubric-ref": sim.rubric_ref},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0)),
    ).records
    mine = [r for r in records if r["metric"] == "hspp-ratio" and r["judge"] == "judge-a" and r["variant"]["level"] == "rubric"]
    family = [r for r in mine if r["scope"] == "family"]
    assert len(family) == 4  # exclude/include judge x two denominators: all undefined, none 0
    assert all(r["value"] is None and r["note"].startswith("not measurable: no family generator") for r in family)
    assert any("repeat the self ratio" in r["note"] for r in family if r["variant"]["family_set"] == "include judge")
    self_ = {r["variant"]["denominator"]: r for r in mine if r["scope"] == "self"}
    assert set(self_) == {"not-family", "unrelated"}
    # student-a (trained on judge-a's outputs) is in 002's S_J but not among the unrelated
    assert self_["not-family"]["value"] > 1 and self_["unrelated"]["value"] > 1
    assert self_["not-family"]["n"] > self_["unrelated"]["n"]


def test_instance_truth_derived_from_rubric_truth():
    rubric_ref = pd.DataFrame(
        [
            ("p1", "a", "r1", True),
            ("p1", "a", "r2", True),
            ("p1", "b", "r1", True),
            ("p1", "b", "r2", False),
            ("p2", "a", "r1", False),
            ("p2", "b", "r1", False),
        ],
        columns=["instance_id", "model", "rubric_id", "met"],
    )
    refs = suite.derive_instance_references({"rubric-ref": rubric_ref})
    scores = refs["correctness-ref"].set_index(["instance_id", "model"])["score"]
    assert scores[("p1", "a")] == 1.0 and scores[("p1", "b")] == 0.5 and scores[("p2", "a")] == 0.0
    prefs = refs["preference-ref"].set_index("instance_id")["winner"]
    assert prefs["p1"] == "a" and prefs["p2"] == "tie"
    given = pd.DataFrame({"instance_id": ["p1"], "model_a": ["a"], "model_b": ["b"], "winner": ["b"]})
    kept = suite.derive_instance_references({"rubric-ref": rubric_ref, "preference-ref": given})
    assert kept["preference-ref"] is given  # a given reference is never replaced


def test_direct_assessment_measured_against_rubric_truth(tmp_path):
    # a judge that scores its own answers one point above the truth, others exactly
    _, _, registry = _setup(tmp_path)
    rng = np.random.default_rng(0)
    rubric_rows, scores = [], []
    for i in range(40):
        for model in ("judge-a", "other-1", "other-2"):
            met = rng.random(4) < 0.5
            rubric_rows += [(f"q{i}", model, f"r{k}", bool(m)) for k, m in enumerate(met)]
            noise = rng.normal(0, 0.8)  # the judge misjudges everyone a little, its own answers upwards
            scores.append((f"q{i}", "judge-a", model, met.mean() * 4 + noise + (1.5 if model == "judge-a" else 0)))
    frame = pd.DataFrame(scores, columns=["instance_id", "judge", "model", "score"])
    ref = pd.DataFrame(rubric_rows, columns=["instance_id", "model", "rubric_id", "met"])
    records = run_suite(
        frame, "pointwise", registry, references={"rubric-ref": ref}, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0))
    ).records
    (mipa,) = _by(records, "mipa", judge="judge-a", variant={"paradigm": "DA"})
    assert 0 < mipa["value"] < 1
    hspp = _by(records, "hspp-ratio", judge="judge-a", scope="self", variant={"denominator": "not-family"})
    assert hspp and hspp[0]["value"] > 1


def test_pairwise_verdicts_get_an_hspp_ratio_against_the_preference_reference(tmp_path):
    # 002 Eq. 3 for PWC: overestimation from the verdicts themselves; a planted self-bias must
    # raise the self ratio above the unbiased judge's
    ratios = {}
    for bias in (0.0, 1.5):
        spec, sim, registry = _setup(tmp_path, self_bias=bias)
        records = run_suite(
            sim.pairwise,
            "pairwise",
            registry,
            references={"preference-ref": sim.preference_ref},
            options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0)),
        ).records
        (r,) = _by(records, "hspp-ratio", judge="judge-a", scope="self", variant={"paradigm": "PWC", "denominator": "not-family"})
        ratios[bias] = r["value"]
        assert not _by(records, "mipa", judge="judge-a", variant={"paradigm": "PWC", "level": "instance"})
    assert ratios[1.5] > 1.2 and ratios[1.5] > ratios[0.0]


def test_d_diff_metrics_read_label_probabilities_when_verdicts_are_positional(tmp_path):
    # a judge that always answers "A" (so both orders combine to a tie) but whose label
    # probabilities lean to its own answer: the verdict HSPP is 0, the probability HSPP is not
    _, _, registry = _setup(tmp_path)
    rows, truth = [], []
    for i in range(30):
        own_first = (f"q{i}", "judge-a", "judge-a", "other-1", "A", 0.8, 0.2)  # p(A)=.8: first slot and own
        own_second = (f"q{i}", "judge-a", "other-1", "judge-a", "A", 0.55, 0.45)  # position pulls, own still .45
        rows += [own_first, own_second]
        truth += [(f"q{i}", "judge-a", False), (f"q{i}", "other-1", True)]
    frame = pd.DataFrame(rows, columns=["instance_id", "judge", "model_a", "model_b", "verdict", "prob_a", "prob_b"])
    frame = frame.assign(condition="default", replicate=0)
    ref = pd.DataFrame(truth, columns=["instance_id", "model", "correct"])
    records = run_suite(
        frame, "pairwise", registry, references={"correctness-ref": ref}, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0))
    ).records
    (by_verdict,) = _by(
        records, "harmful-self-preference-propensity", judge="judge-a", variant={"averaging": "pooled", "opponents": "unrelated"}
    )[:1]
    (by_prob,) = _by(
        records,
        "harmful-self-preference-propensity",
        judge="judge-a",
        variant={"averaging": "pooled", "opponents": "unrelated", "preference": "probability"},
    )
    assert "preference" not in by_verdict["variant"] and by_verdict["value"] == pytest.approx(0.0)
    assert by_prob["value"] == pytest.approx((0.8 + 0.45) / 2)


def test_position_metrics_only_from_rows_whose_order_is_known(tmp_path):
    """A harness that randomised the order (AlpacaEval) gives rows with presentation = unknown: they
    weigh in every preference metric but never in a position metric."""
    spec, sim, registry = _setup(tmp_path)
    options = SuiteOptions(bootstrap=Bootstrap(n_resamples=0))
    frame = sim.pairwise.copy()
    known = run_suite(frame, "pairwise", registry, options=options)
    assert any(r["metric"] == "position-consistency" for r in known.records)
    frame["presentation"] = "unknown"
    unknown = run_suite(frame, "pairwise", registry, options=options)
    assert not any(r["metric"] == "position-consistency" for r in unknown.records)
    spr = lambda result: sorted(
        (r["judge"], str(r["scope"]), str(r["variant"]), r["value"])  # noqa: E731
        for r in result.records
        if r["metric"] == "self-preference-ratio"
    )
    assert spr(known) == spr(unknown)  # preferences do not depend on knowing the order
    # half the judges with a known order: only they get position records
    judges = sorted(frame["judge"].unique())
    frame["presentation"] = np.where(frame["judge"] == judges[0], "a-first", "unknown")
    mixed = run_suite(frame, "pairwise", registry, options=options)
    assert {r["judge"] for r in mixed.records if r["metric"] == "position-consistency"} == {judges[0]}


def test_an_unknown_slice_column_is_an_error_naming_the_columns(tmp_path):
    from nepotism.errors import InputError

    spec, sim, registry = _setup(tmp_path)
    with pytest.raises(InputError) as err:
        run_suite(
            sim.pairwise, "pairwise", registry, options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0), slices=("nosuchcol",))
        )
    assert err.value.field == "--slice" and "nosuchcol" in str(err.value) and "instance_id" in str(err.value)
    with pytest.raises(InputError, match="rubric-items"):
        run_suite(
            sim.pairwise,
            "pairwise",
            registry,
            options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0), slices=("rubric-polarity",)),
        )


def test_equal_opportunity_bias_falls_back_to_less_related_opponents_and_says_so():
    """GPT-4 judging vicuna-13b (trained on ChatGPT outputs: a family-student) only against
    text-davinci-003 (its own family): no unrelated opponent. The family candidate is measured
    against the less related family-student (opponents=any, named); the family-student meets only a
    more related candidate, so its record has no value and says why, instead of vanishing — and
    never counts the judge's own family as a "less related" opponent (issue 14)."""
    from nepotism.models import default_registry

    n = 30
    frame = pd.DataFrame(
        {
            "instance_id": [f"q{i}" for i in range(n)],
            "judge": "gpt-4-0613",
            "model_a": "vicuna-13b",
            "model_b": "text-davinci-003",
            "verdict": ["A"] * 20 + ["B"] * 10,
            "condition": "default",
            "replicate": 0,
        }
    )
    humans = pd.DataFrame(
        {
            "instance_id": [f"q{i}" for i in range(n)],
            "model_a": "vicuna-13b",
            "model_b": "text-davinci-003",
            "winner": ["vicuna-13b"] * 10 + ["text-davinci-003"] * 20,
        }
    )
    records = run_suite(
        frame,
        "pairwise",
        default_registry(),
        references={"preference-ref": humans},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0)),
    ).records
    eo = {r["scope"]: r for r in records if r["metric"] == "equal-opportunity-bias"}
    assert {scope: r["variant"]["opponents"] for scope, r in eo.items()} == {"family-student": "any", "family": "any"}
    assert eo["family"]["opponent_models"] == ["vicuna-13b"] and eo["family"]["value"] is not None
    assert eo["family-student"]["value"] is None and eo["family-student"]["opponent_models"] == []
    assert "at least as related" in eo["family-student"]["note"]
    errors = {r["scope"]: r for r in records if r["metric"] == "error-bias"}
    assert errors["family-student"]["value"] is None and errors["family"]["value"] is not None


def test_pairwise_mipa_is_measured_against_preferences_derived_from_reference_scores():
    """002 Eq. 5 (PWC): with only graded reference scores, w* is the higher-scored answer of each pair."""
    from nepotism.analyses.suite import derive_instance_references

    scores = pd.DataFrame({"instance_id": ["q1", "q1", "q2", "q2"], "model": ["x", "y", "x", "y"], "score": [8.0, 5.0, 6.0, 6.0]})
    derived = derive_instance_references({"correctness-ref": scores})["preference-ref"]
    assert sorted(zip(derived["instance_id"], derived["winner"])) == [("q1", "x"), ("q2", "tie")]
    assert set(derived["derived_from"]) == {"correctness-ref: the higher reference score"}
    # a given preference reference is never replaced
    given = pd.DataFrame({"instance_id": ["q1"], "model_a": ["x"], "model_b": ["y"], "winner": ["y"]})
    assert derive_instance_references({"correctness-ref": scores, "preference-ref": given})["preference-ref"] is given
    # the judge agrees with the reference on q1 (x) and calls q2 a tie where the reference ties: MIPA = 1
    from nepotism.models import default_registry

    frame = pd.DataFrame(
        {
            "instance_id": ["q1", "q1", "q2", "q2"],
            "judge": "gpt-4-0613",
            "model_a": ["x", "y", "x", "y"],
            "model_b": ["y", "x", "y", "x"],
            "verdict": ["A", "B", "tie", "tie"],
            "condition": "default",
            "replicate": 0,
        }
    )
    records = run_suite(
        frame,
        "pairwise",
        default_registry(),
        references={"correctness-ref": scores},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0)),
    ).records
    mipa = [r for r in records if r["metric"] == "mipa" and r["variant"].get("paradigm") == "PWC"]
    assert len(mipa) == 1 and mipa[0]["value"] == 1.0


def test_equal_opportunity_bias_from_the_argmax_of_order_averaged_probabilities():
    """001 Eq. 3: a judge whose verdicts are all ties but whose label probabilities lean to its own
    answer has no verdict-based bias and a full probability-argmax one. Hand count: humans prefer
    the judge's answer on q0–q9 and the other on q10–q19; the probabilities always favour its own
    (p_own = 0.7 in both orders), so recall on own = 10/10 and on other = 0/10: bias = 1."""
    from nepotism.models import default_registry

    rows = []
    for i in range(20):
        for first, second in (("gpt-4-0613", "claude-2"), ("claude-2", "gpt-4-0613")):
            p_first = 0.7 if first == "gpt-4-0613" else 0.3
            rows.append(
                {
                    "instance_id": f"q{i}",
                    "judge": "gpt-4-0613",
                    "model_a": first,
                    "model_b": second,
                    "verdict": "tie",
                    "prob_a": p_first,
                    "prob_b": 1 - p_first,
                    "condition": "default",
                    "replicate": 0,
                }
            )
    humans = pd.DataFrame(
        {
            "instance_id": [f"q{i}" for i in range(20)],
            "model_a": "gpt-4-0613",
            "model_b": "claude-2",
            "winner": ["gpt-4-0613"] * 10 + ["claude-2"] * 10,
        }
    )
    records = run_suite(
        pd.DataFrame(rows),
        "pairwise",
        default_registry(),
        references={"preference-ref": humans},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0)),
    ).records
    eo = {
        r["variant"].get("preference", "verdict"): r
        for r in records
        if r["metric"] == "equal-opportunity-bias" and r["scope"] == "self"
    }
    assert eo["verdict"]["value"] == pytest.approx(0.0)
    assert eo["probability-argmax"]["value"] == pytest.approx(1.0) and eo["probability-argmax"]["n"] == 40


def test_d_diff_metrics_per_evaluatee_as_paper_004_tables():
    """Judge gpt-4-0613 against claude-2 and llama-2-70b-chat on 8 prompts each; its own answer is right
    and the other's wrong on 4 of them, the reverse on the other 4. Against claude-2 it prefers its
    own answer everywhere (accuracy 4/8, LSPR 4/8, HSPP 1); against llama it picks the right answer
    everywhere (accuracy 8/8, LSPR 1, HSPP 0). Hand-computed per evaluatee."""
    from nepotism.models import default_registry

    judge, rows, correct = "gpt-4-0613", [], []
    for other, picks_right in (("claude-2", False), ("llama-2-70b-chat", True)):
        for i in range(8):
            own_right = i < 4
            own_wins = own_right if picks_right else True
            for first, second in ((judge, other), (other, judge)):
                verdict = "A" if (first == judge) == own_wins else "B"
                rows.append(
                    {
                        "instance_id": f"{other}-q{i}",
                        "judge": judge,
                        "model_a": first,
                        "model_b": second,
                        "verdict": verdict,
                        "condition": "default",
                        "replicate": 0,
                    }
                )
            correct += [
                {"instance_id": f"{other}-q{i}", "model": judge, "correct": own_right},
                {"instance_id": f"{other}-q{i}", "model": other, "correct": not own_right},
            ]
    records = run_suite(
        pd.DataFrame(rows),
        "pairwise",
        default_registry(),
        references={"correctness-ref": pd.DataFrame(correct)},
        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0)),
    ).records
    table = {
        (r["metric"] + (" (harmful)" if "examples" in r["variant"] else ""), r["generator"]): r["value"]
        for r in records
        if (r.get("variant") or {}).get("averaging") == "one evaluatee" and r["variant"]["opponents"] == "unrelated"
    }
    assert table == pytest.approx(
        {
            ("judge-accuracy", "claude-2"): 0.5,
            ("legitimate-self-preference-ratio", "claude-2"): 0.5,
            ("harmful-self-preference-propensity", "claude-2"): 1.0,
            ("judge-accuracy", "llama-2-70b-chat"): 1.0,
            ("legitimate-self-preference-ratio", "llama-2-70b-chat"): 1.0,
            ("harmful-self-preference-propensity", "llama-2-70b-chat"): 0.0,
            # SPR per evaluatee (004 Tables 1/3/5): 8 of 8 own wins against claude-2, 4 of 8 against llama
            ("self-preference-ratio", "claude-2"): 1.0,
            ("self-preference-ratio", "llama-2-70b-chat"): 0.5,
            # judge accuracy on the harmful cases (003 Table 4): own wrong on 4 prompts per evaluatee
            ("judge-accuracy (harmful)", "claude-2"): 0.0,
            ("judge-accuracy (harmful)", "llama-2-70b-chat"): 1.0,
        }
    )
    from nepotism.report.full import write_report
    from nepotism.report.sections import evaluatee_table

    rows = evaluatee_table(records)
    assert [
        (
            r["evaluatee"],
            r["cells"]["judge-accuracy"]["text"][:4],
            r["cells"]["self-preference-ratio"]["text"][:4],
            r["cells"]["judge accuracy (harmful)"]["text"][:4],
        )
        for r in rows
    ] == [("claude-2", "50.0", "100.", "0.0%"), ("llama-2-70b-chat", "100.", "50.0", "100.")]
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        paths = write_report(records, Path(tmp) / "rep")
        markdown = paths["report.md"].read_text()
        html = paths["report.html"].read_text()
    assert "### Per evaluatee (paper 004's tables)" in markdown and 'id="evaluatee-table"' in html


def test_log_perplexity_gap_from_a_pairwise_table_counts_each_response_once():
    """Fig. 5 of paper 001 from perplexity columns: gpt-4-0613's own answers have perplexity e^1, the
    others e^3, each pair shown in both orders (so each response appears twice): gap = 1 − 3 = −2,
    n = one row per response (2 per prompt × 10 prompts)."""
    from nepotism.models import default_registry

    rows = []
    for i in range(10):
        for first, second in (("gpt-4-0613", "claude-2"), ("claude-2", "gpt-4-0613")):
            ppl = {"gpt-4-0613": np.e, "claude-2": np.e**3}
            rows.append(
                {
                    "instance_id": f"q{i}",
                    "judge": "gpt-4-0613",
                    "model_a": first,
                    "model_b": second,
                    "verdict": "A",
                    "perplexity_a": ppl[first],
                    "perplexity_b": ppl[second],
                    "condition": "default",
                    "replicate": 0,
                }
            )
    records = run_suite(
        pd.DataFrame(rows), "pairwise", default_registry(), options=SuiteOptions(bootstrap=Bootstrap(n_resamples=50))
    ).records
    gap = [r for r in records if r["metric"] == "log-perplexity-gap"]
    assert len(gap) == 1 and gap[0]["value"] == pytest.approx(-2.0) and gap[0]["n"] == 20
    assert gap[0]["n_clusters"] == 10


def test_given_comparisons_give_the_same_records_as_building_them(tmp_path):
    """`nepotism.audit` passes the comparisons it built to the suite (not built twice): same records."""
    import json

    from nepotism.analyses.comparisons import build_comparisons

    _, sim, registry = _setup(tmp_path, self_bias=0.4)
    options = SuiteOptions(bootstrap=Bootstrap(n_resamples=30, seed=2))
    built = run_suite(sim.pairwise, "pairwise", registry, options=options).records
    given = run_suite(
        sim.pairwise, "pairwise", registry, options=options, comparisons=build_comparisons(sim.pairwise, rule=options.rule)
    ).records
    assert json.dumps(built, sort_keys=True, default=str) == json.dumps(given, sort_keys=True, default=str)
    with pytest.raises(ValueError, match="options.rule"):
        run_suite(sim.pairwise, "pairwise", registry, options=options, comparisons=build_comparisons(sim.pairwise, rule="strict"))


def _old_position_records(frame, options):
    """The per-group reference computation the integer-key version replaced (kept to check equality)."""
    from nepotism.analyses.comparisons import row_exclusions, with_reasons
    from nepotism.results import new_record as _record
    from nepotism.metrics import recognition

    if "presentation" in frame:
        frame = frame[frame["presentation"].fillna("a-first").to_numpy() == "a-first"]
    a, b = frame["model_a"].astype(str).to_numpy(), frame["model_b"].astype(str).to_numpy()
    v = frame["verdict"].to_numpy(dtype=object)
    code_a = np.select([v == "A", v == "B", v == "tie"], [1.0, -1.0, 0.0], np.nan)
    a_first = a < b
    rows = pd.DataFrame(
        {
            "instance_id": frame["instance_id"].astype(str).to_numpy(),
            "judge": frame["judge"].to_numpy(),
            "condition": frame["condition"].to_numpy(),
            "replicate": frame["replicate"].to_numpy(),
            "model_x": np.where(a_first, a, b),
            "model_y": np.where(a_first, b, a),
            "code": np.where(a_first, code_a, -code_a),
            "slot": np.select([v == "A", v == "B", v == "tie"], [1.0, 0.0, 0.5], np.nan),
        }
    )
    rows["why"] = np.where(np.isnan(code_a), row_exclusions(frame), None)
    key = ["instance_id", "judge", "condition", "replicate", "model_x", "model_y"]
    rows["order"] = rows.groupby(key, sort=False).cumcount()
    records = []
    for (judge, condition), group in rows.groupby(["judge", "condition"], sort=True):
        first = group[group["order"] == 0].set_index(key)[["code", "why"]]
        second = group[group["order"] == 1].set_index(key)[["code", "why"]]
        both = first.add_suffix("_1").join(second.add_suffix("_2"), how="inner")
        ids = both.index.get_level_values("instance_id").to_numpy()
        est = recognition.position_consistency(
            both["code_1"].to_numpy(), both["code_2"].to_numpy(), ids, bootstrap=options.bootstrap
        )
        est = with_reasons(est, both["why_1"].where(both["why_1"].notna(), both["why_2"]))
        records.append(_record("position-consistency", judge, condition, est, variant={"share": "two orders agree"}))
        est = with_reasons(
            recognition.first_slot_preference(
                group["slot"].to_numpy(), group["instance_id"].to_numpy(), bootstrap=options.bootstrap
            ),
            group["why"],
        )
        records.append(
            _record("position-consistency", judge, condition, est, variant={"share": "first slot chosen", "ties": "exclude"})
        )
    return records


def test_position_records_equal_the_per_group_computation(tmp_path):
    import json

    from nepotism.analyses.suite import _position_records

    _, sim, _ = _setup(tmp_path, self_bias=0.3, tie_rate=0.2)
    frame = sim.pairwise.copy()
    rng = np.random.default_rng(9)
    drop = rng.random(len(frame)) < 0.08  # some comparisons keep one order only
    frame = frame[~drop].reset_index(drop=True)
    unparsed = rng.random(len(frame)) < 0.05
    frame["verdict"] = frame["verdict"].astype(object).where(~unparsed, None)
    frame["status"] = np.where(unparsed, "unparsed", "parsed")
    frame["reason"] = np.where(unparsed, rng.choice(["no_marker", "conflicting_markers"], len(frame)), None)
    frame["condition"] = np.where(rng.random(len(frame)) < 0.3, "cot", "default")
    frame["presentation"] = np.where(rng.random(len(frame)) < 0.1, "unknown", "a-first")
    frame = pd.concat([frame, frame.iloc[:40].assign(replicate=1)], ignore_index=True)  # replicates
    options = SuiteOptions(bootstrap=Bootstrap(n_resamples=40, seed=5))
    old = _old_position_records(frame.assign(replicate=frame["replicate"].fillna(0)), options)
    new = _position_records(frame.assign(replicate=frame["replicate"].fillna(0)), options)
    assert len(new) == len(old) > 4
    assert json.dumps(new, sort_keys=True, default=str) == json.dumps(old, sort_keys=True, default=str)


@pytest.mark.parametrize("seed", range(6))
def test_self_rows_read_each_pair_scope_like_a_row_by_row_lookup(seed):
    """`_self_rows` looks each (judge, model)'s scope up once on codes: the rows it keeps, and their
    orientation, are those of a row-by-row look-up — with pairs the scope table does not know
    ("unknown") and every ladder rung."""
    import numpy as np

    from nepotism.analyses.suite import _self_rows
    from nepotism.models import SCOPE_LADDER

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    judges, models = ["j2", "j10", "j1"], ["m9", "m10", "alpha", "Beta"]
    comp = pd.DataFrame(
        {
            "judge": rng.choice(judges, size=n),
            "model_x": rng.choice(models, size=n),
            "model_y": rng.choice(models, size=n),
            "outcome": rng.choice([-1.0, 0.0, 1.0, np.nan], size=n),
        }
    ).astype({"judge": object, "model_x": object, "model_y": object})
    scopes = {(j, m): str(rng.choice(SCOPE_LADDER)) for j in judges for m in models if rng.random() < 0.8}
    rung = {name: i for i, name in enumerate(SCOPE_LADDER)}
    for scope in ("self", "family", "student"):
        for opponents in ("unrelated", "any"):
            got = _self_rows(comp, scopes, scope, opponents=opponents)
            sx = np.array([rung[scopes.get((j, m), "unknown")] for j, m in zip(comp["judge"], comp["model_x"])])
            sy = np.array([rung[scopes.get((j, m), "unknown")] for j, m in zip(comp["judge"], comp["model_y"])])
            bar = rung["unrelated"] if opponents == "unrelated" else rung[scope] + 1
            x_side = (sx == rung[scope]) & (sy >= bar)
            y_side = (sy == rung[scope]) & (sx >= bar) & ~x_side
            assert list(got.index) == list(comp.index[x_side | y_side])
            assert list(got["related"]) == list(np.where(y_side, comp["model_y"], comp["model_x"])[x_side | y_side])
