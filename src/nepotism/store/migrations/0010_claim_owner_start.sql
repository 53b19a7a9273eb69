-- Which process holds a claim, beyond its pid: `owner_start` is "<boot id>:<pid namespace>:<start
-- time>" of the owner process (Linux: /proc/sys/kernel/random/boot_id, the inode of
-- /proc/self/ns/pid, and field 22 of /proc/<pid>/stat, in clock ticks since boot), or NULL where
-- that cannot be read (no /proc) and for claims written before this migration. A claim of this
-- host whose pid now lives with another start time (the pid was reused after its owner died), or
-- of an earlier boot, is taken over at once instead of after its lease; one of another pid
-- namespace (another container with this host name) waits out its lease; a NULL keeps the older
-- rule (a live pid's lease holds).
ALTER TABLE call_claims ADD COLUMN owner_start TEXT;
