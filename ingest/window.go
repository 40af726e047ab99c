package ingest

import (
	"fmt"
	"time"

	"github.com/tidemark/tidemark"
)

// Charge is what one failed or lost attempt does to its source's retry
// window, decided here and applied by the store in the same conditional
// update that releases the claim.
type Charge struct {
	// Spent is the attempts it spends of the window's budget: 0 or 1.
	Spent int
	// FailingSince is when the window's failures began: the attempt's now
	// if it is the first charged one, else as it was.
	FailingSince *time.Time
	// Window and TerminalReason are the window's state after it.
	Window         tidemark.WindowState
	TerminalReason string
}

// ChargeLoss decides what a lost run (its holder never came back, or its
// process is gone) does to a window that had spent attempts of budget and
// whose last run ended in last. With charge the loss spends one attempt, and
// a loss that leaves nothing of the budget makes the window terminal, with
// one exception: a window riding out an outage (its last run unreachable)
// stays open, because outages are not terminal and a daemon restarted
// mid-outage says nothing about the upstream; the retry policy decides at
// the next failure whether the outage has lasted its span. A loss after a
// loss is a worker that never survives this source, and is terminal past
// the budget. reason says how the run was lost.
func ChargeLoss(attempts, budget int, failingSince *time.Time, last tidemark.Outcome, charge bool, reason string, now time.Time) Charge {
	ch := Charge{FailingSince: failingSince, Window: tidemark.WindowOpen}
	if charge {
		ch.Spent = 1
		if ch.FailingSince == nil {
			ch.FailingSince = &now
		}
	}
	outage := last == tidemark.OutcomeUnreachable && failingSince != nil
	if attempts+ch.Spent >= budget && !outage {
		ch.Window = tidemark.WindowTerminal
		ch.TerminalReason = fmt.Sprintf("budget of %d attempts spent; last: lost: %s", budget, reason)
	}
	return ch
}

// ChargeFailure decides what the failure f of claim c does to its window.
// Outages are not terminal by count alone: the retry policy decided
// f.Terminal, and this records it. A failure with NoCharge (our own
// shutdown interrupted the run) spends nothing and changes nothing.
func ChargeFailure(c tidemark.Claim, f Failure, now time.Time) Charge {
	ch := Charge{FailingSince: c.FailingSince, Window: tidemark.WindowOpen}
	if f.NoCharge {
		return ch
	}
	ch.Spent = 1
	if ch.FailingSince == nil {
		ch.FailingSince = &now
	}
	if f.Terminal {
		why := f.Why
		if why == "" {
			why = fmt.Sprintf("%d attempts spent", c.Attempt)
		}
		ch.Window = tidemark.WindowTerminal
		ch.TerminalReason = fmt.Sprintf("%s; last: %s: %s", why, f.Outcome, f.Reason)
	}
	return ch
}

// Admit decides whether a source nobody holds may be claimed: only an
// active source with an open window may; otherwise ErrNotClaimable says
// why (paused, or terminal and waiting for an operator's retry or skip).
func Admit(src tidemark.Source) error {
	if src.State != tidemark.SourceActive {
		return fmt.Errorf("source %s is paused: %w", src.Name, tidemark.ErrNotClaimable)
	}
	if src.Window != tidemark.WindowOpen {
		return fmt.Errorf("source %s: window terminal (%s); retry or skip it: %w", src.Name, src.TerminalReason, tidemark.ErrNotClaimable)
	}
	return nil
}
