-- The audit of writes made through the server: who (the token's name and
-- ID), what, to what, when, and how it ended. A row is written before the
-- write runs (outcome 'started') and finished after it; sign-in and
-- sign-out write theirs in the transaction that opens or ends the session.
-- Times are Unix milliseconds.

CREATE TABLE audit_log (
    id       TEXT PRIMARY KEY,
    at       BIGINT NOT NULL,
    actor    TEXT NOT NULL,
    token_id TEXT NOT NULL REFERENCES auth_tokens (id),
    action   TEXT NOT NULL,
    target   TEXT NOT NULL DEFAULT '',
    outcome  TEXT NOT NULL,
    detail   TEXT NOT NULL DEFAULT '',
    ended_at BIGINT
);

CREATE INDEX audit_log_at ON audit_log (at, id);
