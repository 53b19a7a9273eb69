"""The judge-plan memo: per unit of judge tasks, digest -> the call keys and judgment ids it needs.

A cached rerun spends most of its time finding again, task by task, cache keys and judgment ids
that are a pure function of inputs it can digest in bulk (`nepotism.runner.plan_memo` makes the
digest of a unit — a chunk of instances as the experiment plans them, or a window of tasks — and
argues why it covers every input). This module stores that function's values in the tables
``judge_memo`` (one row per digest) and ``judge_memo_pairs`` (one row per pair, keyed by the memo
row's id and position; migration 0009) and answers, in SQL, whether what a value names is stored:

* `write_memo` records ``digest -> [(call key, judgment id), ...]`` (task by task) with the
  unit's task count, the tags its planner attached (`nepotism.runner.plan_memo.ChunkPlan`: the
  exported table kinds) and a checksum (`memo_checksum`: SHA-256 of the digest, the task count,
  the tags and every pair in order), replacing a row of the same digest (the value is a function
  of the digest, so a replaced row was equal or damaged);
* `count_memo` reads a digest's row and checks, in one statement over its pairs, that every pair
  is a stored call and a judgment stored under that id as read from that call, parsed or
  unparsed (what the runner's stored-judgment counts require of each task,
  `nepotism.store.fastread.judged`), and that the checksum of the pairs as read matches; if so it
  returns the unit's task count, its judgments by status and its tags, else None (no row, another
  task count, a damaged or moved row, one pair not stored: the caller takes the normal path);
* `plan_memo_ids` adds the judgment ids of counted rows to the run's plan (`Store.open_plan`) in
  one statement, so the exports hold them.

A memo row never makes anything count as stored: only the ``calls`` and ``judgments`` rows do. What
a row could do wrong is name the wrong pairs for a digest; the checksum catches damage, not a row
written on purpose with a valid checksum (whoever can write the store can write judgments too).
`nepotism store merge` does not copy the tables (a cache; the merged store's first rerun writes
them). Everything here is plain SQL on the caller's connection; nothing is sent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from nepotism.store import _codec
from nepotism.store.database import Store, _plan_name

__all__ = ["MemoCount", "count_memo", "memo_checksum", "plan_memo_ids", "write_memo"]

# every pair of the row: its call stored, and a parsed or unparsed judgment of that id read from
# it; counted by status without a GROUP BY, checked to add up; the pairs themselves come back as
# one string (in key order, the outer loop of the join) for the checksum
_COUNT = (
    "SELECT COUNT(*), COUNT(j.id), SUM(c.key IS NULL), SUM(j.status = 'parsed'), "
    "SUM(j.status = 'unparsed'), group_concat(m.call_key || ' ' || m.judgment_id, ' ') "
    "FROM judge_memo_pairs AS m "
    "LEFT JOIN judgments AS j ON j.id = m.judgment_id AND j.call_key = m.call_key AND j.status != 'failed' "
    "LEFT JOIN calls AS c ON c.key = m.call_key WHERE m.memo = ?"
)
_MMAP_BYTES = 1 << 30

#: What `count_memo` found: the unit's tasks, its judgments by status, its tags.
MemoCount = tuple[int, dict[str, int], list[str]]


def memo_checksum(digest: str, tasks: int, tags: str, pairs: str) -> str:
    """SHA-256 (hex) of a memo row: digest, task count, tags (JSON) and its pairs as one string
    (``key id`` per pair, joined by spaces, in order)."""
    h = hashlib.sha256(digest.encode())
    h.update(f"\x00{tasks}\x00{tags}\x00".encode())
    h.update(pairs.encode())
    return h.hexdigest()


def write_memo(store: Store, digest: str, tasks: int, pairs: Sequence[tuple[str, str]], tags: Sequence[str] = ()) -> None:
    """Record that the ``tasks`` tasks digested as ``digest`` need the (call key, judgment id)
    ``pairs``, in task order, with ``tags`` (replacing a row of that digest). One transaction."""
    if store.readonly:  # (a run served from a read-only store plans the window, as without a memo)
        return
    store._derived(lambda: _write_memo(store, digest, tasks, pairs, tags))


def _write_memo(store: Store, digest: str, tasks: int, pairs: Sequence[tuple[str, str]], tags: Sequence[str]) -> int:
    tag_text = json.dumps(sorted(tags))
    check = memo_checksum(digest, tasks, tag_text, " ".join([f"{k} {i}" for k, i in pairs]))
    with store._transaction() as conn:
        old = conn.execute("SELECT id FROM judge_memo WHERE digest = ?", (digest,)).fetchone()
        if old is not None:
            conn.execute("DELETE FROM judge_memo_pairs WHERE memo = ?", old)
            conn.execute("DELETE FROM judge_memo WHERE id = ?", old)
        memo = conn.execute(
            "INSERT INTO judge_memo (digest, tasks, pairs, tags, checksum, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (digest, tasks, len(pairs), tag_text, check, _codec.now()),
        ).lastrowid
        conn.execute("DELETE FROM judge_memo_pairs WHERE memo = ?", (memo,))  # (pairs left by a deleted row)
        conn.executemany(
            "INSERT INTO judge_memo_pairs (memo, seq, call_key, judgment_id) VALUES (?, ?, ?, ?)",
            [(memo, n, key, ident) for n, (key, ident) in enumerate(pairs)],
        )
    return len(pairs)


def count_memo(store: Store, digest: str, tasks: int | None = None) -> MemoCount | None:
    """When ``digest`` has an intact row (over ``tasks`` tasks, when given) whose every (call key,
    judgment id) is stored, the call and a parsed or unparsed judgment of that id read from that
    call: (its task count, those judgments by status, its tags); else None."""
    conn = store._conn()
    if conn.execute("PRAGMA mmap_size").fetchone()[0] == 0:
        conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")  # (as `nepotism.store.fastread` reads)
    head = conn.execute("SELECT id, tasks, pairs, tags, checksum FROM judge_memo WHERE digest = ?", (digest,)).fetchone()
    if head is None or (tasks is not None and head[1] != tasks) or not head[2]:
        return None
    memo, n_tasks, n_pairs, tags, checksum = head
    pairs, found, missing_calls, parsed, unparsed, text = conn.execute(_COUNT, (memo,)).fetchone()
    if pairs != n_pairs or found != pairs or missing_calls or parsed + unparsed != pairs:
        return None
    if not isinstance(tags, str) or checksum != memo_checksum(digest, n_tasks, tags, text or ""):
        return None
    try:
        kinds = json.loads(tags)
    except ValueError:
        return None
    counts = {status: n for status, n in (("parsed", parsed), ("unparsed", unparsed)) if n}
    return n_tasks, counts, kinds


def plan_memo_ids(store: Store, plan: str, digests: Sequence[str]) -> None:
    """Add the judgment ids of the memo rows ``digests`` (counted by `count_memo`) to ``plan``."""
    if not digests:
        return
    conn = store._conn()
    conn.execute("BEGIN")
    try:
        conn.execute(
            f'INSERT OR IGNORE INTO temp."{_plan_name(plan)}" (id) '
            "SELECT judgment_id FROM judge_memo_pairs WHERE memo IN "
            "(SELECT id FROM judge_memo WHERE digest IN (SELECT value FROM json_each(?))) "
            "ORDER BY judgment_id",
            (json.dumps(list(digests)),),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
