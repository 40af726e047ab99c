package ingest_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A worker that cannot serve a source (its fetcher says so, or it has no
// fetcher for the kind) records error, spends none of the window's budget
// however often it tries, leaves the source due soon for other workers, and
// is listed among those that could not serve it; a worker that can serve
// it then reads it.
func TestCannotServeSpendsNoBudget(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		fx := newFixture(t, b, func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
			return tidemark.FetchResult{}, tidemark.CannotServe("directory /mnt/feeds not found on this worker", nil)
		})
		unbuilt := &ingest.Service{Store: fx.svc.Store, Fetchers: ingest.Fetchers{}, Clock: fx.env.Clock, Rand: fx.env.Rand,
			Holder: "w2", LeaseTTL: time.Minute}
		for i := range 5 { // more than the budget of 3
			svc := fx.svc
			if i%2 == 1 {
				svc = unbuilt
			}
			rep, err := svc.RunSource(ctx, "s")
			if !ingest.IsRunFailed(err) || rep.Outcome != tidemark.OutcomeError {
				t.Fatalf("run %d: %+v %v, want a failed run with outcome error", i, rep, err)
			}
			s, _ := fx.svc.Store.Source(ctx, "s")
			if s.WindowAttempts != 0 || s.Window != tidemark.WindowOpen || s.ClaimHolder != "" {
				t.Fatalf("run %d spent the budget: attempts %d, window %s, holder %q", i, s.WindowAttempts, s.Window, s.ClaimHolder)
			}
			if wait := s.NextDueAt.Sub(fx.env.Clock.Now()); wait <= 0 || wait > time.Minute {
				t.Fatalf("run %d: due again in %s, want soon, for other workers", i, wait)
			}
			fx.env.Clock.Advance(time.Minute)
		}
		d, err := ingest.SourceDetail(ctx, fx.svc.Store, "s", 10)
		if err != nil {
			t.Fatal(err)
		}
		holders := map[string]string{}
		for _, u := range d.UnservedBy {
			holders[u.Holder] = u.Reason
		}
		if len(holders) != 2 || holders["w1"] == "" || holders["w2"] == "" {
			t.Fatalf("unserved by %+v, want w1 and w2", d.UnservedBy)
		}

		// A worker that can serve it reads it.
		able := &ingest.Service{Store: fx.svc.Store, Clock: fx.env.Clock, Rand: fx.env.Rand, Holder: "w3", LeaseTTL: time.Minute,
			Fetchers: ingest.Fetchers{"test": fetchFunc(func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
				return tidemark.FetchResult{Cursor: "c1", Items: []tidemark.Item{{Key: "k", Title: "t", OccurredAt: fx.env.Clock.Now(), Evidence: []byte("e")}}}, nil
			})}}
		if rep, err := able.RunSource(ctx, "s"); err != nil || rep.Outcome != tidemark.OutcomeItems {
			t.Fatalf("the able worker: %+v %v", rep, err)
		}
	})
}
