-- 0031: the scope an intent's idempotency key was sent in. A server keeps
-- the keys it was sent per token (Matrix) or per account (Mastodon), so a
-- key decides a write in doubt only where every attempt of it was sent:
-- the scope of the intent's first attempt while every later one was sent
-- in the same, and '' once one was sent in another (or by a provider that
-- names none). Intents attempted before this column have no scope known:
-- NULL, which no key is trusted in either.
ALTER TABLE outbox_intents ADD COLUMN key_scope TEXT;
