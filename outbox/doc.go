// Package outbox holds the rules of tidemark's deliver pipeline: outbound
// writes to systems tidemark does not own (a comment, a status post, a
// webhook), made safe against crashes, replays and stale answers.
//
// What it guarantees:
//
//   - Intents are drafted in order (their rank) with an identity (target,
//     parent, SHA-256 of the body). An intent is unique by its origin (the
//     channel, page and summary that drafted it); a publication's draft that
//     shares another intent's identity is kept in StateCollision, never sent
//     and out of reconciliation, and never fails the publication; a duplicate
//     drafted by hand is refused (tidemark.ErrConflict).
//   - A write is sent once by construction: no layer below the journal
//     replays it (provider.WriteClient keeps net/http from doing so); an
//     answer that never arrived is an attempt in doubt.
//   - After the provider answered, the attempt is recorded on a context that
//     cancellation does not reach.
//   - The attempt is journaled and committed before the provider is called,
//     with an idempotency key derived from the intent (IdempotencyKey), never
//     from the attempt.
//   - A lane (one provider account) has one writer at a time, fenced by a
//     lease whose token only grows; every journal transition presents the
//     token and the token is re-checked immediately before each send.
//   - The pacing gate keeps a minimum gap between writes on a lane, one write
//     in flight, and honours Retry-After; achieved gaps are recorded.
//   - After a crash, recovery is one ordered read of the lane's own writes,
//     planned by Plan: the mark is the highest-ranked landed intent (never the
//     newest row), holes below it are replayed, unexecutable targets are
//     bucketed, and a plan whose accounting does not balance is refused.
//   - A probe resolves an intent only when its answer is provably fresher
//     than the attempt (Fresh), and freshness is judged before existence.
//   - A provider counter verifies a write by subtraction (VerifyCount).
//   - Unresolved and unexecutable intents are retired only by an explicit
//     RetirementPolicy or an operator, with the evidence of every check kept.
//
// The package is independent of any database; sqlstore implements Store.
package outbox
