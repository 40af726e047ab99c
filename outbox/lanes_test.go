package outbox_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
)

func TestParseLaneChange(t *testing.T) {
	given := map[string]string{"min-gap": "0s", "retire-checks": "3"}
	ch, err := outbox.ParseLaneChange([]string{"url=https://x/?a=b", "secret="}, []string{"probe_url"}, func(n string) (string, bool) {
		v, ok := given[n]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Settings["url"] != "https://x/?a=b" || ch.Settings["secret"] != "" || len(ch.Unset) != 1 || ch.MinGap == nil || *ch.MinGap != 0 ||
		ch.Skew != nil || ch.RetireChecks == nil || *ch.RetireChecks != 3 || ch.RetireSpacing != nil {
		t.Fatalf("change = %+v", ch)
	}
	cur := outbox.LaneConfig{Settings: map[string]string{"probe_url": "p", "url": "old"}, MinGap: 5, Skew: 7, Retirement: outbox.RetirementPolicy{Checks: 1, Spacing: 9}}
	next := ch.Apply(cur)
	if _, ok := next.Settings["probe_url"]; ok || next.Settings["url"] != "https://x/?a=b" || next.MinGap != 0 || next.Skew != 7 || next.Retirement.Checks != 3 || next.Retirement.Spacing != 9 {
		t.Fatalf("applied = %+v", next)
	}
	if cur.Settings["url"] != "old" {
		t.Fatal("Apply changed the configuration it was given")
	}
	for _, bad := range []map[string]string{{"min-gap": "soon"}, {"skew": "-1s"}, {"retire-checks": "-2"}} {
		if _, err := outbox.ParseLaneChange(nil, nil, func(n string) (string, bool) { v, ok := bad[n]; return v, ok }); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%v: %v, want invalid", bad, err)
		}
	}
	_, err = outbox.ParseLaneChange([]string{"token:s3cr3t"}, nil, func(string) (string, bool) { return "", false })
	if !errors.Is(err, tidemark.ErrInvalid) || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("a mistyped setting: %v", err)
	}
}

func TestLaneRemovalRefusesWhatWouldBeLost(t *testing.T) {
	for _, tc := range []struct {
		counts map[outbox.State]int
		force  bool
		ok     bool
	}{
		{map[outbox.State]int{outbox.StateLanded: 3, outbox.StateRetired: 1, outbox.StateUnexecutable: 2, outbox.StateCollision: 1}, false, true},
		{map[outbox.State]int{outbox.StatePending: 1}, false, false},
		{map[outbox.State]int{outbox.StateSending: 1}, false, false},
		{map[outbox.State]int{outbox.StateUnresolved: 1}, false, false},
		{map[outbox.State]int{outbox.StateUnresolved: 1, outbox.StatePending: 2}, true, true},
	} {
		err := outbox.LaneRemoval{Lane: "l", Intents: tc.counts, Forced: tc.force}.Check()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, tidemark.ErrConflict)) {
			t.Errorf("%v force %v: %v", tc.counts, tc.force, err)
		}
	}
}

// A lane whose deliveries keep failing (its receiver down, a read before a
// write refused a connection) is failing, with when it began, how many in
// a row and the latest error as its problem: not ok while nothing goes
// out. A broken lane stays broken (the worse), and a lane whose failures
// ended is judged as before.
func TestALaneWhoseDeliveriesFailIsFailing(t *testing.T) {
	since := time.Date(2026, 12, 2, 2, 32, 0, 0, time.UTC)
	failing := &outbox.LaneFailure{Since: since, At: since.Add(9 * time.Minute), Failures: 12,
		Last: `count before: GET http://127.0.0.1:18820/count: connection refused`}
	v := outbox.LaneView{Lane: outbox.Lane{Failing: failing, Counts: map[outbox.State]int{outbox.StatePending: 112}}}
	v.Judge(nil)
	if v.Health != outbox.HealthFailing {
		t.Fatalf("health %q, want %q", v.Health, outbox.HealthFailing)
	}
	for _, want := range []string{"12", "2026-12-02 02:32:00 UTC", "connection refused"} {
		if !strings.Contains(v.Problem, want) {
			t.Errorf("problem %q does not say %q", v.Problem, want)
		}
	}
	v = outbox.LaneView{Lane: outbox.Lane{Failing: failing}}
	v.Judge(errors.New("secret missing"))
	if v.Health != outbox.HealthBroken {
		t.Fatalf("a broken lane that also fails: %q, want broken", v.Health)
	}
	v = outbox.LaneView{Lane: outbox.Lane{}}
	if v.Judge(nil); v.Health != outbox.HealthOK || v.Problem != "" {
		t.Fatalf("a lane without failures: %q %q, want ok", v.Health, v.Problem)
	}
}
