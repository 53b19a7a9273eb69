-- nepotism store, schema version 2: human pairwise annotations (`nepotism annotate`).
--
-- A *collection* is one set of response pairs put in front of human annotators. Each item is one
-- prompt with two responses; `model_a`/`model_b` is the item's canonical order (the order of the
-- pairs file), never the order shown. Model names are stored here but never sent to the page.

-- The pairs of a collection, numbered 1..n in `position` (the order annotators go through them).
-- `item_id` is a content hash of (instance_id, model_a, model_b); `prompt` is JSON (a string or a
-- list of {"role", "content"} messages); `metadata` is JSON (e.g. why a sample drew the item).
CREATE TABLE annotation_items (
    collection   TEXT NOT NULL,
    item_id      TEXT NOT NULL,
    position     INTEGER NOT NULL CHECK (position >= 1),
    instance_id  TEXT NOT NULL,
    model_a      TEXT NOT NULL,
    model_b      TEXT NOT NULL,
    prompt       TEXT NOT NULL,
    text_a       TEXT NOT NULL,
    text_b       TEXT NOT NULL,
    category     TEXT,
    metadata     TEXT NOT NULL DEFAULT '{}',
    created_at   TEXT NOT NULL,
    PRIMARY KEY (collection, item_id),
    UNIQUE (collection, position)
);

-- The random order in which one annotator sees one item, drawn on first view and then fixed:
-- `shown_first` says which canonical response is displayed as "A" ('model_a' or 'model_b').
CREATE TABLE annotation_orders (
    collection   TEXT NOT NULL,
    item_id      TEXT NOT NULL,
    annotator    TEXT NOT NULL,
    shown_first  TEXT NOT NULL CHECK (shown_first IN ('model_a', 'model_b')),
    created_at   TEXT NOT NULL,
    PRIMARY KEY (collection, item_id, annotator),
    FOREIGN KEY (collection, item_id) REFERENCES annotation_items (collection, item_id)
);

-- Every key press that labelled an item, appended and never updated: an annotator's current label
-- of an item is their latest row. `pressed` is the key as shown ('A', 'B', 'tie', 'skip');
-- `winner` is the same choice in canonical terms ('model_a', 'model_b', 'tie', or NULL for a skip);
-- `elapsed_ms` is how long the item had been on screen when the key was pressed (when known).
CREATE TABLE annotation_labels (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    collection   TEXT NOT NULL,
    item_id      TEXT NOT NULL,
    annotator    TEXT NOT NULL,
    pressed      TEXT NOT NULL CHECK (pressed IN ('A', 'B', 'tie', 'skip')),
    winner       TEXT CHECK (winner IN ('model_a', 'model_b', 'tie')),
    shown_first  TEXT NOT NULL CHECK (shown_first IN ('model_a', 'model_b')),
    elapsed_ms   INTEGER,
    created_at   TEXT NOT NULL,
    CHECK ((pressed = 'skip') = (winner IS NULL)),
    FOREIGN KEY (collection, item_id) REFERENCES annotation_items (collection, item_id)
);
CREATE INDEX annotation_labels_who ON annotation_labels (collection, annotator, item_id);
