-- 0030: events whose summarizing keeps failing. A row counts the rounds in
-- a row in which summarizing an event's evidence (evidence_hash) under a
-- model and prompt version failed with the summarizer unavailable; an
-- event that failed often enough while later events were summarized is
-- held (passed over by the rounds) until held_until. Accepting a summary
-- of the event under that model and prompt forgets the row; fresh
-- evidence starts the count over. Times are Unix milliseconds (UTC).
CREATE TABLE summary_failures (
    event_id        TEXT NOT NULL REFERENCES events (id),
    model           TEXT NOT NULL,
    prompt_version  TEXT NOT NULL,
    evidence_hash   TEXT NOT NULL,
    failures        BIGINT NOT NULL,
    last_error      TEXT NOT NULL,
    first_failed_at BIGINT NOT NULL,
    last_failed_at  BIGINT NOT NULL,
    held_until      BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (event_id, model, prompt_version)
);
