"""End to end with injected fake models (no real model, no server): shapes, pairing, controls."""

import asyncio
import hashlib
import json
import math
import re
import tomllib
from types import SimpleNamespace

import pytest

from nepotism.backends.base import Completion
from nepotism.mitigations.config import parse_plan
from nepotism.mitigations.run import run_mitigations
from nepotism.runner import Endpoint, Limiter
from nepotism.store import Store

JUDGES = ["qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct"]


def _h(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 2**32


class FakeModel:
    """Deterministic answers: MC answers, JSON synonym choices, rewrites, label log-probs."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(self, request):
        prompt = "\n".join(m.content for m in request.messages)
        if request.mode == "labels":
            p = 0.2 + 0.6 * _h(self.name + prompt)
            return Completion(text=None, label_logprobs={request.labels[0]: math.log(p), request.labels[1]: math.log(1 - p)})
        if request.mode == "continuation":
            return Completion(text=None, continuation_logprobs=tuple(-1.0 - _h(self.name + str(i)) for i in range(4)))
        if "Pick exactly" in prompt:
            answer = prompt.split("ANSWER:\n", 1)[1]
            words = [w for w in re.findall(r"[a-z]{5,}", answer) if w not in prompt.split("ANSWER:")[0].lower()][:2]
            return Completion(text=json.dumps({"words": words, "synonyms": [w + "ish" for w in words]}))
        if "ANSWER:\n" in prompt or "TEXT:\n" in prompt:
            body = re.split(r"(?:ANSWER|TEXT):\n", prompt, maxsplit=1)[1].strip()
            return Completion(text=body.replace("because", "since") + " Indeed.")
        if "def " in prompt or "function" in prompt:
            return Completion(text="```python\ndef double(x):\n    result = x * 2\n    return result\n```\nDoubles x.")
        letter = "B" if self.name.startswith("qwen") else "A"
        return Completion(text=f"Answer: {letter}\nI chose it because the passage clearly supports that reading.")

    async def aclose(self):
        return None


def _plan(tmp_path):
    items = [
        {
            "id": "q1",
            "prompt": "Pick the colour of the sky.\nA. green\nB. blue",
            "reference_answer": "B",
            "category": "x",
            "rubric": [{"id": "r1", "text": "Gives a letter."}, {"id": "r2", "text": "Explains the choice."}],
        },
        {"id": "q2", "prompt": "Which is a fruit?\nA. apple\nB. brick", "reference_answer": "A", "category": "y"},
        {
            "id": "c1",
            "prompt": "Write a function double(x).",
            "category": "code",
            "metadata": {"tests": ["assert double(2) == 4", "assert double(0) == 0"]},
        },
    ]
    human = {
        "q1": "Answer: B\nThe daytime sky looks blue to people.",
        "q2": "Answer: A\nApples grow on trees.",
        "c1": "```python\ndef double(x):\n    return x + x\n```",
    }
    with open(tmp_path / "items.jsonl", "w") as fh:
        for it in items:
            fh.write(json.dumps(it) + "\n")
        for it in items:
            fh.write(json.dumps({**it, "model": "human-written", "text": human[it["id"]]}) + "\n")
    (tmp_path / "models.toml").write_text('[models."human-written"]\nfamily = "human"\n')
    text = f"""
[experiment]
name = "fake"
registry = ["models.toml"]
[dataset]
path = "items.jsonl"
[models."{JUDGES[0]}"]
backend = "openai"
base_url = "http://127.0.0.1:9/v1"
[models."{JUDGES[1]}"]
backend = "openai"
base_url = "http://127.0.0.1:9/v1"
[generation]
generators = {json.dumps(JUDGES)}
max_tokens = 64
[judging]
judges = {json.dumps(JUDGES)}
[[judging.protocols]]
protocol = "pairwise"
pairs = "judge-vs-others"
options = {{ mode = "labels", ways = 2 }}
[[judging.protocols]]
protocol = "rubric"
options = {{ mode = "labels" }}
[mitigate]
rewriter = "{JUDGES[0]}"
n_resamples = 50
[[mitigate.conditions]]
name = "syn"
kind = "synonym"
chooser = "model"
[[mitigate.conditions]]
name = "para"
kind = "paraphrase"
[[mitigate.conditions]]
name = "jp"
kind = "judge-paraphrase"
[[mitigate.conditions]]
name = "xr"
kind = "cross-reason"
cross_reason = "splice"
[[mitigate.conditions]]
name = "restyle"
kind = "code-restyle"
restyle = "ast"
[[mitigate.conditions]]
name = "imp"
kind = "judge-option"
options = {{ impartial = true }}
[[mitigate.conditions]]
name = "ex"
kind = "exclude-relatives"
[[mitigate.conditions]]
name = "ppl"
kind = "jury"
vote = "perplexity"
[[mitigate.conditions]]
name = "w"
kind = "jury"
vote = "weighted"
[[mitigate.conditions]]
name = "agree"
kind = "rubric-agreement"
threshold = 0.5
[[mitigate.conditions]]
name = "cal"
kind = "calibration"
method = "contextual"
"""
    (tmp_path / "exp.toml").write_text(text)
    return parse_plan(tomllib.loads(text), tmp_path / "exp.toml")


def _sandbox(code, *, tests, timeout, memory_mb):
    space = {}
    try:
        exec(compile(code + "\n" + tests, "<fake>", "exec"), space)  # noqa: S102 - fixed test code
    except AssertionError:
        return SimpleNamespace(status="failed", stderr="AssertionError")
    return SimpleNamespace(status="passed", stderr="")


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("mit")
    plan = _plan(tmp_path)
    endpoints = {m: Endpoint(model=m, backend=FakeModel(m), kind="fake", served_model=m, limiter=Limiter(4)) for m in JUDGES}
    with Store(tmp_path / "s.db") as store:
        out = asyncio.run(run_mitigations(plan, store, endpoints=endpoints, sandbox_runner=_sandbox))
        again = asyncio.run(run_mitigations(plan, store, endpoints=endpoints, sandbox_runner=_sandbox))
    return out, again


def test_records_have_the_standard_shape(result):
    out, _ = result
    assert out.records
    for rec in out.records:
        assert rec["metric"] in ("mitigation-effect", "self-third-party-change-ratio")
        assert {"judge", "condition", "variant", "value", "ci_low", "ci_high", "n", "n_excluded"} <= set(rec)
        assert set(rec["variant"]) == {"mitigation", "base_metric", "scope"}
        # paper 003 Fig. 15's ratio sits beside each perturbation's self-minus-control change
        assert (rec["metric"] == "self-third-party-change-ratio") == (rec["variant"]["scope"] == "self-over-control")
    conditions = {r["condition"] for r in out.records}
    assert conditions == {"syn", "para", "jp", "xr", "restyle", "imp", "ex", "ppl", "w", "cal", "agree"}
    agree = out.summary["analysis"]["agree"]
    assert agree["items"] == 2 and agree["unparsed_rubric_verdicts"] == 0


def test_perturbations_have_a_third_party_control(result):
    out, _ = result
    scopes = {(r["condition"], r["variant"]["scope"]) for r in out.records}
    for name in ("syn", "para", "jp", "xr", "restyle"):
        assert {
            (name, "self"),
            (name, "third-party-control"),
            (name, "self-minus-control"),
            (name, "self-over-control"),
        } <= scopes
    control = [
        r
        for r in out.records
        if r["condition"] == "para"
        and r["variant"]["scope"] == "third-party-control"
        and r["judge"] != "all"
        and r["variant"]["base_metric"] == "self-preference"
    ]
    assert control and all(r["n"] > 0 for r in control)


def test_perturbation_failures_are_counted(result):
    out, _ = result
    info = out.summary["perturbations"]
    # 2 judges x 2 opponents x (2 multiple-choice items + 1 code item) = 12 self-evaluation pairs
    assert info["restyle"]["failed"] == {"the instance has no tests": 8}
    assert info["restyle"]["perturbed"] == 4
    assert info["xr"]["perturbed"] == 8 and info["xr"]["failed"] == {"an answer has no 'Answer: X' line": 4}
    restyle_self = [
        r
        for r in out.records
        if r["condition"] == "restyle"
        and r["variant"]["scope"] == "self"
        and r["judge"] == JUDGES[0]
        and r["variant"]["base_metric"] == "self-preference"
    ][0]
    assert restyle_self["n"] == 2 and restyle_self["excluded"] == {"no mitigated comparison": 4}


def test_exclusion_drops_related_votes_and_calibration_reports_its_split(result):
    out, _ = result
    analysis = out.summary["analysis"]
    assert analysis["ex"]["votes_dropped_as_related"] > 0
    assert analysis["cal"]["split"]["heldout"] + analysis["cal"]["split"]["evaluation"] == 3
    assert set(analysis["w"]["weights"]) <= set(JUDGES) | {"human-written"}
    # the perplexity-weighted jury: each judge scored every answer (2 judges x 3 items x 3 answers)
    assert out.summary["familiarity_scores"] == {"ok": 18, "failed": {}}


def test_a_rerun_is_served_from_the_cache(result):
    out, again = result
    assert again.summary["judge_calls"] == out.summary["judge_calls"]
    strip = lambda recs: [{k: v for k, v in r.items()} for r in recs]  # noqa: E731
    assert strip(again.records) == strip(out.records)


def test_jury_familiarity_is_minus_the_log_perplexity_of_the_perplexity_step(tmp_path):
    """The perplexity-weighted jury's familiarity comes from `nepotism.runner.perplexity` (one place):
    mean per-token log-probability = −log-perplexity, the request shaped per endpoint kind (raw
    text over HTTP, the chat template in-process), failures and empty answers left out."""
    from nepotism.mitigations.run import _familiarity
    from nepotism.records import Instance, Response
    from nepotism.runner import Runner

    seen = []

    class Scorer:
        async def complete(self, request):
            seen.append(request)
            if "broken" in request.continuation:
                return Completion(text=None, status="failed", error="model_error: planted")
            return Completion(text=None, continuation_logprobs=(-0.5, -1.5) if request.prompt else (-2.0,))

        async def aclose(self):
            return None

    exp = _plan(tmp_path).experiment
    endpoints = {
        JUDGES[0]: Endpoint(model=JUDGES[0], backend=Scorer(), kind="openai", served_model=JUDGES[0]),
        JUDGES[1]: Endpoint(model=JUDGES[1], backend=Scorer(), kind="gguf", served_model=JUDGES[1]),
    }
    instances = [Instance("q1", "Pick one.\nA. x\nB. y"), Instance("q2", "Say hi.")]
    responses = [
        Response("q1", "human-written", "Answer: A\nx it is."),
        Response("q2", "human-written", "broken"),
        Response("q2", JUDGES[0], ""),
    ]
    with Store(tmp_path / "f.db") as store:
        fam, counts = asyncio.run(_familiarity(Runner(store, endpoints), exp, instances, responses))
        again, _ = asyncio.run(_familiarity(Runner(store, endpoints), exp, instances, responses))
    assert fam == again == {(JUDGES[0], "q1", "human-written"): -1.0, (JUDGES[1], "q1", "human-written"): -2.0}
    assert counts == {"ok": 2, "failed": {"model_error: planted": 2}}  # failures are counted with their reason
    # 2 judges x 2 non-empty answers; the rerun is served from the store except the failed calls
    assert sorted((r.model, r.continuation) for r in seen) == sorted(
        [(j, "Answer: A\nx it is.") for j in JUDGES] + [(j, "broken") for j in JUDGES] * 2
    )
    shapes = {(r.model, r.prompt is not None) for r in seen}
    assert shapes == {(JUDGES[0], True), (JUDGES[1], False)}
    assert all(r.continuation in ("Answer: A\nx it is.", "broken") for r in seen)
