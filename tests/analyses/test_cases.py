"""`nepotism.analyses.cases`: the comparisons behind a verdict, on planted panels and tiny hand-made tables."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest

import nepotism
from nepotism.analyses.cases import CaseFinder, find_verdict, read_texts, reading_words, truth_words, wanted_answers, with_texts
from nepotism.api import explain
from nepotism.errors import InputError
from nepotism.metrics import Bootstrap
from nepotism.models import load_registry
from nepotism.simulate import panel_spec, simulate

BOOT = Bootstrap(n_resamples=100, seed=3)


# ----------------------------------------------------------------------------------- a planted panel
@pytest.fixture(scope="module")
def panel(tmp_path_factory):
    """judge-b carries planted self/family/student favouritism; judge-a is clean with the strongest
    answers; judge-c/d are unrelated references (`panel_spec`)."""
    sim = simulate(
        panel_spec(n_instances=120, planted={"self": 0.8, "family": 0.8, "student": 0.8}), seed=11, kinds=("pairwise",)
    )
    registry_file = tmp_path_factory.mktemp("panel") / "registry.toml"
    registry_file.write_text(sim.spec.registry_toml())
    registry = load_registry([registry_file])
    refs = {"preference-ref": sim.preference_ref}
    results = nepotism.audit(sim.pairwise, references=refs, registry=registry, bootstrap=BOOT)
    finder = CaseFinder({"pairwise": sim.pairwise}, refs, registry, records=results.to_dicts())
    return sim, results, finder


def _verdict(results, judge, scope):
    return next(v for v in results.verdicts if v.judge == judge and v.scope == scope)


def _plain_preference(frame: pd.DataFrame, judge: str, instance: str, related: str, other: str) -> float:
    """A judge's preference for ``related`` on one prompt, computed from the raw rows: each order's
    verdict as +1 / 0 / −1 for ``related``, combined as paper 004 Eq. 1 (equal → it, tie and a
    decisive one → the decisive one, opposite → tie)."""
    rows = frame[
        (frame["judge"] == judge)
        & (frame["instance_id"] == instance)
        & frame["model_a"].isin([related, other])
        & frame["model_b"].isin([related, other])
    ]
    codes = []
    for r in rows.itertuples():
        shown_first = r.model_a == related
        codes.append({"A": 1, "B": -1, "tie": 0}[r.verdict] * (1 if shown_first else -1))
    assert len(codes) == 2
    return (np.sign(sum(codes)) + 1) / 2


def test_matched_cases_are_the_rows_the_metric_averages(panel):
    sim, results, finder = panel
    verdict = _verdict(results, "judge-b", "self")
    assert verdict.status == "measured" and verdict.rung == "matched" and verdict.metric == "matched-bias"
    found = finder.explain(verdict, limit=4)
    record = next(
        r
        for r in results.to_dicts()
        if r["metric"] == "matched-bias"
        and r["judge"] == "judge-b"
        and r["scope"] == "self"
        and r["variant"].get("subset") == "all"
    )
    assert found.rung == "matched" and found.kind == "pairwise" and found.n == record["n"]
    kinder, harsher = found.groups
    assert kinder.name == "kinder" and harsher.name == "harsher"
    assert kinder.n > 2 * harsher.n  # the planted favouritism: far more often kinder than the unrelated judges
    assert [len(kinder.cases), len(harsher.cases)] == [4, 4]
    for group, sign in ((kinder, 1), (harsher, -1)):
        keys = [(-abs(c.difference), c.instance_id) for c in group.cases]
        assert keys == sorted(keys)  # the largest disagreement first, then the prompt
        for case in group.cases:
            assert sign * case.difference > 0 and case.related == "judge-b"
            assert case.value == _plain_preference(sim.pairwise, "judge-b", case.instance_id, "judge-b", case.other)
            # the mean of the judges unrelated to both answers, from the raw rows
            unrelated = [
                k
                for k in sim.spec.judges
                if k != "judge-b" and sim.spec.relation(k, case.related) is None and sim.spec.relation(k, case.other) is None
            ]
            mean = np.mean([_plain_preference(sim.pairwise, k, case.instance_id, case.related, case.other) for k in unrelated])
            assert case.compared_with == pytest.approx(mean)
            roles = {j["judge"]: j["role"] for j in case.judges}
            assert roles["judge-b"] == "this judge" and {roles[k] for k in unrelated} == {"unrelated to both"}
            assert set(roles) == set(sim.spec.judges)


def test_the_clean_judge_is_kinder_about_as_often_as_harsher(panel):
    _, results, finder = panel
    clean = finder.explain(_verdict(results, "judge-a", "self"))
    planted = finder.explain(_verdict(results, "judge-b", "self"))
    share = lambda e: e.groups[0].n / (e.groups[0].n + e.groups[1].n)  # noqa: E731
    assert abs(share(clean) - 0.5) < 0.1 and share(planted) > 0.65


def test_a_verdict_without_evidence_says_why_and_has_no_cases(panel):
    _, results, finder = panel
    verdict = _verdict(results, "judge-c", "self")
    found = finder.explain(verdict)
    assert verdict.status == "not-measurable" and found.groups == () and found.cases == []
    assert "its own answers are not among" in found.note and "answers written by the judge itself" in found.note


def test_explain_all_covers_every_verdict_with_evidence(panel):
    _, results, finder = panel
    found = finder.explain_all(results.verdicts, limit=1)
    assert set(found) == {f"{v.judge}|{v.condition}|{v.scope}" for v in results.verdicts if v.status != "not-measurable"}
    assert all(len(g.cases) <= 1 for e in found.values() for g in e.groups)


def test_rubric_matched_cases_carry_met_rates(tmp_path):
    sim = simulate(panel_spec(n_instances=40, planted={"self": 1.5}, n_rubrics=4), seed=5, kinds=("rubric",))
    registry_file = tmp_path / "registry.toml"
    registry_file.write_text(sim.spec.registry_toml())
    registry = load_registry([registry_file])
    refs = {"rubric-ref": sim.rubric_ref}
    results = nepotism.audit(sim.rubric, references=refs, registry=registry, bootstrap=BOOT)
    verdict = _verdict(results, "judge-b", "self")
    assert verdict.metric == "matched-bias" and verdict.variant["kind"] == "rubric"
    found = CaseFinder({"rubric": sim.rubric}, refs, registry, records=results.to_dicts()).explain(verdict, limit=3)
    assert found.kind == "rubric" and found.groups[0].cases
    for case in found.cases:
        own = next(j for j in case.judges if j["judge"] == "judge-b")
        rows = sim.rubric[(sim.rubric["judge"] == "judge-b") & (sim.rubric["instance_id"] == case.instance_id)]
        met = {m: rows[rows["model"] == m]["met"].astype(float).mean() for m in (case.related, case.other)}
        assert own["related_score"] == pytest.approx(met[case.related]) and own["other_score"] == pytest.approx(met[case.other])
        assert case.value == pytest.approx(met[case.related] - met[case.other])
        assert "of rubrics met" in reading_words("rubric", case, own)


# ----------------------------------------------------------------------------------- tiny hand-made tables
def _pair(instance, judge, own, other, first, second):
    """Both orders of one comparison: ``first`` when ``own`` is shown first, ``second`` when second."""
    return [
        {"instance_id": instance, "judge": judge, "model_a": own, "model_b": other, "verdict": first},
        {"instance_id": instance, "judge": judge, "model_a": other, "model_b": own, "verdict": second},
    ]


@pytest.fixture
def tiny():
    """gpt-4 judging its own answers against claude-2's on six prompts, with crowd labels:
    p1 it picks its own, the labels (2 of 3) claude-2's → harmful; p2 own, labels own → agrees;
    p3 claude-2, labels gpt-4 (3 of 3) → against its relative; p4 the orders disagree → a tie;
    p5 own, labels claude-2 (1 of 1) → harmful; p6 one order unparsed → left out."""
    rows = (
        _pair("p1", "gpt-4", "gpt-4", "claude-2", "A", "B")
        + _pair("p2", "gpt-4", "gpt-4", "claude-2", "A", "B")
        + _pair("p3", "gpt-4", "gpt-4", "claude-2", "B", "A")
        + _pair("p4", "gpt-4", "gpt-4", "claude-2", "A", "A")
        + _pair("p5", "gpt-4", "gpt-4", "claude-2", "A", "B")
        + _pair("p6", "gpt-4", "gpt-4", "claude-2", "A", None)
    )
    frame = pd.DataFrame(rows)
    frame["status"] = np.where(frame["verdict"].isna(), "unparsed", "parsed")
    votes = {
        "p1": ("claude-2", "claude-2", "gpt-4"),
        "p2": ("gpt-4",),
        "p3": ("gpt-4", "gpt-4", "gpt-4"),
        "p4": ("claude-2",),
        "p5": ("claude-2",),
        "p6": ("claude-2",),
    }
    labels = pd.DataFrame(
        [
            {"instance_id": i, "model_a": "gpt-4", "model_b": "claude-2", "winner": w, "annotator": f"u{k}"}
            for i, ws in votes.items()
            for k, w in enumerate(ws)
        ]
    )
    return frame, labels


def test_reference_cases_on_a_tiny_table(tiny):
    frame, labels = tiny
    found = explain(frame, judge="gpt-4", scope="self", references={"preference-ref": labels}, bootstrap=BOOT)
    # six prompts: too little data for a verdict; the cases are those of its strongest reading
    assert found.verdict.status == "too-little-data" and found.metric == "equal-opportunity-bias"
    assert found.rung == "reference" and "too little data" in found.note
    harmful, reverse = found.groups
    assert [c.instance_id for c in harmful.cases] == ["p1", "p5"] and harmful.n == 2
    assert [c.instance_id for c in reverse.cases] == ["p3"] and reverse.n == 1
    p1 = harmful.cases[0]
    assert (p1.related, p1.other, p1.value, p1.truth) == ("gpt-4", "claude-2", 1.0, -1.0)
    assert dict(p1.labels) == {"gpt-4": 1, "claude-2": 2, "tie": 0}
    assert truth_words(p1) == "claude-2 is better (labels: 1 for gpt-4, 2 for claude-2)"
    assert dict(reverse.cases[0].labels) == {"gpt-4": 3, "claude-2": 0, "tie": 0}
    assert reading_words("pairwise", p1) == "prefers gpt-4"
    assert found.n == 5 and found.excluded == 1  # p6: an order without a verdict is left out, not a tie
    assert "1 comparison where it sided with the reference" in found.rest
    assert "1 comparison where it tied and the reference did not" in found.rest
    one = explain(frame, judge="gpt-4", scope="self", references={"preference-ref": labels}, bootstrap=BOOT, limit=1)
    assert [c.instance_id for c in one.groups[0].cases] == ["p1"] and one.groups[0].n == 2


def test_judge_alone_cases_on_a_tiny_pointwise_table(tmp_path):
    models = tmp_path / "models.toml"
    # k is j's family: no judge is unrelated to both answers of any pair, so the verdict is the judge alone's
    models.write_text(
        '[models."j"]\nfamily = "fam-j"\n[models."k"]\nfamily = "fam-j"\n'
        '[models."u1"]\nfamily = "fam-u1"\n[models."u2"]\nfamily = "fam-u2"\n'
    )
    scores = {"p1": {"j": 9, "u1": 2, "u2": 5}, "p2": {"j": 3, "u1": 8, "u2": 3}, "p3": {"j": 6, "u1": 5, "u2": 7}}
    rows = [
        {"instance_id": i, "judge": judge, "model": m, "score": s + (1 if judge == "k" and m == "u1" else 0)}
        for i, by in scores.items()
        for m, s in by.items()
        for judge in ("j", "k")
    ]
    found = explain(pd.DataFrame(rows), judge="j", scope="self", models=[models], bootstrap=BOOT, limit=5)
    assert found.kind == "pointwise" and found.metric == "self-preference-ratio" and found.rung == "alone"
    decided_for, decided_against = found.groups
    # by score gap: p1 vs u1 (+7), p1 vs u2 (+4), p3 vs u1 (+1); against: p2 vs u1 (−5), p3 vs u2 (−1)
    assert [(c.instance_id, c.other, c.value) for c in decided_for.cases] == [("p1", "u1", 7), ("p1", "u2", 4), ("p3", "u1", 1)]
    assert [(c.instance_id, c.other, c.value) for c in decided_against.cases] == [("p2", "u1", -5), ("p3", "u2", -1)]
    assert found.rest == "1 tie"  # p2: j and u2 both 3
    assert "without a reference nothing says which answer was right" in found.note
    case = decided_for.cases[0]
    assert [(j["judge"], j["related_score"], j["other_score"], j["role"]) for j in case.judges] == [
        ("j", 9, 2, "this judge"),
        ("k", 9, 3, "related to j (family)"),
    ]
    assert reading_words("pointwise", case, case.judges[1]) == "j 9, u1 3"
    assert case.truth is None and truth_words(case) is None


def test_find_verdict_names_the_choices(panel):
    _, results, _ = panel
    with pytest.raises(InputError, match="the judges are judge-a, judge-b, judge-c, judge-d, judge-e") as err:
        find_verdict(results.verdicts, "judge-z", "self")
    assert err.value.field == "--judge"
    with pytest.raises(InputError, match="scopes are self, family, student, family-student"):
        find_verdict(results.verdicts, "judge-a", "cousin")
    two = list(results.verdicts) + [
        v.__class__(**{**v.to_dict(), "condition": "impartial", "also": v.also, "needs": v.needs, "evidence": v.evidence})
        for v in results.verdicts
        if v.judge == "judge-a"
    ]
    with pytest.raises(InputError, match="choose one with --condition: default, impartial"):
        find_verdict(two, "judge-a", "self")
    assert find_verdict(two, "judge-a", "self", "impartial").condition == "impartial"
    with pytest.raises(InputError, match="its conditions are default, impartial"):
        find_verdict(two, "judge-a", "self", "other")


def test_a_missing_record_or_table_says_so(panel):
    sim, results, _ = panel
    verdict = _verdict(results, "judge-b", "self")
    registry = load_registry([])
    empty = CaseFinder({"pairwise": sim.pairwise}, {}, registry, records=[])
    assert "not among these results" in empty.explain(verdict).note
    no_table = CaseFinder({}, {}, registry, records=results.to_dicts())
    assert "pairwise judgments behind this verdict were not given" in no_table.explain(verdict).note


# ----------------------------------------------------------------------------------- texts
def _write_jsonl(path, rows, *, gz=False):
    text = "".join((json.dumps(r) if isinstance(r, dict) else r) + "\n" for r in rows)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_texts_keep_only_the_answers_shown_and_match_registry_aliases(tmp_path):
    registry = load_registry([])
    alias = "bedrock_claude"  # the registry's alias of claude-2 (claude-2.0)
    assert registry.resolve(alias) == registry.resolve("claude-2")
    rows = [
        {"instance_id": "p1", "model": "gpt-4", "text": "own answer", "prompt": "Q1?", "tests": None},
        {"instance_id": "p1", "generator": "claude-2", "text": "other answer"},
        {"instance_id": "p2", "model": alias, "text": "aliased", "prompt": [{"role": "user", "content": "Q2?"}]},
        {"instance_id": "p9", "model": "gpt-4", "text": "not wanted " * 100},
    ]
    path = _write_jsonl(tmp_path / "texts.jsonl.gz", rows, gz=True)
    texts = read_texts(path, {("p1", "gpt-4"), ("p1", "claude-2"), ("p2", "claude-2")}, registry=registry)
    assert dict(texts.answers) == {
        ("p1", "gpt-4"): "own answer",
        ("p1", "claude-2"): "other answer",
        ("p2", "claude-2"): "aliased",
    }
    assert read_texts(path, {("p2", "claude-2")}).answers == {}  # without a registry: names as they are
    assert dict(texts.prompts) == {"p1": "Q1?", "p2": "user: Q2?"}


@pytest.mark.parametrize(
    "row, field, message",
    [
        ({"model": "gpt-4", "text": "x"}, "instance_id", "instance_id must be a non-empty string"),
        ({"instance_id": "p1", "text": "x"}, "model", "model must be a non-empty string"),
        ({"instance_id": "p1", "model": "gpt-4", "text": None}, "text", "text must be a string"),
        ({"instance_id": "p1", "model": "gpt-4", "text": "x", "prompt": 3}, "prompt", "prompt must be a string"),
        ({"instance_id": True, "model": "gpt-4", "text": "x"}, "instance_id", "instance_id"),
    ],
)
def test_bad_texts_name_file_line_and_field(tmp_path, row, field, message):
    path = _write_jsonl(tmp_path / "texts.jsonl", [{"instance_id": "p0", "model": "m", "text": "fine"}, row])
    with pytest.raises(InputError, match=message) as err:
        read_texts(path, set())
    assert (err.value.path, err.value.line, err.value.field) == (str(path), 2, field)


def test_texts_refuse_two_texts_of_one_answer_and_other_formats(tmp_path):
    path = _write_jsonl(
        tmp_path / "texts.jsonl",
        [
            {"instance_id": "p1", "model": "m", "text": "one"},
            {"instance_id": "p1", "model": "m", "text": "one"},
            {"instance_id": "p1", "model": "m", "text": "two"},
        ],
    )
    with pytest.raises(InputError, match=r"a second, different text of m's answer to 'p1' \(first on line 1\)") as err:
        read_texts(path, {("p1", "m")})
    assert err.value.line == 3
    assert read_texts(path, {("p2", "m")}).answers == {}  # an answer no case shows is not compared
    bad = _write_jsonl(tmp_path / "bad.jsonl", ['{"instance_id": "p1", "model": "m", "text": "x"', "[]"])
    with pytest.raises(InputError, match="not valid JSON") as err:
        read_texts(bad, set())
    assert err.value.line == 1
    (tmp_path / "texts.csv").write_text("instance_id,model,text\np1,m,x\n")
    with pytest.raises(InputError, match="JSON Lines"):
        read_texts(tmp_path / "texts.csv", set())
    with pytest.raises(InputError, match="not found"):
        read_texts(tmp_path / "missing.jsonl", set())
    with pytest.raises(InputError, match="output folder holds no texts"):
        read_texts(tmp_path, set())


def test_texts_from_a_store(tmp_path):
    from nepotism.records import Instance, Message, Response
    from nepotism.store import Store

    with Store(tmp_path / "run.db") as store:
        store.add_instances([Instance("p1", (Message("system", "Be brief."), Message("user", "Q1?"))), Instance("p2", "Q2?")])
        store.add_responses(
            [Response("p1", "gpt-4", "own answer"), Response("p1", "claude-2", "other answer"), Response("p2", "gpt-4", "second")]
        )
    texts = read_texts(tmp_path / "run.db", {("p1", "gpt-4"), ("p1", "claude-2"), ("p3", "gpt-4")})
    assert dict(texts.answers) == {("p1", "gpt-4"): "own answer", ("p1", "claude-2"): "other answer"}
    assert dict(texts.prompts) == {"p1": "system: Be brief.\nuser: Q1?"}


def test_with_texts_puts_both_answers_beside_each_case_and_counts_the_missing(tiny, tmp_path):
    frame, labels = tiny
    found = explain(frame, judge="gpt-4", scope="self", references={"preference-ref": labels}, bootstrap=BOOT)
    assert wanted_answers([found]) == {(i, m) for i in ("p1", "p3", "p5") for m in ("gpt-4", "claude-2")}
    path = _write_jsonl(
        tmp_path / "texts.jsonl",
        [{"instance_id": i, "model": m, "text": f"{m} on {i}", "prompt": i} for i in ("p1", "p3") for m in ("gpt-4", "claude-2")],
    )
    shown = with_texts(found, read_texts(path, wanted_answers([found])))
    p1 = shown.groups[0].cases[0]
    assert (p1.prompt, p1.text_related, p1.text_other) == ("p1", "gpt-4 on p1", "claude-2 on p1")
    p5 = shown.groups[0].cases[1]
    assert (p5.prompt, p5.text_related, p5.text_other) == (None, None, None)
    assert shown.texts["answers_missing"] == 2 and shown.texts["answers_shown"] == 4
    assert shown.texts["missing"] == ["gpt-4 on p5", "claude-2 on p5"]
    document = json.loads(json.dumps(shown.to_dict()))
    assert document["verdict"]["judge"] == "gpt-4" and document["groups"][0]["cases"][0]["text_other"] == "claude-2 on p1"


def test_paired_gap_cases_set_the_judge_against_its_one_other_judge(panel):
    """A verdict read from a paired-win-rate-gap (the matched rung's fallback): its one pair of models,
    this judge's preference against the other judge's on each prompt."""
    from nepotism.results import Verdict, record_key

    sim, results, finder = panel
    record = next(
        r
        for r in results.to_dicts()
        if r["metric"] == "paired-win-rate-gap"
        and r["judge"] == "judge-b"
        and r["scope"] == "self"
        and r["variant"]["other_judge"] == "judge-c"
        and r["variant"]["texts"] == "identical"
    )
    generator, opponent = record["pair"]
    verdict = Verdict(
        judge="judge-b",
        condition="default",
        scope="self",
        status="measured",
        sentence="gap",
        rung="matched",
        metric=record["metric"],
        value=record["value"],
        evidence=(record_key(record),),
    )
    found = finder.explain(verdict, limit=3)
    assert found.metric == "paired-win-rate-gap" and 2 * found.n == record["n"]  # the record counts both judges' verdicts
    assert found.groups[0].title == "kinder to its relative than the other judge"
    for case in found.cases:
        assert (case.related, case.other) == (generator, opponent)
        assert case.value == _plain_preference(sim.pairwise, "judge-b", case.instance_id, generator, opponent)
        assert case.compared_with == _plain_preference(sim.pairwise, "judge-c", case.instance_id, generator, opponent)
        assert case.difference == case.value - case.compared_with


def test_every_judges_reading_under_every_condition_the_verdicts_first(tiny):
    """AlpacaEval's annotator configurations are conditions: a case lists the pair's readings under the
    other conditions too, after the verdict's own, and says whose they are."""
    frame, labels = tiny
    other = frame.assign(condition="impartial", verdict=frame["verdict"].map({"A": "B", "B": "A"}))
    both = pd.concat([frame.assign(condition="default"), other], ignore_index=True)
    found = explain(both, judge="gpt-4", scope="self", condition="default", references={"preference-ref": labels}, bootstrap=BOOT)
    p1 = found.groups[0].cases[0]
    assert p1.instance_id == "p1"
    assert [(j["condition"], j["role"], reading_words("pairwise", p1, j)) for j in p1.judges] == [
        ("default", "this judge", "prefers gpt-4"),
        ("impartial", "this judge, under another condition", "prefers claude-2"),
    ]
    with pytest.raises(InputError, match="choose one with --condition: default, impartial"):
        explain(both, judge="gpt-4", scope="self", references={"preference-ref": labels}, bootstrap=BOOT)


def test_reference_cases_of_a_pointwise_hspp_verdict_read_the_reference_scores(tmp_path):
    """One judge scoring answers with a planted self bonus, graded by reference scores: the verdict
    is paper 002's HSPP ratio (DA); its harmful cases are those where the judge scored its own answer
    higher although the reference score is lower."""
    sim = simulate(panel_spec(n_instances=80, planted={"self": 1.5}), seed=3, kinds=("pointwise",))
    registry_file = tmp_path / "registry.toml"
    registry_file.write_text(sim.spec.registry_toml())
    judged = sim.pointwise[sim.pointwise["judge"] == "judge-b"]
    found = explain(
        judged,
        judge="judge-b",
        scope="self",
        references={"correctness-ref": sim.correctness_ref},
        models=[registry_file],
        bootstrap=BOOT,
        limit=4,
    )
    assert found.verdict.rung == "reference" and found.metric == "hspp-ratio" and found.kind == "pointwise"
    harmful, reverse = found.groups
    assert harmful.n > 5 * reverse.n  # the planted bonus: far more often for its own answer against the truth
    truth = sim.correctness_ref.set_index(["instance_id", "model"])["score"]
    for case in harmful.cases:
        assert case.value > 0 and case.truth == -1
        assert truth[(case.instance_id, case.related)] < truth[(case.instance_id, case.other)]
        assert sim.spec.relation("judge-b", case.other) not in ("self", "family")  # paper 002's S_J
    sizes = [c.value for c in harmful.cases]
    assert sizes == sorted(sizes, reverse=True)
