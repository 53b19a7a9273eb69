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
        return plan_pairwise(
            self.instances,
            by_instance,
            list(JUDGES),
            pairs="judge-vs-others",
            options=self.options,
            condition=self.condition,
            replicates=self.replicates,
        )


def _world(items: int = 6) -> World:
    instances = [
        Instance(
            f"q{i}",
            f"Question {i}?",
            reference_answer=f"ref {i}",
            rubric=(RubricItem("r1", f"criterion {i}"),),
            category="c",
            metadata={"k": i},
        )
        for i in range(items)
    ]
    responses = [Response(inst.id, g, f"{g} answers {inst.id}") for inst in instances for g in GENERATORS]
    return World(instances, responses, {"ways": 2})


def _judge(store: Store, world: World, backend: ScriptedBackend, *, memo: bool = True):
    eps = {j: Endpoint(j, backend, world.kinds[j], served_model=world.served[j], limiter=Limiter(4), retry=FAST) for j in JUDGES}
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


def test_a_fresh_phase_hashes_each_judgment_id_once(store, monkeypatch):
    """On a fresh run the window's ``identify`` gives a task's judgment ids (to look them up);
    the judgments read from its call are stored under those ids, not hashed again: one id
    computation per judgment, and the stored ids are the ones `Judgment.id` gives."""
    from nepotism.records import Judgment

    world, backend = _world(), ScriptedBackend()
    tasks = world.tasks()
    expected = sorted(ident for task in tasks for ident in judgment_ids(task))
    hashed = []
    real = Judgment.id
    monkeypatch.setattr(Judgment, "id", property(lambda self: hashed.append(1) or real.fget(self)))
    first, n, plan = _judge(store, world, backend, memo=False)
    assert first.stats.sent == n == len(tasks) and hashed == []
    monkeypatch.undo()
    stored = sorted(ident for (ident,) in store._conn().execute("SELECT id FROM judgments"))
    assert stored == expected == sorted(plan) == sorted(j.id for j in store.judgments())


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
    "instance reference shown": (
        lambda w: (_option("show_reference", True)(w), _edit_instance("reference_answer", "another reference")(w)),
        True,
    ),
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
    ((ident, key),) = conn.execute("SELECT id, call_key FROM judgments ORDER BY id LIMIT 1").fetchall()
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


def _pairs_text(conn, digest: str) -> str:
    return " ".join(
        f"{k} {i}"
        for k, i in conn.execute(
            "SELECT call_key, judgment_id FROM judge_memo_pairs WHERE memo = (SELECT id FROM judge_memo WHERE digest = ?) "
            "ORDER BY seq",
            (digest,),
        )
    )


def _memo_id(conn, digest: str) -> int:
    return conn.execute("SELECT id FROM judge_memo WHERE digest = ?", (digest,)).fetchone()[0]


def test_a_damaged_or_moved_memo_row_is_not_used(store):
    world, backend = _world(), ScriptedBackend()
    _judge(store, world, backend)
    conn = store._conn()
    digests = [d for (d,) in conn.execute("SELECT digest FROM judge_memo ORDER BY digest")]
    # damage: one pair's judgment id changed (not stored, and the checksum no longer matches)
    conn.execute(
        "UPDATE judge_memo_pairs SET judgment_id = judgment_id || 'x' WHERE memo = ? AND seq = 0", (_memo_id(conn, digests[0]),)
    )
    # moved: another window's intact row (header and pairs) under this digest (the checksum covers it)
    other = conn.execute("SELECT tasks, pairs, tags, checksum FROM judge_memo WHERE digest = ?", (digests[2],)).fetchone()
    conn.execute("UPDATE judge_memo SET tasks = ?, pairs = ?, tags = ?, checksum = ? WHERE digest = ?", (*other, digests[1]))
    conn.execute("DELETE FROM judge_memo_pairs WHERE memo = ?", (_memo_id(conn, digests[1]),))
    conn.execute(
        "INSERT INTO judge_memo_pairs SELECT ?, seq, call_key, judgment_id FROM judge_memo_pairs WHERE memo = ?",
        (_memo_id(conn, digests[1]), _memo_id(conn, digests[2])),
    )
    # damaged tags (the checksum covers them): the row is not used either
    conn.execute("UPDATE judge_memo SET tags = '[\"pointwise\"]' WHERE digest = ?", (digests[3],))
    again, n, _ = _judge(store, world, backend)
    assert again.memo_hits == n - 3 * WINDOW and again.stats.sent == 0
    # the rows were rewritten by the normal path: the next rerun counts everything from the memo
    assert _judge(store, world, backend)[0].memo_hits == n


def test_a_row_naming_pairs_that_are_not_stored_cannot_skip_a_call(store):
    world, backend = _world(), ScriptedBackend()
    _judge(store, world, backend)
    conn = store._conn()
    digest, tasks, tags = conn.execute("SELECT digest, tasks, tags FROM judge_memo LIMIT 1").fetchone()
    memo = _memo_id(conn, digest)
    key = conn.execute("SELECT call_key FROM judge_memo_pairs WHERE memo = ? AND seq = 0", (memo,)).fetchone()[0]
    # a row with a valid checksum whose first call key is one nothing stores
    conn.execute("UPDATE judge_memo_pairs SET call_key = ? WHERE memo = ? AND seq = 0", ("f" * 64, memo))
    conn.execute(
        "UPDATE judge_memo SET checksum = ? WHERE digest = ?",
        (memo_checksum(digest, tasks, tags, _pairs_text(conn, digest)), digest),
    )
    conn.execute("DELETE FROM judgments WHERE call_key = ?", (key,))
    conn.execute("DELETE FROM calls WHERE key = ?", (key,))
    sent = sum(backend.calls.values())
    again, n, _ = _judge(store, world, backend)
    assert again.memo_hits == n - WINDOW and again.stats.sent == 1 and sum(backend.calls.values()) == sent + 1


def test_the_memo_applies_only_to_the_package_functions_and_unkept_judgments(store):
    world, backend = _world(), ScriptedBackend()
    _judge(store, world, backend)
    eps = {j: Endpoint(j, backend, "openai", served_model=world.served[j], limiter=Limiter(4), retry=FAST) for j in JUDGES}
    tasks = world.tasks()

    def own_render(task, *, model):
        return render(task, model=model)

    runs = {
        "kept": Runner(store, eps, judge_window=WINDOW).judge(tasks, render, interpret_all, identify=judgment_ids),
        "own render": Runner(store, eps, judge_window=WINDOW).judge(
            tasks, own_render, interpret_all, keep=False, identify=judgment_ids
        ),
        "turned off": Runner(store, eps, judge_window=WINDOW, judge_memo=False).judge(
            tasks, render, interpret_all, keep=False, identify=judgment_ids
        ),
    }
    for name, run in runs.items():
        out = asyncio.run(run)
        assert out.memo_hits == 0 and out.stats.cached == len(tasks), name
        store.drop_plan(out.plan)


def _run(exp: Path, db: str, cwd: Path, *extra: str) -> dict:
    done = subprocess.run(
        [NEPOTISM, "run", str(exp), "--store", db, "--no-progress", "--json", *extra],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
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
        dry = [
            subprocess.run(
                [NEPOTISM, "run", str(exp), "--store", "a.db", "--dry-run", "--json"],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=600,
            ).stdout
            for _ in range(2)
        ]
        assert dry[0] == dry[1] and json.loads(dry[0])["totals"]["to_send"] == 0
        done = subprocess.run(
            [NEPOTISM, "store", "merge", "a.db", "--out", "merged.db", "--json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
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


# -- the chunk plans of `nepotism run`: a chunk digested from its inputs, counted without planning --

CHUNK = 3  # instances handed to judging at a time (`Runner.ready_chunk`)
STANDIN = ("standin-alpha", "standin-beta")


@dataclasses.dataclass
class Chunked:
    """What a `ChunkPlan` is made of and what renders and keys its calls, editable by a test."""

    experiment: object
    instances: list[Instance]
    responses: list[Response]
    seed: int = 0
    kinds: dict = dataclasses.field(default_factory=lambda: {j: "openai" for j in STANDIN})
    served: dict = dataclasses.field(default_factory=lambda: {j: j for j in STANDIN})


def _chunked(tmp_path: Path, items: int = 7) -> Chunked:
    from nepotism.experiment import load_experiment
    from nepotism.runner.experiment_run import load_dataset

    exp = load_experiment(standin_experiment(tmp_path, "http://127.0.0.1:9/v1", items=items))
    instances, _ = load_dataset(exp)
    responses = [Response(i.id, g, f"{g} answers {i.id} at length") for i in instances for g in STANDIN]
    return Chunked(exp, instances, responses)


def _judge_chunks(store: Store, c: Chunked, backend: ScriptedBackend, monkeypatch, *, judging=None, memo: bool = True):
    """`Runner.generate_and_judge` as `run_experiment` calls it (nothing to generate): returns the
    judging outcome, the number of chunks planned (`plan_tasks` called) and the chunks' kinds."""
    import nepotism.judging as package_judging
    from nepotism.runner import judge_plan
    from nepotism.runner.plan_memo import ChunkPlan

    planned = []
    real = judge_plan.plan_tasks
    monkeypatch.setattr(judge_plan, "plan_tasks", lambda *a, **k: planned.append(1) or real(*a, **k))
    eps = {j: Endpoint(j, backend, c.kinds[j], served_model=c.served[j], limiter=Limiter(4), retry=FAST) for j in STANDIN}
    runner = Runner(store, eps, judge_window=WINDOW, seed=c.seed, judge_memo=memo, ready_chunk=CHUNK)
    parts: list[ChunkPlan] = []

    def plan(chunk, responses):
        parts.append(ChunkPlan(c.experiment, chunk, responses, judging or package_judging))
        return parts[-1]

    _, out = asyncio.run(
        runner.generate_and_judge(c.instances, [], c.responses, plan, render, interpret_all, keep=False, identify=judgment_ids)
    )
    ids = {i for (i,) in store._conn().execute(f'SELECT id FROM temp."{out.plan}"')}
    store.drop_plan(out.plan)
    monkeypatch.setattr(judge_plan, "plan_tasks", real)
    return out, len(planned), sorted({k for p in parts for k in p.kinds}), ids


def _protocol(index: int, **changes):
    def edit(c: Chunked):
        protocols = list(c.experiment.protocols)
        protocols[index] = dataclasses.replace(protocols[index], **changes)
        c.experiment = dataclasses.replace(c.experiment, protocols=tuple(protocols))

    return edit


def _experiment(**changes):
    def edit(c: Chunked):
        c.experiment = dataclasses.replace(c.experiment, **changes)

    return edit


def _condition(**changes):
    def edit(c: Chunked):
        c.experiment = dataclasses.replace(c.experiment, conditions=(dataclasses.replace(c.experiment.conditions[0], **changes),))

    return edit


def _chunk_instance(**changes):
    def edit(c: Chunked):
        c.instances[4] = dataclasses.replace(c.instances[4], **changes)

    return edit


def _chunk_response(c: Chunked):
    c.responses[3] = dataclasses.replace(c.responses[3], text="another answer")


def _chunk_endpoint(table: str, value):
    def edit(c: Chunked):
        getattr(c, table)["standin-alpha"] = value

    return edit


# (edit, whether it changes a prompt or request, so that new calls are sent)
CHUNK_EDITS = {
    "protocol option": (_protocol(0, options={"mode": "labels", "ways": 3}), True),
    "protocol args": (_protocol(0, args={"pairs": "all"}), False),  # (two generators: the same pairs)
    "protocol replicates": (_protocol(0, replicates=2), True),
    "protocol kind": (_protocol(1, protocol="pointwise"), True),
    "a protocol dropped": (
        lambda c: setattr(c, "experiment", dataclasses.replace(c.experiment, protocols=c.experiment.protocols[:1])),
        False,
    ),
    "condition name": (_condition(name="other"), False),
    "condition options": (_condition(options={"temperature": 0.5}), True),
    "judges": (_experiment(judges=("standin-beta",)), False),
    "experiment seed": (_experiment(seed=7), False),
    "an unrelated field of the experiment": (_experiment(output_format="jsonl"), False),
    "instance prompt": (_chunk_instance(prompt="Another question?"), True),
    "instance reference": (_chunk_instance(reference_answer="a reference"), False),
    "instance category": (_chunk_instance(category="other"), False),
    "instance metadata": (_chunk_instance(metadata={"k": 1}), False),
    "response text": (_chunk_response, True),
    "response metadata": (
        lambda c: c.responses.__setitem__(0, dataclasses.replace(c.responses[0], metadata={"call_key": "k"})),
        False,
    ),
    "runner seed": (lambda c: setattr(c, "seed", 7), False),
    "served model": (_chunk_endpoint("served", "served-elsewhere"), True),
    "backend kind": (_chunk_endpoint("kinds", "gguf"), True),
}


@pytest.mark.parametrize("name", list(CHUNK_EDITS))
def test_a_chunk_is_counted_without_planning_until_any_input_changes(tmp_path, monkeypatch, name):
    c, backend = _chunked(tmp_path), ScriptedBackend()
    chunks = -(-len(c.instances) // CHUNK)
    with Store(tmp_path / "chunks.db") as store:
        first, planned, kinds, ids = _judge_chunks(store, c, backend, monkeypatch)
        n = first.stats.total
        assert planned == chunks and first.stats.sent == n and kinds == ["pairwise", "recognition"]
        assert store._conn().execute("SELECT COUNT(*) FROM judge_memo").fetchone()[0] == chunks
        hit, planned, hit_kinds, hit_ids = _judge_chunks(store, c, backend, monkeypatch)
        assert planned == 0 and hit.memo_hits == hit.stats.total == hit.stats.cached == n  # nothing planned
        assert hit.counts == first.counts and hit_kinds == kinds and hit_ids == ids and len(ids) == n
        edit, sends = CHUNK_EDITS[name]
        edit(c)
        sent = sum(backend.calls.values())
        edited, planned, _, _ = _judge_chunks(store, c, backend, monkeypatch)
        assert planned > 0 and edited.memo_hits < edited.stats.total  # at least one chunk planned
        assert sum(edited.counts.values()) == edited.stats.done == edited.stats.total
        if sends:
            assert edited.stats.sent > 0 and sum(backend.calls.values()) > sent
        again, planned, _, _ = _judge_chunks(store, c, backend, monkeypatch)
        assert planned == 0 and again.memo_hits == again.stats.total == edited.stats.total
        assert again.counts == edited.counts


def test_a_chunk_misses_when_a_user_template_changes_and_only_with_the_package_judging(tmp_path, monkeypatch):
    import nepotism.judging as package_judging

    c, backend = _chunked(tmp_path), ScriptedBackend()
    template = tmp_path / "mine.toml"
    shutil.copy(Path(__file__).resolve().parents[2] / "src/nepotism/judging/templates/pairwise.toml", template)
    _protocol(0, options={"mode": "labels", "ways": 2, "template": str(template)})(c)
    with Store(tmp_path / "chunks.db") as store:
        first, _, _, _ = _judge_chunks(store, c, backend, monkeypatch)
        hit, planned, _, _ = _judge_chunks(store, c, backend, monkeypatch)
        assert planned == 0 and hit.memo_hits == first.stats.total
        template.write_text(
            template.read_text().replace("Decide which answer is better", "Decide, carefully, which answer is better")
        )
        edited, planned, _, _ = _judge_chunks(store, c, backend, monkeypatch)
        assert planned > 0 and edited.memo_hits < edited.stats.total and edited.stats.sent > 0
        # another judging module (a caller's planners): every chunk is planned, none counted
        own = type(package_judging)("own_judging")
        own.__dict__.update({k: v for k, v in vars(package_judging).items() if not k.startswith("__")})
        other, planned, _, _ = _judge_chunks(store, c, backend, monkeypatch, judging=own)
        assert planned == -(-len(c.instances) // CHUNK) and other.memo_hits < other.stats.total
        # and with the memo turned off, nor the code of the package another (`code_digest`)
        off, planned, _, _ = _judge_chunks(store, c, backend, monkeypatch, memo=False)
        assert planned > 0 and off.memo_hits == 0 and off.stats.cached == off.stats.total
        monkeypatch.setattr(plan_memo_module, "code_digest", lambda root=None: "0" * 64)
        code, planned, _, _ = _judge_chunks(store, c, backend, monkeypatch)
        assert planned > 0 and code.memo_hits == 0 and code.stats.cached == code.stats.total


def test_a_chunk_with_a_judgment_or_call_missing_is_planned_and_judged(tmp_path, monkeypatch):
    c, backend = _chunked(tmp_path), ScriptedBackend()
    with Store(tmp_path / "chunks.db") as store:
        first, _, _, ids = _judge_chunks(store, c, backend, monkeypatch)
        conn = store._conn()
        key = conn.execute("SELECT call_key FROM judge_memo_pairs ORDER BY memo, seq LIMIT 1").fetchone()[0]
        conn.execute("DELETE FROM judgments WHERE call_key = ?", (key,))
        conn.execute("DELETE FROM calls WHERE key = ?", (key,))
        sent = sum(backend.calls.values())
        again, planned, _, again_ids = _judge_chunks(store, c, backend, monkeypatch)
        assert planned == 1 and again.stats.sent == 1 and sum(backend.calls.values()) == sent + 1
        assert again.counts == first.counts and again_ids == ids
        third, planned, _, _ = _judge_chunks(store, c, backend, monkeypatch)
        assert planned == 0 and third.memo_hits == third.stats.total


def test_the_order_of_a_chunks_responses_neither_changes_its_plan_nor_misses_the_memo(tmp_path, monkeypatch):
    """A fresh run hands a chunk's responses on in the order generation answered, its rerun in the
    store's order: the planners give the same tasks either way, so the chunk digest takes the
    responses as a set and the fresh run's rows serve the rerun."""
    import random

    import nepotism.judging as judging
    from nepotism.runner.judge_plan import plan_tasks

    c, backend = _chunked(tmp_path), ScriptedBackend()
    _protocol(0, args={"pairs": "all"})(c)
    shuffled = list(c.responses)
    random.Random(3).shuffle(shuffled)
    assert shuffled != c.responses
    assert plan_tasks(c.experiment, c.instances, shuffled, judging) == plan_tasks(c.experiment, c.instances, c.responses, judging)
    with Store(tmp_path / "chunks.db") as store:
        first, planned, _, _ = _judge_chunks(store, c, backend, monkeypatch)
        assert planned == -(-len(c.instances) // CHUNK)
        c.responses = shuffled
        again, planned, _, _ = _judge_chunks(store, c, backend, monkeypatch)
        assert planned == 0 and again.memo_hits == again.stats.total == first.stats.total
