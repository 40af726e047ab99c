package outbox_test

import (
	"errors"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
)

// The retire/revive state machine, every state against every move.
func TestMoveDecide(t *testing.T) {
	const (
		pending      = outbox.StatePending
		sending      = outbox.StateSending
		landed       = outbox.StateLanded
		unresolved   = outbox.StateUnresolved
		unexecutable = outbox.StateUnexecutable
		retired      = outbox.StateRetired
		collision    = outbox.StateCollision
	)
	retire := outbox.Move{Intent: "i", Op: outbox.OpRetire}
	policy := outbox.Move{Intent: "i", Op: outbox.OpRetire, ByPolicy: true}
	revive := outbox.Move{Intent: "i", Op: outbox.OpRevive}
	with := func(m outbox.Move, state, retiredFrom outbox.State, twin string) outbox.Move {
		m.State, m.RetiredFrom, m.Twin = state, retiredFrom, twin
		return m
	}
	for _, tc := range []struct {
		name     string
		move     outbox.Move
		to       outbox.State // "" when refused
		asksTwin bool
	}{
		{"retire pending", with(retire, pending, "", ""), retired, false},
		{"retire unresolved", with(retire, unresolved, "", ""), retired, false},
		{"retire unexecutable", with(retire, unexecutable, "", ""), retired, false},
		{"retire collision", with(retire, collision, "", ""), retired, false},
		{"retire sending", with(retire, sending, "", ""), "", false},
		{"retire landed", with(retire, landed, "", ""), "", false},
		{"retire retired", with(retire, retired, pending, ""), "", false},
		{"policy retires unresolved", with(policy, unresolved, "", ""), retired, false},
		{"policy retires unexecutable", with(policy, unexecutable, "", ""), retired, false},
		{"policy leaves pending", with(policy, pending, "", ""), "", false},
		{"policy leaves collision", with(policy, collision, "", ""), "", false},
		{"revive retired from pending", with(revive, retired, pending, ""), pending, false},
		{"revive retired from unresolved", with(revive, retired, unresolved, ""), unresolved, false},
		{"revive retired from unexecutable", with(revive, retired, unexecutable, ""), pending, false},
		{"revive unexecutable", with(revive, unexecutable, "", ""), pending, false},
		{"revive collision without twin", with(revive, collision, "", ""), pending, true},
		{"revive collision with live twin", with(revive, collision, "", "twin"), "", true},
		{"revive retired collision without twin", with(revive, retired, collision, ""), pending, true},
		{"revive retired collision with live twin", with(revive, retired, collision, "twin"), collision, true},
		{"revive pending", with(revive, pending, "", ""), "", false},
		{"revive unresolved", with(revive, unresolved, "", ""), "", false},
		{"revive landed", with(revive, landed, "", ""), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.move.AsksTwin(); got != tc.asksTwin {
				t.Errorf("AsksTwin = %v, want %v", got, tc.asksTwin)
			}
			tr, err := tc.move.Decide()
			if tc.to == "" {
				if !errors.Is(err, tidemark.ErrConflict) {
					t.Fatalf("Decide = %+v, %v; want ErrConflict", tr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := outbox.Transition{From: tc.move.State, To: tc.to}
			if tc.to == retired {
				want.RetiredFrom = tc.move.State
			}
			if tr != want {
				t.Errorf("Decide = %+v, want %+v", tr, want)
			}
		})
	}
	if _, err := (outbox.Move{Intent: "i", Op: "bury", State: pending}).Decide(); !errors.Is(err, tidemark.ErrInvalid) {
		t.Errorf("an unknown operation: %v, want ErrInvalid", err)
	}
}

func TestReportGaps(t *testing.T) {
	r := outbox.ReportGaps("l", 1000, []outbox.Gap{{MS: 1500, ThresholdMS: 1000}, {MS: 900, ThresholdMS: 1000}, {MS: 2000, ThresholdMS: 500}, {MS: 600, ThresholdMS: 500}})
	want := outbox.GapReport{Lane: "l", Count: 4, MinMS: 600, MedianMS: 1200, ThresholdMS: 1000, BelowThreshold: 1}
	if r != want {
		t.Errorf("ReportGaps = %+v, want %+v", r, want)
	}
	if r := outbox.ReportGaps("l", 1000, nil); !r.OK || r.Count != 0 {
		t.Errorf("no gaps: %+v, want OK and none counted", r)
	}
	if r := outbox.ReportGaps("l", 1000, []outbox.Gap{{MS: 5, ThresholdMS: 1}, {MS: 1, ThresholdMS: 1}, {MS: 3, ThresholdMS: 1}}); r.MedianMS != 3 || r.MinMS != 1 || !r.OK {
		t.Errorf("odd count: %+v, want median 3, min 1, OK", r)
	}
}
