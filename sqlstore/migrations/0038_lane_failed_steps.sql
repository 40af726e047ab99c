-- 0038: every delivery step a lane has failed, over its life.
--
-- failures (0037) counts the steps failed in a row and goes back to 0 when
-- one goes through; failed_steps only grows, so /metrics can give it as a
-- counter (tidemark_outbox_failed_steps_total): a lane that fails and
-- recovers again and again, never failing for long, shows in its rate.
ALTER TABLE outbox_lanes ADD COLUMN failed_steps BIGINT NOT NULL DEFAULT 0;
