-- Claims on model calls being sent. A process claims a call here before sending it, so two
-- processes running the same experiment on one store never send (and pay for) one call twice.
-- A claim is a lease: `expires_at` (Unix seconds) is renewed by its owner while it runs; an
-- expired claim, or one whose owner process no longer exists on this host, can be taken over.
-- The claim is deleted once the call is stored.
CREATE TABLE IF NOT EXISTS call_claims (
    key        TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    host       TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS call_claims_owner ON call_claims (owner);
