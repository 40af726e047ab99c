-- Summaries, the pages they are published on, and the wiki's listing
-- objects (source cards and the index). Times are Unix milliseconds (UTC).

-- A summary's identity is (event, evidence hash, prompt version, model).
-- At most one summary per event is current; a rejected summary is never
-- current and never published.
CREATE TABLE summaries (
    id                   TEXT PRIMARY KEY,
    event_id             TEXT NOT NULL REFERENCES events (id),
    evidence_hash        TEXT NOT NULL,
    prompt_version       TEXT NOT NULL,
    model                TEXT NOT NULL,
    text                 TEXT NOT NULL,
    text_hash            TEXT NOT NULL,
    is_current           INTEGER NOT NULL DEFAULT 0 CHECK (is_current IN (0, 1)),
    rejected_reason      TEXT NOT NULL DEFAULT '',
    rejected_at          BIGINT,
    published_at         BIGINT,
    published_generation BIGINT NOT NULL DEFAULT 0,
    retired_at           BIGINT,
    created_at           BIGINT NOT NULL,
    UNIQUE (event_id, evidence_hash, prompt_version, model),
    CHECK (NOT (is_current = 1 AND rejected_reason <> ''))
);

CREATE UNIQUE INDEX summaries_one_current ON summaries (event_id) WHERE is_current = 1;

-- One page per event. summary_id is the event's pointer to its current
-- summary (with that summary's evidence hash); generation is the last
-- publication generation allocated for the page; the published_* columns
-- say what the store holds according to the last confirmed mark.
CREATE TABLE pages (
    id                   TEXT PRIMARY KEY,
    event_id             TEXT NOT NULL UNIQUE REFERENCES events (id),
    source_id            TEXT NOT NULL REFERENCES sources (id),
    summary_id           TEXT REFERENCES summaries (id),
    evidence_hash        TEXT NOT NULL DEFAULT '',
    generation           BIGINT NOT NULL DEFAULT 0,
    published_summary_id TEXT REFERENCES summaries (id),
    published_generation BIGINT NOT NULL DEFAULT 0,
    published_etag       TEXT NOT NULL DEFAULT '',
    published_at         BIGINT,
    created_at           BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL,
    CHECK (published_generation <= generation)
);

CREATE INDEX pages_source ON pages (source_id, published_at);

-- The wiki's listing objects: a card per source ("sources/ID.html") and
-- the index ("index.html"). content_hash is the hash of the listing as
-- rendered without its generation, so an unchanged listing is not
-- rewritten; stamp summarizes the published pages it was rendered from
-- (count, newest mark, sum of generations), so an unchanged listing is not
-- even rendered.
CREATE TABLE wiki_objects (
    key          TEXT PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('card', 'index')),
    source_id    TEXT REFERENCES sources (id),
    generation   BIGINT NOT NULL DEFAULT 0,
    etag         TEXT NOT NULL DEFAULT '',
    content_hash TEXT NOT NULL DEFAULT '',
    written_generation BIGINT NOT NULL DEFAULT 0,
    stamp        TEXT NOT NULL DEFAULT '',
    updated_at   BIGINT NOT NULL
);
