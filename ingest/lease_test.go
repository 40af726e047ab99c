package ingest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A lease shorter than ingest.MinLeaseTTL is refused before anything is
// claimed: once it made the heartbeat's ticker panic with a run left active.
func TestLeaseTooShortIsRefused(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		fx := newFixture(t, b, func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
			return tidemark.FetchResult{Cursor: "c1"}, nil
		})
		for _, ttl := range []time.Duration{time.Nanosecond, -time.Second, ingest.MinLeaseTTL - 1} {
			fx.svc.LeaseTTL = ttl
			if _, err := fx.svc.RunSource(ctx, fx.src.Name); !errors.Is(err, tidemark.ErrInvalid) {
				t.Errorf("RunSource with lease %s: %v, want ErrInvalid", ttl, err)
			}
			sc := &ingest.Scheduler{Service: fx.svc}
			if _, err := sc.RunOnce(ctx); !errors.Is(err, tidemark.ErrInvalid) {
				t.Errorf("RunOnce with lease %s: %v, want ErrInvalid", ttl, err)
			}
			if err := sc.Run(ctx); !errors.Is(err, tidemark.ErrInvalid) {
				t.Errorf("Run with lease %s: %v, want ErrInvalid", ttl, err)
			}
			src, err := fx.svc.Store.Source(ctx, fx.src.ID)
			if err != nil {
				t.Fatal(err)
			}
			if src.ClaimHolder != "" || src.CursorVersion != fx.src.CursorVersion {
				t.Fatalf("lease %s: the source was claimed or moved: %+v", ttl, src)
			}
		}
		fx.svc.LeaseTTL = ingest.MinLeaseTTL
		if _, err := fx.svc.RunSource(ctx, fx.src.Name); err != nil {
			t.Fatalf("RunSource with the minimum lease: %v", err)
		}
	})
}
