package ingest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/internal/fieldtext"
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
		d, err := ingest.SourceDetail(ctx, fx.svc.Store, "s", 10, fx.env.Clock.Now())
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

// A worker that could not serve a source does not claim it again until its
// record expires (UnservedFor) or the source's settings change, while
// other workers take it; a run it then serves clears its record.
func TestCannotServeIsNotReclaimed(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		serve := false
		fx := newFixture(t, b, func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
			if !serve {
				return tidemark.FetchResult{}, tidemark.CannotServe("directory /mnt/feeds not found on this worker", nil)
			}
			return tidemark.FetchResult{Cursor: "c1"}, nil
		})
		fx.svc.UnservedFor = 2 * time.Hour
		w1 := &ingest.Scheduler{Service: fx.svc, Workers: 1}
		able := &ingest.Scheduler{Workers: 1, Service: &ingest.Service{Store: fx.svc.Store, Clock: fx.env.Clock, Rand: fx.env.Rand,
			Holder: "w2", LeaseTTL: time.Minute, Fetchers: ingest.Fetchers{"test": fetchFunc(func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
				return tidemark.FetchResult{Cursor: "c1"}, nil
			})}}}
		// runs counts the runs a pass made; a source passed over is
		// reported, as cannot serve, but not run.
		runs := func(sc *ingest.Scheduler) int {
			t.Helper()
			reps, err := sc.RunOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range reps {
				if r.RunID != "" {
					n++
				} else if !strings.Contains(r.Error, "passed over") {
					t.Fatalf("a source not run: %+v", r)
				}
			}
			return n
		}
		if n := runs(w1); n != 1 {
			t.Fatalf("w1 ran %d, want its one failed run", n)
		}
		start := fx.env.Clock.Now()
		until := func() time.Time {
			t.Helper()
			us, err := fx.svc.Store.Unserved(ctx, fx.src.ID)
			if err != nil || len(us) != 1 {
				t.Fatalf("unserved %+v %v", us, err)
			}
			return us[0].Until
		}
		expiry := until()
		// Due again soon for any worker, but not for w1, however often it
		// looks, until its record expires.
		for fx.env.Clock.Now().Add(10 * time.Second).Before(expiry) {
			fx.env.Clock.Advance(10 * time.Second)
			if n := runs(w1); n != 0 {
				t.Fatalf("w1 claimed the source it could not serve again after %s", fx.env.Clock.Now().Sub(start))
			}
		}
		if at, ok, err := fx.svc.Store.NextDue(ctx, "w1"); err != nil || !ok || at.Before(expiry) {
			t.Fatalf("w1's next due %v %v %v, want no earlier than its record expires (%v)", at, ok, err, expiry)
		}
		// Another worker serves it once it is due.
		if s, _ := fx.svc.Store.Source(ctx, "s"); s.NextDueAt.After(fx.env.Clock.Now()) {
			fx.env.Clock.Advance(s.NextDueAt.Sub(fx.env.Clock.Now()))
		}
		if n := runs(able); n != 1 {
			t.Fatalf("the able worker ran %d", n)
		}
		// Past the expiry (and the source's next due), w1 tries again; it
		// still cannot serve it, and leaves it alone twice as long.
		fx.env.Clock.Advance(expiry.Sub(fx.env.Clock.Now()) + 10*time.Minute)
		at := fx.env.Clock.Now()
		if n := runs(w1); n != 1 {
			t.Fatalf("w1 ran %d after its record expired, want 1", n)
		}
		if got, want := until().Sub(at), 2*expiry.Sub(start); got != want {
			t.Fatalf("the second hold is %s, want %s", got, want)
		}
		if n := runs(w1); n != 0 {
			t.Fatal("w1 claimed again at once")
		}
		// The source's settings change: w1 may try at once, and now serves it.
		allow := true
		if _, err := fx.svc.Store.Set(ctx, "s", ingest.Settings{AllowPrivate: &allow}, "ops"); err != nil {
			t.Fatal(err)
		}
		fx.env.Clock.Advance(10 * time.Minute) // due again (the first backoff)
		serve = true
		if n := runs(w1); n != 1 {
			t.Fatalf("w1 ran %d after the source changed, want 1", n)
		}
		d, err := ingest.SourceDetail(ctx, fx.svc.Store, "s", 10, fx.env.Clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(d.UnservedBy) != 0 {
			t.Fatalf("unserved by %+v after w1 served the source", d.UnservedBy)
		}
	})
}

// A worker leaves a source it could not serve for a hold that starts at
// the first backoff and doubles with each failure in a row, up to
// UnservedFor (src.md #11): on a one-worker install, a directory that was
// gone for a few seconds (an unmount blip, a sync tool swapping it) is
// watched again within minutes, not after an hour, while a worker that
// keeps failing soon leaves the source to others for the whole hour.
func TestCannotServeHoldGrowsFromTheFirstBackoff(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		serve := false
		fx := newFixture(t, b, func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
			if !serve {
				return tidemark.FetchResult{}, tidemark.CannotServe("directory /srv/d10 not found on this worker", nil)
			}
			return tidemark.FetchResult{Cursor: "c1"}, nil
		})
		w1 := &ingest.Scheduler{Service: fx.svc, Workers: 1}
		ran := func() int {
			t.Helper()
			reps, err := w1.RunOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range reps {
				if r.RunID != "" {
					n++
				}
			}
			return n
		}
		hold := func() time.Duration {
			t.Helper()
			us, err := fx.svc.Store.Unserved(ctx, fx.src.ID)
			if err != nil || len(us) != 1 {
				t.Fatalf("unserved %+v %v", us, err)
			}
			return us[0].Until.Sub(us[0].At)
		}
		if ran() != 1 {
			t.Fatal("the first run")
		}
		first := hold()
		if first <= 0 || first > 5*time.Minute {
			t.Fatalf("the first hold is %s, want the first backoff", first)
		}
		// The directory is back: the one worker reads it once the hold
		// (and the backoff) have passed.
		serve = true
		fx.env.Clock.Advance(first + 5*time.Minute)
		if n := ran(); n != 1 {
			t.Fatalf("after the first hold the worker ran %d, want 1", n)
		}
		if s, _ := fx.svc.Store.Source(ctx, "s"); s.LastOutcome != tidemark.OutcomeEmpty {
			t.Fatalf("last outcome %s", s.LastOutcome)
		}

		// Failures in a row double the hold, up to UnservedFor.
		serve = false
		fx.env.Clock.Advance(time.Hour)
		prev := time.Duration(0)
		for i := range 12 {
			if n := ran(); n != 1 {
				t.Fatalf("failure %d: ran %d", i, n)
			}
			h := hold()
			if h > ingest.DefaultUnservedFor || (prev > 0 && h != min(2*prev, ingest.DefaultUnservedFor)) {
				t.Fatalf("failure %d: hold %s after %s", i, h, prev)
			}
			prev = h
			fx.env.Clock.Advance(h + 6*time.Hour) // past the hold and any backoff
		}
		if prev != ingest.DefaultUnservedFor {
			t.Fatalf("after 12 failures in a row the hold is %s, want %s", prev, ingest.DefaultUnservedFor)
		}
	})
}

// A worker's hold that outlasts the source's next due time is when that
// worker will next try it: source show's and the listing's next try is
// the hold's end, with the worker and its reason, and the text says so
// beside next due; a hold that ends before the due time, or has ended,
// changes nothing.
func TestHoldPastDueIsTheNextTry(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		fx := newFixture(t, b, func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
			return tidemark.FetchResult{}, tidemark.CannotServe("directory /srv/d11 not found on this worker", nil)
		})
		w1 := &ingest.Scheduler{Service: fx.svc, Workers: 1}
		// Two failures in a row: the second hold is twice the first
		// backoff, so it ends after the source is due again.
		for i := range 2 {
			if i > 0 {
				us, _ := fx.svc.Store.Unserved(ctx, fx.src.ID)
				fx.env.Clock.Advance(us[0].Until.Sub(fx.env.Clock.Now()) + time.Second)
			}
			if reps, err := w1.RunOnce(ctx); err != nil || len(reps) != 1 || reps[0].RunID == "" {
				t.Fatalf("run %d: %+v %v", i, reps, err)
			}
		}
		now := fx.env.Clock.Now()
		us, err := fx.svc.Store.Unserved(ctx, fx.src.ID)
		if err != nil || len(us) != 1 {
			t.Fatalf("unserved %+v %v", us, err)
		}
		hold := us[0]
		d, err := ingest.SourceDetail(ctx, fx.svc.Store, "s", 10, now)
		if err != nil {
			t.Fatal(err)
		}
		if !hold.Until.After(d.NextDueAt) {
			t.Fatalf("the hold ends %v, not after next due %v: the test needs one that does", hold.Until, d.NextDueAt)
		}
		at, why, ok := d.NextTry()
		if !ok || !at.Equal(hold.Until) || !strings.Contains(why, "w1") || !strings.Contains(why, "/srv/d11") {
			t.Fatalf("source show's next try %v %v %q, want %v by w1's hold", at, ok, why, hold.Until)
		}
		list, err := ingest.ListSources(ctx, fx.svc.Store, now)
		if err != nil || len(list) != 1 {
			t.Fatalf("list %+v %v", list, err)
		}
		if lat, lwhy, _ := list[0].NextTry(); !lat.Equal(at) || lwhy != why {
			t.Fatalf("the listing's next try %v %q, source show's %v %q", lat, lwhy, at, why)
		}
		var text strings.Builder
		if err := d.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"next due:      " + fieldtext.Day(hold.Until), "worker w1 could not serve it",
			"may take it from its next due time, " + fieldtext.Day(d.NextDueAt)} {
			if !strings.Contains(text.String(), want) {
				t.Errorf("source show lacks %q:\n%s", want, text.String())
			}
		}
		text.Reset()
		if err := list.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if want := fieldtext.Day(hold.Until) + " (w1 holds off)"; !strings.Contains(text.String(), want) {
			t.Errorf("source list lacks %q:\n%s", want, text.String())
		}
		// Once the hold has ended, the next try is the schedule again.
		later := hold.Until.Add(time.Second)
		list, err = ingest.ListSources(ctx, fx.svc.Store, later)
		if err != nil {
			t.Fatal(err)
		}
		if lat, _, _ := list[0].NextTry(); !lat.Equal(list[0].NextDueAt) {
			t.Fatalf("after the hold the next try is %v, want next due %v", lat, list[0].NextDueAt)
		}
	})
}
