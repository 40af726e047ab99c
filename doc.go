// Package tidemark holds the domain of a change-tracking pipeline that never
// mistakes work for progress: sources and their fenced cursors, runs and their
// typed outcomes, events with frozen evidence, and the errors every layer
// shares.
//
// The pipelines live in their own packages (ingest, publish, outbox, content)
// and hold their rules independent of any database; sqlstore implements their
// stores over database/sql for SQLite and PostgreSQL. Progress is recorded in
// the same transaction as the work it describes, and only by the holder of a
// current claim.
package tidemark
