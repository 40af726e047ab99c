-- Documents: collections with typed fields, documents with a version
-- number and a snapshot per write, and field migrations with their resume
-- cursor and claim. Times are Unix milliseconds (UTC).

CREATE TABLE collections (
    name       TEXT PRIMARY KEY,
    built_in   INTEGER NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL
);

CREATE TABLE collection_fields (
    collection TEXT NOT NULL REFERENCES collections (name),
    name       TEXT NOT NULL,
    type       TEXT NOT NULL CHECK (type IN ('text', 'number', 'boolean', 'richtext', 'datetime')),
    position   INTEGER NOT NULL,
    PRIMARY KEY (collection, name)
);

-- The live row. fields is a JSON object of field values.
CREATE TABLE documents (
    collection TEXT NOT NULL REFERENCES collections (name),
    id         TEXT NOT NULL,
    version    BIGINT NOT NULL CHECK (version >= 1),
    fields     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (collection, id)
);

-- One snapshot per write, numbered like the live row.
CREATE TABLE document_versions (
    collection  TEXT NOT NULL,
    document_id TEXT NOT NULL,
    version     BIGINT NOT NULL,
    fields      TEXT NOT NULL,
    reason      TEXT NOT NULL CHECK (reason IN ('create', 'put', 'migrate', 'restore')),
    run_id      TEXT,
    at          BIGINT NOT NULL,
    PRIMARY KEY (collection, document_id, version),
    CHECK ((reason IN ('migrate', 'restore')) = (run_id IS NOT NULL))
);

-- A migration converts a document at most once and an abort restores it at
-- most once, whatever the code above does.
CREATE UNIQUE INDEX document_versions_one_per_run ON document_versions (run_id, document_id, reason) WHERE run_id IS NOT NULL;

CREATE TABLE field_migrations (
    id                 TEXT PRIMARY KEY,
    collection         TEXT NOT NULL REFERENCES collections (name),
    field              TEXT NOT NULL,
    from_type          TEXT NOT NULL,
    to_type            TEXT NOT NULL,
    status             TEXT NOT NULL CHECK (status IN ('running', 'failed', 'done', 'aborting', 'aborted')),
    batch_size         INTEGER NOT NULL CHECK (batch_size >= 1),
    cursor             TEXT NOT NULL DEFAULT '',
    undo_cursor        TEXT NOT NULL DEFAULT '',
    total              BIGINT NOT NULL DEFAULT 0,
    walked             BIGINT NOT NULL DEFAULT 0,
    converted          BIGINT NOT NULL DEFAULT 0,
    restored           BIGINT NOT NULL DEFAULT 0,
    batches            BIGINT NOT NULL DEFAULT 0,
    error              TEXT NOT NULL DEFAULT '',
    failed_document_id TEXT NOT NULL DEFAULT '',
    failed_value       TEXT NOT NULL DEFAULT '',
    claim_token        TEXT,
    claim_holder       TEXT,
    lease_expires_at   BIGINT,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    finished_at        BIGINT,
    CHECK ((claim_token IS NULL) = (claim_holder IS NULL)),
    CHECK ((claim_token IS NULL) = (lease_expires_at IS NULL))
);

-- At most one unfinished migration per field.
CREATE UNIQUE INDEX field_migrations_one_open ON field_migrations (collection, field) WHERE status IN ('running', 'failed', 'aborting');

-- One row per type flip; the primary key makes a second flip by the same
-- run impossible.
CREATE TABLE field_type_changes (
    run_id     TEXT PRIMARY KEY REFERENCES field_migrations (id),
    collection TEXT NOT NULL,
    field      TEXT NOT NULL,
    from_type  TEXT NOT NULL,
    to_type    TEXT NOT NULL,
    at         BIGINT NOT NULL
);

-- The wiki's page documents: editors correct a page's title or add notes;
-- publication renders from them. A page document's ID is its event's ID.
INSERT INTO collections (name, built_in, created_at) VALUES ('pages', 1, 0);
INSERT INTO collection_fields (collection, name, type, position) VALUES ('pages', 'title', 'text', 0);
INSERT INTO collection_fields (collection, name, type, position) VALUES ('pages', 'notes', 'richtext', 1);
