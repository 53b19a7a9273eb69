"""The judge-plan memo (`nepotism.runner.plan_memo`, `nepotism.store.memo`): a rerun counts a window
from its memo row only when every input of its keys is unchanged and everything it names is stored."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nepotism.judging import interpret_all, judgment_ids, plan_pairwise, render
from nepotism.judging.templates import load_templates
from nepotism.records import Instance, Response, RubricItem
from nepotism.runner import Endpoint, Limiter, RetryPolicy, Runner
from nepotism.runner import plan_memo as plan_memo_module
from nepotism.runner.plan_memo import code_digest
from nepotism.store import Store
from nepotism.store.memo import memo_checksum
from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, standin_process
from tests.runner.conftest import ScriptedBackend

FAST = RetryPolicy(max_attempts=2, base_delay_s=0.0)
JUDGES = ("j1", "j2")
GENERATORS = ("j1", "j2", "other")
WINDOW = 8
NEPOTISM = str(Path(sys.executable).with_name("nepotism"))


@dataclasses.dataclass
class World:
    """Everything the keys of a judge plan depend on, editable by a test."""

    instances: list[Instance]
    responses: list[Response]
    options: dict
    condition: str = "default"
    replicates: int = 1
    seed: int = 0
    kinds: dict = dataclasses.field(default_factory=lambda: {j: "openai" for j in JUDGES})
    served: dict = dataclasses.field(default_factory=lambda: {j: f"served-{j}" for j in JUDGES})

    def tasks(self):
        by_instance: dict[str, list[Response]] = {}
        for r in self.responses:
            by_instance.setdefault(r.instance_id, []).append(r)
        return plan_pairwise(self.instances, by_instance, list(JUDGES), pairs="judge-vs-others",
                             options=self.options, condition=self.condition, replicates=self.replicates)


def _world(items: int = 6) -> World:
    instances = [Instance(f"q{i}", f"Question {i}?", reference_answer=f"ref {i}",
                          rubric=(RubricItem("r1", f"criterion {i}"),), category="c", metadata={"k": i})
                 for i in range(items)]
    responses = [Response(inst.id, g, f"{g} answers {inst.id}") for inst in instances for g in GENERATORS]
    return World(instances, responses, {"ways": 2})


def _judge(store: Store, world: World, backend: ScriptedBackend, *, memo: bool = True):
    eps = {j: Endpoint(j, backend, world.kinds[j], served_model=world.served[j], limiter=Limiter(4), retry=FAST)
           for j in JUDGES}
    runner = Runner(store, eps, judge_window=WINDOW, seed=world.seed, judge_memo=memo)
    tasks = world.tasks()
    out = asyncio.run(runner.judge(tasks, render, interpret_all, keep=False, identify=judgment_ids))
    plan = {i for (i,) in store._conn().execute(f'SELECT id FROM temp."{out.plan}"')}
    store.drop_plan(out.plan)
    return out, len(tasks), plan


def _memo_rows(store: Store) -> int:
    return store._conn().execute("SELECT COUNT(*) FROM judge_memo").fetchone()[0]


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "memo.db") as s:
        yield s


def test_a_rerun_counts_every_window_from_the_memo_and_says_what_the_normal_path_says(store, monkeypatch):
    world, backend = _world(), ScriptedBackend()
    first, n, first_plan = _judge(store, world, backend)
    assert first.stats.sent == n and first.memo_hits == 0
    assert _memo_rows(store) == -(-n // WINDOW)  # one row per window, written by the first run
    normal, _, normal_plan = _judge(store, world, backend, memo=False)
    assert normal.memo_hits == 0 and normal.stats.cached == n
    planned = []
    monkeypatch.setattr(Runner, "plan_judging", lambda self, tasks, fn: planned.append(tasks) or [])
    again, _, again_plan = _judge(store, world, backend)
    assert planned == []  # nothing rendered or keyed
    assert again.memo_hits == n and again.stats.cached == again.stats.done == n and again.stats.sent == 0
    assert again.counts == normal.counts == first.counts and sum(again.counts.values()) == n
    assert again_plan == normal_plan == first_plan and len(again_plan) == n
    assert sum(backend.calls.values()) == n


def _edit_instance(field: str, value):
    def edit(w: World):
        w.instances[0] = dataclasses.replace(w.instances[0], **{field: value})
    return edit


def _edit_response(w: World):
    w.responses[0] = dataclasses.replace(w.responses[0], text="a different answer")


def _edit_rubric(w: World):
    w.instances[0] = dataclasses.replace(w.instances[0], rubric=(RubricItem("r1", "another criterion"),))


def _rename_generator(w: World):
    w.responses = [dataclasses.replace(r, generator="renamed") if r.generator == "other" else r for r in w.responses]


def _set(name: str, value):
    def edit(w: World):
        setattr(w, name, value)
    return edit


def _option(name: str, value):
    def edit(w: World):
        w.options = w.options | {name: value}
    return edit


def _endpoint(table: str, value):
    def edit(w: World):
        getattr(w, table)["j1"] = value
    return edit


# (edit, whether it changes a prompt or request, so that new calls are sent)
EDITS = {
    "instance prompt": (_edit_instance("prompt", "Another question?"), True),
    "instance reference shown": (lambda w: (_option("show_reference", True)(w), _edit_instance(
        "reference_answer", "another reference")(w)), True),
    "instance rubric shown": (lambda w: (_option("show_rubric", True)(w), _edit_rubric(w)), True),
    "instance reference unshown": (_edit_instance("reference_answer", "another reference"), False),
    "instance rubric unshown": (_edit_rubric, False),
    "instance category": (_edit_instance("category", "other"), False),
    "instance metadata": (_edit_instance("metadata", {"k": "changed"}), False),
    "response text": (_edit_response, True),
    "response generator": (_rename_generator, False),  # not in the prompt: new judgments, no new call
    "judge temperature": (_option("temperature", 0.5), True),
    "protocol option": (_option("ways", 3), True),
    "label mode": (_option("mode", "labels"), True),
    "condition": (_set("condition", "other"), False),
    "replicates": (_set("replicates", 2), True),
    "seed": (_set("seed", 7), False),
    "served model": (_endpoint("served", "served-elsewhere"), True),
    "backend kind": (_endpoint("kinds", "gguf"), True),
}


@pytest.mark.parametrize("name", list(EDITS))
def test_changing_any_input_misses_the_memo_and_plans_the_new_calls(store, name):
    world, backend = _world(), ScriptedBackend()
    _judge(store, world, backend)
    hit, n, _ = _judge(store, world, backend)
    assert hit.memo_hits == n
    edit, sends = EDITS[name]
    edit(world)
    sent_before = sum(backend.calls.values())
    edited, n_edited, _ = _judge(store, world, backend)
    assert edited.memo_hits < n_edited  # at least one window missed
    assert sum(edited.counts.values()) == edited.stats.done == n_edited
    if sends:
        assert edited.stats.sent > 0 and sum(backend.calls.values()) > sent_before
    # the edited plan's memo is written: the next rerun counts it all from there
    again, _, _ = _judge(store, world, backend)
    assert again.memo_hits == n_edited and again.stats.sent == 0


def test_an_edited_user_template_misses_the_memo(store, tmp_path):
    template = tmp_path / "mine.toml"
    source = load_templates()["pairwise"]
    shutil.copy(Path(__file__).resolve().parents[2] / "src/nepotism/judging/templates/pairwise.toml", template)
    assert source.id == "pairwise"
    world, backend = _world(), ScriptedBackend()
    world.options = world.options | {"template": str(template)}
    _judge(store, world, backend)
    hit, n, _ = _judge(store, world, backend)
    assert hit.memo_hits == n
    text = template.read_text().replace("Decide which answer is better", "Decide, carefully, which answer is better")
    template.write_text(text)
    edited, _, _ = _judge(store, world, backend)
    assert edited.memo_hits == 0 and edited.stats.sent == n


def test_other_code_misses_the_memo(store, monkeypatch, tmp_path):
    world, backend = _world(), ScriptedBackend()
    _judge(store, world, backend)
    monkeypatch.setattr(plan_memo_module, "code_digest", lambda root=None: "0" * 64)
    missed, n, _ = _judge(store, world, backend)
    assert missed.memo_hits == 0 and missed.stats.cached == n
    # and the code digest changes with any byte of any file of the package (here, a copy)
    root = tmp_path / "pkg"
    (root / "judging").mkdir(parents=True)
    (root / "judging" / "render.py").write_text("x = 1\n")
    (root / "judging" / "__pycache__").mkdir()
    (root / "judging" / "__pycache__" / "render.pyc").write_bytes(b"ignored")
    before = code_digest(root)
    plan_memo_module._CODE.clear()
    (root / "judging" / "__pycache__" / "render.pyc").write_bytes(b"still ignored")
    assert code_digest(root) == before
    plan_memo_module._CODE.clear()
    (root / "judging" / "render.py").write_text("x = 2\n")
    assert code_digest(root) != before


def test_a_missing_judgment_or_call_takes_the_normal_path_for_its_window(store):
    world, backend = _world(), ScriptedBackend()
    first, n, _ = _judge(store, world, backend)
    conn = store._conn()
    (ident, key), = conn.execute("SELECT id, call_key FROM judgments ORDER BY id LIMIT 1").fetchall()
    conn.execute("DELETE FROM judgments WHERE id = ?", (ident,))
    again, _, plan = _judge(store, world, backend)
    assert again.memo_hits == n - WINDOW and again.stats.sent == 0 and ident in plan
    assert conn.execute("SELECT call_key FROM judgments WHERE id = ?", (ident,)).fetchone() == (key,)  # rewritten
    # a call gone (and its judgments): its window is judged the normal way, the call sent again
    conn.execute("DELETE FROM judgments WHERE call_key = ?", (key,))
    conn.execute("DELETE FROM calls WHERE key = ?", (key,))
    sent = sum(backend.calls.values())
    third, _, _ = _judge(store, world, backend)
    assert third.memo_hits == n - WINDOW and third.stats.sent == 1 and sum(backend.calls.values()) == sent + 1
    assert third.counts == first.counts


def test_a_failed_judgment_is_not_counted_from_the_memo(tmp_path):
    """Calls that failed in the first run: the rerun with the memo does what it does without."""
    reruns = {}
    for memo in (True, False):
        world = _world()
        failing = [t for t in world.tasks() if t.instance.id == "q0"]
        prompts = {render(t, model=t.judge).messages[-1].content for t in failing}
        backend = ScriptedBackend(faults={p: ["server_error"] * 3 for p in prompts})
        with Store(tmp_path / f"{memo}.db") as store:
            first, n, _ = _judge(store, world, backend, memo=memo)
            assert first.counts.get("failed") == len(failing)
            again, _, plan = _judge(store, world, backend, memo=memo)
        reruns[memo] = (dataclasses.replace(again.stats, view=None), again.counts, plan)
        assert again.memo_hits == (n - WINDOW if memo else 0)  # the failures' window: the normal path
    assert reruns[True] == reruns[False]


def test_a_damaged_or_moved_memo_row_is_not_used(store):
    world, backend = _world(), ScriptedBackend()
    _judge(store, world, backend)
    conn = store._conn()
    digests = [d for (d,) in conn.execute("SELECT digest FROM judge_memo ORDER BY digest")]
    # damage: one pair's judgment id changed (the checksum no longer matches)
    rows = conn.execute("SELECT rows FROM judge_memo WHERE digest = ?", (digests[0],)).fetchone()[0]
    conn.execute("UPDATE judge_memo SET rows = ? WHERE digest = ?", (rows.replace('"]', 'x"]', 1), digests[0]))
    # moved: another window's intact row under this digest (the checksum covers the digest)
    other = conn.execute("SELECT tasks, rows, checksum FROM judge_memo WHERE digest = ?", (digests[2],)).fetchone()
    conn.execute("UPDATE judge_memo SET tasks = ?, rows = ?, checksum = ? WHERE digest = ?", (*other, digests[1]))
    again, n, _ = _judge(store, world, backend)
    assert again.memo_hits == n - 2 * WINDOW and again.stats.sent == 0
    # both rows were rewritten by the normal path: the next rerun counts everything from the memo
    assert _judge(store, world, backend)[0].memo_hits == n


def test_a_row_naming_pairs_that_are_not_stored_cannot_skip_a_call(store):
    world, backend = _world(), ScriptedBackend()
    _judge(store, world, backend)
    conn = store._conn()
    digest, tasks, rows = conn.execute("SELECT digest, tasks, rows FROM judge_memo LIMIT 1").fetchone()
    # a row with a valid checksum whose first call key is one nothing stores
    forged = '[["' + "f" * 64 + rows[rows.index('",'):]
    conn.execute("UPDATE judge_memo SET rows = ?, checksum = ? WHERE digest = ?",
                 (forged, memo_checksum(digest, tasks, forged), digest))
    key = rows[3:67]
    conn.execute("DELETE FROM judgments WHERE call_key = ?", (key,))
    conn.execute("DELETE FROM calls WHERE key = ?", (key,))
    sent = sum(backend.calls.values())
    again, n, _ = _judge(store, world, backend)
    assert again.memo_hits == n - WINDOW and again.stats.sent == 1 and sum(backend.calls.values()) == sent + 1


def test_the_memo_applies_only_to_the_package_functions_and_unkept_judgments(store):
    world, backend = _world(), ScriptedBackend()
    _judge(store, world, backend)
    eps = {j: Endpoint(j, backend, "openai", served_model=world.served[j], limiter=Limiter(4), retry=FAST)
           for j in JUDGES}
    tasks = world.tasks()

    def own_render(task, *, model):
        return render(task, model=model)

    runs = {
        "kept": Runner(store, eps, judge_window=WINDOW).judge(tasks, render, interpret_all, identify=judgment_ids),
        "own render": Runner(store, eps, judge_window=WINDOW).judge(tasks, own_render, interpret_all, keep=False,
                                                                    identify=judgment_ids),
        "turned off": Runner(store, eps, judge_window=WINDOW, judge_memo=False).judge(
            tasks, render, interpret_all, keep=False, identify=judgment_ids),
    }
    for name, run in runs.items():
        out = asyncio.run(run)
        assert out.memo_hits == 0 and out.stats.cached == len(tasks), name
        store.drop_plan(out.plan)


def _run(exp: Path, db: str, cwd: Path, *extra: str) -> dict:
    done = subprocess.run([NEPOTISM, "run", str(exp), "--store", db, "--no-progress", "--json", *extra], cwd=cwd,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _exports(cwd: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((cwd / "out").glob("*.csv"))}


def _same_counts(summary: dict) -> dict:
    judging = {k: v for k, v in summary["judging"].items() if k not in ("waited_s",)}
    return {"judging": judging, "judgments": summary["judgments"], "instances": summary["instances"]}


def test_nepotism_run_from_the_memo_exports_the_same_bytes_and_counts_and_merge_leaves_it_out(tmp_path):
    """`nepotism run` end to end: the rerun counted from the memo and the rerun without it (its
    rows deleted) print the same counts and export byte-identical tables; a merged store holds no
    memo and its rerun writes it."""
    with standin_process(StandinConfig(latency_s=0.001)) as url:
        exp = standin_experiment(tmp_path, url, items=12)
        first = _run(exp, "a.db", tmp_path)
        assert first["status"] == "done" and first["judging"]["sent"] > 0
        fresh = _exports(tmp_path)
        memo = _run(exp, "a.db", tmp_path)
        assert _exports(tmp_path) == fresh and memo["judging"]["sent"] == 0
        with sqlite3.connect(tmp_path / "a.db") as conn:
            assert conn.execute("SELECT COUNT(*) FROM judge_memo").fetchone()[0] > 0
            conn.execute("DELETE FROM judge_memo")
        plain = _run(exp, "a.db", tmp_path)
        assert _exports(tmp_path) == fresh
        assert _same_counts(memo) == _same_counts(plain)
        assert memo["judging"]["cached"] == memo["judging"]["total"] == first["judging"]["total"]
        # a dry run reads no memo and says the same before and after
        dry = [subprocess.run([NEPOTISM, "run", str(exp), "--store", "a.db", "--dry-run", "--json"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=600).stdout for _ in range(2)]
        assert dry[0] == dry[1] and json.loads(dry[0])["totals"]["to_send"] == 0
        done = subprocess.run([NEPOTISM, "store", "merge", "a.db", "--out", "merged.db", "--json"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        assert "judge_memo" not in json.loads(done.stdout)["added"]
        with sqlite3.connect(tmp_path / "merged.db") as conn:
            assert conn.execute("SELECT COUNT(*) FROM judge_memo").fetchone()[0] == 0
        merged = _run(exp, "merged.db", tmp_path)
        assert _exports(tmp_path) == fresh and _same_counts(merged) == _same_counts(plain)
        with sqlite3.connect(tmp_path / "merged.db") as conn:
            assert conn.execute("SELECT COUNT(*) FROM judge_memo").fetchone()[0] > 0


def test_run_experiment_counts_a_repeated_rerun_from_the_memo(tmp_path, monkeypatch):
    """In process, `run_experiment` as `nepotism run` calls it: by the second rerun every judge
    task is counted from the memo (the first rerun writes rows for the windows it judges)."""
    from nepotism.experiment import load_experiment
    from nepotism.runner.experiment_run import run_experiment

    outcomes = []
    judge = Runner.judge

    async def spy(self, *args, **kwargs):
        out = await judge(self, *args, **kwargs)
        outcomes.append(out)
        return out

    monkeypatch.setattr(Runner, "judge", spy)
    with standin_process(StandinConfig(latency_s=0.001)) as url:
        exp = load_experiment(standin_experiment(tmp_path, url, items=12))
        summaries = []
        for _ in range(3):
            with Store(tmp_path / "inproc.db") as store:
                summaries.append(asyncio.run(run_experiment(exp, store)))
    last = outcomes[-1]
    assert last.stats.total > 0 and last.memo_hits == last.stats.total == last.stats.cached
    assert summaries[2].judgments == summaries[1].judgments == summaries[0].judgments
