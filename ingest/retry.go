package ingest

import (
	"fmt"
	"math"
	"time"

	"github.com/tidemark/tidemark"
)

// RetryPolicy decides what a failed run means for its window: when to try
// again, and whether the window goes terminal. It is a pure function of the
// failure's facts and a random number, so it is tested with a fake clock
// and a seeded source.
//
// Outages are not terminal. An unreachable upstream (DNS, connect, timeout,
// 5xx, 429) is retried after an exponentially growing delay with full
// jitter, whose ceiling is capped by a bound that scales with the source's
// interval; its window goes terminal only when its budget is spent AND its
// failures have gone on for at least Span. An invalid answer or our own
// error takes the short path: Short's backoff, terminal once the budget is
// spent. A Retry-After always pushes the next attempt out (up to 24h).
type RetryPolicy struct {
	// Base is the ceiling of the first unreachable retry's delay; each
	// further failure doubles it.
	Base time.Duration
	// The ceiling stops growing at max(interval, CapFloor) × CapFactor,
	// and never beyond CapMax.
	CapFloor  time.Duration
	CapFactor int
	CapMax    time.Duration
	// Span is how long an unreachable window must have been failing before
	// a spent budget makes it terminal. Zero makes it terminal as soon as
	// the budget is spent.
	Span time.Duration
	// Short spaces out invalid and error failures.
	Short Backoff
}

// DefaultRetryPolicy: unreachable retries from a 30s ceiling doubling to
// max(interval, 5m)×4 (at most 6h), terminal only after the budget is spent
// and at least 24 hours of failures; invalid and error back off from 30s to
// 1h and are terminal when the budget is spent.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		Base: 30 * time.Second, CapFloor: 5 * time.Minute, CapFactor: 4, CapMax: 6 * time.Hour,
		Span: 24 * time.Hour, Short: DefaultBackoff,
	}
}

// FailureFacts is what a retry decision is made from.
type FailureFacts struct {
	Outcome tidemark.Outcome
	// Attempt is the failed attempt at this window (1-based); Budget the
	// window's retry budget.
	Attempt, Budget int
	// FailingSince is when the window's first failure was recorded (zero
	// when this failure is its first).
	FailingSince time.Time
	Now          time.Time
	Interval     time.Duration
	RetryAfter   time.Duration
}

// RetryDecision is when to try again and whether the window goes terminal.
type RetryDecision struct {
	Delay    time.Duration
	Terminal bool
	// Why is the terminal reason's prefix, for people.
	Why string
}

// Cap is the ceiling unreachable delays stop growing at, for a source
// polled every interval.
func (p RetryPolicy) Cap(interval time.Duration) time.Duration {
	c := time.Duration(max(1, p.CapFactor)) * max(interval, p.CapFloor)
	if p.CapMax > 0 && c > p.CapMax {
		c = p.CapMax
	}
	return max(c, p.Base)
}

// Decide applies the policy to a failure. r in [0, 1) picks the jitter.
func (p RetryPolicy) Decide(f FailureFacts, r float64) RetryDecision {
	attempt := max(f.Attempt, 1)
	spent := attempt >= f.Budget
	if f.Outcome != tidemark.OutcomeUnreachable {
		d := RetryDecision{Delay: p.Short.Delay(attempt, r, f.RetryAfter), Terminal: spent}
		if spent {
			d.Why = fmt.Sprintf("budget of %d attempts spent", f.Budget)
		}
		return d
	}
	ceiling := p.Cap(f.Interval)
	if exp := float64(p.Base) * math.Pow(2, float64(attempt-1)); exp < float64(ceiling) {
		ceiling = time.Duration(exp)
	}
	// Full jitter spreads the retries of many sources that failed together
	// across the whole ceiling; a second is the least we wait.
	delay := max(time.Duration(r*float64(ceiling)), time.Second)
	delay = max(delay, min(f.RetryAfter, maxRetryAfter))
	since := f.FailingSince
	if since.IsZero() || since.After(f.Now) {
		since = f.Now
	}
	failing := f.Now.Sub(since)
	d := RetryDecision{Delay: delay}
	if spent && failing >= p.Span {
		d.Terminal = true
		d.Why = fmt.Sprintf("budget of %d attempts spent over %s of failures", f.Budget, failing.Round(time.Second))
	}
	return d
}
