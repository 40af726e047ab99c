-- 0028: what the lane's provider tells an intent's body apart by
-- (outbox.MatchSHA256): the body's SHA-256, or the fingerprint its listing
-- is joined on (Slack, Mastodon, Discord, email). Drafting finds an
-- intent's twin by it. NULL for intents drafted before this column, until
-- the outbox fills it in (OutboxStore.FillMatches); until then they are
-- matched on their body's SHA-256.
ALTER TABLE outbox_intents ADD COLUMN match_sha256 TEXT;

CREATE INDEX outbox_intents_match ON outbox_intents (lane, target, parent, match_sha256);
