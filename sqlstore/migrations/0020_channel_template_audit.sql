-- A channel's template set or reset is audited with the outbox's other
-- configuration changes: the audit's action may now be 'channel template'.
-- The table is rebuilt (SQLite cannot change a CHECK in place); every row
-- is kept.

CREATE TABLE outbox_lane_actions_0020 (
    id     TEXT PRIMARY KEY,
    lane   TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('lane add', 'lane set', 'lane remove', 'channel add', 'channel remove', 'channel template', 'reconcile')),
    actor  TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    at     BIGINT NOT NULL
);

INSERT INTO outbox_lane_actions_0020 (id, lane, action, actor, detail, at)
    SELECT id, lane, action, actor, detail, at FROM outbox_lane_actions;

DROP TABLE outbox_lane_actions;

ALTER TABLE outbox_lane_actions_0020 RENAME TO outbox_lane_actions;

CREATE INDEX outbox_lane_actions_lane ON outbox_lane_actions (lane, at);
