package outbox

import (
	"net/http"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
)

func TestResolveFreshnessBeforeExistence(t *testing.T) {
	attempt := t0
	date := func(d time.Duration) string { return t0.Add(d).Format(http.TimeFormat) }
	for _, tt := range []struct {
		name      string
		a         ProbeAnswer
		skew      time.Duration
		want      Resolution
		wantFresh bool
		until     time.Duration // the attempt's deadline, after its start
	}{
		{"fresh, found", ProbeAnswer{RequestTime: t0.Add(time.Minute), Date: date(time.Minute), Age: "0", Found: true}, 0, Landed, true, 0},
		{"fresh, not found", ProbeAnswer{RequestTime: t0.Add(time.Minute), Date: date(time.Minute), Age: "0"}, 0, Pending, true, 0},
		{"stale: cached from before the attempt, found", ProbeAnswer{RequestTime: t0.Add(time.Minute), Date: date(time.Minute), Age: "120", Found: true}, 0, Unresolved, false, 0},
		{"stale: not found proves nothing", ProbeAnswer{RequestTime: t0.Add(time.Minute), Date: date(time.Minute), Age: "60"}, 0, Unresolved, false, 0},
		{"no Age is not fresh", ProbeAnswer{RequestTime: t0.Add(time.Minute), Date: date(time.Minute), Found: true}, 0, Unresolved, false, 0},
		{"unreadable Date", ProbeAnswer{RequestTime: t0.Add(time.Minute), Date: "soon", Age: "0", Found: true}, 0, Unresolved, false, 0},
		{"unreadable Age", ProbeAnswer{RequestTime: t0.Add(time.Minute), Date: date(time.Minute), Age: "-3"}, 0, Unresolved, false, 0},
		{"server clock ahead: our request time bounds it", ProbeAnswer{RequestTime: t0.Add(time.Second), Date: date(time.Hour), Age: "5"}, 0, Unresolved, false, 0},
		{"skew eats the margin", ProbeAnswer{RequestTime: t0.Add(3 * time.Second), Date: date(3 * time.Second), Age: "0"}, 5 * time.Second, Unresolved, false, 0},
		{"margin beyond skew", ProbeAnswer{RequestTime: t0.Add(9 * time.Second), Date: date(9 * time.Second), Age: "2"}, 5 * time.Second, Pending, true, 0},
		{"fresh, found while the write could still be landing", ProbeAnswer{RequestTime: t0.Add(5 * time.Second), Date: date(5 * time.Second), Age: "0", Found: true}, 0, Landed, true, 30 * time.Second},
		{"fresh, not found while the write could still be landing", ProbeAnswer{RequestTime: t0.Add(5 * time.Second), Date: date(5 * time.Second), Age: "0"}, 0, Unresolved, true, 30 * time.Second},
		{"not found, assembled at the deadline", ProbeAnswer{RequestTime: t0.Add(31 * time.Second), Date: date(31 * time.Second), Age: "1"}, 0, Unresolved, true, 30 * time.Second},
		{"not found after the deadline", ProbeAnswer{RequestTime: t0.Add(40 * time.Second), Date: date(40 * time.Second), Age: "0"}, 2 * time.Second, Pending, true, 30 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, f := Resolve(tt.a, attempt, attempt.Add(tt.until), tt.skew)
			if got != tt.want || f.Fresh != tt.wantFresh || f.Reason == "" {
				t.Fatalf("Resolve = %s %+v, want %s fresh=%v", got, f, tt.want, tt.wantFresh)
			}
		})
	}
}

func TestVerifyCount(t *testing.T) {
	for _, tt := range []struct {
		before, after int64
		want          CountVerdict
		err           bool
	}{{5, 5, CountNotLanded, false}, {5, 6, CountLandedOnce, false}, {5, 8, CountDuplicate, true}, {5, 4, CountUnknown, false}} {
		got, err := VerifyCount(tt.before, tt.after)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("VerifyCount(%d, %d) = %s, %v", tt.before, tt.after, got, err)
		}
	}
}

func TestRetirementPolicy(t *testing.T) {
	p := RetirementPolicy{Checks: 3, Spacing: tidemark.Duration(time.Hour)}
	at := func(h float64, v string) Check {
		return Check{At: t0.Add(time.Duration(h * float64(time.Hour))), Verdict: v}
	}
	burst := []Check{at(0, "unresolved"), at(0.1, "unresolved"), at(0.2, "unresolved"), at(0.3, "unresolved")}
	if due, why := p.Due(burst); due {
		t.Fatalf("a burst of checks retired: %s", why)
	}
	spaced := []Check{at(0, "unresolved"), at(1, "unexecutable"), at(2.5, "unresolved")}
	if due, why := p.Due(spaced); !due {
		t.Fatalf("spaced checks did not retire: %s", why)
	}
	reset := []Check{at(0, "unresolved"), at(1, "pending"), at(2, "unresolved"), at(3, "unresolved")}
	if due, _ := p.Due(reset); due {
		t.Fatal("a resolving check did not restart the count")
	}
	if due, _ := (RetirementPolicy{}).Due(spaced); due {
		t.Fatal("the zero policy retired automatically")
	}
	if p.CheckDue(ptr(t0), t0.Add(30*time.Minute)) || !p.CheckDue(ptr(t0), t0.Add(time.Hour)) || !p.CheckDue(nil, t0) {
		t.Fatal("CheckDue does not space checks")
	}
}
