package ingest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
)

func TestChargeLoss(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	earlier := now.Add(-time.Hour)
	for _, tc := range []struct {
		name             string
		attempts, budget int
		since            *time.Time
		last             tidemark.Outcome
		charge           bool
		spent            int
		wantSince        *time.Time
		terminal         bool
	}{
		{"first loss starts failing", 0, 3, nil, "", true, 1, &now, false},
		{"a later loss keeps when failing began", 1, 3, &earlier, tidemark.OutcomeLost, true, 1, &earlier, false},
		{"the loss that spends the budget is terminal", 2, 3, &earlier, tidemark.OutcomeInvalid, true, 1, &earlier, true},
		{"a loss after a loss past the budget is terminal", 2, 3, &earlier, tidemark.OutcomeLost, true, 1, &earlier, true},
		{"a loss past the budget during an outage leaves the policy to decide", 2, 3, &earlier, tidemark.OutcomeUnreachable, true, 1, &earlier, false},
		{"a loss on a source never run is terminal at a budget of one", 0, 1, nil, "", true, 1, &now, true},
		{"an unreachable last run with no outage on record is no outage", 2, 3, nil, tidemark.OutcomeUnreachable, true, 1, &now, true},
		{"an uncharged loss spends nothing", 1, 3, nil, "", false, 0, nil, false},
		{"an uncharged loss on a spent budget is still terminal", 3, 3, &earlier, tidemark.OutcomeLost, false, 0, &earlier, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := ingest.ChargeLoss(tc.attempts, tc.budget, tc.since, tc.last, tc.charge, "holder h never came back", now)
			if ch.Spent != tc.spent {
				t.Errorf("Spent = %d, want %d", ch.Spent, tc.spent)
			}
			if (ch.FailingSince == nil) != (tc.wantSince == nil) || ch.FailingSince != nil && !ch.FailingSince.Equal(*tc.wantSince) {
				t.Errorf("FailingSince = %v, want %v", ch.FailingSince, tc.wantSince)
			}
			if got := ch.Window == tidemark.WindowTerminal; got != tc.terminal {
				t.Errorf("Window = %s, want terminal %v", ch.Window, tc.terminal)
			}
			if (ch.TerminalReason != "") != tc.terminal {
				t.Errorf("TerminalReason = %q, want one only when terminal", ch.TerminalReason)
			}
		})
	}
	if ch := ingest.ChargeLoss(2, 3, nil, "", true, "gone", now); ch.TerminalReason != "budget of 3 attempts spent; last: lost: gone" {
		t.Errorf("TerminalReason = %q", ch.TerminalReason)
	}
}

func TestChargeFailure(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	earlier := now.Add(-time.Hour)
	c := tidemark.Claim{Attempt: 4, FailingSince: &earlier}
	f := ingest.Failure{Outcome: tidemark.OutcomeUnreachable, Reason: "connection refused"}

	if ch := ingest.ChargeFailure(tidemark.Claim{Attempt: 1}, f, now); ch.Spent != 1 || ch.FailingSince == nil || !ch.FailingSince.Equal(now) || ch.Window != tidemark.WindowOpen {
		t.Errorf("a first failure: %+v, want one attempt spent, failing since now, window open", ch)
	}
	if ch := ingest.ChargeFailure(c, f, now); ch.Spent != 1 || !ch.FailingSince.Equal(earlier) || ch.Window != tidemark.WindowOpen {
		t.Errorf("a later failure: %+v, want one attempt spent, failing since earlier, window open", ch)
	}
	noCharge := f
	noCharge.NoCharge, noCharge.Terminal = true, true
	if ch := ingest.ChargeFailure(tidemark.Claim{Attempt: 1}, noCharge, now); ch.Spent != 0 || ch.FailingSince != nil || ch.Window != tidemark.WindowOpen {
		t.Errorf("an uncharged failure: %+v, want nothing spent or changed", ch)
	}
	terminal := f
	terminal.Terminal = true
	if ch := ingest.ChargeFailure(c, terminal, now); ch.Window != tidemark.WindowTerminal || ch.TerminalReason != "4 attempts spent; last: unreachable: connection refused" {
		t.Errorf("a terminal failure: %+v", ch)
	}
	terminal.Why = "unreachable for 3 days"
	if ch := ingest.ChargeFailure(c, terminal, now); ch.TerminalReason != "unreachable for 3 days; last: unreachable: connection refused" {
		t.Errorf("a terminal failure with a why: %q", ch.TerminalReason)
	}
}

func TestAdmit(t *testing.T) {
	active := tidemark.Source{Name: "s", State: tidemark.SourceActive, Window: tidemark.WindowOpen}
	if err := ingest.Admit(active); err != nil {
		t.Errorf("an active source with an open window: %v", err)
	}
	paused := active
	paused.State = tidemark.SourcePaused
	terminal := active
	terminal.Window, terminal.TerminalReason = tidemark.WindowTerminal, "budget spent"
	for name, src := range map[string]tidemark.Source{"paused": paused, "terminal": terminal} {
		if err := ingest.Admit(src); !errors.Is(err, tidemark.ErrNotClaimable) {
			t.Errorf("%s: %v, want ErrNotClaimable", name, err)
		}
	}
}

func TestClaimStands(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l := &ingest.Liveness{Host: "h", Alive: func(pid int) bool { return pid == 1 }}
	for _, tc := range []struct {
		name   string
		l      *ingest.Liveness
		holder string
		until  time.Time
		stands bool
	}{
		{"a live lease of a running holder", l, "h:1", now.Add(time.Second), true},
		{"an expired lease", l, "h:1", now, false},
		{"a live lease of a gone holder", l, "h:2", now.Add(time.Second), false},
		{"a holder of another host is never known gone", l, "other:2", now.Add(time.Second), true},
		{"no liveness knows of no gone holder", nil, "h:2", now.Add(time.Second), true},
	} {
		if got := tc.l.Stands(tc.holder, tc.until, now); got != tc.stands {
			t.Errorf("%s: Stands = %v, want %v", tc.name, got, tc.stands)
		}
	}
}

// A new source follows the rules a rename and a change of settings follow:
// what could not be renamed to or set cannot be added either.
func TestNewSourceFollowsTheRulesOfAChange(t *testing.T) {
	ok := ingest.NewSource{Name: "blog", Kind: "feed", Interval: time.Minute, RetryBudget: 3}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*ingest.NewSource){
		"slash in the name":   func(ns *ingest.NewSource) { ns.Name = "a/b" },
		"space around it":     func(ns *ingest.NewSource) { ns.Name = " blog" },
		"no kind":             func(ns *ingest.NewSource) { ns.Kind = "" },
		"interval under 1s":   func(ns *ingest.NewSource) { ns.Interval = time.Millisecond },
		"budget of 0":         func(ns *ingest.NewSource) { ns.RetryBudget = 0 },
		"budget over the max": func(ns *ingest.NewSource) { ns.RetryBudget = ingest.MaxRetryBudget + 1 },
	} {
		ns := ok
		edit(&ns)
		if err := ns.Validate(); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%s: %v, want an invalid-input error", name, err)
		}
	}
}
