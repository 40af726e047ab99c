-- 0032: why the provider refused a read the lane needs (its listing of our
-- own writes) for a reason that is the lane's: a credential without the
-- scope to read, an account not in a channel it lists. Until a
-- reconciliation goes through, the lane can decide none of its writes in
-- doubt, so it shows broken with this as its problem. '' when none stands.
ALTER TABLE outbox_lanes ADD COLUMN read_refusal TEXT NOT NULL DEFAULT '';
