package ingest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// TestSchedulerShutdownEndsRunsInFlight stops a daemon while fetches are in
// flight: it returns only when every run has been settled or failed, and
// the interrupted runs do not spend their window's budget.
func TestSchedulerShutdownEndsRunsInFlight(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		started := make(chan string, 10)
		fx := newFixture(t, b, func(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
			if src.Name == "quick" {
				return tidemark.FetchResult{Items: []tidemark.Item{{Key: "k", Evidence: []byte("e")}}, Cursor: "c1"}, nil
			}
			started <- src.Name
			<-ctx.Done() // a slow upstream, until shutdown
			return tidemark.FetchResult{}, tidemark.Unreachable("interrupted", 0, ctx.Err())
		})
		ctx := context.Background()
		for _, name := range []string{"slow1", "quick"} {
			if _, err := fx.svc.Store.AddSource(ctx, ingest.NewSource{Name: name, Kind: "test", Location: name, Interval: time.Hour, RetryBudget: 3}); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		var reports []ingest.Report
		sc := &ingest.Scheduler{Service: fx.svc, Workers: 4, Poll: time.Hour, OnReport: func(r ingest.Report, err error) {
			mu.Lock()
			reports = append(reports, r)
			mu.Unlock()
		}}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- sc.Run(runCtx) }()
		<-started // "s" from the fixture
		<-started // "slow1"
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		runs, err := fx.svc.Store.Runs(ctx, ingest.RunFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 3 {
			t.Fatalf("%d runs, want 3", len(runs))
		}
		for _, r := range runs {
			if r.Status == tidemark.RunActive {
				t.Fatalf("run %s of %s still active after shutdown", r.ID, r.SourceName)
			}
		}
		for _, name := range []string{"s", "slow1"} {
			s, _ := fx.svc.Store.Source(ctx, name)
			if s.WindowAttempts != 0 || s.ClaimHolder != "" || s.CursorVersion != 0 {
				t.Fatalf("%s after shutdown: attempts %d, holder %q, version %d", name, s.WindowAttempts, s.ClaimHolder, s.CursorVersion)
			}
		}
		q, _ := fx.svc.Store.Source(ctx, "quick")
		if q.Cursor != "c1" {
			t.Fatalf("quick source not settled: %+v", q)
		}
		if len(reports) != 3 {
			t.Fatalf("%d reports, want 3", len(reports))
		}
	})
}

// claimDueSpy passes every ClaimDue to the store and tells calls what each
// returned.
type claimDueSpy struct {
	ingest.Store
	calls chan []tidemark.Claim
}

func (s claimDueSpy) ClaimDue(ctx context.Context, holder string, ttl time.Duration, limit int, inFlight ...string) ([]tidemark.Claim, error) {
	cs, err := s.Store.ClaimDue(ctx, holder, ttl, limit, inFlight...)
	if err == nil {
		s.calls <- cs
	}
	return cs, err
}

// TestSchedulerReentersItsHoldersRuns starts a daemon under the identity of
// a worker that died holding a run: the daemon re-enters that run at once
// (the same run, not a new one after the lease), and never re-enters a run
// it has in flight itself, which would fetch it twice.
func TestSchedulerReentersItsHoldersRuns(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		release := make(chan struct{})
		var mu sync.Mutex
		fetches := map[string]int{}
		fx := newFixture(t, b, func(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
			mu.Lock()
			fetches[src.Name]++
			mu.Unlock()
			if src.Name == "held" {
				<-release // slow: in flight while the daemon claims again
			}
			return tidemark.FetchResult{Items: []tidemark.Item{{Key: src.Name, Evidence: []byte("e")}}, Cursor: "c1"}, nil
		})
		ctx := context.Background()
		held, err := fx.svc.Store.AddSource(ctx, ingest.NewSource{Name: "held", Kind: "test", Location: "held", Interval: time.Hour, RetryBudget: 3})
		if err != nil {
			t.Fatal(err)
		}
		old, err := fx.svc.Store.Claim(ctx, held.ID, fx.svc.Holder, time.Hour) // the worker that died
		if err != nil {
			t.Fatal(err)
		}
		spy := claimDueSpy{Store: fx.svc.Store, calls: make(chan []tidemark.Claim, 100)}
		fx.svc.Store = spy
		sc := &ingest.Scheduler{Service: fx.svc, Workers: 4, Poll: time.Hour}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- sc.Run(runCtx) }()
		first := <-spy.calls
		var reentered bool
		for _, c := range first {
			if c.SourceID == held.ID {
				reentered = c.Reentered && c.RunID == old.RunID && c.Token == old.Token
			}
		}
		if !reentered || len(first) != 2 {
			t.Fatalf("the daemon's first claim: %+v, want s claimed and held's run %s re-entered", first, old.RunID)
		}
		// s settles, which wakes the daemon to claim again, while held's
		// run is in flight.
		for _, c := range <-spy.calls {
			t.Errorf("claimed %s (run %s, re-entered %v) again while its run was in flight", c.SourceID, c.RunID, c.Reentered)
		}
		close(release)
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		runs, err := fx.svc.Store.Runs(ctx, ingest.RunFilter{SourceID: held.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].ID != old.RunID || runs[0].Status != tidemark.RunSettled {
			t.Fatalf("held's runs %+v, want its one run %s settled", runs, old.RunID)
		}
		if fetches["held"] != 1 {
			t.Fatalf("held fetched %d times, want once", fetches["held"])
		}
	})
}
