-- Categories of instances known only from a loaded table (`nepotism store load`). The store has
-- no prompt for such an instance, so it cannot be a row of `instances` (a run would read an empty
-- prompt); export uses the instance's own category first, then this one.
CREATE TABLE IF NOT EXISTS instance_categories (
    instance_id  TEXT PRIMARY KEY,
    category     TEXT NOT NULL,
    source       TEXT,
    created_at   TEXT NOT NULL
);
