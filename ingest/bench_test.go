package ingest_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// BenchmarkSchedulerSettle runs the daemon's scheduler over due sources
// whose fetch does nothing, so what is measured is the claim → settle
// path alone: claims, fences, settlement, audit rows, wake-ups. It reports
// runs/s (settled, counted when the settlement returned) at 1, 4, 16 and
// 64 workers. The peer comparison with River is in bench/.
//
//	go test ./ingest -run '^$' -bench SchedulerSettle
func BenchmarkSchedulerSettle(b *testing.B) {
	sources := 2000
	if v, err := strconv.Atoi(os.Getenv("TIDEMARK_BENCH_SOURCES")); err == nil && v > 0 {
		sources = v
	}
	for _, be := range sqltest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			db := sqltest.MustOpenURL(b, be.NewURL(b), sqltest.Env{})
			ctx := context.Background()
			for i := 0; i < sources; i++ {
				if _, err := db.Ingest().AddSource(ctx, ingest.NewSource{Name: fmt.Sprintf("s%05d", i), Kind: "noop", Location: "x", Interval: time.Hour, RetryBudget: 3}); err != nil {
					b.Fatal(err)
				}
			}
			for _, workers := range []int{1, 4, 16, 64} {
				b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
					var total time.Duration
					for i := 0; i < b.N; i++ {
						d, err := SettleAllDue(ctx, db, workers, sources)
						if err != nil {
							b.Fatal(err)
						}
						total += d
					}
					b.ReportMetric(float64(sources*b.N)/total.Seconds(), "runs/s")
				})
			}
		})
	}
}

type noopFetcher struct{}

func (noopFetcher) Fetch(_ context.Context, _ tidemark.Source, cursor string) (tidemark.FetchResult, error) {
	return tidemark.FetchResult{Cursor: cursor}, nil
}

// SettleAllDue makes every source due, runs a scheduler with the given
// workers until want runs have settled, and returns how long that took.
func SettleAllDue(ctx context.Context, db *sqlstore.DB, workers, want int) (time.Duration, error) {
	if _, err := db.SQL().ExecContext(ctx, `UPDATE sources SET next_due_at = 0`); err != nil {
		return 0, err
	}
	svc := &ingest.Service{Store: db.Ingest(), Fetchers: ingest.Fetchers{"noop": noopFetcher{}}, Clock: clock.System{},
		Holder: "bench", LeaseTTL: time.Minute}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var settled, failed atomic.Int64
	sc := &ingest.Scheduler{Service: svc, Workers: workers, Poll: time.Second, OnReport: func(r ingest.Report, err error) {
		if err != nil {
			failed.Add(1)
		}
		if settled.Add(1) == int64(want) {
			stop()
		}
	}}
	t0 := time.Now()
	if err := sc.Run(runCtx); err != nil {
		return 0, err
	}
	d := time.Since(t0)
	if n := failed.Load(); n > 0 {
		return d, fmt.Errorf("%d runs failed", n)
	}
	return d, nil
}
