// Package ingest runs fenced ingestion over source cursors.
//
// Guarantees, whatever the interleaving of workers, crashes and lease
// expiries:
//
//   - a source has at most one active run, admitted by a claim;
//   - a cursor moves only in the transaction that stores the events read
//     ahead of it, only for outcome items or empty, and only by the holder
//     of the current claim;
//   - a failed, unreachable or invalid run leaves the cursor exactly where
//     it found it, and a fetch that declared more results than it admitted
//     fails instead of settling;
//   - every run ends with exactly one audit row and one typed outcome;
//   - a window whose retry budget is spent (for an outage: spent over at
//     least the retry policy's span, a day by default), or whose final
//     worker never came back (unless the window is riding out an outage,
//     which only the retry policy ends), is terminal until an operator
//     retries or skips it;
//   - a run that filled its window leaves its source due at once: a
//     backlog is not a schedule.
//
// The rules (classification, RetryPolicy, scheduling and draining) live here; Store is the
// storage they need, implemented by sqlstore.
package ingest
