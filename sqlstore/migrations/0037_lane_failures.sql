-- 0037: a lane's run of delivery steps that failed in a row.
--
-- A delivery step that fails (its receiver cannot be reached, a read
-- before a write refuses a connection) is retried by the daemon with a
-- growing pause; until one goes through, the lane shows failing with these
-- (outbox.LaneFailure), in every process that reads the lane.
--
-- failing_since, failed_at: when the first and the latest of the run
-- failed (Unix milliseconds, UTC); NULL when the latest step went through.
-- failures: how many in a row. last_failure: the latest one's error.
ALTER TABLE outbox_lanes ADD COLUMN failing_since BIGINT;
ALTER TABLE outbox_lanes ADD COLUMN failed_at BIGINT;
ALTER TABLE outbox_lanes ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox_lanes ADD COLUMN last_failure TEXT NOT NULL DEFAULT '';
