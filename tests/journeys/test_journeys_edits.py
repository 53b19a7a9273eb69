"""Reruns on the same store after the user edited the inputs, through the installed ``nepotism``:
the rerun must end where a fresh run of the edited inputs ends (the same exports), sending only the
calls the edit made new."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.journeys.test_journeys import nep


def _run(exp: Path) -> dict:
    return json.loads(nep("run", exp.name, "--no-progress", "--json", cwd=exp.parent).stdout)


def _exports(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.csv"))}


def _fresh(tmp_path: Path, exp: Path) -> dict[str, bytes]:
    """The exports of the edited experiment run from scratch, in a copy of its folder without the store."""
    fresh = tmp_path / "fresh"
    shutil.copytree(exp.parent, fresh, ignore=shutil.ignore_patterns("out", "*.db"))
    _run(fresh / exp.name)
    return _exports(fresh / "out")


def test_a_rerun_after_editing_an_items_prompt_answers_the_new_prompt(tmp_path, standin):
    """The stored answers to the old prompt are not the edited item's answers: both generators are
    asked again, and the judges see the new answers (before, the old answers were judged under the
    new prompt: 0 generation calls, exports unlike a fresh run's)."""
    from nepotism.testing.experiments import standin_experiment

    exp = standin_experiment(tmp_path / "work", standin, items=3, recognition=False)
    first = _run(exp)
    assert first["generation"]["sent"] == 6
    items = exp.parent / "items.jsonl"
    rows = [json.loads(line) for line in items.read_text().splitlines()]
    rows[1]["prompt"] = "Question 2, edited: name an even prime."
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    plan = json.loads(nep("run", exp.name, "--dry-run", "--json", cwd=exp.parent).stdout)
    assert plan["generation_calls"] == 2  # priced as it is sent
    edited = _run(exp)
    assert (edited["generation"]["total"], edited["generation"]["sent"]) == (2, 2)
    assert _exports(exp.parent / "out") == _fresh(tmp_path, exp)
    again = _run(exp)
    assert again["generation"]["total"] == 0 and again["judging"]["sent"] == 0


def test_a_rerun_after_editing_a_generation_option_answers_again(tmp_path, standin):
    """``generation.max_tokens`` is part of every generation request: a rerun after editing it makes
    the responses of the new requests, as a fresh store would, rather than reusing the old ones."""
    from nepotism.testing.experiments import standin_experiment

    exp = standin_experiment(tmp_path / "work", standin, items=2, recognition=False)
    _run(exp)
    exp.write_text(exp.read_text().replace("max_tokens = 32", "max_tokens = 48"))
    edited = _run(exp)
    assert (edited["generation"]["total"], edited["generation"]["sent"]) == (4, 4)
    assert _exports(exp.parent / "out") == _fresh(tmp_path, exp)


def test_a_rerun_after_editing_an_items_prompt_and_category_stores_the_edited_item(tmp_path, standin):
    """The store holds the item as the latest run read it: the rerun's exports carry the edited
    category (as a fresh run's do), and an experiment reading its dataset from the store
    (``dataset.from_store``) gets the edited prompt, so it judges the same answers. Before, the
    store kept the item's first prompt and category: the rerun exported the old category and the
    store's dataset was the old one."""
    from nepotism.testing.experiments import standin_experiment

    exp = standin_experiment(tmp_path / "work", standin, items=3, recognition=False)
    items = exp.parent / "items.jsonl"
    rows = [json.loads(line) | {"category": "arithmetic"} for line in items.read_text().splitlines()]
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _run(exp)
    rows[1] |= {"prompt": "Question 2, edited: name an even prime.", "category": "primes"}
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _run(exp)
    exported = _exports(exp.parent / "out")
    assert exported == _fresh(tmp_path, exp)
    assert ",primes" in exported["pairwise.csv"].decode()
    from_store = exp.with_name("from_store.toml")
    from_store.write_text(
        exp.read_text().replace('path = "items.jsonl"', "from_store = true").replace('dir = "out"', 'dir = "out-store"')
    )
    again = _run(from_store)
    assert again["generation"]["sent"] == again["judging"]["sent"] == 0  # every answer is the rerun's
    assert _exports(exp.parent / "out-store") == exported


def test_two_experiments_sharing_a_store_cannot_make_one_id_two_items(tmp_path, standin):
    """Experiments A and B share a store and their datasets give id q2 two different items: B's
    run stops before any call (exit 2, naming its dataset file, the item's line and field ``id``)
    and writes nothing, and A's rerun exports A's items. Before, B's items replaced A's in the
    store (an id is one item there: its judgments, exports and every metric's resampling are
    keyed by it), so B's run mixed two prompts under one id and A's exports could show B's
    categories."""
    import sqlite3

    from nepotism.testing.experiments import standin_experiment

    store = tmp_path / "shared.db"
    a = standin_experiment(tmp_path / "a", standin, items=3, recognition=False, name="a")
    b = standin_experiment(tmp_path / "b", standin, items=3, recognition=False, name="b")
    for exp in (a, b):  # the same items but B's second
        items = exp.parent / "items.jsonl"
        rows = [json.loads(line) | {"category": "arithmetic"} for line in items.read_text().splitlines()]
        if exp is b:
            rows[1] |= {"prompt": "Question 2 of B: name an even prime.", "category": "primes"}
        items.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def run(exp: Path, expect: int = 0):
        return nep("run", exp.name, "--store", str(store), "--no-progress", cwd=exp.parent, expect=expect)

    def counts() -> tuple:
        with sqlite3.connect(store) as conn:
            return tuple(
                conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                for t in ("runs", "instances", "responses", "calls", "judgments")
            )

    run(a)
    exported, before = _exports(a.parent / "out"), counts()
    refused = run(b, expect=2)
    assert f"{b.parent / 'items.jsonl'}, line 2, field 'id'" in refused.stderr, refused.stderr
    assert "instance 'q2' is in the store already, read from another dataset" in refused.stderr
    assert counts() == before and not (b.parent / "out").exists()
    run(a)
    assert _exports(a.parent / "out") == exported
    assert ",arithmetic" in exported["pairwise.csv"].decode() and ",primes" not in exported["pairwise.csv"].decode()
