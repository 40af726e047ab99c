-- A source's settings are audited, and a worker that could not serve a
-- source leaves it alone for a while.
--
-- source_actions admits 'set': `tidemark source set` (allow_private, and
-- settings like it) records who set what, the change in its note; the
-- cursor is unchanged (cursor_before = cursor_after). SQLite cannot change
-- a CHECK in place, so the table is rebuilt, portably: a new table, a copy,
-- the old one dropped, a rename (nothing references source_actions).
CREATE TABLE source_actions_v15 (
    id                    TEXT PRIMARY KEY,
    source_id             TEXT NOT NULL REFERENCES sources (id),
    action                TEXT NOT NULL CHECK (action IN ('retry', 'skip', 'pause', 'resume', 'set')),
    actor                 TEXT NOT NULL,
    cursor_before         TEXT NOT NULL,
    cursor_after          TEXT NOT NULL,
    cursor_version_before BIGINT NOT NULL,
    cursor_version_after  BIGINT NOT NULL,
    note                  TEXT NOT NULL DEFAULT '',
    at                    BIGINT NOT NULL
);

INSERT INTO source_actions_v15 (id, source_id, action, actor, cursor_before, cursor_after,
    cursor_version_before, cursor_version_after, note, at)
SELECT id, source_id, action, actor, cursor_before, cursor_after,
    cursor_version_before, cursor_version_after, note, at
FROM source_actions;

DROP TABLE source_actions;

ALTER TABLE source_actions_v15 RENAME TO source_actions;

-- source_unserved.until_at is when a worker's record that it could not
-- serve a source stops keeping that worker from claiming it (Unix
-- milliseconds). Until then the worker passes the source over and other
-- workers take it; a run the worker does serve deletes the record, and so
-- does a change of the source's settings. Records made before this
-- migration have expired (0).
ALTER TABLE source_unserved ADD COLUMN until_at BIGINT NOT NULL DEFAULT 0;

CREATE INDEX source_unserved_holder ON source_unserved (holder, until_at);
