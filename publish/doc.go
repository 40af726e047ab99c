// Package publish holds the rules of the publish pipeline: summaries with
// identity and supersession, and their publication as wiki pages across
// the database and an object store, which share no transaction.
//
// Guarantees:
//   - A superseded, rejected or stale summary is refused by the pre-checks,
//     before any source card or page body is written.
//   - Every page body carries a generation allocated in SQL and is written
//     with the object store's compare-and-swap, so an older generation never
//     replaces a newer body.
//   - A summary is marked published only if it is still current, the event
//     still points at it and its evidence is unchanged; a publisher that
//     loses that race republishes the current summary onto the same page
//     (one level, never recursively) and still reports its own failure; when
//     there is no current summary (it was rejected meanwhile), the loser
//     withdraws the page it wrote.
//   - The sweeper converges every page to its current published summary,
//     whatever crashed or failed in between, and collects listing objects
//     attached to nothing.
package publish
