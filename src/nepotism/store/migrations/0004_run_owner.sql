-- Which process on which host is running a run, so that a later run can end a run whose process
-- died without ending it (killed with SIGKILL, a lost machine): it becomes 'interrupted' with
-- `end_note` saying so, instead of staying 'running' for ever.
ALTER TABLE runs ADD COLUMN pid INTEGER;
ALTER TABLE runs ADD COLUMN host TEXT;
ALTER TABLE runs ADD COLUMN end_note TEXT;
