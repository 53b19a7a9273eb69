-- nepotism store, schema version 1.
--
-- One SQLite file holds everything a run produces: the runs themselves, the instances and
-- responses that were judged, every model call (a content-addressed cache), the judgments read
-- from those calls, ground-truth references and a log of imported files. JSON columns hold
-- canonical JSON text (UTF-8, compact). Times are ISO 8601 UTC strings. No secret (API key,
-- authorization header, token, password) is ever written here: the store strips them first.

-- One experiment execution. `config` is the experiment configuration as JSON; `status` moves
-- from 'running' to 'done', 'failed' or 'interrupted'.
CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    started_at  TEXT NOT NULL,
    ended_at    TEXT,
    config      TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'done', 'failed', 'interrupted'))
);

-- Prompts and what is known about a good answer. `prompt` is JSON: a string, or a list of
-- {"role", "content"} messages. `rubric` is a JSON list of rubric items.
CREATE TABLE instances (
    id                TEXT PRIMARY KEY,
    prompt            TEXT NOT NULL,
    reference_answer  TEXT,
    rubric            TEXT NOT NULL DEFAULT '[]',
    category          TEXT,
    metadata          TEXT NOT NULL DEFAULT '{}',
    created_at        TEXT NOT NULL
);

-- Generators' answers. `id` is records.Response.id (a content hash). `instance_id` is not a
-- foreign key: responses are often imported without their instances.
CREATE TABLE responses (
    id           TEXT PRIMARY KEY,
    instance_id  TEXT NOT NULL,
    generator    TEXT NOT NULL,
    text         TEXT NOT NULL,
    metadata     TEXT NOT NULL DEFAULT '{}',
    created_at   TEXT NOT NULL
);
CREATE INDEX responses_instance ON responses (instance_id);
CREATE INDEX responses_generator ON responses (generator);

-- Every model call, keyed by the SHA-256 of the canonical JSON of {backend, model, parameters,
-- messages or prompt, replicate}. `request` is the request as sent minus secrets; `response` the
-- decoded response body; `text` the completion text; `logprobs` and `usage` JSON; `status` is
-- 'ok' or 'failed' with the reason in `error`. An ok row is never overwritten; a failed row may
-- be replaced by a later attempt.
CREATE TABLE calls (
    key         TEXT PRIMARY KEY,
    backend     TEXT,
    model       TEXT,
    request     TEXT NOT NULL,
    response    TEXT,
    text        TEXT,
    logprobs    TEXT,
    usage       TEXT,
    latency_s   REAL,
    status      TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    error       TEXT,
    created_at  TEXT NOT NULL,
    run_id      TEXT REFERENCES runs (id)
);
CREATE INDEX calls_run ON calls (run_id);

-- What was read from judge calls (all fields of records.Judgment). `id` is Judgment.id.
-- `candidates`, `label_probs` and `usage` are JSON. `call_key` points at the call the judgment
-- was read from; it is NULL for judgments imported from recorded tables. `source` names where a
-- row came from (a run, an imported file, ...).
CREATE TABLE judgments (
    id           TEXT PRIMARY KEY,
    instance_id  TEXT NOT NULL,
    judge        TEXT NOT NULL,
    protocol     TEXT NOT NULL,
    candidates   TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('parsed', 'unparsed', 'failed')),
    verdict      TEXT,
    score        REAL,
    raw_output   TEXT,
    label_probs  TEXT,
    rubric_id    TEXT,
    template_id  TEXT,
    condition    TEXT NOT NULL,
    replicate    INTEGER NOT NULL,
    usage        TEXT,
    latency_s    REAL,
    call_key     TEXT REFERENCES calls (key),
    source       TEXT,
    run_id       TEXT REFERENCES runs (id),
    created_at   TEXT NOT NULL
);
CREATE INDEX judgments_judge ON judgments (judge, protocol);
CREATE INDEX judgments_instance ON judgments (instance_id);

-- Ground truth (records.Reference). `id` is Reference.id; `models` is JSON; `correct` and `met`
-- are 0/1 or NULL.
CREATE TABLE "references" (
    id           TEXT PRIMARY KEY,
    instance_id  TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('preference', 'correctness', 'rubric')),
    models       TEXT NOT NULL,
    winner       TEXT,
    correct      INTEGER,
    score        REAL,
    rubric_id    TEXT,
    met          INTEGER,
    source       TEXT,
    created_at   TEXT NOT NULL
);
CREATE INDEX references_instance ON "references" (instance_id);

-- Files loaded into the store: which file, its SHA-256, what kind of table, how many rows, when.
CREATE TABLE imports (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    path         TEXT NOT NULL,
    sha256       TEXT NOT NULL,
    kind         TEXT NOT NULL,
    rows         INTEGER NOT NULL,
    imported_at  TEXT NOT NULL
);
