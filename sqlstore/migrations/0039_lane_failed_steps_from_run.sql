-- 0039: a lane's total of failed steps (0038) starts at its run so far.
--
-- 0038 added failed_steps at 0, also to a lane it found failing: a total
-- below the run of failures in a row it contains. A lane that was failing
-- when 0038 was applied has failed at least the steps of its run; the
-- total is raised to that. A total already at or above it (every lane
-- whose steps failed since 0038, which counts each) is left as it is.
UPDATE outbox_lanes SET failed_steps = failures WHERE failed_steps < failures;
