-- 0026: until when an intent's latest attempt could still land: its start
-- plus the bound its request was sent under. A listing or probe that does
-- not show the write decides that it never landed only if it was assembled
-- after this time; before it, the remote may still be writing it. NULL for
-- attempts journaled before this column (the provider's current bound is
-- assumed for them).
ALTER TABLE outbox_intents ADD COLUMN attempt_until BIGINT;
