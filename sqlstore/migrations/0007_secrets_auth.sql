-- Secrets kept apart from what is shown, and who may use the server.
--
-- outbox_lane_secrets holds a lane's secret settings (a webhook's signing
-- secret, an access token, a URL that carries a credential), read only by
-- the code that builds the lane's provider; outbox_lanes.settings keeps the
-- shown form, with every secret replaced by a marker. Lanes stored before
-- this migration are split when the database is opened.
--
-- auth_tokens are the access tokens `tidemark token create` prints once;
-- only their SHA-256 is stored. A revoked token is kept (its name stays in
-- the audit) and a new token may reuse an unrevoked name. auth_sessions are
-- the console's sign-in sessions, also stored as a SHA-256, each bound to
-- the token that opened it. Times are Unix milliseconds.

CREATE TABLE outbox_lane_secrets (
    lane     TEXT PRIMARY KEY REFERENCES outbox_lanes (name),
    settings TEXT NOT NULL DEFAULT '{}'
);

CREATE TABLE auth_tokens (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    sha256       TEXT NOT NULL UNIQUE,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at   BIGINT
);

CREATE UNIQUE INDEX auth_tokens_active_name ON auth_tokens (name) WHERE revoked_at IS NULL;

CREATE TABLE auth_sessions (
    sha256     TEXT PRIMARY KEY,
    token_id   TEXT NOT NULL REFERENCES auth_tokens (id),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE INDEX auth_sessions_token ON auth_sessions (token_id);
