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

// resolvingFetcher checks skip targets: only "c*" cursors exist, and
// "c" resolves to its long form.
type resolvingFetcher struct{ fetchFunc }

func (resolvingFetcher) ResolveCursor(_ context.Context, _ tidemark.Source, to string) (string, error) {
	if to == "c" {
		return "c-full", nil
	}
	return "", tidemark.Invalidf("--to", to, "no such cursor")
}

// A skip target is checked by the kind: a refused one moves nothing, an
// accepted one moves the cursor to what it resolved to.
func TestSkipChecksTheTargetWithTheKind(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		env := sqltest.NewEnv(7)
		db := sqltest.MustOpen(t, b, env)
		svc := &ingest.Service{Store: db.Ingest(), Fetchers: ingest.Fetchers{"test": resolvingFetcher{}}, Clock: env.Clock, Rand: env.Rand, Holder: "w1"}
		if _, err := svc.Store.AddSource(ctx, ingest.NewSource{Name: "s", Kind: "test", Location: "x", Interval: time.Minute, RetryBudget: 3}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Skip(ctx, "s", "nope", "op", ""); !errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("skip to a refused target: %v", err)
		}
		if src, err := svc.Store.Source(ctx, "s"); err != nil || src.Cursor != "" || src.CursorVersion != 0 {
			t.Fatalf("a refused skip moved the cursor: %+v %v", src, err)
		}
		src, err := svc.Skip(ctx, "s", "c", "op", "")
		if err != nil || src.Cursor != "c-full" {
			t.Fatalf("skip to c: %+v %v", src, err)
		}
	})
}
