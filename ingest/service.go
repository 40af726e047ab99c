package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/internal/fieldtext"
	"github.com/tidemark/tidemark/redact"
)

var fpAfterFetch = failpoint.Register("ingest.run.after-fetch",
	"the fetch has returned its items | the settling transaction begins")

// Rand is the random source for jitter.
type Rand interface{ Float64() float64 }

// Backoff spaces out attempts at a failing window: exponential from Base,
// capped at Max, with equal jitter, and never sooner than a Retry-After.
type Backoff struct {
	Base time.Duration
	Max  time.Duration
}

// DefaultBackoff starts at 30 seconds and stops growing at one hour.
var DefaultBackoff = Backoff{Base: 30 * time.Second, Max: time.Hour}

// maxRetryAfter bounds how far an upstream's Retry-After may push a source.
const maxRetryAfter = 24 * time.Hour

// Delay returns how long to wait after the attempt-th failure (1-based).
// r in [0, 1) picks the jitter: the delay is in [d/2, d).
func (b Backoff) Delay(attempt int, r float64, retryAfter time.Duration) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := b.Max
	if exp := float64(b.Base) * math.Pow(2, float64(attempt-1)); exp < float64(b.Max) {
		d = time.Duration(exp)
	}
	d = d/2 + time.Duration(r*float64(d/2))
	if retryAfter > maxRetryAfter {
		retryAfter = maxRetryAfter
	}
	if retryAfter > d {
		d = retryAfter
	}
	return d
}

// Fetchers maps a source kind to its fetcher.
type Fetchers map[string]tidemark.Fetcher

// Service runs claims: fetch, then settle or fail, heartbeating while the
// fetch is in flight.
//
// Store is required; every other field may be left zero: Fetchers nil
// serves no kind, Clock nil is the system's, Rand nil spreads no jitter,
// Holder "" is this process's host:pid, Logger nil logs nothing, and the
// durations and Retry have the defaults their docs name.
type Service struct {
	Store    Store
	Fetchers Fetchers
	Clock    clock.Clock
	Rand     Rand
	// Holder is this worker's identity. A restarted worker that keeps its
	// identity re-enters its own runs without waiting for their leases.
	Holder   string
	LeaseTTL time.Duration
	// Retry decides when a failed window is tried again and when it goes
	// terminal (nil: DefaultRetryPolicy).
	Retry *RetryPolicy
	// FetchTimeout bounds one fetch (0: no bound beyond the lease).
	FetchTimeout time.Duration
	// UnservedFor bounds how long this worker leaves alone a source it
	// could not serve (a local path it cannot see, a kind it was not built
	// with) before it tries again, unless the source's settings change
	// first (0: DefaultUnservedFor). The hold starts at the first backoff
	// and doubles with each failure in a row (unservedHold). Other workers
	// take the source meanwhile.
	UnservedFor time.Duration
	Logger      *slog.Logger
	// Running, when set, is the set of sources with a run in flight in
	// this process, shared by its Services: RunSource refuses a source
	// already running here instead of re-entering its own claim (which is
	// for a restarted holder) and fetching it a second time.
	Running *Running

	// group commits settlements of runs that admitted nothing and finished
	// together, when the store can (BatchSettler).
	group group
}

// DefaultUnservedFor bounds how long a worker leaves alone a source it
// could not serve, by default.
const DefaultUnservedFor = time.Hour

func (s *Service) unservedFor() time.Duration {
	if s.UnservedFor > 0 {
		return s.UnservedFor
	}
	return DefaultUnservedFor
}

// settle records a successful fetch: in a group commit with the runs that
// finished at the same time when the run admitted nothing and the store
// can batch, on its own otherwise. Either way it returns once its own
// settlement has committed or failed.
func (s *Service) settle(ctx context.Context, c tidemark.Claim, st Settlement) (SettleReport, error) {
	if bs, ok := s.Store.(BatchSettler); ok && len(st.Items) == 0 && st.Declared == 0 && len(st.Notes) == 0 {
		return s.group.settle(ctx, bs, c, st)
	}
	return s.Store.Settle(ctx, c, st)
}

// Report is what one run did, for people and for --json.
type Report struct {
	RunID         string           `json:"run_id"`
	Source        string           `json:"source"`
	Outcome       tidemark.Outcome `json:"outcome"`
	EventsNew     int              `json:"events_new"`
	EventsChanged int              `json:"events_changed"`
	CursorBefore  string           `json:"cursor_before"`
	CursorAfter   string           `json:"cursor_after"`
	Error         string           `json:"error"`
	Reentered     bool             `json:"reentered"`
	// Note is what the fetch noticed but did not refuse, as the run
	// records it (a git remote's HEAD that moved), "" if nothing.
	Note string `json:"note"`
	// Backlog says the run filled its window and moved the cursor with
	// more ahead of it: the source is due again at once.
	Backlog bool `json:"backlog"`
}

// clock is Clock, or the system's when none is set.
func (s *Service) clock() clock.Clock {
	if s.Clock == nil {
		return clock.System{}
	}
	return s.Clock
}

// holder is Holder, or this process's host:pid when none is set.
func (s *Service) holder() string {
	if s.Holder != "" {
		return s.Holder
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	return HolderID(host, os.Getpid())
}

func (s *Service) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// MinLeaseTTL is the shortest lease a Service accepts: the heartbeat
// renews a lease every third of it, and a lease much shorter than a
// database round trip would expire while it is being renewed.
const MinLeaseTTL = time.Second

// DefaultLeaseTTL is the lease of a Service whose LeaseTTL is zero.
const DefaultLeaseTTL = 2 * time.Minute

func (s *Service) leaseTTL() time.Duration {
	if s.LeaseTTL == 0 {
		return DefaultLeaseTTL
	}
	return s.LeaseTTL
}

// check refuses a configuration no run could keep its claim under.
func (s *Service) check() error {
	if ttl := s.leaseTTL(); ttl < MinLeaseTTL {
		return tidemark.Invalidf("lease", ttl.String(), "must be at least %s (0 means %s)", MinLeaseTTL, DefaultLeaseTTL)
	}
	return nil
}

func (s *Service) retry() RetryPolicy {
	if s.Retry == nil {
		return DefaultRetryPolicy()
	}
	return *s.Retry
}

// RunSource claims one source and runs it.
func (s *Service) RunSource(ctx context.Context, ref string) (Report, error) {
	if err := s.check(); err != nil {
		return Report{}, err
	}
	src, err := s.Store.Source(ctx, ref)
	if err != nil {
		return Report{}, err
	}
	if s.Running != nil {
		if since, ok := s.Running.start(src.ID, s.clock().Now()); !ok {
			return Report{Source: src.Name}, &RunningError{Source: src.Name, Since: since}
		}
		defer s.Running.done(src.ID)
	}
	c, err := s.Store.Claim(ctx, src.ID, s.holder(), s.leaseTTL())
	if err != nil {
		return Report{Source: src.Name}, err
	}
	return s.RunClaim(ctx, c)
}

// Running is the set of sources with a run in flight in one process (see
// Service.Running). Its zero value is empty and ready.
type Running struct {
	mu  sync.Mutex
	ids map[string]time.Time
}

func (r *Running) start(id string, now time.Time) (since time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if since, busy := r.ids[id]; busy {
		return since, false
	}
	if r.ids == nil {
		r.ids = map[string]time.Time{}
	}
	r.ids[id] = now
	return now, true
}

func (r *Running) done(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.ids, id)
}

// RunningError: a run of the source is already in flight in this process.
// It matches tidemark.ErrClaimHeld.
type RunningError struct {
	Source string
	Since  time.Time
}

func (e *RunningError) Error() string {
	return fmt.Sprintf("source %s: a run of it started at %s is still in flight in this process; wait for it to finish",
		e.Source, fieldtext.Day(e.Since))
}

func (e *RunningError) Is(target error) bool { return target == tidemark.ErrClaimHeld }

// RunClaim runs a claim to its end: it fetches, then settles or fails the
// run. A cancelled ctx interrupts the fetch; the run is then failed without
// spending its budget, and the settlement or failure itself is never cut
// short, so nothing is left half-written.
func (s *Service) RunClaim(ctx context.Context, c tidemark.Claim) (Report, error) {
	return s.runClaim(ctx, c, nil)
}

// runClaim is RunClaim; fetched, if set, is called once the fetch has
// returned, before the run settles or fails (the scheduler frees the
// worker's slot there: settling is the database's work, not the worker's).
func (s *Service) runClaim(ctx context.Context, c tidemark.Claim, fetched func()) (Report, error) {
	rep := Report{RunID: c.RunID, CursorBefore: c.Cursor, CursorAfter: c.Cursor, Reentered: c.Reentered}
	if err := s.check(); err != nil {
		return rep, err
	}
	// Settlement and failure must finish even when ctx is cancelled.
	finishCtx := context.WithoutCancel(ctx)
	var src tidemark.Source
	if c.Source != nil {
		src = *c.Source // read by the claim itself
	} else {
		var err error
		if src, err = s.Store.Source(finishCtx, c.SourceID); err != nil {
			return rep, err
		}
	}
	rep.Source = src.Name
	fetcher := s.Fetchers[src.Kind]
	if fetcher == nil {
		return s.cannotServe(finishCtx, c, src, rep, tidemark.CannotServe(fmt.Sprintf("it was built without the kind %q", src.Kind), nil))
	}

	fetchCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if s.FetchTimeout > 0 {
		var stop context.CancelFunc
		fetchCtx, stop = context.WithTimeout(fetchCtx, s.FetchTimeout)
		defer stop()
	}
	var hbWG sync.WaitGroup
	hbDone := make(chan struct{})
	hbWG.Add(1)
	go func() {
		defer hbWG.Done()
		s.heartbeat(fetchCtx, c, cancel, hbDone)
	}()
	res, ferr := fetcher.Fetch(fetchCtx, src, c.Cursor)
	close(hbDone)
	hbWG.Wait()
	if fetched != nil {
		fetched()
	}
	if errors.Is(context.Cause(fetchCtx), tidemark.ErrStaleClaim) {
		return rep, fmt.Errorf("run %s on %s: lease lost while fetching: %w", c.RunID, src.Name, tidemark.ErrStaleClaim)
	}
	if ferr == nil {
		ferr = fpAfterFetch.Hit(ctx)
	}
	if ferr != nil {
		if ctx.Err() != nil {
			rep, err := s.fail(finishCtx, c, src, rep, counted{}, tidemark.OutcomeError, interruptedReason(ctx), 0, true)
			if rf := (*RunFailedError)(nil); errors.As(err, &rf) {
				rf.Err = ctx.Err() // the caller's: it stopped the run, the source did not fail
			}
			return rep, err
		}
		if errors.Is(ferr, tidemark.ErrCannotServe) {
			return s.cannotServe(finishCtx, c, src, rep, ferr)
		}
		if errors.Is(fetchCtx.Err(), context.DeadlineExceeded) {
			// Whatever the fetcher made of it, the upstream did not answer
			// in time. The reason is the fetcher's without its outcome,
			// which the run records beside it.
			_, why, _ := tidemark.Classify(ferr)
			reason := fmt.Sprintf("fetch timed out after %s: %s", s.FetchTimeout, why)
			return s.fail(finishCtx, c, src, rep, counted{}, tidemark.OutcomeUnreachable, reason, 0, false)
		}
	}
	// What the fetch declared and admitted, recorded on the run however it
	// ends; a fetch that failed answered nothing to count.
	read := counted{}
	if ferr == nil {
		read = counted{declared: res.Declared, admitted: len(res.Items)}
	}
	if outcome, reason, retryAfter := FetchOutcome(res, ferr); !outcome.Advances() {
		return s.fail(finishCtx, c, src, rep, read, outcome, reason, retryAfter, false)
	}
	now := s.clock().Now()
	next := src.Interval.Std()
	if nb := min(res.NotBefore, maxRetryAfter); nb > next {
		next = nb // the upstream asked us to come back later (Cache-Control)
	}
	// A backlog is not a schedule: a full window that moved the cursor
	// leaves the source due at once. A fetcher that says "more" without
	// moving would spin, so it waits its interval like any other.
	backlog := res.More && res.Cursor != c.Cursor
	if backlog {
		next = 0
	}
	settled, err := s.settle(finishCtx, c, Settlement{
		Items: res.Items, Cursor: res.Cursor, Declared: res.Declared, Notes: res.Notes, NextDueAt: now.Add(next),
	})
	if err != nil {
		if errors.Is(err, tidemark.ErrStaleClaim) {
			return rep, err
		}
		// The settlement rolled back; record the failure if the claim is
		// still ours (if the commit's outcome is unknown, Fail is stale).
		rep2, ferr := s.fail(finishCtx, c, src, rep, read, tidemark.OutcomeError, "settle: "+err.Error(), 0, false)
		if ferr != nil && !IsRunFailed(ferr) {
			return rep2, errors.Join(err, ferr)
		}
		return rep2, fmt.Errorf("settle run %s: %w", c.RunID, err)
	}
	rep.Outcome = settled.Run.Outcome
	rep.EventsNew, rep.EventsChanged = settled.EventsNew, settled.EventsChanged
	rep.CursorAfter = res.Cursor
	rep.Backlog = backlog
	rep.Note = settled.Run.Note
	s.logger().Info("run settled", "source", src.Name, "run", c.RunID, "outcome", rep.Outcome,
		"new", rep.EventsNew, "changed", rep.EventsChanged)
	return rep, nil
}

// RunFailedError is returned by RunClaim when the run was recorded as
// failed with a non-advancing outcome.
type RunFailedError struct {
	Outcome tidemark.Outcome
	Reason  string
	// Err is the context's error when the caller's context ended the run
	// (cancelled, or its deadline passed): it was cut short, not failed by
	// the source, and spent no budget.
	Err error
}

func (e *RunFailedError) Error() string { return fmt.Sprintf("%s: %s", e.Outcome, e.Reason) }

func (e *RunFailedError) Unwrap() error { return e.Err }

// interruptedReason says why a run whose context ended was cut short: the
// caller's deadline, or a stop (the worker shutting down, or its caller
// cancelling). Either way the run spends no budget.
func interruptedReason(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "interrupted: the caller's deadline passed (no budget spent)"
	}
	return "interrupted: stopped by its caller or the worker shutting down (no budget spent)"
}

// IsRunFailed reports whether err says a run was recorded as failed (as
// opposed to tidemark failing to record anything).
func IsRunFailed(err error) bool {
	var rf *RunFailedError
	return errors.As(err, &rf)
}

// counted is what a fetch declared and admitted.
type counted struct{ declared, admitted int }

func (s *Service) fail(ctx context.Context, c tidemark.Claim, src tidemark.Source, rep Report, read counted,
	o tidemark.Outcome, reason string, retryAfter time.Duration, interrupted bool) (Report, error) {
	// The reason is stored, reported and logged: clean it of the
	// credentials a location carries (sources stored before they were
	// refused), however the upstream echoed them.
	reason = redact.Text(reason, redact.Credentials(src.Location)...)
	now := s.clock().Now()
	r := 0.5
	if s.Rand != nil {
		r = s.Rand.Float64()
	}
	facts := FailureFacts{Outcome: o, Attempt: c.Attempt, Budget: c.RetryBudget, Now: now,
		Interval: src.Interval.Std(), RetryAfter: retryAfter}
	if c.FailingSince != nil {
		facts.FailingSince = *c.FailingSince
	}
	d := s.retry().Decide(facts, r)
	f := Failure{Outcome: o, Reason: reason, NextDueAt: now.Add(d.Delay), Terminal: d.Terminal, Why: d.Why}
	if interrupted {
		f = Failure{Outcome: o, Reason: reason, NextDueAt: now, NoCharge: true, Interrupted: true}
	}
	f.Declared, f.Admitted = read.declared, read.admitted
	if _, err := s.Store.Fail(ctx, c, f); err != nil {
		return rep, fmt.Errorf("record %s failure of run %s: %w", o, c.RunID, err)
	}
	rep.Outcome, rep.Error = o, reason
	s.logger().Warn("run failed", "source", src.Name, "run", c.RunID, "outcome", o, "reason", reason,
		"attempt", c.Attempt, "budget", c.RetryBudget)
	return rep, &RunFailedError{Outcome: o, Reason: reason}
}

// cannotServe fails a run that this worker cannot serve (a local path it
// cannot see, a kind it was not built with): the outcome is error, our
// own; the window's budget is not spent, since the source may be fine for
// other workers; the source is due again after a first backoff, so that
// any worker may take it; and the worker is recorded as unable to serve
// it, which keeps it from claiming the source for UnservedFor.
func (s *Service) cannotServe(ctx context.Context, c tidemark.Claim, src tidemark.Source, rep Report, why error) (Report, error) {
	reason := redact.Text(fmt.Sprintf("worker %s: %v (budget not spent; left for other workers)", s.holder(), why),
		redact.Credentials(src.Location)...)
	now := s.clock().Now()
	r := 0.5
	if s.Rand != nil {
		r = s.Rand.Float64()
	}
	// The pause of a first failure under the service's retry policy,
	// whatever this window's attempts: long enough for other workers to
	// take the source, never charged to it.
	first := s.retry().Decide(FailureFacts{Outcome: tidemark.OutcomeError, Attempt: 1, Budget: c.RetryBudget,
		Now: now, Interval: src.Interval.Std()}, r)
	next := now.Add(first.Delay)
	f := Failure{Outcome: tidemark.OutcomeError, Reason: reason, NextDueAt: next, NoCharge: true}
	if _, err := s.Store.Fail(ctx, c, f); err != nil {
		return rep, fmt.Errorf("record that run %s cannot be served: %w", c.RunID, err)
	}
	hold := s.unservedHold(ctx, src.ID, first.Delay)
	if err := s.Store.RecordUnserved(ctx, Unserved{SourceID: src.ID, Holder: s.holder(), Reason: reason, At: now, Until: now.Add(hold)}); err != nil {
		// The run is recorded; only the list in source show misses it,
		// and this worker may claim the source again when it is due.
		s.logger().Error("record the worker that cannot serve a source", "source", src.Name, "err", err)
	}
	rep.Outcome, rep.Error = tidemark.OutcomeError, reason
	s.logger().Warn("cannot serve source here; left for other workers", "source", src.Name, "run", c.RunID, "reason", reason)
	return rep, &RunFailedError{Outcome: tidemark.OutcomeError, Reason: reason}
}

// unservedHold is how long this worker leaves alone a source it could not
// serve now: the first backoff (first) the first time, then twice its last
// hold, while its record stands (a run it serves, or a change of the
// source's settings, clears it), up to unservedFor. A worker that is the
// only one (the default install) thus reads a directory that was gone for
// a moment again within minutes, not an hour later; one that keeps failing
// soon leaves the source to others for the whole bound.
func (s *Service) unservedHold(ctx context.Context, sourceID string, first time.Duration) time.Duration {
	hold := first
	us, err := s.Store.Unserved(ctx, sourceID)
	if err != nil {
		// The record is advice; without the last one, start over.
		s.logger().Error("read the workers that could not serve a source", "source", sourceID, "err", err)
	}
	for _, u := range us {
		if u.Holder == s.holder() {
			hold = max(hold, 2*u.Until.Sub(u.At))
		}
	}
	return max(min(hold, s.unservedFor()), time.Second)
}

// heartbeat extends the lease every third of its length until done. If the
// claim has gone stale, it cancels the fetch: its results could not settle.
func (s *Service) heartbeat(ctx context.Context, c tidemark.Claim, cancel context.CancelCauseFunc, done <-chan struct{}) {
	ttl := s.leaseTTL()
	t := time.NewTicker(max(ttl/3, MinLeaseTTL/3)) // never ≤ 0, which would panic
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			var err error
			c, err = s.Store.Heartbeat(ctx, c, ttl)
			if errors.Is(err, tidemark.ErrStaleClaim) {
				cancel(tidemark.ErrStaleClaim)
				return
			}
			if err != nil {
				s.logger().Warn("heartbeat", "run", c.RunID, "err", err)
			}
		}
	}
}

// Header is implemented by fetchers whose source has a current head (git:
// the branch's commit), the default target of a skip.
type Header interface {
	Head(ctx context.Context, src tidemark.Source) (string, error)
}

// RangeDescriber is implemented by fetchers that can say what lies between
// two cursors, so a skip records what it skipped.
type RangeDescriber interface {
	DescribeRange(ctx context.Context, src tidemark.Source, from, to string) (string, error)
}

// CursorResolver is implemented by fetchers that can check an operator's
// skip target (git: a commit of the branch), returning the cursor it
// stands for. A target it refuses is invalid and moves nothing.
type CursorResolver interface {
	ResolveCursor(ctx context.Context, src tidemark.Source, to string) (string, error)
}

// Skip moves a source's cursor to `to` (or, when empty, to the fetcher's
// head), recording the move and, where the fetcher can say, what was
// skipped. A named target is checked by fetchers that can check it.
func (s *Service) Skip(ctx context.Context, ref, to, actor, note string) (tidemark.Source, error) {
	src, err := s.Store.Source(ctx, ref)
	if err != nil {
		return src, err
	}
	f := s.Fetchers[src.Kind]
	if to == "" {
		h, ok := f.(Header)
		if !ok {
			return src, tidemark.Invalidf("to", "", "kind %s has no head; name the cursor to skip to", src.Kind)
		}
		if to, err = h.Head(ctx, src); err != nil {
			return src, unreadable(src, "to find its head", err)
		}
	} else if r, ok := f.(CursorResolver); ok {
		if to, err = r.ResolveCursor(ctx, src, to); err != nil {
			return src, unreadable(src, "to check the target", err)
		}
	}
	if d, ok := f.(RangeDescriber); ok {
		if desc, err := d.DescribeRange(ctx, src, src.Cursor, to); err == nil && desc != "" {
			if note != "" {
				note += "; "
			}
			note += "skipped " + desc
		}
	}
	// Fenced on the cursor the target was checked against: a run that
	// moved it meanwhile makes the skip a conflict, never a move back.
	return s.Store.Skip(ctx, src.ID, src.CursorVersion, to, actor, note)
}

// UnreadableError: an operator's action on a source (a skip) needed the
// source read, and its kind could not read it: the fetch would fail the
// same way (a branch gone, a remote out of reach, a repository this
// worker cannot see). It is the source's trouble, not the caller's input
// nor tidemark's own failure, so it matches tidemark.ErrUnavailable (exit
// 5, HTTP 503); Err says why, as a run would record it.
type UnreadableError struct {
	Source string
	Why    string // what it was read for: "to find its head"
	Err    error
}

func (e *UnreadableError) Error() string {
	outcome, reason, _ := tidemark.Classify(e.Err)
	return fmt.Sprintf("skip %s: cannot read the source %s: %s: %s", e.Source, e.Why, outcome, reason)
}

func (e *UnreadableError) Unwrap() []error { return []error{e.Err, tidemark.ErrUnavailable} }

// unreadable is err, from a kind reading src for an operator's action, as
// an *UnreadableError when it says the source could not be read (a
// classified fetch failure, or this worker cannot serve it); any other
// error (the input refused, our own failure) as it is, named by the skip.
func unreadable(src tidemark.Source, why string, err error) error {
	var fe *tidemark.FetchError
	if errors.As(err, &fe) || errors.Is(err, tidemark.ErrCannotServe) {
		return &UnreadableError{Source: src.Name, Why: why, Err: err}
	}
	return fmt.Errorf("skip %s: %w", src.Name, err)
}
