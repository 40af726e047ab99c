-- 0029: when an intent's first attempt began. The idempotency key is the
-- intent's, so this is when the server first saw the key, and a server
-- remembers a key from then (a resend does not extend it): the window in
-- which a write in doubt may be resent on the key's strength runs from
-- here, not from the latest attempt. Filled for intents attempted before
-- this column from their journal (the earliest attempt with the intent's
-- key), else from their latest attempt, the best that is known.
ALTER TABLE outbox_intents ADD COLUMN first_attempt_at BIGINT;
UPDATE outbox_intents SET first_attempt_at = COALESCE(
    (SELECT MIN(a.started_at) FROM outbox_attempts a
      WHERE a.intent_id = outbox_intents.id AND a.idempotency_key = outbox_intents.idempotency_key),
    last_attempt_at)
WHERE last_attempt_at IS NOT NULL;
