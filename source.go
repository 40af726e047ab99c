package tidemark

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark/redact"
)

// SourceState is an operator's switch: paused sources are never claimed.
type SourceState string

const (
	SourceActive SourceState = "active"
	SourcePaused SourceState = "paused"
)

// WindowState describes the range ahead of a source's cursor. A terminal
// window is not claimed or offered again until an operator retries it with
// a fresh budget or skips it.
type WindowState string

const (
	WindowOpen     WindowState = "open"
	WindowTerminal WindowState = "terminal"
)

// ClaimState is what a source's claim stands for when the source is read:
// "" no claim; running (its lease runs and its holder is not known to be
// gone); gone (its holder is a process of the reading host that is no
// longer running: the next claim takes it over at once and records its
// run lost); expired (its lease ran out: the next claim takes it over).
// It is worked out at each read (ingest.Liveness.ClaimState), never
// stored: a holder on another host counts as running until its lease
// ends, since the reader cannot know.
type ClaimState string

const (
	ClaimRunning ClaimState = "running"
	ClaimGone    ClaimState = "gone"
	ClaimExpired ClaimState = "expired"
)

// Source is something tidemark watches. Its cursor is an opaque value owned
// by the source's fetcher; CursorVersion increases by one every time the
// cursor is written, and fences every claim.
type Source struct {
	ID       string       `json:"id"`
	Name     string       `json:"name"`
	Kind     string       `json:"kind"`
	Location string       `json:"location"`
	Config   SourceConfig `json:"config"`
	// AllowPrivate lets this source's fetches reach private, loopback and
	// link-local addresses; stored with the source, so every worker
	// fetches it alike.
	AllowPrivate   bool        `json:"allow_private"`
	State          SourceState `json:"state"`
	Interval       Duration    `json:"interval"`
	RetryBudget    int         `json:"retry_budget"`
	Cursor         string      `json:"cursor"`
	CursorVersion  int64       `json:"cursor_version"`
	Window         WindowState `json:"window"`
	WindowAttempts int         `json:"window_attempts"`
	TerminalReason string      `json:"terminal_reason"`
	// FailingSince is when the window's first failure was recorded; nil
	// while the window has not failed.
	FailingSince   *time.Time `json:"failing_since"`
	ClaimHolder    string     `json:"claim_holder"`
	ClaimRunID     string     `json:"claim_run_id"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at"`
	// ClaimState is the claim's state as the store read it.
	ClaimState  ClaimState `json:"claim_state"`
	NextDueAt   time.Time  `json:"next_due_at"`
	LastOutcome Outcome    `json:"last_outcome"`
	LastError   string     `json:"last_error"`
	LastRunAt   *time.Time `json:"last_run_at"`
	CreatedAt   time.Time  `json:"created_at"`
	// Hold, when set, is the hold of a worker that could not serve the
	// source and leaves it alone until after NextDueAt. It is not stored
	// with the source: a listing attaches it (ingest.AttachHolds) from the
	// workers' records, and NextTry reads it.
	Hold *SourceHold `json:"-"`
}

// SourceHold is a worker's hold on a source it could not serve (a
// directory it cannot see, a kind it was not built with): that worker does
// not claim the source until Until; a worker that can serve it may.
type SourceHold struct {
	Holder string
	Reason string
	Until  time.Time
}

// NextTry is when a worker will next try s, and why then ("" when it is
// simply the schedule): NextDueAt, which a failed run set to the end of
// its backoff (a Retry-After among it), or the end of a worker's Hold
// that outlasts NextDueAt, since that worker will not claim it before (a
// worker that can serve it may, from NextDueAt); false, with the reason,
// while nothing will until an operator acts.
func (s Source) NextTry() (time.Time, string, bool) {
	switch at, ok := s.DueAt(); {
	case !ok && s.State == SourcePaused:
		return time.Time{}, "paused: nothing runs it until it is resumed", false
	case !ok:
		return time.Time{}, "its window is terminal: nothing runs it until an operator retries or skips it", false
	case s.Hold != nil && s.Hold.Until.After(at):
		why := fmt.Sprintf("worker %s could not serve it and holds off until then", s.Hold.Holder)
		// A worker's reason names it already (ingest's "worker W: …").
		if r := strings.TrimPrefix(s.Hold.Reason, "worker "+s.Hold.Holder+": "); r != "" {
			why += ": " + r
		}
		return s.Hold.Until, why, true
	case s.ClaimState == ClaimGone:
		return at, fmt.Sprintf("its holder %s, a process of this host, is gone: the next claim takes it over and records its run lost", s.ClaimHolder), true
	case s.ClaimState == ClaimExpired:
		return at, fmt.Sprintf("the lease of its holder %s expired: the next claim takes it over and records its run lost", s.ClaimHolder), true
	case s.FailingSince != nil && s.LastOutcome != "" && !s.LastOutcome.Advances():
		n := "1 failed attempt"
		if s.WindowAttempts != 1 {
			n = fmt.Sprintf("%d failed attempts", s.WindowAttempts)
		}
		return at, fmt.Sprintf("backoff after %s in this window (last: %s)", n, s.LastOutcome), true
	default:
		return at, "", true
	}
}

// Health is the source's state at a glance, in one word: paused, terminal
// (an operator must act), new (never run), running, unreachable (could not
// be reached: it may have news nobody read), invalid or error (reached but
// failed), empty (reached, nothing new) or ok (reached, new data).
// Unreachable is never shown as empty. Running is a first run whose claim
// stands (Source.Running): a claim whose holder is a gone process
// of this host, or whose lease expired, is no run under way, and the
// source shows the health it has without it (new, for a first run). A
// holder of another host counts as running until its lease ends. A run
// our own shutdown interrupted changes no health: the source keeps its
// last outcome (ingest.Failure.Interrupted).
func (src Source) Health() string {
	switch {
	case src.State == SourcePaused:
		return "paused"
	case src.Window == WindowTerminal:
		return "terminal"
	case src.LastOutcome == "" && src.Running():
		return "running"
	case src.LastOutcome == "":
		return "new"
	case src.LastOutcome == OutcomeLost:
		return "error"
	case src.LastOutcome == OutcomeItems:
		return "ok"
	}
	return string(src.LastOutcome)
}

// Running reports whether a run of s is under way as far as its reader
// can tell: it is claimed, and the claim stands (ClaimState running, or
// not worked out). A claim whose holder is gone or whose lease expired is
// no run under way.
func (s Source) Running() bool {
	return s.ClaimHolder != "" && (s.ClaimState == ClaimRunning || s.ClaimState == "")
}

// DueAt is when a worker may next claim s, and false when none will until
// an operator acts: nothing claims a paused source or a terminal window,
// whatever NextDueAt says.
func (s Source) DueAt() (time.Time, bool) {
	if s.State == SourcePaused || s.Window == WindowTerminal {
		return time.Time{}, false
	}
	return s.NextDueAt, true
}

// ShownLocation is the location as every face shows it: without a
// credential a source stored before such locations were refused may carry
// (redact.Location). The location itself is what fetches read.
func (s Source) ShownLocation() string { return redact.Location(s.Location) }

// MarshalJSON writes s with its shown location (ShownLocation), with next_due_at null when no worker will claim it
// until an operator acts (see DueAt): a time there would tell its reader
// that it runs then; with next_try_at and next_try_reason (NextTry); and with health (Health). A type that embeds Source has this method promoted,
// so it must write its own fields beside it (as ingest.Detail does).
func (s Source) MarshalJSON() ([]byte, error) {
	type fields Source // Source's fields, without this method
	v := struct {
		fields
		NextDueAt *time.Time `json:"next_due_at"` // hides the embedded one
		// NextTryAt and NextTryReason are NextTry's.
		NextTryAt     *time.Time `json:"next_try_at"`
		NextTryReason string     `json:"next_try_reason"`
		// Health is Health's word, as source list's HEALTH column shows it.
		Health string `json:"health"`
	}{fields: fields(s), Health: s.Health()}
	v.Location = s.ShownLocation()
	if at, ok := s.DueAt(); ok {
		v.NextDueAt = &at
	}
	at, why, ok := s.NextTry()
	if ok {
		v.NextTryAt = &at
	}
	v.NextTryReason = why
	return json.Marshal(v)
}

// SourceConfig is a source's settings for its kind (a selector, a
// branch, limits). It is shown as {} when there are none, never as null:
// a documented field is always present.
type SourceConfig map[string]string

// MarshalJSON writes c, and {} for a nil c.
func (c SourceConfig) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]string(c))
}

// RunStatus is where a run is in its life.
type RunStatus string

const (
	RunActive  RunStatus = "active"
	RunSettled RunStatus = "settled"
	RunFailed  RunStatus = "failed"
)

// Run is one ingest attempt over a source's window.
type Run struct {
	ID            string    `json:"id"`
	SourceID      string    `json:"source_id"`
	SourceName    string    `json:"source_name"`
	Holder        string    `json:"holder"`
	Attempt       int       `json:"attempt"`
	CursorVersion int64     `json:"cursor_version"`
	CursorBefore  string    `json:"cursor_before"`
	CursorAfter   string    `json:"cursor_after"`
	Status        RunStatus `json:"status"`
	Outcome       Outcome   `json:"outcome"`
	Error         string    `json:"error"`
	// Note is what a settled run's fetch noticed but did not refuse (a git
	// remote's HEAD that moved: the branch followed changed), "" if
	// nothing.
	Note          string     `json:"note"`
	Declared      int        `json:"declared"`
	Admitted      int        `json:"admitted"`
	EventsNew     int        `json:"events_new"`
	EventsChanged int        `json:"events_changed"`
	StartedAt     time.Time  `json:"started_at"`
	FinishedAt    *time.Time `json:"finished_at"`
	// ClaimState is, for an active run, the state of its claim when the
	// run was read (running, gone or expired: see ClaimState); "" for a
	// finished run.
	ClaimState ClaimState `json:"claim_state"`
}

// StatusWords is the run's status as a person reads it: an active run
// whose claim no longer stands says why it runs nothing.
func (r Run) StatusWords() string {
	switch {
	case r.Status != RunActive:
		return string(r.Status)
	case r.ClaimState == ClaimGone:
		return "active (holder gone)"
	case r.ClaimState == ClaimExpired:
		return "active (lease expired)"
	}
	return string(r.Status)
}

// Claim is a holder's right to run a source's current window. Every write
// it makes is conditional on Token and CursorVersion still being the
// source's; a claim that is no longer current changes nothing.
type Claim struct {
	RunID         string `json:"run_id"`
	SourceID      string `json:"source_id"`
	Token         string `json:"token"`
	Holder        string `json:"holder"`
	CursorVersion int64  `json:"cursor_version"`
	Cursor        string `json:"cursor"`
	Attempt       int    `json:"attempt"` // 1 for the first attempt at this window
	RetryBudget   int    `json:"retry_budget"`
	// FailingSince is when the window's first failure was recorded (nil if
	// it has not failed): how long an outage has lasted.
	FailingSince   *time.Time `json:"failing_since,omitempty"`
	LeaseExpiresAt time.Time  `json:"lease_expires_at"`
	StartedAt      time.Time  `json:"started_at"`
	Reentered      bool       `json:"reentered"`
	// Source is the source as it was claimed, when the store read it
	// anyway (a worker then needs no second read); nil otherwise.
	Source *Source `json:"-"`
}

// Item is one upstream result a fetch admitted: an identity within the
// source and the exact bytes it is judged on, already canonicalized.
type Item struct {
	Key        string    `json:"key"`
	Title      string    `json:"title"`
	URL        string    `json:"url,omitempty"`
	OccurredAt time.Time `json:"occurred_at"`
	Evidence   []byte    `json:"-"`
}

// EvidenceHash is the hex SHA-256 of the item's frozen evidence.
func (it Item) EvidenceHash() string { return HashEvidence(it.Evidence) }

// HashEvidence is the hex SHA-256 of canonical evidence bytes.
func HashEvidence(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// FetchResult is what a fetcher read ahead of the cursor.
type FetchResult struct {
	Items []Item
	// Cursor is the position after every admitted item. It is written only
	// if the run settles.
	Cursor string
	// Declared is how many results the upstream said there were (0 when it
	// does not say). More declared than admitted fails the run.
	Declared int
	// NotBefore, when longer than the source's interval, is how long the
	// upstream asked not to be fetched again (HTTP Cache-Control max-age).
	// The ingest service bounds it.
	NotBefore time.Duration
	// More says the fetch stopped at its own limit (a full window) with
	// more ahead of Cursor. A backlog is not a schedule: a run that settles
	// with More leaves its source due at once, and the interval paces only
	// a source that has caught up.
	More bool
	// Notes are what the fetch noticed but did not refuse (a json source's
	// ignore path that matched nothing in any item). `source test` shows
	// them, and a run that settles records them as its note.
	Notes []string
}

// Fetcher reads what changed in a source since a cursor. Failures are
// returned as *FetchError so the run is classified honestly; a fetcher
// never moves the cursor itself.
type Fetcher interface {
	Fetch(ctx context.Context, src Source, cursor string) (FetchResult, error)
}

// Event is a detected change with its frozen evidence. Fresh evidence for
// the same upstream item re-freezes the event: EvidenceHash moves and the
// previous evidence is kept as an earlier revision.
type Event struct {
	ID           string    `json:"id"`
	SourceID     string    `json:"source_id"`
	ItemKey      string    `json:"item_key"`
	Title        string    `json:"title"`
	URL          string    `json:"url"`
	OccurredAt   time.Time `json:"occurred_at"`
	EvidenceHash string    `json:"evidence_hash"`
	Revision     int       `json:"revision"`
	RunID        string    `json:"run_id"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}
