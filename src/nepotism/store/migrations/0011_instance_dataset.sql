-- Which dataset file an instance was read from (`dataset`: its resolved path), or NULL for an
-- instance stored before this migration or added without one (a loaded table, a store dataset).
-- An id is one item in a store: its judgments, responses and exports are keyed by it, and every
-- metric resamples by it. `Store.add_instances` updates a row whose own dataset file was edited
-- (or that has no file recorded), and refuses one that another dataset gives other content.
ALTER TABLE instances ADD COLUMN dataset TEXT;
