"""The judge-plan memo: per window of judge tasks, digest -> the call keys and judgment ids it needs.

A cached rerun spends most of its time finding again, task by task, cache keys and judgment ids
that are a pure function of inputs it can digest in bulk (`nepotism.runner.plan_memo` makes the
digest and argues why it covers every input). This module stores that function's values in the
``judge_memo`` table (migration 0008) and answers, in SQL, whether what a value names is stored:

* `write_memo` records ``digest -> [(call key, judgment id), ...]`` (task by task, as JSON) with
  a checksum (SHA-256 of the digest, the number of tasks and the JSON) and replaces a row of the
  same digest (the value is a function of the digest, so a replaced row was equal or damaged);
* `read_memo` returns the JSON of a digest's row, or None when there is none, its task count is
  not the caller's, or its checksum does not match (a damaged row reads as absent);
* `count_memo` checks, in one statement, that every pair is a stored call and a judgment stored
  under that id as read from that call, parsed or unparsed (what the runner's stored-judgment
  counts require of each task, `nepotism.store.fastread.judged`); if so it adds the judgment ids
  to the run's plan (`Store.open_plan`) and returns the number of judgments by status, else None
  and changes nothing (the caller then takes the normal path for that window).

A memo row never makes anything count as stored: only the ``calls`` and ``judgments`` rows do. What
a row could do wrong is name the wrong pairs for a digest; the checksum catches damage, not a row
written on purpose with a valid checksum (whoever can write the store can write judgments too).
`nepotism store merge` does not copy the table (a cache; the merged store's first rerun writes
it). Everything here is plain SQL on the caller's connection; nothing is sent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from nepotism.store import _codec
from nepotism.store.database import Store, _plan_name

__all__ = ["count_memo", "memo_checksum", "read_memo", "write_memo"]

# every pair of the memo: its call stored, and a parsed or unparsed judgment of that id read from
# it; counted by status without a GROUP BY (a temporary B-tree per window), checked to add up
_COUNT = ("SELECT COUNT(*), COUNT(j.id), SUM(c.key IS NULL), SUM(j.status = 'parsed'), "
          "SUM(j.status = 'unparsed') FROM json_each(?1) AS m "
          "LEFT JOIN judgments AS j ON j.id = (m.value ->> 1) AND j.call_key = (m.value ->> 0) "
          "AND j.status != 'failed' "
          "LEFT JOIN calls AS c ON c.key = (m.value ->> 0)")


def memo_checksum(digest: str, tasks: int, rows: str) -> str:
    """SHA-256 (hex) of a memo row's digest, task count and rows JSON."""
    h = hashlib.sha256(digest.encode())
    h.update(f"\x00{tasks}\x00".encode())
    h.update(rows.encode())
    return h.hexdigest()


def write_memo(store: Store, digest: str, tasks: int, pairs: Sequence[tuple[str, str]]) -> None:
    """Record that the ``tasks`` tasks digested as ``digest`` need the (call key, judgment id)
    ``pairs``, in task order (replacing a row of that digest). One transaction."""
    rows = json.dumps(pairs, separators=(",", ":"))
    check = memo_checksum(digest, tasks, rows)
    with store._transaction() as conn:
        conn.execute("INSERT INTO judge_memo (digest, tasks, rows, checksum, created_at) VALUES (?, ?, ?, ?, ?) "
                     "ON CONFLICT (digest) DO UPDATE SET tasks = excluded.tasks, rows = excluded.rows, "
                     "checksum = excluded.checksum, created_at = excluded.created_at",
                     (digest, tasks, rows, check, _codec.now()))


def read_memo(store: Store, digest: str, tasks: int) -> str | None:
    """The rows JSON recorded for ``digest`` over ``tasks`` tasks, or None (no row, another task
    count, or a checksum that does not match)."""
    row = store._conn().execute("SELECT tasks, rows, checksum FROM judge_memo WHERE digest = ?",
                                (digest,)).fetchone()
    if row is None or row[0] != tasks or not isinstance(row[1], str):
        return None
    if row[2] != memo_checksum(digest, tasks, row[1]):
        return None
    return row[1]


def count_memo(store: Store, rows: str, plan: str | None) -> dict[str, int] | None:
    """When every (call key, judgment id) of ``rows`` (`read_memo`) is stored, the call and a
    parsed or unparsed judgment of that id read from that call, the number of those judgments
    by status (one per pair), after adding their ids to ``plan``; else None, nothing added."""
    conn = store._conn()
    pairs, found, missing_calls, parsed, unparsed = conn.execute(_COUNT, (rows,)).fetchone()
    if not pairs or found != pairs or missing_calls or parsed + unparsed != pairs:
        return None
    counts = {status: n for status, n in (("parsed", parsed), ("unparsed", unparsed)) if n}
    if plan is not None:
        conn.execute("BEGIN")
        try:
            conn.execute(f'INSERT OR IGNORE INTO temp."{_plan_name(plan)}" (id) '
                         "SELECT m.value ->> 1 FROM json_each(?) AS m", (rows,))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return counts
