-- Settings that a scale-out shares through the database instead of each
-- process's environment.
--
-- wiki_store is the object store the wiki lives in, recorded at the first
-- publication (one row at most): the random ID of the marker object written
-- into the store, and the store's location in canonical form. A worker
-- whose store carries another marker, or none, or sits elsewhere, refuses
-- to publish or sweep. Times are Unix milliseconds.
CREATE TABLE wiki_store (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    store_id  TEXT NOT NULL,
    location  TEXT NOT NULL,
    bound_at  BIGINT NOT NULL
);

-- sources.allow_private says whether this source's fetches may reach
-- private, loopback and link-local addresses. It is the source's own
-- setting, read by every worker alike, never a process's environment
-- (TIDEMARK_ALLOW_PRIVATE is only the default of `source add`). Sources
-- stored before this migration may not (0); `tidemark source set NAME
-- --allow-private` allows one.
ALTER TABLE sources ADD COLUMN allow_private INTEGER NOT NULL DEFAULT 0;

-- source_unserved records the workers that could not serve a source (a
-- local path they cannot see, a kind they were not built with): their runs
-- are recorded as `error` without spending the window's budget and the
-- source is left for other workers. One row per source and worker, the
-- latest reason.
CREATE TABLE source_unserved (
    source_id TEXT NOT NULL REFERENCES sources (id),
    holder    TEXT NOT NULL,
    reason    TEXT NOT NULL,
    at        BIGINT NOT NULL,
    PRIMARY KEY (source_id, holder)
);
