-- Which process is running a run, beyond its pid: `owner_start` is the owner process's start, in
-- the format of `call_claims.owner_start` (migration 0010): "<boot id>:<pid namespace>:<start
-- time>", or NULL where /proc cannot tell and for runs recorded before this migration. A running
-- run of this host whose pid now lives with another start time (the pid was reused after its
-- process was killed), or of an earlier boot, is ended as abandoned by the next run instead of
-- staying 'running' while that pid lives; a NULL keeps the older rule (a live pid's run is left
-- alone), and a start of another pid namespace is never judged here.
ALTER TABLE runs ADD COLUMN owner_start TEXT;
