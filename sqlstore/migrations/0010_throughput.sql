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

-- Claims in flight, by when their leases run out: the claim path's
-- takeover of expired leases and NextDue read these few rows only.
CREATE INDEX sources_leases ON sources (lease_expires_at) WHERE claim_token IS NOT NULL;
