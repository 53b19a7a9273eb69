-- Which process holds a claim, beyond its pid: `owner_start` is "<boot id>:<start time>" of the
-- owner process (Linux: /proc/sys/kernel/random/boot_id and field 22 of /proc/<pid>/stat, in
-- clock ticks since boot), or NULL where that cannot be read (no /proc) and for claims written
-- before this migration. A claim of this host whose pid now lives with another start time (the
-- pid was reused after its owner died, or the host rebooted) is taken over at once instead of
-- after its lease; a NULL keeps the older rule (a live pid's lease holds).
ALTER TABLE call_claims ADD COLUMN owner_start TEXT;
