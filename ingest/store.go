package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tidemark/tidemark"
)

// Store is what the ingest pipeline needs from storage. sqlstore implements
// it for SQLite and PostgreSQL; ingesttest.Run is the conformance suite
// every implementation passes.
//
// Every method that takes a Claim is fenced: it changes something only if
// the source still holds the claim's token and cursor version, and returns
// tidemark.ErrStaleClaim (changing nothing) otherwise.
type Store interface {
	AddSource(ctx context.Context, ns NewSource) (tidemark.Source, error)
	// Source finds a source by ID or name. Source and Sources give each
	// source its ClaimState at the time of reading, as the store's host can
	// tell it (Liveness.ClaimState), writing nothing.
	Source(ctx context.Context, ref string) (tidemark.Source, error)
	Sources(ctx context.Context) ([]tidemark.Source, error)
	// SetState pauses or resumes a source; the change is audited.
	SetState(ctx context.Context, ref string, state tidemark.SourceState, actor string) (tidemark.Source, error)
	// Set changes the source's settings (the fields of set that are not
	// nil) and records who set what, an action "set", in one transaction.
	// It clears the workers' records that they could not serve the source:
	// the change may let them. A change that changes what the source
	// watches (its config) keys it anew with the store's KeyFunc, as an
	// add of what the change leaves would be keyed: a key another source
	// holds is refused with a *DuplicateError naming it, and nothing
	// changes.
	Set(ctx context.Context, ref string, set Settings, actor string) (tidemark.Source, error)

	// Claim admits one active run for the source. A claim over an expired
	// lease marks the old run lost (and may make the window terminal); the
	// same holder re-enters its own run without waiting for the lease.
	Claim(ctx context.Context, sourceID, holder string, leaseTTL time.Duration) (tidemark.Claim, error)
	// ClaimDue claims up to limit due sources, passing over sources that
	// other workers hold and sources this holder recorded it could not
	// serve, until that record's Until. It re-enters, as Claim does, the
	// sources the holder itself holds (a worker restarted under the same
	// identity), except the runs named in inFlight: the holder's runs
	// still under way in the caller, which must not run twice. Re-entries
	// count against limit.
	//
	// Before it claims, ClaimDue looks for claims whose holders are gone
	// processes of this host (see Liveness), as TakeOverGone does: the
	// first call of a process at once, then at most once per
	// Liveness.Every. What the look takes over is committed whether or
	// not anything is due, and the sources it frees are claimed by the
	// same call when they are due and there is room.
	ClaimDue(ctx context.Context, holder string, leaseTTL time.Duration, limit int, inFlight ...string) ([]tidemark.Claim, error)
	// TakeOverGone records lost the runs whose holders are processes of
	// this host that are no longer running (Liveness), whether their
	// leases still run or have expired, and frees their sources (due or
	// not) without claiming them; holder's own claims are not read. It
	// shares ClaimDue's pace: it looks at once the first time in a process
	// and then at most once per Liveness.Every (otherwise it returns 0
	// without reading). It returns how many it took over.
	TakeOverGone(ctx context.Context, holder string) (int, error)
	// Heartbeat extends the claim's lease.
	Heartbeat(ctx context.Context, c tidemark.Claim, leaseTTL time.Duration) (tidemark.Claim, error)
	// Settle records a successful run in one transaction: the events it
	// read, the cursor advance, the run's outcome and its audit row.
	Settle(ctx context.Context, c tidemark.Claim, s Settlement) (SettleReport, error)
	// Fail records a failed run and releases the claim, leaving the cursor
	// where it was. A settlement, or a failure that Served, deletes the
	// holder's record that it could not serve the source, in the same
	// transaction.
	Fail(ctx context.Context, c tidemark.Claim, f Failure) (tidemark.Run, error)

	// Retry reopens a window with a fresh budget, due now.
	Retry(ctx context.Context, ref, actor, note string) (tidemark.Source, error)
	// Skip moves the cursor to an explicit position, recording what was
	// skipped; the window reopens with a fresh budget. The move was
	// decided against the cursor at version from: if the cursor moved
	// since (a run settled), nothing moves and the error matches
	// tidemark.ErrConflict.
	Skip(ctx context.Context, ref string, from int64, to, actor, note string) (tidemark.Source, error)
	// Actions lists the operator actions taken on a source, newest first.
	Actions(ctx context.Context, ref string, limit int) ([]Action, error)

	// RenameSource gives a source a new, unused name; audited ('rename').
	RenameSource(ctx context.Context, ref, name, actor string) (tidemark.Source, error)
	// RemoveSource deletes a source with its runs, events, evidence, pages
	// and outbox channels, in one transaction that also writes the audit
	// row of the removal, which outlives the source. A source with events
	// or channels is refused (tidemark.ErrConflict, saying what would be
	// lost) unless force is set; a source whose run is in progress is
	// refused (tidemark.ErrClaimHeld) even then. The removal's counts are
	// returned either way.
	RemoveSource(ctx context.Context, ref, actor string, force bool) (Removal, error)
	// RemovalOf counts what removing the source would delete, deleting
	// nothing (the console's confirmation).
	RemovalOf(ctx context.Context, ref string) (Removal, error)
	// Removals lists the audit rows of removed sources, newest first.
	Removals(ctx context.Context, limit int) ([]Action, error)
	// Run finds one run by ID.
	Run(ctx context.Context, id string) (tidemark.Run, error)
	// Event finds one event by ID.
	Event(ctx context.Context, id string) (tidemark.Event, error)
	// Revisions lists an event's frozen evidence, newest first, without
	// the bytes.
	Revisions(ctx context.Context, eventID string) ([]Revision, error)

	Runs(ctx context.Context, f RunFilter) ([]tidemark.Run, error)
	Events(ctx context.Context, f EventFilter) ([]tidemark.Event, error)
	// Evidence returns an event's frozen evidence at a revision (0: the
	// current one).
	Evidence(ctx context.Context, eventID string, revision int) ([]byte, string, error)
	// OutcomeCounts counts finished runs by outcome, over all sources.
	OutcomeCounts(ctx context.Context) (map[tidemark.Outcome]int64, error)
	// NextDue returns when the earliest source that holder may claim is
	// due (holder "": any holder); ok is false when none is. A source the
	// holder recorded it could not serve is due for it when the record
	// expires.
	NextDue(ctx context.Context, holder string) (at time.Time, ok bool, err error)

	// RecordUnserved records that a worker could not serve a source (the
	// latest reason per source and worker), and keeps the worker from
	// claiming it through ClaimDue until u.Until.
	RecordUnserved(ctx context.Context, u Unserved) error
	// Unserved lists the workers that could not serve a source, latest
	// first, expired records included. A record is deleted when its worker
	// serves the source, or the source's settings change.
	Unserved(ctx context.Context, sourceID string) ([]Unserved, error)
	// LiveUnserved lists every source's records that keep their worker
	// from claiming it at now (their Until is after now), in no order.
	LiveUnserved(ctx context.Context, now time.Time) ([]Unserved, error)
}

// Unserved says that a worker could not serve a source, and why.
type Unserved struct {
	SourceID string    `json:"source_id"`
	Holder   string    `json:"holder"`
	Reason   string    `json:"reason"`
	At       time.Time `json:"at"`
	// Until is when the record stops keeping the worker from claiming the
	// source (the worker then tries again).
	Until time.Time `json:"until"`
}

// NewSource describes a source to add.
type NewSource struct {
	Name        string
	Kind        string
	Location    string
	Config      map[string]string
	Interval    time.Duration
	RetryBudget int
	// AllowPrivate lets the source's fetches reach private addresses.
	AllowPrivate bool
	// Key is the source's duplicate key: two sources with one key would
	// record every change twice (the kinds decide it: kinds.Set.Key).
	// The store holds each key for one source at a time and refuses a
	// second with a *DuplicateError, even against a concurrent add. ""
	// is no key, and conflicts with nothing.
	Key string
}

// KeyFunc is the rule that keys sources (NewSource.Key): what makes two
// sources one. The kinds hold it (kinds.Set.Key); a store is given it so
// that a change of a source's settings keys the source as an add of what
// the change leaves would, whoever makes the change.
type KeyFunc func(NewSource) string

// DuplicateError refuses a new source whose Key another source holds,
// and names that source. It matches tidemark.ErrConflict.
type DuplicateError struct {
	Source tidemark.Source // the source that holds the key
	// Err, when set, is the refusal in the words of the rule that keyed
	// it (the kinds'), and is what Error says.
	Err error
}

func (e *DuplicateError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("source %q already watches the same thing (%s %s)", e.Source.Name, e.Source.Kind, e.Source.ShownLocation())
}

func (e *DuplicateError) Unwrap() error { return e.Err }

func (e *DuplicateError) Is(target error) bool { return target == tidemark.ErrConflict }

// Source is the source ns describes, as its fetches will see it (active,
// no cursor yet). Checks made before a source is stored use it, so they
// reach only what the source's fetches may: its allow_private among the
// rest.
func (ns NewSource) Source() tidemark.Source {
	return tidemark.Source{Name: ns.Name, Kind: ns.Kind, Location: ns.Location, Config: ns.Config,
		State: tidemark.SourceActive, AllowPrivate: ns.AllowPrivate}
}

// Validate refuses a source no scheduler could run, by the rules a rename
// and a change of settings follow too: a name CheckName refuses, no kind,
// an interval or a retry budget Settings.Validate refuses. Stores call it
// before adding a source.
func (ns NewSource) Validate() error {
	if err := CheckName(ns.Name); err != nil {
		return err
	}
	if ns.Kind == "" {
		return tidemark.Invalidf("source kind", "", "must not be empty")
	}
	return Settings{Interval: &ns.Interval, RetryBudget: &ns.RetryBudget}.Validate()
}

// Settlement is what a successful fetch admitted.
type Settlement struct {
	Items    []tidemark.Item
	Cursor   string
	Declared int
	// Notes are what the fetch noticed but did not refuse (a git remote's
	// HEAD that moved), recorded on the run as its note.
	Notes []string
	// NextDueAt is when the source should be fetched again.
	NextDueAt time.Time
}

// Failure is why a run failed, when to try again, and whether the window
// goes terminal (RetryPolicy decides; the store records it).
type Failure struct {
	Outcome   tidemark.Outcome // unreachable, invalid or error
	Reason    string
	NextDueAt time.Time
	// Terminal makes the window terminal with this failure; Why says why
	// (the terminal reason's prefix, e.g. the budget spent).
	Terminal bool
	Why      string
	// NoCharge releases the claim without spending the window's budget:
	// the run was interrupted by our own shutdown, or this worker cannot
	// serve the source; it was not failed by the source.
	NoCharge bool
	// Interrupted: our own shutdown cut the run short (it is NoCharge
	// too). The run records its outcome and reason; the source keeps the
	// outcome, error and time of its last run, since the stop says nothing
	// about the source.
	Interrupted bool
	// Declared and Admitted are what the fetch declared and admitted
	// (0 when it failed before answering), recorded on the run as a
	// settlement records them: a short read's numbers belong on the run
	// that failed on them.
	Declared, Admitted int
}

// Served says whether a run that ended in f showed that its worker can
// serve the source: a charged failure is the source's (the worker ran the
// fetch); an uncharged one (cannot serve, interrupted) shows nothing.
func (f Failure) Served() bool { return !f.NoCharge }

// SettleReport is what a settlement recorded.
type SettleReport struct {
	Run           tidemark.Run
	EventsNew     int
	EventsChanged int
	// EventIDs are the events created or re-frozen, in item order.
	EventIDs []string
}

// Action is an audited operator action on a source.
type Action struct {
	ID       string `json:"id"`
	SourceID string `json:"source_id"`
	// SourceName is the source's name when the action was taken.
	SourceName          string    `json:"source_name"`
	Action              string    `json:"action"`
	Actor               string    `json:"actor"`
	CursorBefore        string    `json:"cursor_before"`
	CursorAfter         string    `json:"cursor_after"`
	CursorVersionBefore int64     `json:"cursor_version_before"`
	CursorVersionAfter  int64     `json:"cursor_version_after"`
	Note                string    `json:"note"`
	At                  time.Time `json:"at"`
}

// RunFilter narrows a run listing, newest first. Zero values mean no
// narrowing; Limit 0 means 100. BeforeID pages: only runs strictly older
// than (BeforeStartedAt, BeforeID), the last run of the previous page.
type RunFilter struct {
	SourceID        string
	Outcome         tidemark.Outcome
	Limit           int
	BeforeStartedAt time.Time
	BeforeID        string
}

// EventFilter narrows an event listing, newest first; Limit 0 means 100.
// BeforeID pages as RunFilter's does, on (OccurredAt, ID). RunID keeps the
// events a run created or re-froze last.
type EventFilter struct {
	SourceID         string
	Limit            int
	BeforeOccurredAt time.Time
	BeforeID         string
	RunID            string
}

// Detail is a source with its recent runs and operator actions: what
// `source show` and the API's source page present.
type Detail struct {
	tidemark.Source
	Runs    []tidemark.Run `json:"runs"`
	Actions []Action       `json:"actions"`
	// UnservedBy are the workers that could not serve the source.
	UnservedBy []Unserved `json:"unserved_by"`
}

// MarshalJSON writes the source's fields as tidemark.Source writes them,
// then runs, actions and unserved_by. It is needed because the embedded
// Source's MarshalJSON is promoted and would write the source alone.
func (d Detail) MarshalJSON() ([]byte, error) {
	src, err := json.Marshal(d.Source)
	if err != nil {
		return nil, err
	}
	rest, err := json.Marshal(struct {
		Runs       []tidemark.Run `json:"runs"`
		Actions    []Action       `json:"actions"`
		UnservedBy []Unserved     `json:"unserved_by"`
	}{d.Runs, d.Actions, d.UnservedBy})
	if err != nil {
		return nil, err
	}
	// Two objects, {…} and {…}: one object of the source's fields, then the rest.
	out := append(src[:len(src)-1:len(src)-1], ',')
	return append(out, rest[1:]...), nil
}

// SourceDetail reads a source with up to limit of its newest runs and
// operator actions, and the workers that could not serve it, whose hold
// at now it attaches (AttachHolds).
func SourceDetail(ctx context.Context, st Store, ref string, limit int, now time.Time) (Detail, error) {
	src, err := st.Source(ctx, ref)
	if err != nil {
		return Detail{}, err
	}
	runs, err := st.Runs(ctx, RunFilter{SourceID: src.ID, Limit: limit})
	if err != nil {
		return Detail{}, err
	}
	actions, err := st.Actions(ctx, src.ID, limit)
	if err != nil {
		return Detail{}, err
	}
	unserved, err := st.Unserved(ctx, src.ID)
	if err != nil {
		return Detail{}, err
	}
	one := []tidemark.Source{src}
	AttachHolds(one, unserved, now)
	return Detail{Source: one[0], Runs: runs, Actions: actions, UnservedBy: unserved}, nil
}

// ListSources lists every source, each with the hold at now of a worker
// that could not serve it (AttachHolds): every listing (the CLI, the
// status page, the API) says when a source is next tried alike.
func ListSources(ctx context.Context, st Store, now time.Time) (SourceList, error) {
	srcs, err := st.Sources(ctx)
	if err != nil {
		return nil, err
	}
	live, err := st.LiveUnserved(ctx, now)
	if err != nil {
		return nil, err
	}
	AttachHolds(srcs, live, now)
	return srcs, nil
}

// AttachHolds sets each source's Hold to the record in us that keeps its
// worker away longest past both now and the source's NextDueAt: that
// worker will not try the source before the record ends, so neither will
// a one-worker install. A record that ends sooner delays nothing and is
// not attached.
func AttachHolds(srcs []tidemark.Source, us []Unserved, now time.Time) {
	byID := make(map[string]int, len(srcs))
	for i := range srcs {
		byID[srcs[i].ID] = i
		srcs[i].Hold = nil
	}
	for _, u := range us {
		i, ok := byID[u.SourceID]
		if !ok || !u.Until.After(now) || !u.Until.After(srcs[i].NextDueAt) {
			continue
		}
		if h := srcs[i].Hold; h == nil || u.Until.After(h.Until) {
			srcs[i].Hold = &tidemark.SourceHold{Holder: u.Holder, Reason: u.Reason, Until: u.Until}
		}
	}
}

// BatchSettler is implemented by stores that can settle many runs that
// admitted nothing (the common end of polling a caught-up source) in one
// transaction. Each settlement is fenced on its own: a stale one fails
// alone with tidemark.ErrStaleClaim and the others settle. The results are
// in the order of the claims.
type BatchSettler interface {
	SettleMany(ctx context.Context, cs []tidemark.Claim, ss []Settlement) ([]SettleReport, []error)
}
