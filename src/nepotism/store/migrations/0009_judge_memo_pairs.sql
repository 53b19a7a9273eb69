-- The judge-plan memo (`nepotism.store.memo`) with its pairs in an indexed table: a rerun checks a
-- memo row with one join over `judge_memo_pairs` (its primary key), calls and judgments, instead
-- of parsing a JSON array per pair (`json_each`), and the run's plan takes the judgment ids of the
-- rows it counted in one statement at the end of the judge phase. `judge_memo` keeps one row per
-- digest: the number of tasks and of pairs, the tags the planner attached (the exported table
-- kinds of a chunk's tasks, JSON) and a checksum (SHA-256 of digest, tasks, tags and every pair in
-- order) that lets a damaged or moved row read as absent. The old rows are a cache: dropped, the
-- next rerun writes them again. Neither table is copied by `nepotism store merge`.
DROP TABLE IF EXISTS judge_memo;
CREATE TABLE judge_memo (
    id          INTEGER PRIMARY KEY,
    digest      TEXT NOT NULL UNIQUE,
    tasks       INTEGER NOT NULL,
    pairs       INTEGER NOT NULL,
    tags        TEXT NOT NULL,
    checksum    TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
-- (keyed by the row's integer id, not its 64-character digest: smaller rows, faster to write)
CREATE TABLE judge_memo_pairs (
    memo         INTEGER NOT NULL,
    seq          INTEGER NOT NULL,
    call_key     TEXT NOT NULL,
    judgment_id  TEXT NOT NULL,
    PRIMARY KEY (memo, seq)
) WITHOUT ROWID;
