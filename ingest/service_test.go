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

// fetchFunc adapts a function to tidemark.Fetcher.
type fetchFunc func(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error)

func (f fetchFunc) Fetch(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
	return f(ctx, src, cursor)
}

type fixture struct {
	svc *ingest.Service
	env sqltest.Env
	src tidemark.Source
}

func newFixture(t *testing.T, b sqltest.Backend, f fetchFunc) fixture {
	t.Helper()
	env := sqltest.NewEnv(7)
	db := sqltest.MustOpen(t, b, env)
	svc := &ingest.Service{
		Store: db.Ingest(), Fetchers: ingest.Fetchers{"test": f}, Clock: env.Clock, Rand: env.Rand,
		Holder: "w1", LeaseTTL: time.Minute, Retry: &ingest.RetryPolicy{Base: time.Minute, CapFloor: 5 * time.Minute, CapFactor: 4, CapMax: 6 * time.Hour,
			Span: 24 * time.Hour, Short: ingest.Backoff{Base: time.Minute, Max: time.Hour}},
	}
	src, err := svc.Store.AddSource(context.Background(), ingest.NewSource{Name: "s", Kind: "test", Location: "x", Interval: 10 * time.Minute, RetryBudget: 3})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{svc, env, src}
}

func TestRunOutcomes(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		cases := []struct {
			name    string
			fetch   fetchFunc
			outcome tidemark.Outcome
			advance bool
		}{
			{"items", func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
				return tidemark.FetchResult{Items: []tidemark.Item{{Key: "a", Evidence: []byte("a")}}, Cursor: "c1", Declared: 1}, nil
			}, tidemark.OutcomeItems, true},
			{"empty", func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
				return tidemark.FetchResult{Cursor: "c1"}, nil
			}, tidemark.OutcomeEmpty, true},
			{"unreachable", func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
				return tidemark.FetchResult{}, tidemark.Unreachable("HTTP 503", 0, nil)
			}, tidemark.OutcomeUnreachable, false},
			{"invalid", func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
				return tidemark.FetchResult{}, tidemark.Unusable("empty body", nil)
			}, tidemark.OutcomeInvalid, false},
			{"our error", func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
				return tidemark.FetchResult{}, errors.New("disk full")
			}, tidemark.OutcomeError, false},
			{"declared more than admitted", func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
				items := make([]tidemark.Item, 40)
				for i := range items {
					items[i] = tidemark.Item{Key: string(rune('A' + i)), Evidence: []byte{byte(i)}}
				}
				return tidemark.FetchResult{Items: items, Cursor: "c50", Declared: 50}, nil
			}, tidemark.OutcomeInvalid, false},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				fx := newFixture(t, b, tc.fetch)
				rep, err := fx.svc.RunSource(ctx, fx.src.Name)
				if tc.advance != (err == nil) {
					t.Fatalf("err = %v", err)
				}
				if err != nil && !ingest.IsRunFailed(err) {
					t.Fatalf("a recorded failure should be a RunFailedError, got %v", err)
				}
				if rep.Outcome != tc.outcome {
					t.Fatalf("outcome %s, want %s", rep.Outcome, tc.outcome)
				}
				s, _ := fx.svc.Store.Source(ctx, fx.src.ID)
				moved := s.CursorVersion != 0
				if moved != tc.advance {
					t.Fatalf("cursor moved = %v (now %q v%d), want %v", moved, s.Cursor, s.CursorVersion, tc.advance)
				}
				if s.LastOutcome != tc.outcome {
					t.Fatalf("source shows %s, want %s", s.LastOutcome, tc.outcome)
				}
				evs, _ := fx.svc.Store.Events(ctx, ingest.EventFilter{SourceID: fx.src.ID})
				if !tc.advance && len(evs) != 0 {
					t.Fatalf("a failed run stored %d events", len(evs))
				}
				if !tc.advance {
					wait := s.NextDueAt.Sub(fx.env.Clock.Now())
					lo := 30 * time.Second // equal jitter on the short path
					if tc.outcome == tidemark.OutcomeUnreachable {
						lo = time.Second // full jitter for an outage
					}
					if wait < lo || wait >= time.Minute {
						t.Fatalf("next attempt in %s, want within the first backoff step [%s, 1m)", wait, lo)
					}
				}
			})
		}
	})
}

func TestRetryAfterIsHonoured(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		fx := newFixture(t, b, func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
			return tidemark.FetchResult{}, tidemark.Unreachable("HTTP 429", 3*time.Hour, nil)
		})
		_, err := fx.svc.RunSource(context.Background(), "s")
		if !ingest.IsRunFailed(err) {
			t.Fatal(err)
		}
		s, _ := fx.svc.Store.Source(context.Background(), "s")
		if got := s.NextDueAt.Sub(fx.env.Clock.Now()); got != 3*time.Hour {
			t.Fatalf("next due in %s, want the upstream's Retry-After of 3h", got)
		}
	})
}

func TestShutdownDoesNotSpendBudget(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx, cancel := context.WithCancel(context.Background())
		fx := newFixture(t, b, func(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
			cancel() // the worker is told to stop while fetching
			<-ctx.Done()
			return tidemark.FetchResult{}, tidemark.Unreachable("interrupted", 0, ctx.Err())
		})
		_, err := fx.svc.RunSource(ctx, "s")
		if !ingest.IsRunFailed(err) {
			t.Fatalf("err = %v", err)
		}
		s, _ := fx.svc.Store.Source(context.Background(), "s")
		if s.WindowAttempts != 0 || s.ClaimHolder != "" || s.CursorVersion != 0 {
			t.Fatalf("after shutdown: attempts %d, holder %q, version %d", s.WindowAttempts, s.ClaimHolder, s.CursorVersion)
		}
		// A clean stop says nothing of the source: never run, it is new.
		if s.LastOutcome != "" || s.Health() != "new" {
			t.Fatalf("after shutdown: last outcome %q, health %q, want none and new", s.LastOutcome, s.Health())
		}
		runs, _ := fx.svc.Store.Runs(context.Background(), ingest.RunFilter{})
		if len(runs) != 1 || runs[0].Status != tidemark.RunFailed {
			t.Fatalf("runs = %+v: the interrupted run must be ended, not left active", runs)
		}
	})
}

// TestOutagesAreNotTerminal: an unreachable upstream spends its budget
// without going terminal until its failures have lasted the policy's span;
// an invalid answer keeps the short path and is terminal at its budget.
func TestOutagesAreNotTerminal(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		fx := newFixture(t, b, func(_ context.Context, src tidemark.Source, _ string) (tidemark.FetchResult, error) {
			if src.Name == "bad" {
				return tidemark.FetchResult{}, tidemark.Unusable("empty body", nil)
			}
			return tidemark.FetchResult{}, tidemark.Unreachable("connection refused", 0, nil)
		})
		addSources(t, fx.svc.Store, "bad")
		start := fx.env.Clock.Now()
		sc := &ingest.Scheduler{Service: fx.svc, Workers: 2}
		for i := 0; ; i++ {
			if _, err := sc.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			s, _ := fx.svc.Store.Source(ctx, "s")
			if s.FailingSince == nil || !s.FailingSince.Equal(start.Truncate(time.Millisecond)) {
				t.Fatalf("failing since %v, want the first failure at %s", s.FailingSince, start)
			}
			failing := fx.env.Clock.Now().Sub(start)
			if s.Window == tidemark.WindowTerminal {
				if failing < 24*time.Hour || s.WindowAttempts < 3 {
					t.Fatalf("terminal after %d attempts over %s: want the budget spent over at least 24h", s.WindowAttempts, failing)
				}
				break
			}
			if i > 500 {
				t.Fatalf("still open after %d attempts over %s", s.WindowAttempts, failing)
			}
			if bad, _ := fx.svc.Store.Source(ctx, "bad"); (bad.Window == tidemark.WindowTerminal) != (bad.WindowAttempts >= 3) {
				t.Fatalf("invalid: window %s after %d attempts with a budget of 3", bad.Window, bad.WindowAttempts)
			}
			fx.env.Clock.Set(s.NextDueAt)
		}
		reps, err := sc.RunOnce(ctx)
		if err != nil || len(reps) != 0 {
			t.Fatalf("a terminal window was run: %+v %v", reps, err)
		}
		// The operator's retry reopens it with a fresh budget and span.
		if _, err := fx.svc.Store.Retry(ctx, "s", "op", ""); err != nil {
			t.Fatal(err)
		}
		if s, _ := fx.svc.Store.Source(ctx, "s"); s.FailingSince != nil || s.WindowAttempts != 0 {
			t.Fatalf("after retry: failing since %v, %d attempts", s.FailingSince, s.WindowAttempts)
		}
	})
}

func TestBackoffDelay(t *testing.T) {
	b := ingest.Backoff{Base: time.Second, Max: time.Minute}
	for attempt := 1; attempt <= 12; attempt++ {
		full := time.Second << (attempt - 1)
		if full > time.Minute {
			full = time.Minute
		}
		lo, hi := b.Delay(attempt, 0, 0), b.Delay(attempt, 0.999999, 0)
		if lo != full/2 || hi >= full || hi < lo {
			t.Fatalf("attempt %d: delays [%s, %s], want [%s, %s)", attempt, lo, hi, full/2, full)
		}
	}
	if got := b.Delay(1, 0.5, 10*time.Minute); got != 10*time.Minute {
		t.Fatalf("Retry-After ignored: %s", got)
	}
	if got := b.Delay(1, 0.5, 1000*time.Hour); got != 24*time.Hour {
		t.Fatalf("Retry-After not bounded: %s", got)
	}
}

func TestFetchTimeoutIsUnreachable(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		fx := newFixture(t, b, func(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
			<-ctx.Done() // an upstream that never answers
			return tidemark.FetchResult{}, ctx.Err()
		})
		fx.svc.FetchTimeout = time.Millisecond
		rep, err := fx.svc.RunSource(context.Background(), "s")
		if !ingest.IsRunFailed(err) || rep.Outcome != tidemark.OutcomeUnreachable {
			t.Fatalf("a fetch past its timeout: outcome %s, err %v; want unreachable", rep.Outcome, err)
		}
		s, _ := fx.svc.Store.Source(context.Background(), "s")
		if s.CursorVersion != 0 || s.WindowAttempts != 1 {
			t.Fatalf("after a timeout: version %d, attempts %d", s.CursorVersion, s.WindowAttempts)
		}
	})
}

// A run's reason is recorded beside its outcome and does not say the
// outcome again, even when the fetcher had classified its error before
// the fetch timeout did.
func TestFetchTimeoutSaysUnreachableOnce(t *testing.T) {
	fx := newFixture(t, sqltest.Backends()[0], func(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
		<-ctx.Done()
		return tidemark.FetchResult{}, tidemark.Unreachable("timed out", 0, ctx.Err())
	})
	fx.svc.FetchTimeout = time.Millisecond
	rep, err := fx.svc.RunSource(context.Background(), "s")
	if !ingest.IsRunFailed(err) || rep.Outcome != tidemark.OutcomeUnreachable {
		t.Fatalf("a fetch past its timeout: outcome %s, err %v; want unreachable", rep.Outcome, err)
	}
	if strings.Contains(rep.Error, "unreachable") || strings.Count(err.Error(), "unreachable") != 1 {
		t.Errorf("reason %q, error %q: want the outcome said once, beside the reason", rep.Error, err)
	}
}

// A source run asked for twice in one process (two presses of the
// console's Run now) is run once: the second is refused at once, saying a
// run is in flight here, instead of re-entering the first run's claim,
// fetching again and failing its settlement as a stale claim.
func TestRunSourceTwiceInOneProcessRunsOnce(t *testing.T) {
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	fetches := 0
	f := newFixture(t, sqltest.Backends()[0], func(ctx context.Context, _ tidemark.Source, _ string) (tidemark.FetchResult, error) {
		if fetches++; fetches == 1 {
			close(started)
			<-release
		}
		return tidemark.FetchResult{Cursor: "c1"}, nil
	})
	f.svc.Running = &ingest.Running{}
	// Another Service of the same process (the pipeline makes one per call).
	second := &ingest.Service{Store: f.svc.Store, Fetchers: f.svc.Fetchers, Clock: f.svc.Clock, Rand: f.svc.Rand,
		Holder: f.svc.Holder, LeaseTTL: f.svc.LeaseTTL, Retry: f.svc.Retry, Running: f.svc.Running}
	done := make(chan error, 1)
	go func() { _, err := f.svc.RunSource(ctx, "s"); done <- err }()
	<-started
	_, err := second.RunSource(ctx, "s")
	if !errors.Is(err, tidemark.ErrClaimHeld) || !strings.Contains(err.Error(), "in flight in this process") {
		t.Fatalf("the second run: %v, want it refused as in flight here", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the first run: %v", err)
	}
	if fetches != 1 {
		t.Fatalf("%d fetches, want 1", fetches)
	}
	f.env.Clock.Advance(time.Hour)
	if _, err := second.RunSource(ctx, "s"); err != nil {
		t.Fatalf("a run once the first is done: %v", err)
	}
}

// A run that fails because the fetch declared more than it admitted
// records both numbers on the failed run, where the operator looks.
func TestShortReadRecordsDeclaredAndAdmitted(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		fx := newFixture(t, b, func(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
			return tidemark.FetchResult{Declared: 3, Cursor: "far", Items: []tidemark.Item{
				{Key: "1", Evidence: []byte("one")}, {Key: "2", Evidence: []byte("two")},
			}}, nil
		})
		rep, err := fx.svc.RunSource(context.Background(), "s")
		if !ingest.IsRunFailed(err) || rep.Outcome != tidemark.OutcomeInvalid {
			t.Fatalf("short read: outcome %s, err %v; want invalid", rep.Outcome, err)
		}
		run, err := fx.svc.Store.Run(context.Background(), rep.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != tidemark.RunFailed || run.Declared != 3 || run.Admitted != 2 || !strings.Contains(run.Error, "declared 3 results, 2 were admitted") {
			t.Fatalf("run: %s/%s declared %d admitted %d (%s); want failed, declared 3, admitted 2", run.Status, run.Outcome, run.Declared, run.Admitted, run.Error)
		}
		if s, _ := fx.svc.Store.Source(context.Background(), "s"); s.Cursor != "" || s.CursorVersion != 0 {
			t.Fatalf("cursor moved: %q v%d", s.Cursor, s.CursorVersion)
		}
	})
}

// A settled run records what its fetch noted, also when it admitted
// nothing (a run the store could settle in a batch with others).
func TestRunRecordsTheFetchNotes(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		fx := newFixture(t, b, func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
			return tidemark.FetchResult{Cursor: "c1", Notes: []string{"HEAD moved"}}, nil
		})
		rep, err := fx.svc.RunSource(ctx, fx.src.ID)
		if err != nil || rep.Outcome != tidemark.OutcomeEmpty || rep.Note != "HEAD moved" {
			t.Fatalf("report %+v, %v: want an empty run noting the move", rep, err)
		}
		runs, err := fx.svc.Store.Runs(ctx, ingest.RunFilter{SourceID: fx.src.ID})
		if err != nil || len(runs) != 1 || runs[0].Note != "HEAD moved" {
			t.Fatalf("runs %+v, %v", runs, err)
		}
		var text strings.Builder
		if err := ingest.WriteReport(&text, rep, nil); err != nil || !strings.Contains(text.String(), "note: HEAD moved") {
			t.Fatalf("report line %q, %v", text.String(), err)
		}
	})
}
