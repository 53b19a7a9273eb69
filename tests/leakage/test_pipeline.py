"""The whole leakage run on injected fake backends (no model): lineage, PLS, analyses, files."""

import asyncio
import json
import re

import pytest

from nepotism.backends.base import Completion
from nepotism.errors import InputError
from nepotism.leakage.config import load_leakage
from nepotism.leakage.pipeline import run_leakage
from nepotism.results import Results
from nepotism.runner.calls import Endpoint
from nepotism.store import Store

GA, GB, BASE = "qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct", "gemma-3-270m"
MARK = {GA: "QSTYLE", GB: "SSTYLE"}


class Fake:
    """Generators sign their answers; the base copies the signature of its demonstrations; each
    judge prefers (label A/B) the candidate carrying its own signature, says yes to it, and files
    every question under 'writing'."""

    def __init__(self, name):
        self.name = name

    async def complete(self, request):
        text = "\n".join(m.content for m in request.messages)
        if request.labels is None:
            if self.name == BASE:
                found = re.findall(r"[QS]STYLE", text)
                return Completion(text=f"answer {found[-1] if found else 'plain'}")
            return Completion(text=f"answer {MARK[self.name]} {len(text)}")
        own = MARK.get(self.name, "none")
        labels = request.labels
        if set(labels) >= {"A", "B"}:
            first = text.find(own)
            other = text.find("QSTYLE" if own == "SSTYLE" else "SSTYLE")
            choose = "A" if 0 <= first and (other < 0 or first < other) else "B"
            return Completion(text=None, label_logprobs={lab: (0.0 if lab == choose else -3.0) for lab in labels})
        if "yes" in labels:
            return Completion(text=None, label_logprobs={"yes": 0.0 if own in text.split("answer")[-1] else -3.0, "no": -1.0})
        return Completion(text=None, label_logprobs={lab: (0.0 if i == 4 else -5.0) for i, lab in enumerate(labels)})

    async def aclose(self):
        return None


def _write(tmp_path, train_extra=""):
    (tmp_path / "train.jsonl").write_text(
        "".join(
            json.dumps({"id": f"t{i}", "prompt": f"Training question {i}?", "response": f"human {i}"}) + "\n" for i in range(10)
        )
        + train_extra
    )
    (tmp_path / "eval.jsonl").write_text(
        "".join(json.dumps({"id": f"e{i}", "prompt": f"Evaluation question {i}?"}) + "\n" for i in range(12))
    )
    models = "".join(f'[models."{m}"]\nbackend = "gguf"\nmodel = "{m}"\n' for m in (GA, GB, BASE))
    (tmp_path / "exp.toml").write_text(f"""
[experiment]
name = "fake"
[dataset]
path = "eval.jsonl"
{models}
[generation]
generators = ["{GA}", "{GB}"]
max_tokens = 16
[judging]
judges = ["{GA}", "{GB}"]
[[judging.protocols]]
protocol = "pairwise"
options = {{ mode = "labels", ways = 2 }}
[output]
dir = "out"
[leakage]
train_pool = "train.jsonl"
n_resamples = 200
exports = ["trl-messages", "llamafactory-sharegpt"]
[[leakage.students]]
method = "icl"
base = "{BASE}"
k = 3
[[leakage.students]]
method = "icl"
base = "{BASE}"
k = 2
name = "mixed"
mix = [0.3, 0.7]
mix_total = 6
[leakage.analyses]
recognition = ["pointwise", "pairwise"]
classifier = true
categoriser = "{GA}"
""")
    return tmp_path / "exp.toml"


def _endpoints(cfg):
    return {m: Endpoint(model=m, backend=Fake(m), kind="fake", served_model=m) for m in cfg.experiment.models}


def test_end_to_end_with_fake_models(tmp_path):
    cfg = load_leakage(_write(tmp_path))
    with Store(tmp_path / "s.db") as store:
        result = asyncio.run(run_leakage(cfg, store, endpoints=_endpoints(cfg)))
    ids = {s["id"]: s for s in result.summary["students"]}
    assert len(ids) == 6 and {s["group"] for s in ids.values()} == {
        f"icl:{BASE}",
        f"mixed:{BASE}:mix=0.3,mix_with=human",
        f"mixed:{BASE}:mix=0.7,mix_with=human",
    }
    reg_text = (tmp_path / "out" / "students.toml").read_text()
    assert f'teachers = ["{GA}"]' in reg_text and f'parent = "{BASE}"' in reg_text
    pls = [
        r
        for r in result.to_dicts()
        if r["metric"] == "preference-leakage-score" and r["variant"].get("ties") == "half" and "slice" not in r["variant"]
    ]
    by_group = {r["variant"]["group"]: r for r in pls}
    assert by_group[f"icl:{BASE}"]["value"] > 0.5 and by_group[f"icl:{BASE}"]["p_value"] < 0.05
    assert by_group[f"icl:{BASE}"]["n"] == 48  # 12 instructions x 2 judges x 2 sides
    assert {r["variant"].get("mix") for r in pls} == {None, 0.3, 0.7}
    metrics = {r["metric"] for r in result.to_dicts()}
    assert {"student-recognition-accuracy", "student-classifier-accuracy", "win-rate"} <= metrics
    assert any(r["variant"].get("slice") == {"question_type": "writing"} for r in pls + result.to_dicts())
    out = tmp_path / "out"
    assert (out / "results.json").is_file() and (out / "results.csv").is_file()
    written = json.loads((out / "results.json").read_text())  # the results document, as `metrics --json` prints it
    assert written["schema_version"] == 2 and Results.from_document(written) == result and len(result) > 0
    assert written["summary"]["students"] == result.summary["students"] and "records" not in written
    assert (out / "synthetic" / f"{GA}.trl-messages.jsonl").is_file()
    assert json.loads((out / "synthetic" / "dataset_info.json").read_text())[GB]["formatting"] == "sharegpt"
    # a second run replays every call from the store
    with Store(tmp_path / "s.db") as store:
        again = asyncio.run(run_leakage(cfg, store, endpoints=_endpoints(cfg)))
    assert [r["value"] for r in again.to_dicts()] == [r["value"] for r in result.to_dicts()]


def test_overlapping_pools_are_refused_before_any_call(tmp_path):
    path = _write(tmp_path, train_extra=json.dumps({"id": "tx", "prompt": "evaluation QUESTION 3"}) + "\n")
    cfg = load_leakage(path)
    with Store(tmp_path / "s.db") as store, pytest.raises(InputError, match="disjoint"):
        asyncio.run(run_leakage(cfg, store, endpoints=_endpoints(cfg)))


def test_config_errors_name_the_key(tmp_path):
    path = _write(tmp_path)
    text = path.read_text()
    path.write_text(text.replace('method = "icl"\nbase = "gemma-3-270m"\nk = 3', 'method = "magic"'))
    with pytest.raises(InputError) as err:
        load_leakage(path)
    assert err.value.field == "leakage.students[0].method"
    path.write_text(text.replace("[leakage]\n", "[leakage]\nbogus = 1\n"))
    with pytest.raises(InputError, match="unknown key"):
        load_leakage(path)
    # full-parameter fine-tuning is a setting of trained students only, spelled lora | full
    path.write_text(text.replace("k = 3\n", 'k = 3\ntuning = "full"\n', 1))
    with pytest.raises(InputError, match="only trained students") as err:
        load_leakage(path)
    assert err.value.field == "leakage.students[0].tuning"
    sft = f'[[leakage.students]]\nmethod = "sft"\nbase = "{BASE}"\ntuning = "TUNING"\n[leakage.analyses]'
    path.write_text(text.replace("[leakage.analyses]", sft.replace("TUNING", "half"), 1))
    with pytest.raises(InputError, match="must be 'lora' or 'full'"):
        load_leakage(path)
    path.write_text(text.replace("[leakage.analyses]", sft.replace("TUNING", "full"), 1))
    assert [s.tuning for s in load_leakage(path).students] == ["lora", "lora", "full"]
    # paper 000 §5.3: a DPO student may start from an SFT policy on the pool's human-written answers
    path.write_text(text.replace("k = 3\n", 'k = 3\nsft_first = "human"\n', 1))
    with pytest.raises(InputError, match="only a DPO student") as err:
        load_leakage(path)
    assert err.value.field == "leakage.students[0].sft_first"
    dpo = f'[[leakage.students]]\nmethod = "dpo"\nbase = "{BASE}"\npair_sampler = "{BASE}"\nsft_first = "SFT"\n[leakage.analyses]'
    path.write_text(text.replace("[leakage.analyses]", dpo.replace("SFT", "synthetic"), 1))
    with pytest.raises(InputError, match="must be 'human'"):
        load_leakage(path)
    path.write_text(text.replace("[leakage.analyses]", dpo.replace("SFT", "human"), 1))
    assert [s.sft_first for s in load_leakage(path).students] == [None, None, "human"]
    # the response classifier: TF-IDF by default, the paper's fine-tuned encoder as a named variant
    assert load_leakage(_write(tmp_path)).analyses.classifier == ("tfidf-logreg",)
    for value, parsed in (
        ('"minilm-finetune"', ("minilm-finetune",)),
        ("false", ()),
        ('["tfidf-logreg", "minilm-finetune"]', ("tfidf-logreg", "minilm-finetune")),
    ):
        path.write_text(text.replace("classifier = true", f"classifier = {value}"))
        assert load_leakage(path).analyses.classifier == parsed
    path.write_text(text.replace("classifier = true", 'classifier = "bert-base"'))
    with pytest.raises(InputError, match="minilm-finetune") as err:
        load_leakage(path)
    assert err.value.field == "leakage.analyses.classifier"
    # judgment dimensions: the main one per rationale, or every one it weighs
    path.write_text(text.replace("[leakage.analyses]\n", '[leakage.analyses]\ndimension_labels = "many"\n'))
    with pytest.raises(InputError, match="must be 'main' or 'several'") as err:
        load_leakage(path)
    assert err.value.field == "leakage.analyses.dimension_labels"
    path.write_text(text.replace("[leakage.analyses]\n", '[leakage.analyses]\ndimension_labels = "several"\n'))
    assert load_leakage(path).analyses.dimension_labels == "several"


def test_dry_run_lists_students(tmp_path):
    cfg = load_leakage(_write(tmp_path))
    with Store(tmp_path / "s.db") as store:
        plan = asyncio.run(run_leakage(cfg, store, endpoints=_endpoints(cfg), dry_run=True))
    assert plan["dry_run"] and len(plan["students"]) == 6 and plan["judge_calls"] == 12 * 3 * 2 * 2
    assert not (tmp_path / "out").exists()  # no output folder, no students.toml: a dry run leaves no file


@pytest.mark.parametrize("instructions, answered", [("same", 10), ("different", 8)])
def test_dry_run_counts_the_parents_answers_an_inheriting_entry_learns_from(tmp_path, instructions, answered):
    """Each parent student answers the instructions its inheritors learn from: generation calls the
    dry run announces (they were missing from its count)."""
    path = _write(tmp_path)
    (tmp_path / "other.jsonl").write_text(
        "".join(json.dumps({"id": f"o{i}", "prompt": f"Other instruction {i}?"}) + "\n" for i in range(8))
    )
    text = path.read_text().replace("k = 3\n", 'k = 3\nname = "first"\n', 1)
    inheriting = "".join(
        f'[[leakage.students]]\nmethod = "icl"\nbase = "{BASE}"\nname = "{name}"\n'
        f'inherit = "first"\ninstructions = "{instructions}"\n'
        for name in ("second", "third")
    )
    path.write_text(
        text.replace("[leakage.analyses]", inheriting + "[leakage.analyses]", 1).replace(
            'train_pool = "train.jsonl"\n', 'train_pool = "train.jsonl"\ninherit_pool = "other.jsonl"\n'
        )
    )
    cfg = load_leakage(path)
    with Store(tmp_path / "s.db") as store:
        plan = asyncio.run(run_leakage(cfg, store, endpoints=_endpoints(cfg), dry_run=True))
    assert len(plan["students"]) == 6 + 2 * 2
    # generators on the training pool + the two parents once (both entries inherit the same answers)
    # + every student on the evaluation pool
    assert plan["generation_calls"] == 10 * 2 + 2 * answered + 12 * 10


class _Counting:
    """Counts the calls that reach the fake backends (a replayed call never does)."""

    def __init__(self, cfg):
        self.calls = 0
        self.endpoints = {
            m: Endpoint(model=m, backend=self._wrap(Fake(m)), kind="fake", served_model=m) for m in cfg.experiment.models
        }

    def _wrap(self, fake):
        outer = self

        class Wrapped:
            async def complete(self, request):
                outer.calls += 1
                return await fake.complete(request)

            async def aclose(self):
                return None

        return Wrapped()


@pytest.mark.parametrize("instructions", ["same", "different"])
def test_inheritance_students_learn_from_students_and_carry_the_leak(tmp_path, instructions):
    """Paper 000 §5.2: the ICL students of each generator answer instructions (the training pool
    again, or other ones) and new students learn from those answers. The grand-students keep their
    generator's signature, so each judge still prefers its own generator's line (PLS > 0); the
    registry follows the chain (grand-student → student → generator) and calls it a student."""
    path = _write(tmp_path)
    (tmp_path / "other.jsonl").write_text(
        "".join(json.dumps({"id": f"o{i}", "prompt": f"Other instruction {i}?"}) + "\n" for i in range(8))
    )
    text = path.read_text().replace("k = 3\n", 'k = 3\nname = "first"\n', 1)
    text = text.replace(
        "[leakage.analyses]",
        f'''[[leakage.students]]
method = "icl"
base = "{BASE}"
k = 3
name = "second"
inherit = "first"
instructions = "{instructions}"
[leakage.analyses]''',
        1,
    ).replace('train_pool = "train.jsonl"\n', 'train_pool = "train.jsonl"\ninherit_pool = "other.jsonl"\n')
    path.write_text(text)
    cfg = load_leakage(path)
    counting = _Counting(cfg)
    with Store(tmp_path / "s.db") as store:
        result = asyncio.run(run_leakage(cfg, store, endpoints=counting.endpoints))
    second = [s for s in result.summary["students"] if s["group"].startswith("second:")]
    first = {s["generator"]: s["id"] for s in result.summary["students"] if s["group"].startswith("first:")}
    assert len(second) == 2 and {s["teacher"] for s in second} == set(first.values())
    for s in second:
        assert s["teacher"] == first[s["generator"]] and s["variant"] == {"inherit": "first", "instructions": instructions}
        assert s["how"]["examples"] == (10 if instructions == "same" else 8)  # the instructions the parent answered
    reg_text = (tmp_path / "out" / "students.toml").read_text()
    assert all(f'teachers = ["{first[s["generator"]]}"]' in reg_text for s in second)
    from nepotism.models import load_registry

    registry = load_registry([str(tmp_path / "out" / "students.toml")])
    for s in second:
        assert registry.scope(s["generator"], s["id"]) == "student"  # through the parent student
    pls = [
        r
        for r in result.to_dicts()
        if r["metric"] == "preference-leakage-score"
        and r["variant"].get("group", "").startswith("second:")
        and "slice" not in r["variant"]
        and r["variant"].get("ties") == "loss"
    ]
    assert pls and pls[0]["value"] > 0.5 and pls[0]["p_value"] < 0.05
    # a rerun replays every call, the parents' answers to the inherited instructions included
    made = counting.calls
    assert made > 0
    with Store(tmp_path / "s.db") as store:
        again = asyncio.run(run_leakage(cfg, store, endpoints=counting.endpoints))
    assert counting.calls == made
    assert [r["value"] for r in again.to_dicts()] == [r["value"] for r in result.to_dicts()]


def test_inheritance_config_errors(tmp_path):
    path = _write(tmp_path)
    text = path.read_text()
    child = f'[[leakage.students]]\nmethod = "icl"\nbase = "{BASE}"\nINHERIT\n[leakage.analyses]'
    cases = [
        ('inherit = "nobody"', "students[2].inherit", "not the name of an earlier"),
        ('inherit = "mixed"\ninstructions = "different"', "students[2].instructions", r"needs \[leakage\] inherit_pool"),
        ('inherit = "mixed"\ninstructions = "other"', "students[2].instructions", "must be 'same' or 'different'"),
        ('instructions = "same"', "students[2].instructions", "only an inheriting student"),
    ]
    for line, field, message in cases:
        path.write_text(text.replace("[leakage.analyses]", child.replace("INHERIT", line), 1))
        with pytest.raises(InputError, match=message) as err:
            load_leakage(path)
        assert err.value.field == f"leakage.{field}"


def test_two_entries_whose_students_would_share_ids_are_refused(tmp_path):
    """Two unnamed entries of one method and base (k differs) made the same student ids: the run
    stopped with a traceback after calling the generators. Now the file is refused, naming the entry;
    a name, other generators or other mix shares tell them apart."""
    path = _write(tmp_path)
    text = path.read_text()
    second = f'[[leakage.students]]\nmethod = "icl"\nbase = "{BASE}"\nk = 1\nEXTRA\n[leakage.analyses]'
    path.write_text(text.replace("[leakage.analyses]", second.replace("EXTRA", ""), 1))
    with pytest.raises(InputError, match=r"same ids as those of students\[0\].*give one of the entries a name") as err:
        load_leakage(path)
    assert err.value.field == "leakage.students[2]"
    for extra in ('name = "k1"', f'generators = ["{GB}"]\nmix = [0.5]'):
        path.write_text(text.replace("[leakage.analyses]", second.replace("EXTRA", extra), 1))
        load_leakage(path)
    path.write_text(text.replace("[leakage.analyses]", second.replace("EXTRA", 'name = "mixed"\nmix = [0.3]'), 1))
    with pytest.raises(InputError, match="names two entries|same ids"):
        load_leakage(path)


class _Rewriter(Fake):
    """The base model, except that asked to rewrite it drops the generators' signatures (as removing
    a spurious style would), and breaks every fifth rewrite (an empty reply). Its answers as a
    student name the question's length, so that no two are the same call."""

    rewrites = 0

    async def complete(self, request):
        text = "\n".join(m.content for m in request.messages)
        if request.labels is None and "Rewrite the text" in text:
            original = text.split("TEXT:\n", 1)[1].strip()
            self.rewrites += 1
            if self.rewrites % 5 == 0:
                return Completion(text="")
            return Completion(text=re.sub(r"[QS]STYLE", "NEUTRAL", original))
        done = await super().complete(request)
        if request.labels is None:  # one answer per question (the base's own answers all look alike)
            return Completion(text=f"{done.text} to {len(text)}")
        return done


def test_ablation_conditions_measure_how_much_leakage_a_rewrite_removes(tmp_path):
    """Paper 000 §5.7 on the fake models: the students' answers carry their generator's signature
    (the spurious feature each judge prefers); a rewriter removes it (condition no-style) and PLS
    drops to about 0. preference-leakage-change is that drop, paired on the same prompts; a broken
    rewrite leaves its answer out of the condition and says so."""
    path = _write(tmp_path)
    path.write_text(
        path.read_text().replace("[leakage.analyses]\n", f'[leakage.analyses]\nablations = ["style"]\nrewriter = "{BASE}"\n')
    )
    cfg = load_leakage(path)
    endpoints = _endpoints(cfg)
    endpoints[BASE] = Endpoint(model=BASE, backend=_Rewriter(BASE), kind="fake", served_model=BASE)
    with Store(tmp_path / "s.db") as store:
        result = asyncio.run(run_leakage(cfg, store, endpoints=endpoints))
    records = result.to_dicts()
    group = f"icl:{BASE}"

    def one(metric, condition):
        (found,) = [
            r
            for r in records
            if r["metric"] == metric
            and r["condition"] == condition
            and r["variant"].get("group") == group
            and r["variant"].get("ties") == "half"
            and r["variant"].get("preference", "verdict") == "verdict"
            and "slice" not in r["variant"]
        ]
        return found

    # without the signature the fake judges answer B in both orders: every comparison a tie, so PLS
    # is 0 with ties = ½ (with ties = loss it is undefined: every win rate is 0, and it says so)
    before, after = one("preference-leakage-score", "default"), one("preference-leakage-score", "no-style")
    assert before["value"] > 0.5 and after["value"] == pytest.approx(0.0)
    change = one("preference-leakage-change", "no-style")
    assert change["variant"]["against"] == "default"
    assert change["value"] == pytest.approx(after["value"] - before["value"])
    assert change["ci_high"] < 0  # the paired interval excludes no change
    # the broken rewrites' comparisons are missing, not guessed: 144 judgments per condition in full
    assert 144 < result.summary["judgments"]["pairwise:parsed"] < 2 * 144
    assert any(note.startswith("no-style:") and "rewriting call failed" in note for note in result.summary["notes"])
    # the other analyses still read the original answers only
    assert all(
        r["condition"] in (None, "default")
        for r in records
        if r["metric"] not in ("preference-leakage-score", "preference-leakage-change", "win-rate")
    )


def test_a_student_entry_made_in_python_without_a_base_is_refused_by_name(tmp_path):
    """`load_leakage` asks every non-external entry for a base; a `StudentConfig` built in Python
    without one used to name its students 'None-…' and look up an endpoint called None (found by
    mypy strict): the run now stops with the missing base named, before any call."""
    import dataclasses

    cfg = load_leakage(_write(tmp_path))
    no_base = dataclasses.replace(cfg.students[0], base=None)
    cfg = dataclasses.replace(cfg, students=(no_base, *cfg.students[1:]))
    with Store(tmp_path / "s.db") as store, pytest.raises(ValueError, match=f"a {no_base.method} student needs a base model"):
        asyncio.run(run_leakage(cfg, store, endpoints=_endpoints(cfg), dry_run=True))
