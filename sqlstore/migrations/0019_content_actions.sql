-- The audit of operators' actions on documents and field migrations: who
-- wrote, deleted or imported documents, who started, resumed or aborted a
-- migration. A delete keeps the document's last version and fields here,
-- so what was deleted is on record. Times are Unix milliseconds.

CREATE TABLE content_actions (
    id          TEXT PRIMARY KEY,
    action      TEXT NOT NULL,
    collection  TEXT NOT NULL,
    document_id TEXT NOT NULL DEFAULT '',
    run_id      TEXT NOT NULL DEFAULT '',
    version     BIGINT NOT NULL DEFAULT 0,
    fields      TEXT,
    actor       TEXT NOT NULL,
    forced      INTEGER NOT NULL DEFAULT 0,
    note        TEXT NOT NULL DEFAULT '',
    at          BIGINT NOT NULL
);

CREATE INDEX content_actions_document ON content_actions (collection, document_id, at);
CREATE INDEX content_actions_run ON content_actions (run_id, at);
