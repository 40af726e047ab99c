-- Intents are unique by their origin, not by their remote identity
-- (DESIGN §6). An intent drafted by a publication records the channel and
-- the summary that drafted it; (channel, page, summary) is unique, so
-- publishing the same summary again drafts nothing new and a revised
-- summary drafts once more. The remote identity (lane, target, parent,
-- body hash) is no longer unique: a later intent that shares it with
-- another is kept in the visible, reversible state 'collision' and never
-- sent, instead of failing the publication that drafted it.
--
-- SQLite cannot drop a table's UNIQUE or change its CHECK in place, so the
-- intents table and the tables that reference it are rebuilt, portably:
-- new tables, copies, the old tables dropped children first, renames (both
-- databases carry the foreign keys over to the renamed tables), indexes.

CREATE TABLE outbox_intents_v6 (
    id                TEXT PRIMARY KEY,
    lane              TEXT NOT NULL REFERENCES outbox_lanes (name),
    rank              BIGINT NOT NULL,
    target            TEXT NOT NULL,
    parent            TEXT NOT NULL DEFAULT '',
    body              TEXT NOT NULL,
    body_sha256       TEXT NOT NULL,
    idempotency_key   TEXT NOT NULL,
    state             TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'landed', 'unresolved', 'unexecutable', 'retired', 'collision')),
    state_reason      TEXT NOT NULL DEFAULT '',
    retired_from      TEXT NOT NULL DEFAULT '',
    remote_id         TEXT NOT NULL DEFAULT '',
    source_id         TEXT,
    page_id           TEXT,
    channel_id        TEXT,
    summary_id        TEXT,
    attempts          INTEGER NOT NULL DEFAULT 0,
    last_attempt_at   BIGINT,
    landed_at         BIGINT,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    UNIQUE (lane, rank),
    UNIQUE (idempotency_key)
);

-- The origin of an intent drafted before this migration: the channel whose
-- lane, target and parent it carries; and, for the latest intent of each
-- page on a channel, the summary the page shows now (older ones keep no
-- summary and are matched by page and identity, as before).
INSERT INTO outbox_intents_v6 (id, lane, rank, target, parent, body, body_sha256, idempotency_key, state, state_reason,
    retired_from, remote_id, source_id, page_id, channel_id, summary_id, attempts, last_attempt_at, landed_at, created_at, updated_at)
SELECT i.id, i.lane, i.rank, i.target, i.parent, i.body, i.body_sha256, i.idempotency_key, i.state, i.state_reason,
    i.retired_from, i.remote_id, i.source_id, i.page_id,
    (SELECT c.id FROM outbox_channels c WHERE c.source_id = i.source_id AND c.lane = i.lane AND c.target = i.target AND c.parent = i.parent),
    CASE WHEN i.page_id IS NOT NULL AND i.rank = (SELECT MAX(o.rank) FROM outbox_intents o
            WHERE o.page_id = i.page_id AND o.lane = i.lane AND o.target = i.target AND o.parent = i.parent)
        THEN (SELECT p.published_summary_id FROM pages p WHERE p.id = i.page_id) END,
    i.attempts, i.last_attempt_at, i.landed_at, i.created_at, i.updated_at
FROM outbox_intents i;

CREATE TABLE outbox_attempts_v6 (
    id              TEXT PRIMARY KEY,
    intent_id       TEXT NOT NULL REFERENCES outbox_intents_v6 (id),
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

INSERT INTO outbox_attempts_v6 SELECT id, intent_id, lane, token, holder, idempotency_key, started_at, sent_at, finished_at,
    outcome, remote_id, count_before, count_after, count_verdict, error FROM outbox_attempts;

CREATE TABLE outbox_gaps_v6 (
    attempt_id TEXT PRIMARY KEY REFERENCES outbox_attempts_v6 (id),
    lane       TEXT NOT NULL REFERENCES outbox_lanes (name),
    sent_at    BIGINT NOT NULL,
    gap_ms     BIGINT NOT NULL,
    min_gap_ms BIGINT NOT NULL
);

INSERT INTO outbox_gaps_v6 SELECT attempt_id, lane, sent_at, gap_ms, min_gap_ms FROM outbox_gaps;

CREATE TABLE outbox_checks_v6 (
    id         TEXT PRIMARY KEY,
    intent_id  TEXT NOT NULL REFERENCES outbox_intents_v6 (id),
    checked_at BIGINT NOT NULL,
    verdict    TEXT NOT NULL,
    evidence   TEXT NOT NULL
);

INSERT INTO outbox_checks_v6 SELECT id, intent_id, checked_at, verdict, evidence FROM outbox_checks;

CREATE TABLE outbox_actions_v6 (
    id         TEXT PRIMARY KEY,
    intent_id  TEXT NOT NULL REFERENCES outbox_intents_v6 (id),
    action     TEXT NOT NULL CHECK (action IN ('retire', 'revive')),
    actor      TEXT NOT NULL,
    reason     TEXT NOT NULL,
    from_state TEXT NOT NULL,
    to_state   TEXT NOT NULL,
    at         BIGINT NOT NULL
);

INSERT INTO outbox_actions_v6 SELECT id, intent_id, action, actor, reason, from_state, to_state, at FROM outbox_actions;

DROP TABLE outbox_gaps;
DROP TABLE outbox_attempts;
DROP TABLE outbox_checks;
DROP TABLE outbox_actions;
DROP TABLE outbox_intents;

ALTER TABLE outbox_intents_v6 RENAME TO outbox_intents;
ALTER TABLE outbox_attempts_v6 RENAME TO outbox_attempts;
ALTER TABLE outbox_gaps_v6 RENAME TO outbox_gaps;
ALTER TABLE outbox_checks_v6 RENAME TO outbox_checks;
ALTER TABLE outbox_actions_v6 RENAME TO outbox_actions;

CREATE INDEX outbox_intents_queue ON outbox_intents (lane, state, rank);
-- The remote identity, to find a collision when drafting.
CREATE INDEX outbox_intents_identity ON outbox_intents (lane, target, parent, body_sha256);
-- The origin: one intent per channel, page and summary. Drafts made by hand
-- have no channel and are not constrained here.
CREATE UNIQUE INDEX outbox_intents_origin ON outbox_intents (channel_id, page_id, summary_id);
-- One write in flight per lane: at most one open attempt.
CREATE UNIQUE INDEX outbox_attempts_in_flight ON outbox_attempts (lane) WHERE finished_at IS NULL;
CREATE INDEX outbox_attempts_intent ON outbox_attempts (intent_id, started_at);
CREATE INDEX outbox_gaps_lane ON outbox_gaps (lane, sent_at);
CREATE INDEX outbox_checks_intent ON outbox_checks (intent_id, checked_at);
