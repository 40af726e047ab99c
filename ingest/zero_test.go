package ingest_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A Service with only its Store and Fetchers set (what a program driving
// ingest directly for a custom source kind writes) runs: the zero Clock,
// Rand, Logger, Retry and Holder are defaults, never a panic after the
// source was claimed.
func TestAServiceWithOnlyItsStoreAndFetchersRuns(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		db := sqltest.MustOpen(t, b, sqltest.NewEnv(7))
		for _, fail := range []bool{false, true} {
			name := map[bool]string{false: "ok", true: "failing"}[fail]
			svc := &ingest.Service{Store: db.Ingest(), Fetchers: ingest.Fetchers{"custom": fetchFunc(func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
				if fail {
					return tidemark.FetchResult{}, tidemark.Unreachable("HTTP 503", 0, nil)
				}
				return tidemark.FetchResult{Items: []tidemark.Item{{Key: "a", Evidence: []byte("a")}}, Cursor: "c1", Declared: 1}, nil
			})}}
			if _, err := svc.Store.AddSource(ctx, ingest.NewSource{Name: name, Kind: "custom", Location: "x-" + name, Interval: time.Hour, RetryBudget: 3}); err != nil {
				t.Fatal(err)
			}
			rep, err := svc.RunSource(ctx, name)
			want := map[bool]tidemark.Outcome{false: tidemark.OutcomeItems, true: tidemark.OutcomeUnreachable}[fail]
			if rep.Outcome != want {
				t.Fatalf("%s: report %+v, %v; want %s", name, rep, err, want)
			}
		}
	})
}
