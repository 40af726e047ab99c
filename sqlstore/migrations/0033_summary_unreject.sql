-- 0033: rejections of summaries lifted by an operator (publish unreject),
-- and claims on summarizing an event.
--
-- summary_lifted_rejections: rejections lifted by an operator.
-- Lifting a rejection clears it from the summary (a current summary is
-- never rejected), so each lifted rejection is kept here: what it said and
-- when, and why and when it was lifted. Times are Unix milliseconds (UTC).
CREATE TABLE summary_lifted_rejections (
    id              TEXT PRIMARY KEY,
    summary_id      TEXT NOT NULL REFERENCES summaries (id),
    rejected_reason TEXT NOT NULL,
    rejected_at     BIGINT NOT NULL,
    reason          TEXT NOT NULL,
    lifted_at       BIGINT NOT NULL
);

CREATE INDEX summary_lifted_rejections_summary ON summary_lifted_rejections (summary_id, lifted_at);

-- summary_claims: a worker asking the summarizer about an event under a
-- model and prompt version holds a claim until claimed_until, so that
-- concurrent publishers do not ask (and pay) for the same event twice. An
-- expired claim is anyone's.
CREATE TABLE summary_claims (
    event_id       TEXT NOT NULL REFERENCES events (id),
    model          TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    holder         TEXT NOT NULL,
    claimed_until  BIGINT NOT NULL,
    PRIMARY KEY (event_id, model, prompt_version)
);
