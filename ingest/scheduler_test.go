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
