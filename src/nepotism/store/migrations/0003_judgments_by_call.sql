-- Judgments looked up by the call they were read from: the runner's resume check groups
-- judgments by call_key on every run.
CREATE INDEX IF NOT EXISTS judgments_call_key ON judgments (call_key);
