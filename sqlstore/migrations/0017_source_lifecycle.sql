-- 0017: sources can be renamed and removed, and their audit trail outlives
-- them. source_actions is rebuilt (one way on both dialects: a new table,
-- the rows copied, the old one dropped) so that:
--
-- * action admits 'rename' and 'remove', and keeps every action before it
--   ('retry', 'skip', 'pause', 'resume', and 'set' from 0015);
-- * source_id no longer references sources: the row that audits a removal
--   is written in the transaction that deletes the source, and it and the
--   actions before it stay, found by the source's ID or its name;
-- * source_name records the source's name when the action was taken (a
--   removed source has no row to look its name up in; a renamed one had
--   another name then).
CREATE TABLE source_actions_v17 (
    id                    TEXT PRIMARY KEY,
    source_id             TEXT NOT NULL,
    source_name           TEXT NOT NULL DEFAULT '',
    action                TEXT NOT NULL CHECK (action IN ('retry', 'skip', 'pause', 'resume', 'set', 'rename', 'remove')),
    actor                 TEXT NOT NULL,
    cursor_before         TEXT NOT NULL,
    cursor_after          TEXT NOT NULL,
    cursor_version_before BIGINT NOT NULL,
    cursor_version_after  BIGINT NOT NULL,
    note                  TEXT NOT NULL DEFAULT '',
    at                    BIGINT NOT NULL
);

INSERT INTO source_actions_v17 (id, source_id, source_name, action, actor, cursor_before, cursor_after,
    cursor_version_before, cursor_version_after, note, at)
SELECT a.id, a.source_id, COALESCE(s.name, ''), a.action, a.actor, a.cursor_before, a.cursor_after,
    a.cursor_version_before, a.cursor_version_after, a.note, a.at
FROM source_actions a LEFT JOIN sources s ON s.id = a.source_id;

DROP TABLE source_actions;
ALTER TABLE source_actions_v17 RENAME TO source_actions;

CREATE INDEX source_actions_source ON source_actions (source_id, at);
CREATE INDEX source_actions_removals ON source_actions (at) WHERE action = 'remove';
