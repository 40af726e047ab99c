package sqlstore_test

import (
	"context"
	"testing"

	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/summarize/extractive"
)

// An event's wiki page is found once it is published, and is no page of
// the wiki again once withdrawn (its summary rejected).
func TestPublishedPage(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(1)
		db := sqltest.MustOpen(t, b, env)
		evs := sqltest.MustIngest(t, db, env, "blog", "Post A")
		ps := db.Publish()
		if id, ok, err := ps.PublishedPage(ctx, evs[0].ID); err != nil || ok {
			t.Fatalf("before publishing: %q, %v, %v; want no page", id, ok, err)
		}
		objs := mem.New()
		svc := &publish.Service{Store: ps, Objects: objs}
		if _, err := svc.Summarize(ctx, extractive.Summarizer{}, 10); err != nil {
			t.Fatal(err)
		}
		// Summarized, not yet published: still on no page of the wiki.
		if id, ok, err := ps.PublishedPage(ctx, evs[0].ID); err != nil || ok {
			t.Fatalf("summarized: %q, %v, %v; want no page", id, ok, err)
		}
		if rep, err := svc.PublishPending(ctx, 10); err != nil || rep.Published != 1 {
			t.Fatalf("publish: %+v, %v", rep, err)
		}
		id, ok, err := ps.PublishedPage(ctx, evs[0].ID)
		if err != nil || !ok {
			t.Fatalf("published: %q, %v, %v; want its page", id, ok, err)
		}
		if _, err := objs.Get(ctx, publish.PageKey(id)); err != nil {
			t.Fatalf("the page %s is not in the wiki: %v", id, err)
		}
		// A rejected summary's page is withdrawn from the wiki.
		sum, err := ps.CurrentSummary(ctx, evs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ps.Reject(ctx, sum, "wrong"); err != nil {
			t.Fatal(err)
		}
		if ok, _, err := ps.Withdraw(ctx, id); err != nil || !ok {
			t.Fatalf("withdraw: %v, %v", ok, err)
		}
		if id, ok, err := ps.PublishedPage(ctx, evs[0].ID); err != nil || ok {
			t.Fatalf("withdrawn: %q, %v, %v; want no page", id, ok, err)
		}
		if _, ok, err := ps.PublishedPage(ctx, "no-such-event"); err != nil || ok {
			t.Fatalf("unknown event: %v, %v; want no page, no error", ok, err)
		}
	})
}

// Removing a source takes its pages out of search, every row of them, and
// leaves another source's.
func TestRemovingASourceTakesItsPagesOutOfSearch(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(2)
		db := sqltest.MustOpen(t, b, env)
		sqltest.MustIngest(t, db, env, "gone", "Walrus one", "Walrus two", "Walrus three")
		sqltest.MustIngest(t, db, env, "kept", "Walrus kept")
		svc := &publish.Service{Store: db.Publish(), Objects: mem.New()}
		if _, err := svc.Summarize(ctx, extractive.Summarizer{}, 10); err != nil {
			t.Fatal(err)
		}
		if rep, err := svc.PublishPending(ctx, 10); err != nil || rep.Published != 4 {
			t.Fatalf("publish: %+v, %v", rep, err)
		}
		searchRows := func() int {
			t.Helper()
			q := `SELECT COUNT(*) FROM page_search`
			if b.Name == "sqlite" {
				q = `SELECT (SELECT COUNT(*) FROM page_search) + (SELECT COUNT(*) FROM page_search_rows)`
			}
			var n int
			if err := db.SQL().QueryRowContext(ctx, q).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := searchRows()
		if _, err := db.Ingest().RemoveSource(ctx, "gone", "ada", true); err != nil {
			t.Fatal(err)
		}
		if after := searchRows(); after != before/4 {
			t.Errorf("search holds %d rows after the removal, want %d (the kept page's)", after, before/4)
		}
		res, err := db.Publish().Search(ctx, publish.SearchQuery{Terms: []string{"walrus"}, Limit: 10})
		if err != nil || len(res.Hits) != 1 {
			t.Fatalf("search after the removal: %+v %v, want the kept page only", res, err)
		}
	})
}
