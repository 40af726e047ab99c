-- The outbox: delivery lanes (one provider account each) with the single
-- writer's fenced lease and the pacing gate; channels that say which lanes
-- a source's published pages are delivered to; intents with their rank and
-- identity; the write-ahead journal of attempts; achieved gaps; the
-- evidence of every check of an unresolved or unexecutable intent; and the
-- audit trail of operators' retire and revive. Times are Unix milliseconds.

CREATE TABLE outbox_lanes (
    name              TEXT PRIMARY KEY,
    provider          TEXT NOT NULL,
    settings          TEXT NOT NULL DEFAULT '{}',
    min_gap_ms        BIGINT NOT NULL CHECK (min_gap_ms >= 0),
    skew_ms           BIGINT NOT NULL CHECK (skew_ms >= 0),
    retire_checks     INTEGER NOT NULL DEFAULT 0 CHECK (retire_checks >= 0),
    retire_spacing_ms BIGINT NOT NULL CHECK (retire_spacing_ms >= 0),
    next_rank         BIGINT NOT NULL DEFAULT 0,
    lease_token       BIGINT NOT NULL DEFAULT 0,
    lease_holder      TEXT,
    lease_expires_at  BIGINT,
    next_send_at      BIGINT NOT NULL DEFAULT 0,
    last_send_at      BIGINT,
    needs_reconcile   INTEGER NOT NULL DEFAULT 0,
    recheck_at        BIGINT,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    CHECK ((lease_holder IS NULL) = (lease_expires_at IS NULL))
);

CREATE TABLE outbox_channels (
    id         TEXT PRIMARY KEY,
    source_id  TEXT NOT NULL REFERENCES sources (id),
    lane       TEXT NOT NULL REFERENCES outbox_lanes (name),
    target     TEXT NOT NULL,
    parent     TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    UNIQUE (source_id, lane, target, parent)
);

CREATE TABLE outbox_intents (
    id                TEXT PRIMARY KEY,
    lane              TEXT NOT NULL REFERENCES outbox_lanes (name),
    rank              BIGINT NOT NULL,
    target            TEXT NOT NULL,
    parent            TEXT NOT NULL DEFAULT '',
    body              TEXT NOT NULL,
    body_sha256       TEXT NOT NULL,
    idempotency_key   TEXT NOT NULL,
    state             TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'landed', 'unresolved', 'unexecutable', 'retired')),
    state_reason      TEXT NOT NULL DEFAULT '',
    retired_from      TEXT NOT NULL DEFAULT '',
    remote_id         TEXT NOT NULL DEFAULT '',
    source_id         TEXT,
    page_id           TEXT,
    attempts          INTEGER NOT NULL DEFAULT 0,
    last_attempt_at   BIGINT,
    landed_at         BIGINT,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    UNIQUE (lane, rank),
    UNIQUE (lane, target, parent, body_sha256),
    UNIQUE (idempotency_key)
);

CREATE INDEX outbox_intents_queue ON outbox_intents (lane, state, rank);

CREATE TABLE outbox_attempts (
    id              TEXT PRIMARY KEY,
    intent_id       TEXT NOT NULL REFERENCES outbox_intents (id),
    lane            TEXT NOT NULL REFERENCES outbox_lanes (name),
    token           BIGINT NOT NULL,
    holder          TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    started_at      BIGINT NOT NULL,
    sent_at         BIGINT,
    finished_at     BIGINT,
    outcome         TEXT NOT NULL DEFAULT '' CHECK (outcome IN ('', 'landed', 'not_landed', 'deferred', 'unexecutable', 'unknown', 'reconciled')),
    remote_id       TEXT NOT NULL DEFAULT '',
    count_before    BIGINT,
    count_after     BIGINT,
    count_verdict   TEXT NOT NULL DEFAULT '',
    error           TEXT NOT NULL DEFAULT '',
    CHECK ((finished_at IS NULL) = (outcome = ''))
);

-- One write in flight per lane: at most one open attempt.
CREATE UNIQUE INDEX outbox_attempts_in_flight ON outbox_attempts (lane) WHERE finished_at IS NULL;
CREATE INDEX outbox_attempts_intent ON outbox_attempts (intent_id, started_at);

CREATE TABLE outbox_gaps (
    attempt_id TEXT PRIMARY KEY REFERENCES outbox_attempts (id),
    lane       TEXT NOT NULL REFERENCES outbox_lanes (name),
    sent_at    BIGINT NOT NULL,
    gap_ms     BIGINT NOT NULL,
    min_gap_ms BIGINT NOT NULL
);

CREATE INDEX outbox_gaps_lane ON outbox_gaps (lane, sent_at);

CREATE TABLE outbox_checks (
    id         TEXT PRIMARY KEY,
    intent_id  TEXT NOT NULL REFERENCES outbox_intents (id),
    checked_at BIGINT NOT NULL,
    verdict    TEXT NOT NULL,
    evidence   TEXT NOT NULL
);

CREATE INDEX outbox_checks_intent ON outbox_checks (intent_id, checked_at);

CREATE TABLE outbox_actions (
    id         TEXT PRIMARY KEY,
    intent_id  TEXT NOT NULL REFERENCES outbox_intents (id),
    action     TEXT NOT NULL CHECK (action IN ('retire', 'revive')),
    actor      TEXT NOT NULL,
    reason     TEXT NOT NULL,
    from_state TEXT NOT NULL,
    to_state   TEXT NOT NULL,
    at         BIGINT NOT NULL
);
