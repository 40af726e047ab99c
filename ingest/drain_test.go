package ingest_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// backlogFetch serves a history of n items per source name in windows of
// size, saying More while a window was full and more lies beyond it.
func backlogFetch(n map[string]int, size int) fetchFunc {
	return func(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
		total, ok := n[src.Name]
		switch {
		case src.Name == "down":
			return tidemark.FetchResult{}, tidemark.Unreachable("HTTP 503", 0, nil)
		case src.Name == "stuck":
			// A broken fetcher: "more", but the cursor never moves.
			return tidemark.FetchResult{Cursor: cursor, More: true}, nil
		case !ok:
			return tidemark.FetchResult{Cursor: cursor}, nil
		}
		at := 0
		if cursor != "" {
			at, _ = strconv.Atoi(cursor)
		}
		end := min(at+size, total)
		var items []tidemark.Item
		for i := at; i < end; i++ {
			items = append(items, tidemark.Item{Key: fmt.Sprint(i), Evidence: []byte(fmt.Sprint(i))})
		}
		return tidemark.FetchResult{Items: items, Cursor: fmt.Sprint(end), Declared: len(items), More: end < total}, nil
	}
}

func addSources(t *testing.T, st ingest.Store, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := st.AddSource(context.Background(), ingest.NewSource{Name: name, Kind: "test", Location: name, Interval: time.Hour, RetryBudget: 3}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBacklogIsNotASchedule: a run that filled its window leaves its
// source due at once; one that caught up waits its interval.
func TestBacklogIsNotASchedule(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		fx := newFixture(t, b, backlogFetch(map[string]int{"s": 5}, 3))
		rep, err := fx.svc.RunSource(ctx, "s")
		if err != nil || !rep.Backlog || rep.CursorAfter != "3" {
			t.Fatalf("first window: %+v %v", rep, err)
		}
		src, _ := fx.svc.Store.Source(ctx, "s")
		if now := fx.env.Clock.Now(); !src.NextDueAt.Equal(now.Truncate(time.Millisecond)) {
			t.Fatalf("after a full window: due %s, want now (%s)", src.NextDueAt, now)
		}
		rep, err = fx.svc.RunSource(ctx, "s")
		if err != nil || rep.Backlog || rep.CursorAfter != "5" {
			t.Fatalf("last window: %+v %v", rep, err)
		}
		src, _ = fx.svc.Store.Source(ctx, "s")
		if want := fx.env.Clock.Now().Add(src.Interval.Std()); !src.NextDueAt.Equal(want.Truncate(time.Millisecond)) {
			t.Fatalf("caught up: due %s, want %s", src.NextDueAt, want)
		}
	})
}

// TestDrainCatchesUp: one drain reads every backlog to its end, runs a
// failing or stuck source once, and stops at its bound.
func TestDrainCatchesUp(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		fx := newFixture(t, b, backlogFetch(map[string]int{"s": 2, "big": 10, "other": 7}, 3))
		addSources(t, fx.svc.Store, "big", "other", "down", "stuck")
		sc := &ingest.Scheduler{Service: fx.svc, Workers: 2}
		res, err := sc.Drain(ctx, ingest.DrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		perSource := map[string]int{}
		for _, r := range res.Reports {
			perSource[r.Source]++
		}
		want := map[string]int{"s": 1, "big": 4, "other": 3, "down": 1, "stuck": 1}
		if fmt.Sprint(perSource) != fmt.Sprint(want) {
			t.Fatalf("runs per source %v, want %v", perSource, want)
		}
		if res.Runs != 10 || res.Settled != 9 || res.Failed != 1 || res.Pending != 0 || res.EventsNew != 19 {
			t.Fatalf("counts: %+v", res)
		}
		for name, n := range map[string]string{"big": "10", "other": "7", "s": "2"} {
			if src, _ := fx.svc.Store.Source(ctx, name); src.Cursor != n {
				t.Fatalf("%s: cursor %q, want %q", name, src.Cursor, n)
			}
		}
		// Nothing is due now: a second drain runs nothing.
		res, err = sc.Drain(ctx, ingest.DrainOptions{})
		if err != nil || len(res.Reports) != 0 {
			t.Fatalf("second drain: %+v %v", res, err)
		}
	})
}

func TestDrainStopsAtMaxPasses(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		fx := newFixture(t, b, backlogFetch(map[string]int{"s": 10}, 3))
		sc := &ingest.Scheduler{Service: fx.svc, Workers: 1}
		res, err := sc.Drain(ctx, ingest.DrainOptions{MaxPasses: 2})
		if err != nil {
			t.Fatal(err)
		}
		if res.Runs != 2 || res.Pending != 1 {
			t.Fatalf("counts: %+v", res)
		}
		if src, _ := fx.svc.Store.Source(ctx, "s"); src.Cursor != "6" {
			t.Fatalf("cursor %q, want 6", src.Cursor)
		}
	})
}

// TestDrainPassesOverWhatIsNeverDue: a paused source and a terminal
// window are not due whatever their next due time says (Source.DueAt), so
// a drain does not run them, nor report them refused.
func TestDrainPassesOverWhatIsNeverDue(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		fetch := backlogFetch(map[string]int{"s": 1}, 3)
		fx := newFixture(t, b, func(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
			if src.Name == "broken" {
				return tidemark.FetchResult{}, tidemark.Unusable("not a feed", nil)
			}
			return fetch(ctx, src, cursor)
		})
		addSources(t, fx.svc.Store, "paused")
		if _, err := fx.svc.Store.AddSource(ctx, ingest.NewSource{Name: "broken", Kind: "test", Location: "broken", Interval: time.Hour, RetryBudget: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := fx.svc.Store.SetState(ctx, "paused", tidemark.SourcePaused, "op"); err != nil {
			t.Fatal(err)
		}
		sc := &ingest.Scheduler{Service: fx.svc, Workers: 2}
		if _, err := sc.Drain(ctx, ingest.DrainOptions{}); err != nil {
			t.Fatal(err)
		}
		if src, _ := fx.svc.Store.Source(ctx, "broken"); src.Window != tidemark.WindowTerminal {
			t.Fatalf("broken: window %s, want terminal", src.Window)
		}
		fx.env.Clock.Advance(24 * time.Hour) // past every next due time
		for _, name := range []string{"paused", "broken"} {
			if src, _ := fx.svc.Store.Source(ctx, name); src.NextDueAt.After(fx.env.Clock.Now()) {
				t.Fatalf("%s: due %s, not past", name, src.NextDueAt)
			}
		}
		res, err := sc.Drain(ctx, ingest.DrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ran []string
		for _, r := range res.Reports {
			ran = append(ran, r.Source)
		}
		if fmt.Sprint(ran) != "[s]" {
			t.Fatalf("the drain ran %v, want [s]", ran)
		}
	})
}

// TestDrainCountsTheRunsAlreadyGiven: a source this pass already ran
// (run --once --track) gets only what is left of MaxPasses, and one that
// used them all is pending, not run again.
func TestDrainCountsTheRunsAlreadyGiven(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		fx := newFixture(t, b, backlogFetch(map[string]int{"s": 10, "t": 10, "u": 10}, 3))
		addSources(t, fx.svc.Store, "t", "u")
		ran := map[string]int{}
		for _, name := range []string{"s", "t"} {
			rep, err := fx.svc.RunSource(ctx, name)
			if err != nil || !rep.Backlog {
				t.Fatalf("%s: %+v %v", name, rep, err)
			}
			src, _ := fx.svc.Store.Source(ctx, name)
			ran[src.ID]++
		}
		t2, _ := fx.svc.Store.Source(ctx, "t")
		ran[t2.ID]++ // as if t had had two runs already
		sc := &ingest.Scheduler{Service: fx.svc, Workers: 1}
		res, err := sc.Drain(ctx, ingest.DrainOptions{MaxPasses: 2, Ran: ran})
		if err != nil {
			t.Fatal(err)
		}
		perSource := map[string]int{}
		for _, r := range res.Reports {
			perSource[r.Source]++
		}
		if want := map[string]int{"s": 1, "u": 2}; fmt.Sprint(perSource) != fmt.Sprint(want) {
			t.Fatalf("runs per source %v, want %v", perSource, want)
		}
		if res.Pending != 3 {
			t.Fatalf("pending %d, want 3 (each still has a backlog after its runs)", res.Pending)
		}
	})
}
