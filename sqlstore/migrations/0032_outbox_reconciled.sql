-- 0032: what a lane's reconciliations found that its health and its show
-- need.
--
-- read_refusal: why the provider refused a read the lane needs (its
-- listing of our own writes) for a reason that is the lane's: a credential
-- without the scope to read, an account not in a channel it lists. Until a
-- reconciliation goes through, the lane can decide none of its writes in
-- doubt, so it shows broken with this as its problem. '' when none stands.
--
-- reconciled_at, unmatched_own_writes, duplicate_own_writes,
-- stray_remote_ids: when the latest reconciliation was recorded, how many
-- own writes it listed that matched no intent and how many repeated a
-- landed one, and the first of their remote ids (space separated, the
-- duplicates first): a duplicate once made is shown, not silent.
ALTER TABLE outbox_lanes ADD COLUMN read_refusal TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox_lanes ADD COLUMN reconciled_at BIGINT;
ALTER TABLE outbox_lanes ADD COLUMN unmatched_own_writes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox_lanes ADD COLUMN duplicate_own_writes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox_lanes ADD COLUMN stray_remote_ids TEXT NOT NULL DEFAULT '';
