package outbox

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/internal/fieldtext"
)

// ProbeAnswer is what a provider said about one target, with the headers
// that tell how old the answer is.
type ProbeAnswer struct {
	// RequestTime is our clock when the request was sent.
	RequestTime time.Time
	// Date and Age are the response's headers, verbatim ("" when absent).
	Date string
	Age  string
	// Found says whether our write is in the answer; RemoteID names it.
	Found    bool
	RemoteID string
}

// Freshness is the verdict on an answer's age.
type Freshness struct {
	Fresh bool `json:"fresh"`
	// SnapshotAt is when the answer was assembled, when it could be told.
	SnapshotAt *time.Time `json:"snapshot_at,omitempty"`
	Reason     string     `json:"reason"`
}

// Fresh decides whether an answer may say anything about an attempt that
// started at attemptStart. The answer's copy was assembled at
//
//	snapshot_at = min(Date, request_time) − Age − skew
//
// and only if snapshot_at is strictly later than the attempt's start can the
// copy have seen the attempt's write. Date is taken no later than our own
// request time (a server clock running ahead proves nothing), Age is what
// caches in between added, and skew is the clock difference we allow for.
// A missing Age header is not proof of freshness (a cache may have dropped
// it), so it is unfresh; so is an unreadable Date or Age.
func Fresh(date, age string, requestTime, attemptStart time.Time, skew time.Duration) Freshness {
	if strings.TrimSpace(age) == "" {
		return Freshness{Reason: "no Age header: not proof of freshness"}
	}
	ageSec, err := strconv.ParseInt(strings.TrimSpace(age), 10, 64)
	if err != nil || ageSec < 0 {
		return Freshness{Reason: "unreadable Age header " + strconv.Quote(age)}
	}
	d, err := http.ParseTime(strings.TrimSpace(date))
	if err != nil {
		return Freshness{Reason: "unreadable Date header " + strconv.Quote(date)}
	}
	at := d
	if requestTime.Before(at) {
		at = requestTime
	}
	snap := at.Add(-time.Duration(ageSec) * time.Second).Add(-skew)
	if !snap.After(attemptStart) {
		return Freshness{SnapshotAt: &snap, Reason: "assembled at " + fieldtext.Day(snap) +
			", not after the attempt started at " + fieldtext.Day(attemptStart)}
	}
	return Freshness{Fresh: true, SnapshotAt: &snap, Reason: "assembled after the attempt started"}
}

// Resolution is what a probe decides about an intent.
type Resolution string

const (
	// Landed: a fresh answer shows the write.
	Landed Resolution = "landed"
	// Pending: a fresh answer does not show it; it never landed.
	Pending Resolution = "pending"
	// Unresolved: the answer is too old, or its age cannot be told.
	Unresolved Resolution = "unresolved"
)

// Resolve applies freshness before existence: an answer that is not fresh
// resolves nothing, whatever it found; only a fresh answer decides, found →
// landed, not found → pending. Not found decides only an answer assembled
// after attemptUntil, the attempt's deadline: until then the write could
// still be landing.
func Resolve(a ProbeAnswer, attemptStart, attemptUntil time.Time, skew time.Duration) (Resolution, Freshness) {
	f := Fresh(a.Date, a.Age, a.RequestTime, attemptStart, skew)
	if !f.Fresh {
		return Unresolved, f
	}
	if a.Found {
		return Landed, f
	}
	if !f.SnapshotAt.After(attemptUntil) {
		f.Reason = "assembled at " + fieldtext.Day(*f.SnapshotAt) + ", after the attempt started but not after " +
			fieldtext.Day(attemptUntil) + ", until when it could still land: not finding it says nothing"
		return Unresolved, f
	}
	return Pending, f
}
