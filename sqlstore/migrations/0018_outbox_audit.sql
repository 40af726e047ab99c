-- A lane's revision: a fresh id at every add and every change of its
-- configuration, so that a running delivery loop rebuilds the provider of a
-- lane that changed, or was removed and added again. And the audit of
-- operators' changes to the outbox's configuration: lanes
-- added, changed and removed, channels added and removed, reconciliations
-- asked for. A row outlives its lane (no foreign key), so a removal stays
-- on record with what it removed. Times are Unix milliseconds.

CREATE TABLE outbox_lane_actions (
    id     TEXT PRIMARY KEY,
    lane   TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('lane add', 'lane set', 'lane remove', 'channel add', 'channel remove', 'reconcile')),
    actor  TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    at     BIGINT NOT NULL
);

CREATE INDEX outbox_lane_actions_lane ON outbox_lane_actions (lane, at);

ALTER TABLE outbox_lanes ADD COLUMN revision TEXT NOT NULL DEFAULT '';
