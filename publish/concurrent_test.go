package publish_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// PublishPending runs publications concurrently, each fenced on its own
// page: every page ends at exactly the generation SQL recorded for it, with
// the body its summary renders, and a new source's card is written once by
// the publications that run together, not once by each.
func TestPublishPendingConcurrently(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		objs := mem.New()
		f := mustFixture(t, b, objs)
		f.svc.Concurrency = 8
		const n = 24
		for i := range n {
			ev := f.mustEvent(t, fmt.Sprintf("c%02d", i), fmt.Sprintf("change %d", i), fmt.Sprintf("evidence %d", i))
			f.mustAccept(t, ev, fmt.Sprintf("Change number %d.", i), "m")
		}
		var mu sync.Mutex
		cardPuts := 0
		objs.SetHooks(mem.Hooks{BeforePut: func(_ context.Context, key string, _ []byte, _ objstore.PutOptions) error {
			if key == publish.CardKey(f.src.ID) {
				mu.Lock()
				cardPuts++
				mu.Unlock()
			}
			return nil
		}})
		rep, err := f.svc.PublishPending(ctx, 1000)
		if err != nil || rep.Published != n || rep.Failed != 0 {
			t.Fatalf("PublishPending: %+v, %v; want %d published", rep, err, n)
		}
		// Once ahead of the first page, once more when the listings are
		// refreshed with every page on the card.
		if cardPuts > 2 {
			t.Errorf("the card was written %d times, want at most 2", cardPuts)
		}
		rows, err := f.db.SQL().QueryContext(ctx, `SELECT p.id, p.published_generation, s.text FROM pages p JOIN summaries s ON s.id = p.published_summary_id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		pages := 0
		for rows.Next() {
			var id, text string
			var gen int64
			if err := rows.Scan(&id, &gen, &text); err != nil {
				t.Fatal(err)
			}
			pages++
			o := f.mustPageShows(t, id, text, "")
			if o.Generation != gen {
				t.Errorf("page %s: object at generation %d, SQL recorded %d", id, o.Generation, gen)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if pages != n {
			t.Fatalf("%d pages published, want %d", pages, n)
		}
	})
}
