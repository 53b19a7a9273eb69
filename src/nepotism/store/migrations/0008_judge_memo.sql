-- The judge-plan memo (`nepotism.store.memo`): for one window of a run's judge tasks, a digest of
-- everything that renders and keys them (`nepotism.runner.plan_memo`) -> the call key and
-- judgment id of each of its judgments, in task order, as JSON [[key, id], ...]. A cache of a pure
-- function: a row names what a window needs, not that it is stored (a rerun checks that in SQL),
-- and `checksum` (SHA-256 of digest, task count and rows) lets a damaged row read as absent.
-- Not copied by `nepotism store merge` (the merged store's first rerun writes it again).
CREATE TABLE IF NOT EXISTS judge_memo (
    digest      TEXT PRIMARY KEY,
    tasks       INTEGER NOT NULL,
    rows        TEXT NOT NULL,
    checksum    TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
