-- 0037: a lane's run of delivery steps that failed in a row, and the
-- daemons that announce themselves under their holder.
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

-- daemon_presence: each running daemon (tidemark run) announces itself
-- under its holder every half minute: a random instance ID of its own, its
-- host and process, when it started and when it was last seen (Unix
-- milliseconds, UTC). Two live processes must never share a holder (each
-- would re-enter the other's claims as its own), so a daemon that finds
-- another instance recently seen under its holder says so. A daemon that
-- stops removes its row; rows of daemons that died are removed once stale.
CREATE TABLE daemon_presence (
    holder     TEXT NOT NULL,
    instance   TEXT NOT NULL,
    host       TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    started_at BIGINT NOT NULL,
    seen_at    BIGINT NOT NULL,
    PRIMARY KEY (holder, instance)
);
