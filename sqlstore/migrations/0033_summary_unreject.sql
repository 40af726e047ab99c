-- 0033: rejections of summaries lifted by an operator (publish unreject).
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
