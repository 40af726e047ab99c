package publish_test

import (
	"context"
	"testing"

	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// The Atom feeds carry the wiki's base URL: a service whose base URL
// changed (an operator dropped a credential from it or unset it, or moved
// the wiki) rewrites them on its next listings refresh and sweep, though
// no page changed.
func TestAChangedBaseURLRewritesTheFeeds(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		ev := f.mustEvent(t, "c1", "adds a parser", "evidence")
		s := f.mustAccept(t, ev, "Adds a parser.", "m1")
		f.svc.BaseURL = "https://wiki.example/?token=SEKRET-base-1"
		res, err := f.svc.Publish(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.RefreshListings(ctx); err != nil {
			t.Fatal(err)
		}
		feeds := []string{publish.FeedKey, publish.CardFeedKey(f.src.ID)}
		for _, key := range feeds {
			if o, err := f.objs.Get(ctx, key); err != nil || !contains(o.Body, "SEKRET-base-1") {
				t.Fatalf("%s before: %v\n%s", key, err, o.Body)
			}
		}
		for i, step := range []func(svc *publish.Service) error{
			func(svc *publish.Service) error { _, err := svc.RefreshListings(ctx); return err },
			func(svc *publish.Service) error { _, err := svc.Sweep(ctx); return err },
		} {
			base := []string{"", "https://wiki.example.org/docs/"}[i]
			svc := &publish.Service{Store: f.st, Objects: f.objs, BaseURL: base}
			if err := step(svc); err != nil {
				t.Fatal(err)
			}
			for _, key := range feeds {
				o, err := f.objs.Get(ctx, key)
				link := publish.PageKey(res.PageID) + `"`
				if base != "" {
					link = `href="` + base + link
				}
				if err != nil || contains(o.Body, "SEKRET-base-1") || !contains(o.Body, link) {
					t.Errorf("step %d: %s after the base URL became %s: %v\n%s", i, key, base, err, o.Body)
				}
			}
		}
	})
}
