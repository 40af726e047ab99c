package ingest_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
)

func TestRetryPolicyCapScalesWithInterval(t *testing.T) {
	p := ingest.DefaultRetryPolicy()
	for _, tc := range []struct{ interval, want time.Duration }{
		{time.Minute, 20 * time.Minute}, // floor 5m × 4
		{15 * time.Minute, time.Hour},   // the default interval
		{time.Hour, 4 * time.Hour},      //
		{24 * time.Hour, 6 * time.Hour}, // bounded
		{time.Second, 20 * time.Minute}, // floor
	} {
		if got := p.Cap(tc.interval); got != tc.want {
			t.Errorf("cap for interval %s = %s, want %s", tc.interval, got, tc.want)
		}
	}
}

// TestRetryPolicyUnreachable drives the default policy through a long
// outage with a fake clock and a seeded random source: every delay is
// within its exponential ceiling and the cap, and the window goes terminal
// only when the budget is spent and the failures span at least a day.
func TestRetryPolicyUnreachable(t *testing.T) {
	p := ingest.DefaultRetryPolicy()
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	interval := 15 * time.Minute
	var since time.Time
	for attempt := 1; ; attempt++ {
		d := p.Decide(ingest.FailureFacts{Outcome: tidemark.OutcomeUnreachable, Attempt: attempt, Budget: 5,
			FailingSince: since, Now: now, Interval: interval}, rng.Float64())
		if since.IsZero() {
			since = now
		}
		ceiling := min(p.Base<<min(attempt-1, 20), p.Cap(interval))
		if d.Delay < time.Second || d.Delay > ceiling {
			t.Fatalf("attempt %d: delay %s outside [1s, %s]", attempt, d.Delay, ceiling)
		}
		failing := now.Sub(start)
		if d.Terminal != (attempt >= 5 && failing >= 24*time.Hour) {
			t.Fatalf("attempt %d after %s of failures: terminal = %v", attempt, failing, d.Terminal)
		}
		if d.Terminal {
			if attempt < 10 {
				t.Fatalf("terminal after only %d attempts", attempt)
			}
			return
		}
		if attempt > 1000 {
			t.Fatal("never terminal")
		}
		now = now.Add(d.Delay)
	}
}

func TestRetryPolicyJitterSpreads(t *testing.T) {
	p := ingest.DefaultRetryPolicy()
	f := ingest.FailureFacts{Outcome: tidemark.OutcomeUnreachable, Attempt: 20, Budget: 5, Now: time.Unix(0, 0), Interval: 15 * time.Minute}
	lo, hi := p.Decide(f, 0).Delay, p.Decide(f, 0.999).Delay
	if lo != time.Second || hi < 59*time.Minute || hi > time.Hour {
		t.Fatalf("full jitter at the cap: [%s, %s], want [1s, ~1h]", lo, hi)
	}
	f.RetryAfter = 3 * time.Hour
	if got := p.Decide(f, 0).Delay; got != 3*time.Hour {
		t.Fatalf("Retry-After ignored: %s", got)
	}
}

func TestRetryPolicyInvalidKeepsShortPath(t *testing.T) {
	p := ingest.DefaultRetryPolicy()
	now := time.Unix(0, 0)
	for attempt := 1; attempt <= 3; attempt++ {
		d := p.Decide(ingest.FailureFacts{Outcome: tidemark.OutcomeInvalid, Attempt: attempt, Budget: 3, Now: now, FailingSince: now}, 0.5)
		if d.Terminal != (attempt == 3) {
			t.Fatalf("invalid attempt %d: terminal = %v", attempt, d.Terminal)
		}
		if want := p.Short.Delay(attempt, 0.5, 0); d.Delay != want {
			t.Fatalf("invalid attempt %d: delay %s, want the short path's %s", attempt, d.Delay, want)
		}
	}
	// Span zero: terminal as soon as the budget is spent, outage or not.
	p.Span = 0
	if d := p.Decide(ingest.FailureFacts{Outcome: tidemark.OutcomeUnreachable, Attempt: 3, Budget: 3, Now: now}, 0.5); !d.Terminal {
		t.Fatal("span 0: not terminal at the budget")
	}
}
