-- 0036: a settled run's note: what its fetch noticed but did not refuse
-- (a git remote's HEAD that moved, so the branch a source follows
-- changed). '' when there was nothing to say.
ALTER TABLE ingest_runs ADD COLUMN note TEXT NOT NULL DEFAULT '';
