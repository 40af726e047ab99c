package sqltest

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
)

// MustIngest settles one run of the feed source named name (added first
// if there is none) that admits one item per title, each with its own
// evidence, and returns the events the run froze, newest first.
func MustIngest(tb testing.TB, db *sqlstore.DB, env Env, name string, titles ...string) []tidemark.Event {
	tb.Helper()
	ctx := context.Background()
	st := db.Ingest()
	if _, err := st.Source(ctx, name); err != nil {
		if _, err := st.AddSource(ctx, ingest.NewSource{Name: name, Kind: "feed", Location: "https://example.org/" + name,
			Interval: time.Hour, RetryBudget: 3}); err != nil {
			tb.Fatal(err)
		}
	}
	c, err := st.Claim(ctx, name, "w", time.Minute)
	if err != nil {
		tb.Fatal(err)
	}
	items := make([]tidemark.Item, len(titles))
	for i, title := range titles {
		items[i] = tidemark.Item{Key: title, Title: title, OccurredAt: env.Clock.Now().Add(time.Duration(i) * time.Second),
			Evidence: []byte("evidence of " + title)}
	}
	if _, err := st.Settle(ctx, c, ingest.Settlement{Items: items, Cursor: c.Cursor + "+", NextDueAt: env.Clock.Now()}); err != nil {
		tb.Fatal(err)
	}
	evs, err := st.Events(ctx, ingest.EventFilter{SourceID: c.SourceID, RunID: c.RunID})
	if err != nil || len(evs) != len(titles) {
		tb.Fatalf("the events of run %s: %v, %v", c.RunID, evs, err)
	}
	return evs
}
