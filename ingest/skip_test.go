package ingest_test

import (
	"context"
	"errors"
	"strings"
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

// unreadableFetcher cannot read its source: its head and any skip target
// fail as the fetch would (a branch gone, a remote down).
type unreadableFetcher struct {
	fetchFunc
	err error
}

func (f unreadableFetcher) Head(context.Context, tidemark.Source) (string, error) { return "", f.err }
func (f unreadableFetcher) ResolveCursor(context.Context, tidemark.Source, string) (string, error) {
	return "", f.err
}

// A skip whose kind cannot read the source (its head, or the target's
// place in it) says so as the source's trouble, never as an internal
// error, and moves nothing.
func TestSkipOfAnUnreadableSource(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		env := sqltest.NewEnv(7)
		db := sqltest.MustOpen(t, b, env)
		for _, tc := range []struct {
			name string
			err  error
		}{
			{"invalid", tidemark.Unusable("branch HEAD not found", errors.New("fatal: Needed a single revision"))},
			{"unreachable", tidemark.Unreachable("git could not fetch x", 0, errors.New("early EOF"))},
			{"cannot serve", tidemark.CannotServe("repository x not found on this worker", nil)},
		} {
			svc := &ingest.Service{Store: db.Ingest(), Fetchers: ingest.Fetchers{"test": unreadableFetcher{err: tc.err}},
				Clock: env.Clock, Rand: env.Rand, Holder: "w1"}
			src, err := svc.Store.AddSource(ctx, ingest.NewSource{Name: "s-" + strings.ReplaceAll(tc.name, " ", "-"), Kind: "test",
				Location: "x" + tc.name, Interval: time.Minute, RetryBudget: 3})
			if err != nil {
				t.Fatal(err)
			}
			for _, to := range []string{"", "c"} {
				_, err := svc.Skip(ctx, src.Name, to, "op", "")
				if code := tidemark.ExitCode(err); code != tidemark.ExitUnavailable {
					t.Errorf("%s, --to %q: exit %d (%v), want %d", tc.name, to, code, err, tidemark.ExitUnavailable)
				}
				if txt := tidemark.Text(err); !strings.Contains(txt, "cannot read the source") || !strings.Contains(txt, tc.err.Error()) {
					t.Errorf("%s, --to %q: %q: want what could not be read and why", tc.name, to, txt)
				}
			}
			if after, err := svc.Store.Source(ctx, src.ID); err != nil || after.CursorVersion != 0 {
				t.Fatalf("%s: cursor moved: %+v %v", tc.name, after, err)
			}
		}
	})
}
