-- Sources, their fenced cursors and claims, ingest runs with typed
-- outcomes, events with frozen evidence and their revisions, and the audit
-- trails of runs and operator actions. Times are Unix milliseconds (UTC).

CREATE TABLE sources (
    id               TEXT PRIMARY KEY,
    name             TEXT NOT NULL UNIQUE,
    kind             TEXT NOT NULL,
    location         TEXT NOT NULL,
    config           TEXT NOT NULL DEFAULT '{}',
    state            TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'paused')),
    interval_ms      BIGINT NOT NULL,
    retry_budget     INTEGER NOT NULL CHECK (retry_budget >= 1),
    cursor           TEXT NOT NULL DEFAULT '',
    cursor_version   BIGINT NOT NULL DEFAULT 0,
    window_state     TEXT NOT NULL DEFAULT 'open' CHECK (window_state IN ('open', 'terminal')),
    window_attempts  INTEGER NOT NULL DEFAULT 0,
    terminal_reason  TEXT NOT NULL DEFAULT '',
    claim_token      TEXT,
    claim_holder     TEXT,
    claim_run_id     TEXT,
    lease_expires_at BIGINT,
    next_due_at      BIGINT NOT NULL,
    last_outcome     TEXT NOT NULL DEFAULT '',
    last_error       TEXT NOT NULL DEFAULT '',
    last_run_at      BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    -- a claim is all three fields or none
    CHECK ((claim_token IS NULL) = (claim_holder IS NULL)),
    CHECK ((claim_token IS NULL) = (lease_expires_at IS NULL))
);

CREATE INDEX sources_due ON sources (next_due_at) WHERE state = 'active' AND window_state = 'open';

CREATE TABLE ingest_runs (
    id               TEXT PRIMARY KEY,
    source_id        TEXT NOT NULL REFERENCES sources (id),
    token            TEXT NOT NULL,
    holder           TEXT NOT NULL,
    attempt          INTEGER NOT NULL,
    cursor_version   BIGINT NOT NULL,
    cursor_before    TEXT NOT NULL,
    cursor_after     TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL CHECK (status IN ('active', 'settled', 'failed')),
    outcome          TEXT NOT NULL DEFAULT '' CHECK (outcome IN ('', 'items', 'empty', 'unreachable', 'invalid', 'error', 'lost')),
    error            TEXT NOT NULL DEFAULT '',
    declared         INTEGER NOT NULL DEFAULT 0,
    admitted         INTEGER NOT NULL DEFAULT 0,
    events_new       INTEGER NOT NULL DEFAULT 0,
    events_changed   INTEGER NOT NULL DEFAULT 0,
    started_at       BIGINT NOT NULL,
    heartbeat_at     BIGINT NOT NULL,
    lease_expires_at BIGINT NOT NULL,
    finished_at      BIGINT,
    -- only a settled run carries a success outcome, and a settled run carries nothing else
    CHECK ((status = 'settled') = (outcome IN ('items', 'empty')))
);

CREATE INDEX ingest_runs_source ON ingest_runs (source_id, started_at);

-- At most one active run per source, whatever the code above it does.
CREATE UNIQUE INDEX ingest_runs_one_active ON ingest_runs (source_id) WHERE status = 'active';

CREATE TABLE events (
    id            TEXT PRIMARY KEY,
    source_id     TEXT NOT NULL REFERENCES sources (id),
    item_key      TEXT NOT NULL,
    title         TEXT NOT NULL,
    url           TEXT NOT NULL DEFAULT '',
    occurred_at   BIGINT NOT NULL,
    evidence_hash TEXT NOT NULL,
    revision      INTEGER NOT NULL,
    run_id        TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    UNIQUE (source_id, item_key)
);

CREATE INDEX events_source_time ON events (source_id, occurred_at);

-- Every evidence an event was ever frozen with; the event points at the
-- newest by (evidence_hash, revision).
CREATE TABLE event_revisions (
    event_id      TEXT NOT NULL REFERENCES events (id),
    revision      INTEGER NOT NULL,
    evidence_hash TEXT NOT NULL,
    evidence      {{bytes}} NOT NULL,
    run_id        TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (event_id, revision)
);

-- One audit row per run: the primary key makes a second impossible.
CREATE TABLE ingest_audit (
    run_id                TEXT PRIMARY KEY REFERENCES ingest_runs (id),
    source_id             TEXT NOT NULL,
    holder                TEXT NOT NULL,
    outcome               TEXT NOT NULL,
    cursor_before         TEXT NOT NULL,
    cursor_after          TEXT NOT NULL,
    cursor_version_before BIGINT NOT NULL,
    cursor_version_after  BIGINT NOT NULL,
    events_new            INTEGER NOT NULL,
    events_changed        INTEGER NOT NULL,
    at                    BIGINT NOT NULL
);

-- Operator actions that move a window: retry (fresh budget) and skip (an
-- explicit cursor move that records what was skipped).
CREATE TABLE source_actions (
    id                    TEXT PRIMARY KEY,
    source_id             TEXT NOT NULL REFERENCES sources (id),
    action                TEXT NOT NULL CHECK (action IN ('retry', 'skip', 'pause', 'resume')),
    actor                 TEXT NOT NULL,
    cursor_before         TEXT NOT NULL,
    cursor_after          TEXT NOT NULL,
    cursor_version_before BIGINT NOT NULL,
    cursor_version_after  BIGINT NOT NULL,
    note                  TEXT NOT NULL DEFAULT '',
    at                    BIGINT NOT NULL
);
