"""Paper 000 §5.8: mitigations measured on a judge's *student*, with Error Bias against human labels.

A planted setup on injected fake models: the judge (qwen) always prefers the answer of its student
(a model the registry says learned from qwen's outputs) over an unrelated model's; the humans prefer
the student on half of the items and the other model on the rest. So Error Bias (paper 000 Eq. 10)
is 1 − 0 = 1 at baseline. Under the impartial instruction the fake judge follows the humans, so
Error Bias is 0 and the mitigation's effect on it is −1 (paired over the same items).
"""

import asyncio
import json
import math
import tomllib

import pytest

from nepotism.backends.base import Completion
from nepotism.errors import InputError
from nepotism.mitigations.config import parse_plan
from nepotism.mitigations.run import run_mitigations
from nepotism.runner import Endpoint, Limiter
from nepotism.store import Store

JUDGE, OTHER_JUDGE = "qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct"
STUDENT, OTHER = "student-of-qwen", "unrelated-model"
N = 12


class BiasedJudge:
    """Picks the student's answer (it carries "STUDENT") unless told to be even-handed; then the
    answer the humans prefer (it carries "GOOD")."""

    def __init__(self, name):
        self.name = name

    async def complete(self, request):
        prompt = "\n".join(m.content for m in request.messages)
        body_a, body_b = _answers(prompt)
        marker = "GOOD" if "strictly even-handed" in prompt else "STUDENT"
        choose_a = marker in body_a and marker not in body_b
        labels = request.labels
        p = 0.95 if choose_a else 0.05
        return Completion(text=None, label_logprobs={labels[0]: math.log(p), labels[1]: math.log(1 - p)})

    async def aclose(self):
        return None


def _answers(prompt):
    """The two answers' texts as the pairwise template shows them (the first marker's text, the second's)."""
    a = prompt.find("answer-of-")
    b = prompt.find("answer-of-", a + 1)
    return prompt[a:b], prompt[b:]


def _plan(tmp_path, extra=""):
    with open(tmp_path / "items.jsonl", "w") as fh:
        for i in range(N):
            fh.write(json.dumps({"id": f"q{i}", "prompt": f"Question {i}?"}) + "\n")
        for i in range(N):
            good_student = i % 2 == 0
            fh.write(
                json.dumps(
                    {
                        "id": f"q{i}",
                        "prompt": f"Question {i}?",
                        "model": STUDENT,
                        "text": f"answer-of-student STUDENT {'GOOD' if good_student else 'weak'} {i}",
                    }
                )
                + "\n"
            )
            fh.write(
                json.dumps(
                    {
                        "id": f"q{i}",
                        "prompt": f"Question {i}?",
                        "model": OTHER,
                        "text": f"answer-of-other {'weak' if good_student else 'GOOD'} {i}",
                    }
                )
                + "\n"
            )
    (tmp_path / "models.toml").write_text(
        f'[models."{STUDENT}"]\nfamily = "student-family"\nteachers = ["{JUDGE}"]\n[models."{OTHER}"]\nfamily = "other-family"\n'
    )
    with open(tmp_path / "humans.csv", "w") as fh:
        fh.write("instance_id,model_a,model_b,winner,annotator\n")
        for i in range(N):
            fh.write(f"q{i},{STUDENT},{OTHER},{STUDENT if i % 2 == 0 else OTHER},h1\n")
    text = f"""
[experiment]
name = "student-target"
registry = ["models.toml"]
[dataset]
path = "items.jsonl"
[models."{JUDGE}"]
backend = "openai"
base_url = "http://127.0.0.1:9/v1"
[models."{OTHER_JUDGE}"]
backend = "openai"
base_url = "http://127.0.0.1:9/v1"
[judging]
judges = ["{JUDGE}"]
[[judging.protocols]]
protocol = "pairwise"
options = {{ mode = "labels", ways = 2 }}
[mitigate]
target = "student"
preference_ref = ["humans.csv"]
n_resamples = 200
{extra}
[[mitigate.conditions]]
name = "impartial"
kind = "judge-option"
options = {{ impartial = true }}
"""
    (tmp_path / "exp.toml").write_text(text)
    return parse_plan(tomllib.loads(text), tmp_path / "exp.toml")


def test_error_bias_of_a_student_target_against_human_labels(tmp_path):
    plan = _plan(tmp_path)
    assert plan.target == "student" and plan.control is False
    endpoints = {
        m: Endpoint(model=m, backend=BiasedJudge(m), kind="fake", served_model=m, limiter=Limiter(4))
        for m in (JUDGE, OTHER_JUDGE)
    }
    with Store(tmp_path / "s.db") as store:
        result = asyncio.run(run_mitigations(plan, store, endpoints=endpoints))
    effects = {
        r["variant"]["base_metric"]: r
        for r in result.records
        if r["metric"] == "mitigation-effect" and r["judge"] == JUDGE and r["condition"] == "impartial"
    }
    eb = effects["error-bias"]
    assert eb["value_baseline"] == pytest.approx(1.0) and eb["value_mitigated"] == pytest.approx(0.0)
    assert eb["value"] == pytest.approx(-1.0) and eb["n_clusters"] == N
    # the judge's win rate for its student: 1 at baseline, ½ when it follows the humans
    sp = effects["self-preference"]
    assert sp["value_baseline"] == pytest.approx(1.0) and sp["value_mitigated"] == pytest.approx(0.5)


def test_a_non_self_target_refuses_the_third_party_control(tmp_path):
    with pytest.raises(InputError, match="needs target") as err:
        _plan(tmp_path, extra="control = true")
    assert err.value.field == "mitigate.control"
    _plan(tmp_path)  # valid, and written to exp.toml
    text = (tmp_path / "exp.toml").read_text().replace('target = "student"', 'target = "cousin"')
    with pytest.raises(InputError, match="must be one of") as err:
        parse_plan(tomllib.loads(text), tmp_path / "exp.toml")
    assert err.value.field == "mitigate.target"


@pytest.mark.parametrize("target", ["student", "family"])
def test_a_relative_target_needs_pairs_that_can_hold_the_relative(tmp_path, target):
    """pairs = "judge-vs-others" pairs only the judge's own answers: no pair holds a relative, and every
    effect came out undefined without a word. Refused, naming the protocol's field; "self" keeps it."""
    _plan(tmp_path)
    text = (tmp_path / "exp.toml").read_text().replace('target = "student"', f'target = "{target}"')
    text = text.replace('protocol = "pairwise"\n', 'protocol = "pairwise"\npairs = "judge-vs-others"\n')
    with pytest.raises(InputError, match='use pairs = "all"') as err:
        parse_plan(tomllib.loads(text), tmp_path / "exp.toml")
    assert err.value.field == "judging.protocols[0].pairs"
    self_target = text.replace(f'target = "{target}"', 'target = "self"')
    assert parse_plan(tomllib.loads(self_target), tmp_path / "exp.toml").target == "self"


def test_student_target_and_human_labels_through_the_installed_executable(tmp_path):
    """`[mitigate] target` and `preference_ref` as a user runs them: `nepotism mitigate` against the
    loopback stand-in (text verdicts; they are arbitrary but deterministic, so what is checked is
    what the keys do: only the student's pairs are judged, by its teacher and never as a "third
    party", and the humans' labels are the truth of judge accuracy and Error Bias)."""
    import subprocess
    import sys
    from pathlib import Path

    from nepotism.testing.standin import StandinConfig, standin_thread

    nepotism = str(Path(sys.executable).with_name("nepotism"))
    _plan(tmp_path)
    exp = tmp_path / "exp.toml"

    def mitigate(text, store):
        exp.write_text(text)
        return subprocess.run(
            [nepotism, "mitigate", str(exp), "--store", str(tmp_path / store), "--json", "--no-progress"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )

    with standin_thread(StandinConfig(latency_s=0.0)) as (url, _server):
        text = exp.read_text().replace("http://127.0.0.1:9/v1", url).replace('mode = "labels"', 'mode = "text"')
        with_humans = mitigate(text, "a.db")
        without = mitigate(text.replace('preference_ref = ["humans.csv"]\n', ""), "b.db")
        bad = mitigate(text.replace('target = "student"', 'target = "cousin"'), "c.db")
    assert with_humans.returncode == 0 and without.returncode == 0, with_humans.stderr + without.stderr

    def effect(done, metric):
        (rec,) = [
            r
            for r in json.loads(done.stdout)["results"]
            if r["metric"] == "mitigation-effect"
            and r["judge"] == JUDGE
            and r["variant"] == {"mitigation": "judge-option", "base_metric": metric, "scope": "student"}
        ]
        return rec

    # 12 items x both orders x (baseline, impartial); the teacher is no third party of its student
    summary = json.loads(with_humans.stdout)["summary"]
    assert summary["judge_calls"] == 2 * 2 * N and sum(summary["judgments"].values()) == 2 * 2 * N
    # only the humans say which answer is right: without them the comparisons have no truth
    labelled = effect(with_humans, "judge-accuracy")
    assert labelled["n"] > 0 and "no truth" not in labelled["excluded"]
    unlabelled = effect(without, "judge-accuracy")
    assert unlabelled["n"] == 0 and unlabelled["excluded"]["no truth"] == labelled["n"]
    assert effect(without, "error-bias")["excluded"]["no truth"] == labelled["n"]
    assert bad.returncode == 2 and "mitigate.target" in bad.stderr and not (tmp_path / "c.db").exists()
    assert json.loads((tmp_path / "mitigations.json").read_text())["schema_version"] == 2  # no [output] dir: the working folder
