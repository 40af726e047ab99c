-- The claim path at database speed, and outages that are not terminal.

-- When a window's first failure was recorded (NULL while it has not
-- failed): an unreachable window goes terminal only after its failures
-- have lasted the retry policy's span.
ALTER TABLE sources ADD COLUMN failing_since BIGINT;

-- Due sources are claimed ORDER BY next_due_at, id: serve that order from
-- the index, so ties (a bulk import) are not sorted on every claim, and the
-- next due time is the index's first entry.
DROP INDEX IF EXISTS sources_due;
CREATE INDEX sources_due_order ON sources (next_due_at, id) WHERE state = 'active' AND window_state = 'open';
