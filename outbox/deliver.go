package outbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/internal/fieldtext"
	"github.com/tidemark/tidemark/outbox/provider"
)

// Failpoints of a delivery, in the order a delivery reaches them.
var (
	fpAfterJournal = failpoint.Register("outbox.send.after-journal",
		"the attempt row is committed | the provider is called")
	fpAfterSend = failpoint.Register("outbox.send.after-send",
		"the provider call has returned | its result is recorded")
	fpMidReconcile = failpoint.Register("outbox.reconcile.after-read",
		"the ordered read of own writes is done | the plan is recorded")
)

// finishTimeout bounds the journal's work after a send (the counter read
// and the Finish transaction), which runs even when the step's context is
// cancelled.
const finishTimeout = 30 * time.Second

// MaxFailureBackoff caps the wait the lane's gate keeps after an intent's
// failed attempts (failureBackoff).
const MaxFailureBackoff = 5 * time.Minute

// failureBackoff is how long the lane's gate stays closed after the n-th
// attempt of an intent failed (its outcome unknown, or not landed): none
// after the first, then 2s doubling to MaxFailureBackoff, so a receiver
// that is up but fails every write is not sent the same write at the
// lane's gap for as long as it fails. Retry-After, when longer, wins.
func failureBackoff(n int) time.Duration {
	if n < 2 {
		return 0
	}
	// 1s doubled n-1 times; past capShift doublings it is over the cap
	// already, so the shift stops there (and cannot overflow).
	return min(time.Second<<min(n-1, capShift), MaxFailureBackoff)
}

// capShift is how many doublings of 1s reach MaxFailureBackoff.
var capShift = bits.Len64(uint64(MaxFailureBackoff / time.Second))

// Limits of a reconciliation.
const (
	maxListPages        = 100_000
	maxProbesPerRound   = 50
	maxRechecksPerRound = 50
)

// Deliverer is the single writer of one lane.
type Deliverer struct {
	Store    Store
	Provider provider.Provider
	Lane     string
	Holder   string
	Clock    clock.Clock
	LeaseTTL time.Duration
	Logger   *slog.Logger

	lease *Lease
	// counting is a write whose answer was lost and whose provider's
	// counter had not moved yet: it is counted again after its deadline
	// (see verifyByCount).
	counting *counting
	// healthy: this deliverer recorded that the lane's steps go through
	// (Lane.Failing cleared) and none failed since. Until then the lane
	// may carry a run of failed steps, its own or one an earlier writer
	// left, that the next step going through ends.
	healthy bool
}

// StepKind says what a step did.
type StepKind string

const (
	StepIdle       StepKind = "idle"       // nothing pending
	StepWait       StepKind = "wait"       // the pacing gate is closed
	StepSent       StepKind = "sent"       // one attempt made
	StepBucketed   StepKind = "bucketed"   // a target could not accept its write
	StepReconciled StepKind = "reconciled" // the lane was reconciled
	StepSkipped    StepKind = "skipped"    // the intent changed under us; nothing was journaled
)

// Step is what one call to Step did.
type Step struct {
	Kind     StepKind `json:"kind"`
	IntentID string   `json:"intent_id,omitempty"`
	Outcome  Outcome  `json:"outcome,omitempty"`
	// Until is when the gate opens (StepWait), or when a deferred write
	// may be tried again.
	Until *time.Time `json:"until,omitempty"`
	Plan  *Plan      `json:"plan,omitempty"`
	// Requests counts the provider reads a reconciliation made.
	Requests int `json:"requests,omitempty"`
	// Alert is set when a counter showed duplicates.
	Alert string `json:"alert,omitempty"`
	// Error is why a sent write did not land, or why its outcome is
	// unknown (the provider's error, as journaled).
	Error string `json:"error,omitempty"`
}

// failedWrite reports whether s sent a write that failed: it did not land,
// or its answer never came. The step went through; the receiver failed.
func (s Step) failedWrite() bool {
	return s.Kind == StepSent && (s.Outcome == OutcomeNotLanded || s.Outcome == OutcomeUnknown)
}

func (d *Deliverer) log() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

// guarantee is the lane's guarantee as its provider was built with it
// (providers.NewWithSecrets); a provider that says nothing gets none of the
// resends: a write in doubt stays unresolved.
func (d *Deliverer) guarantee() provider.LaneGuarantee {
	if g, ok := d.Provider.(provider.Guaranteed); ok {
		return g.LaneGuarantee()
	}
	return provider.LaneGuarantee{Guarantee: provider.AtMostOnce}
}

// keyScope is the scope the provider sends idempotency keys in now
// (provider.KeyScoped), "" when it names none.
func (d *Deliverer) keyScope() string {
	if k, ok := d.Provider.(provider.KeyScoped); ok {
		return k.KeyScope()
	}
	return ""
}

func (d *Deliverer) ttl() time.Duration {
	if d.LeaseTTL <= 0 {
		return time.Minute
	}
	return d.LeaseTTL
}

// ensureLease acquires the lane's lease, or renews the one held.
func (d *Deliverer) ensureLease(ctx context.Context) (Lease, error) {
	if d.lease != nil {
		l, err := d.Store.Renew(ctx, *d.lease, d.ttl())
		if err == nil {
			d.lease = &l
			return l, nil
		}
		if !errors.Is(err, tidemark.ErrStaleClaim) {
			// Not known lost (an interrupt, the database): keep it, so
			// that Release can still give it up on the way out.
			return Lease{}, err
		}
		d.lease = nil
	}
	l, err := d.Store.Acquire(ctx, d.Lane, d.Holder, d.ttl())
	if err != nil {
		return Lease{}, err
	}
	d.lease = &l
	return l, nil
}

// Release gives up the lease, if held.
func (d *Deliverer) Release(ctx context.Context) error {
	if d.lease == nil {
		return nil
	}
	l := *d.lease
	d.lease = nil
	var ferr error
	if c := d.counting; c != nil && c.lease.Token == l.Token {
		// Stopped before the counter could be read past the deadline:
		// the attempt's outcome is unknown, and a reconciliation decides.
		d.counting = nil
		c.res.Error += "; its counter had not moved, and the delivery stopped before the write's deadline " +
			fieldtext.Day(c.due) + " could pass"
		ferr = d.Store.Finish(ctx, l, c.att, c.res)
	}
	return errors.Join(ferr, d.Store.Release(ctx, l))
}

// Step does one unit of work: reconcile a lane in doubt, or send the next
// pending intent through the gate. A write the remote refused returns its
// step and a *RefusedError: the lane must not go on. Whether the step
// failed is kept on the lane (recordHealth).
func (d *Deliverer) Step(ctx context.Context) (Step, error) {
	s, err := d.step(ctx)
	d.recordHealth(ctx, s, err)
	return s, err
}

// recordHealth keeps on the lane whether a step failed (Lane.Failing), so
// that lane show, the console and /metrics say a lane is failing whichever
// way it is delivered: the daemon's loop, or passes run from cron. A step
// its caller cut short, one another writer's lease refused, and one the
// provider asked to wait are not the lane failing. It is the lane's
// health, not its delivery: a failure to record it is logged, and
// recorded again after the next step. A write the receiver failed (it did
// not land, or its answer never came) is the lane failing too, though the
// step itself went through; a run of failures ends at a write that lands
// or when nothing is left to write or to decide, not at a wait or a
// reconciliation. A write in doubt that nothing can decide (on a lane
// that is at most once) leaves nothing to decide: it waits for an
// operator, and the lane shows it unresolved, not failing.
func (d *Deliverer) recordHealth(ctx context.Context, s Step, err error) {
	_, deferred := errors.AsType[*DeferredError](err)
	if err == nil && s.failedWrite() {
		err = errors.New(failedText(s))
	}
	switch {
	case ctx.Err() != nil, errors.Is(err, tidemark.ErrClaimHeld), deferred:
	case err == nil && (s.Kind == StepWait || s.Kind == StepReconciled):
		// Between writes: a wait, or a read deciding the last one. Neither
		// says whether the receiver takes writes again; the next write, or
		// nothing left to write, does.
	case err == nil && s.Kind == StepIdle && !d.healthy && d.awaiting(ctx):
		// Nothing to send now, but a write the receiver failed waits for
		// its outcome to be decided: the run goes on.
	case err == nil:
		if d.healthy {
			return
		}
		if cerr := d.Store.ClearLaneFailure(ctx, d.Lane); cerr != nil {
			d.log().Warn("outbox: could not record that the lane delivers again", "lane", d.Lane, "err", cerr)
			return
		}
		d.healthy = true
	default:
		d.healthy = false
		if rerr := d.Store.RecordLaneFailure(ctx, d.Lane, d.Clock.Now(), tidemark.Text(err)); rerr != nil {
			d.log().Warn("outbox: could not record the lane's failure", "lane", d.Lane, "err", rerr)
		}
	}
}

// awaiting reports whether a write of the lane waits for its outcome to
// be decided (sending, or unresolved until a later check that can decide
// it). On a lane that is at most once nothing decides an unresolved
// write: it waits for an operator or the retirement policy, not for the
// lane. When the lane cannot be read, it answers true: the run of failures
// stays as it is.
func (d *Deliverer) awaiting(ctx context.Context) bool {
	sending, unresolved, err := d.Store.Undecided(ctx, d.Lane)
	if err != nil {
		return true
	}
	if d.guarantee().Guarantee == provider.AtMostOnce {
		unresolved = 0
	}
	return sending+unresolved > 0
}

// step is Step's unit of work.
func (d *Deliverer) step(ctx context.Context) (Step, error) {
	l, err := d.ensureLease(ctx)
	if err != nil {
		return Step{}, err
	}
	if c := d.counting; c != nil {
		if c.lease.Token != l.Token {
			// The lease was lost meanwhile: the attempt stays in doubt,
			// for whoever holds the lane now to reconcile.
			d.counting = nil
		} else if now := d.Clock.Now(); now.Before(c.due) {
			due := c.due
			return Step{Kind: StepWait, IntentID: c.in.ID, Until: &due}, nil
		} else {
			return d.countAgain(ctx, l)
		}
	}
	doubt, err := d.Store.InDoubt(ctx, l)
	if err != nil {
		return Step{}, err
	}
	if doubt {
		return d.reconcile(ctx, l)
	}
	return d.send(ctx, l)
}

// LaneError is an error of one lane's delivery. It names the lane once:
// a caller that goes over many lanes adds the name only to an error that
// is not already a LaneError of that lane.
type LaneError struct {
	Lane string
	Err  error
}

func (e *LaneError) Error() string { return fmt.Sprintf("outbox: lane %s: %v", e.Lane, e.Err) }
func (e *LaneError) Unwrap() error { return e.Err }

// OfLane is err as an error of lane: err itself when it is a LaneError of
// lane already.
func OfLane(lane string, err error) error {
	if le, ok := errors.AsType[*LaneError](err); (ok && le.Lane == lane) || err == nil {
		return err
	}
	return &LaneError{lane, err}
}

// RunOnce is one pass over the lane: it steps until nothing is pending,
// waiting on the pacing gate with sleep (nil: a timer), and returns the
// steps taken. A pass is bounded: it waits for the lane's own minimum gap
// between writes, never for its provider. A write the provider asks to
// wait for (429 or 503 with Retry-After), or a gate a provider's earlier
// answer keeps closed for longer than the minimum gap, ends the pass with a
// *DeferredError: the intent stays pending, tried once at most in this
// pass, and a later pass sends it. A pass that otherwise ends with writes
// it made that failed and had not landed by its end returns a
// *WritesFailedError: it left them undone.
func (d *Deliverer) RunOnce(ctx context.Context, sleep func(context.Context, time.Duration) error) ([]Step, error) {
	if sleep == nil {
		sleep = Sleep
	}
	var steps []Step
	for {
		s, err := d.Step(ctx)
		if err != nil {
			if s.Kind != "" {
				steps = append(steps, s) // the step that stopped the lane
			}
			return steps, err
		}
		if s.Outcome == OutcomeDeferred {
			until := d.Clock.Now()
			if s.Until != nil {
				until = *s.Until
			}
			return append(steps, s), &DeferredError{Lane: d.Lane, IntentID: s.IntentID, Until: until}
		}
		switch s.Kind {
		case StepIdle:
			return steps, writesFailed(d.Lane, steps)
		case StepWait:
			if err := sleep(ctx, s.Until.Sub(d.Clock.Now())); err != nil {
				return steps, err
			}
			continue
		case StepReconciled:
			if len(steps) > 0 && steps[len(steps)-1].Kind == StepReconciled {
				// Two looks in a row: the store keeps the lane in doubt;
				// stop rather than read again and again.
				steps = append(steps, s)
				return steps, writesFailed(d.Lane, steps)
			}
		}
		steps = append(steps, s)
	}
}

// WritesFailedError ends a pass that made writes that failed (they did
// not land, or no answer said whether they did) and that had not landed
// by its end: a write that did not land is pending, sent again by a later
// pass; one in doubt waits for reconciliation to decide it, or, on a lane
// that is at most once, for an operator. It matches
// tidemark.ErrUnavailable: the pass left work undone.
type WritesFailedError struct {
	Lane string
	// Intents are the intents whose writes failed, in the order they
	// first failed.
	Intents []string
	// Last is what the latest failed write came to.
	Last string
}

func (e *WritesFailedError) Error() string {
	ids := strings.Join(e.Intents[:min(len(e.Intents), maxReportIDs)], " ")
	if n := len(e.Intents) - maxReportIDs; n > 0 {
		ids += fmt.Sprintf(" … and %d more", n)
	}
	return fmt.Sprintf("%d write(s) failed and did not land in this pass (intent %s; the latest: %s); "+
		"one that did not land is sent again by a later pass, one in doubt is decided by reconciliation or, "+
		"on a lane that is at most once, by an operator (outbox intents list --lane %s)",
		len(e.Intents), ids, e.Last, e.Lane)
}

func (e *WritesFailedError) Is(target error) bool { return target == tidemark.ErrUnavailable }

// writesFailed is the *WritesFailedError of a pass's steps, or nil: the
// writes that failed in it, but for those that landed later in the same
// pass (sent again, or found landed by a reconciliation).
func writesFailed(lane string, steps []Step) error {
	failed := map[string]string{} // intent: what its latest failed write came to
	var order, latest []string    // intents as they first failed, and as they last did
	for _, s := range steps {
		switch {
		case s.failedWrite():
			if _, ok := failed[s.IntentID]; !ok {
				order = append(order, s.IntentID)
			}
			failed[s.IntentID] = failedText(s)
			latest = append(latest, s.IntentID)
		case s.Kind == StepSent && s.Outcome == OutcomeLanded:
			delete(failed, s.IntentID)
		case s.Kind == StepReconciled && s.Plan != nil:
			for _, id := range s.Plan.Landed {
				delete(failed, id)
			}
		}
	}
	undone := func(id string) bool { _, ok := failed[id]; return ok }
	order = slices.DeleteFunc(order, func(id string) bool { return !undone(id) })
	if len(order) == 0 {
		return nil
	}
	latest = slices.DeleteFunc(latest, func(id string) bool { return !undone(id) })
	return &WritesFailedError{Lane: lane, Intents: order, Last: failed[latest[len(latest)-1]]}
}

// failedText says what a failed write came to, for the lane's failing
// record and a pass's error.
func failedText(s Step) string {
	what := "did not land"
	if s.Outcome == OutcomeUnknown {
		// No answer, or one that does not say (a 5xx): either way the
		// write may or may not have landed.
		what = "is in doubt (it may or may not have landed)"
	}
	return fmt.Sprintf("the write of intent %s %s: %s", s.IntentID, what, s.Error)
}

// writeBound is how long one write may take from our side: the provider's
// own bound (provider.Bounded), else provider.DefaultTimeout.
func (d *Deliverer) writeBound() time.Duration {
	if b, ok := d.Provider.(provider.Bounded); ok && b.WriteBound() > 0 {
		return b.WriteBound()
	}
	return provider.DefaultTimeout
}

// DeferredError ends a lane's pass: its provider asked to wait
// (Retry-After) before the next write, or before the read of our own
// writes a reconciliation needs (IntentID empty, Err the refused read).
// A write's intent stays pending and the lane's gate is closed until
// Until; a later pass sends it, or reconciles. It matches
// tidemark.ErrUnavailable: the pass left the work undone.
type DeferredError struct {
	Lane     string
	IntentID string
	Until    time.Time
	Err      error
}

func (e *DeferredError) Error() string {
	if e.IntentID == "" {
		return fmt.Sprintf("reconciliation deferred: %v; the provider asked to wait until %s; a later pass reconciles",
			e.Err, fieldtext.Day(e.Until))
	}
	return fmt.Sprintf("intent %s deferred: the lane waits until %s (the provider asked it to, or it backs off after failed writes); a later pass sends it",
		e.IntentID, fieldtext.Day(e.Until))
}

func (e *DeferredError) Unwrap() []error {
	if e.Err == nil {
		return []error{tidemark.ErrUnavailable}
	}
	return []error{tidemark.ErrUnavailable, e.Err}
}

// Sleep waits d or until ctx ends (clock.Sleep).
func Sleep(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, d) }

// send makes one attempt at the lane's next pending intent, in phases
// that mirror the design: pick it through the pacing gate, check that its
// target accepts writes, read the counter, journal the attempt, re-check
// the fence, post, verify by subtraction, and finish the journal. A phase
// that returns a step with a Kind ends the step there.
func (d *Deliverer) send(ctx context.Context, l Lease) (Step, error) {
	in, stop, err := d.pickPending(ctx, l)
	if err != nil || stop.Kind != "" {
		return stop, err
	}
	if stop, err := d.checkTarget(ctx, l, in); err != nil || stop.Kind != "" {
		return stop, err
	}
	before, err := d.countBefore(ctx)
	if err != nil {
		return Step{}, err
	}
	att, stop, err := d.journal(ctx, l, in, before, d.writeBound())
	if err != nil || stop.Kind != "" {
		return stop, err
	}
	if err := fpAfterJournal.Hit(ctx); err != nil {
		return Step{}, err
	}
	// The fence, once more, immediately before the write leaves.
	if err := d.Store.CheckLease(ctx, l); err != nil {
		return Step{}, &LaneError{d.Lane, fmt.Errorf("refused before sending %s: %w", in.ID, err)}
	}
	// From here on the journal is finished whatever happens to ctx.
	finishCtx, cancel := finishContext(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		res := Result{Outcome: OutcomeNotLanded, Error: "interrupted before sending: " + err.Error()}
		if ferr := d.Store.Finish(finishCtx, l, att, res); ferr != nil {
			return Step{}, errors.Join(err, ferr)
		}
		return Step{}, err
	}
	sentAt := d.Clock.Now()
	// The write ends by the attempt's recorded deadline, whatever the
	// provider does: until then it may land, and reconciliation believes
	// no answer that says it did not.
	postCtx, cancelPost := context.WithTimeout(ctx, att.Until.Sub(sentAt))
	posted, perr := d.Provider.Post(postCtx, provider.Write{Target: in.Target, Parent: in.Parent, Body: []byte(in.Body), IdempotencyKey: in.IdempotencyKey})
	cancelPost()
	if err := fpAfterSend.Hit(finishCtx); err != nil {
		return Step{}, err
	}
	res := postResult(sentAt, posted, perr)
	if res.Outcome == OutcomeUnknown && ctx.Err() != nil {
		res.Error = "interrupted while in flight: " + res.Error
	}
	step := Step{Kind: StepSent, IntentID: in.ID}
	alert, wait := d.verifyByCount(ctx, finishCtx, l, in, att, before, &res)
	if wait != nil {
		return *wait, nil
	}
	step.Alert = alert
	return d.finish(finishCtx, l, in, att, res, step, perr)
}

// finishContext is the context an attempt's journal is finished on once
// its write may have left: ctx's values without its cancellation (Ctrl-C,
// a shutdown), bounded by finishTimeout, so that an answer the provider
// gave is recorded and a write that never left is not left looking in
// doubt.
func finishContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
}

// finish records an attempt's result in the journal, and says in step
// what it came to.
func (d *Deliverer) finish(finishCtx context.Context, l Lease, in Intent, att Attempt, res Result, step Step, perr error) (Step, error) {
	if res.Outcome == OutcomeUnknown || res.Outcome == OutcomeNotLanded {
		// A receiver that fails write after write is given time.
		res.RetryAfter = max(res.RetryAfter, failureBackoff(in.Attempts+1))
	}
	if err := d.Store.Finish(finishCtx, l, att, res); err != nil {
		return Step{}, err
	}
	d.logSent(in, res)
	step.Outcome = res.Outcome
	if step.failedWrite() {
		step.Error = res.Error
	}
	if res.Outcome == OutcomeDeferred {
		// When it may be tried again: the gate as Finish moved it.
		if lane, err := d.Store.Lane(finishCtx, d.Lane); err == nil && lane.NextSendAt != nil {
			until := *lane.NextSendAt
			step.Until = &until
		}
	}
	if res.Outcome == OutcomeRefused {
		return step, &LaneError{d.Lane, &RefusedError{Intent: in.ID, Err: perr}}
	}
	return step, nil
}

// RefusedError: the provider refused a write of the lane for a reason that
// is the lane's or ours (its credentials, a request it cannot take), not
// the target's. The write did not land and its intent is pending; the lane
// sends nothing more until the next delivery, after the lane is fixed. It
// matches tidemark.ErrUnavailable: the lane cannot deliver as it is.
type RefusedError struct {
	Intent string
	Err    error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the provider refused the write of intent %s, so the lane stops: %v; "+
		"fix the lane (outbox lane set) and deliver again, or retire the intent if the write itself is at fault", e.Intent, e.Err)
}
func (e *RefusedError) Unwrap() error        { return e.Err }
func (e *RefusedError) Is(target error) bool { return target == tidemark.ErrUnavailable }

// pickPending decides what is sent next: the lane's next pending intent,
// if there is one (else the step is idle) and the pacing gate is open
// (else the step waits until it opens).
func (d *Deliverer) pickPending(ctx context.Context, l Lease) (Intent, Step, error) {
	in, ok, err := d.Store.NextPending(ctx, l)
	if err != nil || !ok {
		return Intent{}, Step{Kind: StepIdle}, err
	}
	lane, err := d.Store.Lane(ctx, d.Lane)
	if err != nil {
		return Intent{}, Step{}, err
	}
	if now := d.Clock.Now(); lane.NextSendAt != nil && now.Before(*lane.NextSendAt) {
		until := *lane.NextSendAt
		s := Step{Kind: StepWait, IntentID: in.ID, Until: &until}
		if until.Sub(now) > lane.MinGap.Std() {
			// Closed for longer than the lane's own pacing: the provider
			// asked to wait (Retry-After), and the intent is deferred.
			s.Outcome = OutcomeDeferred
		}
		return in, s, nil
	}
	return in, Step{}, nil
}

// checkTarget decides whether the intent's target accepts a write; one
// that does not is bucketed as unexecutable (reversibly) instead of sent.
func (d *Deliverer) checkTarget(ctx context.Context, l Lease, in Intent) (Step, error) {
	w, err := d.Provider.CanWrite(ctx, in.Target, in.Parent)
	if err != nil {
		return Step{}, &LaneError{d.Lane, fmt.Errorf("check target %s: %w", in.Target, err)}
	}
	if w.OK {
		return Step{}, nil
	}
	check := Check{At: d.Clock.Now(), Verdict: "unexecutable", Evidence: "target refuses writes: " + w.Reason}
	if err := d.Store.Bucket(ctx, l, in.ID, w.Reason, check); errors.Is(err, tidemark.ErrConflict) {
		return Step{Kind: StepSkipped, IntentID: in.ID}, nil
	} else if err != nil {
		return Step{}, err
	}
	return Step{Kind: StepBucketed, IntentID: in.ID}, nil
}

// countBefore reads the provider's count of our writes before the write,
// so the write can be verified by subtraction; nil when the provider keeps
// no count.
func (d *Deliverer) countBefore(ctx context.Context) (*int64, error) {
	n, err := d.Provider.Count(ctx)
	if err == nil {
		return &n, nil
	}
	if errors.Is(err, provider.ErrUnsupported) {
		return nil, nil
	}
	return nil, &LaneError{d.Lane, fmt.Errorf("count before: %w", err)}
}

// journal decides whether the attempt may be made, by committing it to the
// journal before the call: a gate closed meanwhile makes the step wait, an
// intent an operator retired since it was picked skips it.
func (d *Deliverer) journal(ctx context.Context, l Lease, in Intent, before *int64, bound time.Duration) (Attempt, Step, error) {
	att, err := d.Store.Begin(ctx, l, NewAttempt{IntentID: in.ID, CountBefore: before, Bound: bound, KeyScope: d.keyScope()})
	if err == nil {
		return att, Step{}, nil
	}
	var gate *GateClosedError
	if errors.As(err, &gate) {
		return att, Step{Kind: StepWait, IntentID: in.ID, Until: &gate.Until}, nil
	}
	if errors.Is(err, tidemark.ErrConflict) {
		// An operator retired it since it was picked, or the store did
		// (its summary was rejected, or removed with its source): nothing
		// was journaled; the next step picks again.
		return att, Step{Kind: StepSkipped, IntentID: in.ID}, nil
	}
	return att, Step{}, err
}

// postResult decides what the provider's answer to a post says: landed,
// not landed (it provably never left), deferred (Retry-After),
// unexecutable (the target refused it), refused (the remote refused the
// lane's request), or unknown (no answer that can be trusted either way).
func postResult(sentAt time.Time, posted provider.Posted, perr error) Result {
	res := Result{SentAt: sentAt, RemoteID: posted.RemoteID}
	var (
		retry   *provider.RetryAfterError
		rej     *provider.RejectedError
		notSent *provider.NotSentError
	)
	switch {
	case perr == nil:
		res.Outcome = OutcomeLanded
	case errors.As(perr, &notSent):
		// Nothing of it reached the remote: it did not land, and is
		// sent again (after the lane's backoff), on any lane.
		res.Outcome = OutcomeNotLanded
	case errors.As(perr, &retry):
		res.Outcome, res.RetryAfter = OutcomeDeferred, retry.After
	case errors.Is(perr, provider.ErrUnexecutable):
		res.Outcome = OutcomeUnexecutable
	case errors.As(perr, &rej) && rej.Unsendable():
		// This provider can never make this write (its target, parent
		// or size): it alone is bucketed, the lane goes on.
		res.Outcome = OutcomeUnexecutable
	case errors.As(perr, &rej):
		// The remote refused the lane's request (credentials, a request
		// it cannot read): every write after it would be refused the
		// same way, so none is given up on; the lane stops.
		res.Outcome = OutcomeRefused
	default:
		res.Outcome = OutcomeUnknown
	}
	if perr != nil {
		res.Error = perr.Error()
	}
	return res
}

// verifyByCount decides, where the provider keeps a count of our writes,
// what the difference says about a write that landed or is unknown: 0 not
// landed, 1 landed once, more duplicates (returned as an alert). With one
// write in flight on the lane, nothing else of ours moves the counter.
//
// An unknown outcome (an answer lost, or a 5xx) that the counter does not
// show yet decides nothing before the attempt's deadline: until then the
// remote may still be writing it, just as "not found" in a listing decides
// only after it (docs/outbox.md). Such a write is not finished: the step
// waits (wait) until the deadline and the lane's skew have passed, the
// lane sending nothing meanwhile, and the next step counts again
// (countAgain).
func (d *Deliverer) verifyByCount(ctx, finishCtx context.Context, l Lease, in Intent, att Attempt, before *int64, res *Result) (alert string, wait *Step) {
	if before == nil || (res.Outcome != OutcomeLanded && res.Outcome != OutcomeUnknown) {
		return "", nil
	}
	after, err := d.Provider.Count(finishCtx)
	if err != nil {
		return "", nil
	}
	if res.Outcome == OutcomeUnknown && after == *before {
		lane, err := d.Store.Lane(finishCtx, d.Lane)
		if err != nil {
			res.Error += "; its counter had not moved, but the lane could not be read to wait for the write's deadline: " + err.Error()
			return "", nil
		}
		due := att.Until.Add(lane.Skew.Std())
		if ctx.Err() == nil && d.Clock.Now().Before(due) {
			d.counting = &counting{lease: l, in: in, att: att, before: *before, res: *res, due: due}
			d.log().Info("outbox: write's answer lost and its counter has not moved; counting again after its deadline",
				"lane", d.Lane, "intent", in.ID, "attempt", att.ID, "due", due)
			return "", &Step{Kind: StepWait, IntentID: in.ID, Until: &due}
		}
		if ctx.Err() != nil {
			res.Error += "; its counter had not moved, and the delivery stopped before the write's deadline " +
				fieldtext.Day(due) + " could pass"
			return "", nil
		}
	}
	return d.decideByCount(in, *before, after, res), nil
}

// decideByCount sets res from the counter's difference.
func (d *Deliverer) decideByCount(in Intent, before, after int64, res *Result) (alert string) {
	res.CountAfter = &after
	verdict, dup := VerifyCount(before, after)
	res.CountVerdict = verdict
	switch verdict {
	case CountLandedOnce:
		res.Outcome = OutcomeLanded
	case CountDuplicate:
		res.Outcome = OutcomeLanded
		alert = dup.Error()
		d.log().Error("outbox: duplicate write", "lane", d.Lane, "intent", in.ID, "count_before", before, "count_after", after)
	case CountNotLanded:
		if res.Outcome == OutcomeUnknown {
			res.Outcome = OutcomeNotLanded
		} else {
			// A 2xx the counter does not show: let a fresh read decide.
			res.Outcome = OutcomeUnknown
			res.Error = "the provider accepted the write but its counter did not move"
		}
	}
	return alert
}

// counting is a write sent, whose answer was lost and whose provider's
// counter had not moved when read at once: it is counted again once its
// deadline has passed, and only then finished in the journal.
type counting struct {
	lease  Lease // the lease it was sent under
	in     Intent
	att    Attempt
	before int64
	res    Result // the answer's
	due    time.Time
}

// countAgain finishes the write waiting to be counted again, its
// deadline passed: the counter's difference decides it now.
func (d *Deliverer) countAgain(ctx context.Context, l Lease) (Step, error) {
	c := d.counting
	d.counting = nil
	finishCtx, cancel := finishContext(ctx)
	defer cancel()
	res, step := c.res, Step{Kind: StepSent, IntentID: c.in.ID}
	if after, err := d.Provider.Count(finishCtx); err != nil {
		res.Error += "; its counter had not moved, and could not be read after the write's deadline: " + err.Error()
	} else {
		step.Alert = d.decideByCount(c.in, c.before, after, &res)
	}
	return d.finish(finishCtx, l, c.in, c.att, res, step, nil)
}

// Reconcile takes the lane's lease and reconciles it now.
func (d *Deliverer) Reconcile(ctx context.Context) (Step, error) {
	l, err := d.ensureLease(ctx)
	if err != nil {
		return Step{}, err
	}
	return d.reconcile(ctx, l)
}

// round is one reconciliation's working state: what was read, the plan's
// input as the phases refine it, the plan, and what will be recorded.
type round struct {
	lane     Lane
	intents  []Intent
	at       map[string]int // index in intents and in in.Intents
	in       PlanInput
	plan     *Plan
	rec      Reconciliation
	now      time.Time
	evidence string // what the listing says about its own freshness
	requests int    // provider reads made
	// uncovered are the intents in doubt whose targets the listing does
	// not read (provider.Covering).
	uncovered map[string]bool
}

// listingEvidence is what the listing says of an intent in doubt: its
// freshness, and that it does not read the intent's target, if so.
func (r *round) listingEvidence(id string) string {
	if !r.uncovered[id] {
		return r.evidence
	}
	return r.evidence + "; the listing does not read target " + strconv.Quote(r.intents[r.at[id]].Target) +
		", so it cannot show this write (name the target in the lane's settings to have it read)"
}

// reconcile reconciles the lane in phases: one ordered read of our own
// writes, a plan from it, probes for what the listing could not judge,
// resends of what the lane's guarantee allows, re-checks of unexecutable
// targets, the retirement policy, and one transaction that records it all.
func (d *Deliverer) reconcile(ctx context.Context, l Lease) (Step, error) {
	r, err := d.readRound(ctx, l)
	if err != nil {
		return Step{}, err
	}
	if err := d.replan(r); err != nil {
		return Step{}, err
	}
	changed := d.probeUnresolved(ctx, r)
	if err := d.replanIf(r, changed); err != nil {
		return Step{}, err
	}
	changed = d.resendInDoubt(r)
	if err := d.replanIf(r, changed); err != nil {
		return Step{}, err
	}
	d.recordDecisions(r)
	kept, err := d.recheckUnexecutable(ctx, r)
	if err != nil {
		return Step{}, err
	}
	if err := d.applyRetirement(ctx, r, kept); err != nil {
		return Step{}, err
	}
	r.rec.Plan = r.plan
	if err := d.Store.Apply(ctx, l, r.rec); err != nil {
		return Step{}, err
	}
	d.logReconciled(r)
	return Step{Kind: StepReconciled, Requests: r.requests, Plan: r.plan}, nil
}

// logSent says what an attempt came to: at info level when it is settled
// or waits for its turn, at warn when it is in doubt or stops the lane.
func (d *Deliverer) logSent(in Intent, res Result) {
	level := slog.LevelInfo
	if res.Outcome == OutcomeUnknown || res.Outcome == OutcomeRefused {
		level = slog.LevelWarn
	}
	attrs := []any{"lane", d.Lane, "intent", in.ID, "target", in.Target, "outcome", res.Outcome}
	if res.RemoteID != "" {
		attrs = append(attrs, "remote_id", res.RemoteID)
	}
	if res.Error != "" {
		attrs = append(attrs, "error", res.Error)
	}
	d.log().Log(context.Background(), level, "outbox: sent", attrs...)
}

// logReconciled says what a reconciliation decided; own writes that match
// no intent, or repeat one, are a warning: writes to go and look at.
func (d *Deliverer) logReconciled(r *round) {
	p := r.plan
	level := slog.LevelInfo
	if len(p.DuplicateOwnWrites) > 0 || len(p.UnmatchedOwnWrites) > 0 {
		level = slog.LevelWarn
	}
	d.log().Log(context.Background(), level, "outbox: reconciled", "lane", d.Lane, "landed", len(p.Landed), "replay", len(p.Replay),
		"unresolved", len(p.Unresolved), "unexecutable", len(p.Unexecutable), "unmatched_own_writes", len(p.UnmatchedOwnWrites),
		"duplicate_own_writes", len(p.DuplicateOwnWrites), "requests", r.requests)
}

// recordDecisions keeps the evidence of what the round decided about the
// intents in doubt: why each unresolved one stays so (and when a look
// could decide it, which brings the lane's next check forward), and why
// one in doubt is sent again.
func (d *Deliverer) recordDecisions(r *round) {
	skew := r.lane.Skew.Std()
	undecidable := d.guarantee().Guarantee == provider.AtMostOnce
	if undecidable && len(r.plan.Unresolved) > 0 {
		r.plan.UnresolvedWhy = "the lane is at most once: nothing reads back whether they landed, so they are never resent; " +
			"an operator retires or revives them (outbox intents), or the retirement policy does"
	}
	for _, id := range r.plan.Unresolved {
		if undecidable {
			// No fresh answer will ever come: say so, not that one is awaited.
			r.rec.Reasons[id] = "cannot be decided: the lane is at most once (nothing can read back whether it landed), " +
				"so it is never resent; an operator looks and retires it, or the retirement policy does"
		}
		pi := r.in.Intents[r.at[id]]
		if pi.AttemptUntil != nil && r.now.Before(pi.AttemptUntil.Add(skew)) {
			// Only a look assembled after the attempt's deadline can say it
			// did not land: look again just after it.
			at := pi.AttemptUntil.Add(skew + time.Second)
			if r.rec.RecheckAt == nil || at.Before(*r.rec.RecheckAt) {
				r.rec.RecheckAt = &at
			}
		}
		if _, ok := r.rec.Checks[id]; ok {
			continue
		}
		ev := r.listingEvidence(id)
		if !r.uncovered[id] && !listingTooOld(r.in.ListedAt, pi) && absenceTooEarly(r.in.ListedAt, pi) {
			ev += "; not listed, but the attempt could still land until " + fieldtext.Day(*pi.AttemptUntil) +
				" (its start plus the write's bound): only a look after that says it did not"
		}
		r.rec.Checks[id] = Check{At: r.now, Verdict: "unresolved", Evidence: ev}
	}
	for _, id := range r.plan.Replay {
		pi, it := r.in.Intents[r.at[id]], r.intents[r.at[id]]
		if _, ok := r.rec.Checks[id]; ok || (it.State != StateSending && it.State != StateUnresolved) || r.in.ListedAt == nil {
			continue
		}
		ev := r.evidence + "; not listed by a look assembled at " + fieldtext.Day(*r.in.ListedAt)
		if pi.AttemptUntil != nil {
			ev += ", after the attempt could last land (" + fieldtext.Day(*pi.AttemptUntil) + ")"
		}
		r.rec.Checks[id] = Check{At: r.now, Verdict: "pending", Evidence: ev + ": it never landed; sent again"}
	}
}

// readRound reads the lane, its intents and, in one ordered read, our own
// writes, and decides what the planner may believe of each intent: what
// the journal knows landed, which attempts are in doubt (and since when,
// as far as the listing's horizon can tell), which targets are
// unexecutable.
func (d *Deliverer) readRound(ctx context.Context, l Lease) (*round, error) {
	lane, err := d.Store.Lane(ctx, d.Lane)
	if err != nil {
		return nil, err
	}
	intents, err := d.Store.Intents(ctx, l)
	if err != nil {
		return nil, err
	}
	// One ordered read of our own writes, paginated, back to the oldest
	// write it can decide: on from where a pass before stopped, when it
	// was the same read.
	ls, err := d.readOwnKept(ctx, l, intents, d.listSince(intents, lane.Skew.Std()), lane.Skew.Std())
	if se, ok := errors.AsType[*provider.StatusError](err); ok && se.Wait > 0 {
		// Asked to wait: reading again at once is refused the same.
		return nil, &LaneError{d.Lane, &DeferredError{Lane: d.Lane, Until: d.Clock.Now().Add(se.Wait), Err: err}}
	}
	if err != nil {
		if rr, ok := errors.AsType[*provider.ReadRefusedError](err); ok {
			// Refused for the lane's reason: every read will be, until the
			// lane is fixed. Its health shows why.
			if rerr := d.Store.RefuseRead(ctx, l, rr.Error()); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		return nil, &LaneError{d.Lane, err}
	}
	if err := fpMidReconcile.Hit(ctx); err != nil {
		return nil, err
	}
	r := &round{lane: lane, intents: intents, requests: ls.Requests, evidence: ls.Evidence,
		in: PlanInput{OwnWrites: ls.Writes, ListedAt: ls.ListedAt}}
	if !ls.Supported {
		// Nothing to read in order: every attempt in doubt needs a probe.
		old := time.Time{}
		r.in.ListedAt = &old
		r.evidence = "the provider cannot list own writes"
	}
	fp, _ := d.Provider.(provider.Fingerprinter)
	r.at = make(map[string]int, len(intents))
	r.uncovered = map[string]bool{}
	for i, it := range intents {
		r.at[it.ID] = i
		pi := PlanIntent{ID: it.ID, Rank: it.Rank, Target: it.Target, Parent: it.Parent, HasParent: true, BodySHA256: it.BodySHA256}
		if fp != nil {
			// The listing shows what the provider made of the body.
			pi.BodySHA256 = fp.Fingerprint([]byte(it.Body))
		}
		switch it.State {
		case StateLanded:
			pi.KnownLanded, pi.KnownRemoteID = true, it.RemoteID
		case StateSending, StateUnresolved:
			start, until := it.attemptStart(), it.attemptUntil(d.writeBound())
			pi.AttemptStartedAt, pi.AttemptUntil = &start, &until
			if ls.Horizon != nil && start.Before(*ls.Horizon) && r.in.ListedAt != nil {
				// The listing no longer keeps writes that old: that it
				// does not show this one proves nothing.
				pi.AttemptStartedAt = r.in.ListedAt
			}
			if cv, ok := d.Provider.(provider.Covering); ok && !cv.Covers(it.Target, it.Parent) && r.in.ListedAt != nil {
				// The listing does not read this target: it would not
				// show the write, landed or not.
				pi.AttemptStartedAt = r.in.ListedAt
				r.uncovered[it.ID] = true
			}
		case StateUnexecutable:
			r.in.Unexecutable = append(r.in.Unexecutable, it.ID)
		}
		r.in.Intents = append(r.in.Intents, pi)
	}
	r.rec = Reconciliation{Checks: map[string]Check{}, Retire: map[string]string{}, Reasons: map[string]string{}}
	r.now = d.Clock.Now()
	return r, nil
}

// maxKeptWrites bounds the own writes a kept read holds: a read stopped
// with more is not kept, and the next pass reads from the head again.
const maxKeptWrites = 50_000

// readOwnKept reads the lane's own writes back to since, on from where a
// pass before stopped when that pass made the same read, and keeps how
// far it got when it stops before the end (the provider asked it to wait,
// or a page failed), so a listing longer than a rate limit allows in one
// pass is still read to its end, over passes, each page once.
//
// A kept read is the same read only under the same key (readKey): the
// provider's listing scope (its server, account and targets: a cursor
// means nothing under another), how far back it reads, and the writes in
// doubt it is to decide, each with its latest attempt. A write in doubt
// made since it stopped may be at the head of the listing, which the kept
// cursor is past, so any change of those starts over from the head. What
// the pages kept from an earlier pass showed stands: a write of ours they
// showed was made; the listing is as old as its oldest page, so an
// attempt whose write could still land after that page was read is not
// taken for "not landed" by the pages read later. A provider whose cursor
// could skip a write between passes (an offset) is not
// provider.Resumable, and every pass reads from the head as before.
func (d *Deliverer) readOwnKept(ctx context.Context, l Lease, intents []Intent, since time.Time, skew time.Duration) (Listing, error) {
	key, resumable := d.readKey(intents, since)
	if !resumable {
		ls, _, err := readOwn(ctx, d.Provider, skew, since, Listing{Supported: true}, "")
		return ls, err
	}
	kept, ok, err := d.Store.KeptRead(ctx, l)
	if err != nil {
		return Listing{}, err
	}
	from, cursor := Listing{Supported: true}, ""
	switch {
	case ok && kept.Key == key:
		from, cursor = kept.Listing, kept.Cursor
		from.Requests = 0
	case ok:
		// Another read's: going on from it could miss a write.
		if err := d.Store.DropRead(ctx, l); err != nil {
			return Listing{}, err
		}
		ok = false
	}
	ls, next, err := readOwn(ctx, d.Provider, skew, since, from, cursor)
	if err != nil && ok && ls.Requests == 0 && !isWait(err) {
		// The kept cursor itself was refused (the remote no longer takes
		// it): read from the head.
		d.log().Warn("outbox: a kept read's cursor was refused; reading from the head", "lane", d.Lane, "err", err)
		if derr := d.Store.DropRead(ctx, l); derr != nil {
			return Listing{}, errors.Join(err, derr)
		}
		ls, next, err = readOwn(ctx, d.Provider, skew, since, Listing{Supported: true}, "")
	}
	if err != nil && next != "" && ls.Pages > 0 && ctx.Err() == nil {
		if len(ls.Writes) > maxKeptWrites {
			d.log().Warn("outbox: a read stopped part-way is too long to keep; the next pass reads from the head",
				"lane", d.Lane, "writes", len(ls.Writes), "limit", maxKeptWrites)
		} else if kerr := d.Store.KeepRead(ctx, l, ReadProgress{Key: key, Cursor: next, Listing: ls}); kerr != nil {
			err = errors.Join(err, kerr)
		}
	}
	return ls, err
}

// isWait reports whether err is a read the provider asked to wait for.
func isWait(err error) bool {
	se, ok := errors.AsType[*provider.StatusError](err)
	return ok && se.Wait > 0
}

// readKey names a read of the lane's own writes (ReadProgress.Key): the
// provider's listing scope, how far back the read goes, and the writes in
// doubt (sending or unresolved) with each one's attempts; ok is false
// when the provider's listing cannot be resumed.
func (d *Deliverer) readKey(intents []Intent, since time.Time) (key string, ok bool) {
	rs, isResumable := d.Provider.(provider.Resumable)
	if !isResumable || rs.ListScope() == "" {
		return "", false
	}
	h := sha256.New()
	// v1: the form ReadProgress is kept in; another form is another read.
	fmt.Fprintf(h, "read v1\nscope %s\nsince %d\n", rs.ListScope(), since.UnixNano())
	for _, it := range intents {
		if it.State == StateSending || it.State == StateUnresolved {
			fmt.Fprintf(h, "%s %d %d\n", it.ID, it.Attempts, it.attemptStart().UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// listSince is how far back a reconciliation reads the lane's own writes:
// to the earliest that any attempt in doubt on a target the listing reads
// can have been made (its intent's first attempt, less the skew: any of
// its attempts may be the one that landed). A write made before that is
// no attempt in doubt, and what the journal knows landed needs no read.
// With none in doubt, the listing reads only what was made from now on.
func (d *Deliverer) listSince(intents []Intent, skew time.Duration) time.Time {
	since := d.Clock.Now()
	cv, _ := d.Provider.(provider.Covering)
	for _, it := range intents {
		if it.State != StateSending && it.State != StateUnresolved || cv != nil && !cv.Covers(it.Target, it.Parent) {
			continue
		}
		if f := it.firstAttemptStart(); f.Before(since) {
			since = f
		}
	}
	return since.Add(-skew)
}

// replan makes the plan from the round's input; a plan refused is an error
// and nothing is recorded.
func (d *Deliverer) replan(r *round) error {
	plan, err := MakePlan(r.in)
	if err != nil {
		return &LaneError{d.Lane, fmt.Errorf("plan refused: %w", err)}
	}
	r.plan = plan
	return nil
}

func (d *Deliverer) replanIf(r *round, changed bool) error {
	if !changed {
		return nil
	}
	return d.replan(r)
}

// probeUnresolved decides, by a fresh probe, what the listing could not:
// an intent in doubt found by a probe assembled after its attempt began
// landed, one not found is pending again; anything else stays unresolved,
// with the probe's evidence kept. It reports whether the input changed.
func (d *Deliverer) probeUnresolved(ctx context.Context, r *round) (changed bool) {
	skew := r.lane.Skew.Std()
	for i, id := range r.plan.Unresolved {
		if i >= maxProbesPerRound {
			break
		}
		it := r.intents[r.at[id]]
		start, until := it.attemptStart(), it.attemptUntil(d.writeBound())
		pr, err := d.Provider.Probe(ctx, provider.Write{Target: it.Target, Parent: it.Parent, Body: []byte(it.Body), NotBefore: it.firstAttemptStart().Add(-skew)})
		if errors.Is(err, provider.ErrUnsupported) {
			r.rec.Checks[id] = Check{At: r.now, Verdict: "unresolved", Evidence: r.listingEvidence(id) + "; no probe"}
			continue
		}
		if err != nil {
			r.rec.Checks[id] = Check{At: r.now, Verdict: "unresolved", Evidence: r.listingEvidence(id) + "; probe failed: " + err.Error()}
			continue
		}
		r.requests++
		res, f := Resolve(ProbeAnswer{RequestTime: pr.Meta.RequestTime, Date: pr.Meta.Date, Age: pr.Meta.EffectiveAge(), Found: pr.Found, RemoteID: pr.RemoteID}, start, until, skew)
		if res == Pending && pr.Horizon != nil && start.Before(*pr.Horizon) {
			res = Unresolved
			f.Reason += "; but the provider keeps writes only since " + fieldtext.Day(*pr.Horizon) + ", after the attempt started"
		}
		ev := fmt.Sprintf("probe: request %s, Date %q, Age %q, Cache-Control %q, found %v: %s", pr.Meta.RequestTime.UTC().Format(time.RFC3339Nano), pr.Meta.Date, pr.Meta.Age, pr.Meta.CacheControl, pr.Found, f.Reason)
		r.rec.Checks[id] = Check{At: r.now, Verdict: string(res), Evidence: ev}
		switch pi := &r.in.Intents[r.at[id]]; res {
		case Landed:
			pi.KnownLanded, pi.KnownRemoteID = true, pr.RemoteID
			changed = true
		case Pending:
			pi.AttemptStartedAt = nil
			changed = true
		}
	}
	return changed
}

// resendInDoubt decides which intents no fresh read decided are resent:
// only where the lane's guarantee says so (the server honours the key,
// within its window, or the lane opted in to at least once). Otherwise
// they stay unresolved: at most once, never twice. It reports whether the
// input changed.
func (d *Deliverer) resendInDoubt(r *round) (changed bool) {
	g := d.guarantee()
	if !g.ResendInDoubt {
		return false
	}
	scope := d.keyScope()
	for _, id := range r.plan.Unresolved {
		it := r.intents[r.at[id]]
		if !g.OptedIn && g.KeyWindow > 0 && r.now.Sub(it.firstAttemptStart()) >= g.KeyWindow.Std() {
			continue // the server may have forgotten the key since its first use
		}
		if !g.OptedIn && (scope == "" || it.KeyScope == nil || *it.KeyScope != scope) {
			// The server keeps keys per token or account: one that has not
			// seen every attempt cannot tell whether one landed.
			ev := "not resent on its key: " + keyScopeWhy(it.KeyScope, scope)
			if c, ok := r.rec.Checks[id]; ok {
				ev = c.Evidence + "; " + ev
			}
			r.rec.Checks[id] = Check{At: r.now, Verdict: "unresolved", Evidence: ev}
			continue
		}
		r.in.Intents[r.at[id]].AttemptStartedAt = nil
		ev := "resent in doubt (" + string(g.Guarantee) + "): " + g.Why
		if c, ok := r.rec.Checks[id]; ok {
			ev = c.Evidence + "; " + ev
		}
		r.rec.Checks[id] = Check{At: r.now, Verdict: "pending", Evidence: ev}
		changed = true
	}
	return changed
}

// keyScopeWhy says why a key sent in scope sent cannot decide a write in
// doubt when the lane sends in scope now.
func keyScopeWhy(sent *string, now string) string {
	switch {
	case now == "":
		return "the provider names no scope its server keeps keys in"
	case sent == nil:
		return "the scope its attempts sent the key in is not known (they predate the record)"
	case *sent == "":
		return "its attempts sent the key in more than one scope (the lane's token or account changed between them), and no one scope's memory has seen them all"
	default:
		return "the lane's token or account changed since its attempts sent the key, and the server keeps keys per token or account: under the new one the key is new, so a resend could be a second write; only a read of the lane's own writes can decide it"
	}
}

// recheckUnexecutable decides, spaced by the lane's retirement policy,
// whether an unexecutable target accepts writes again (the intent is
// revived) or still refuses them (the check is kept as evidence). It
// returns the checks it read, by intent.
func (d *Deliverer) recheckUnexecutable(ctx context.Context, r *round) (map[string][]Check, error) {
	kept := map[string][]Check{}
	for i, id := range r.plan.Unexecutable {
		if i >= maxRechecksPerRound {
			break
		}
		it := r.intents[r.at[id]]
		checks, err := d.Store.Checks(ctx, id)
		if err != nil {
			return nil, err
		}
		kept[id] = checks
		var last *time.Time
		if len(checks) > 0 {
			last = &checks[len(checks)-1].At
		}
		if !r.lane.Retirement.CheckDue(last, r.now) {
			continue
		}
		w, err := d.Provider.CanWrite(ctx, it.Target, it.Parent)
		if err != nil {
			continue
		}
		if w.OK {
			r.rec.Revive = append(r.rec.Revive, id)
			r.rec.Checks[id] = Check{At: r.now, Verdict: "pending", Evidence: "target accepts writes again"}
			continue
		}
		r.rec.Checks[id] = Check{At: r.now, Verdict: "unexecutable", Evidence: "target refuses writes: " + w.Reason}
	}
	return kept, nil
}

// applyRetirement decides which unresolved or unexecutable intents the
// lane's retirement policy retires, over the checks kept so far plus this
// round's.
func (d *Deliverer) applyRetirement(ctx context.Context, r *round, kept map[string][]Check) error {
	for id, c := range r.rec.Checks {
		if c.Verdict != "unresolved" && c.Verdict != "unexecutable" {
			continue
		}
		checks, ok := kept[id]
		if !ok {
			var err error
			if checks, err = d.Store.Checks(ctx, id); err != nil {
				return err
			}
		}
		if due, why := r.lane.Retirement.Due(append(checks, c)); due {
			r.rec.Retire[id] = "policy: " + why
		}
	}
	return nil
}

// Listing is the result of one ordered read of a lane's own writes.
type Listing struct {
	Writes []OwnWrite `json:"writes"`
	// ListedAt is the snapshot time of the oldest page (the zero time when
	// a page's age could not be told).
	ListedAt *time.Time `json:"listed_at"`
	// Requests is the number of pages read in this pass.
	Requests int `json:"-"`
	// Pages is the number of pages read, over every pass a kept read
	// (ReadProgress) spans.
	Pages int `json:"pages"`
	// Supported is false when the provider cannot list own writes.
	Supported bool `json:"supported"`
	// Evidence describes the oldest page's age headers.
	Evidence string `json:"evidence"`
	// Horizon is the latest of the pages' horizons: a write made before it
	// may be missing from the listing though it landed.
	Horizon *time.Time `json:"horizon"`
}

// ReadOwn reads the provider's listing of our own writes, in its stable
// order, page after page, back to since (the zero time: every page). The
// listing is as old as its oldest page.
func ReadOwn(ctx context.Context, p provider.Provider, skew time.Duration, since time.Time) (Listing, error) {
	ls, _, err := readOwn(ctx, p, skew, since, Listing{Supported: true}, "")
	return ls, err
}

// readOwn reads on from cursor, adding to ls what the pages it reads
// show. It returns the cursor of the page it stopped at: "" once it read
// the last, else the page that failed (err says why).
func readOwn(ctx context.Context, p provider.Provider, skew time.Duration, since time.Time, ls Listing, cursor string) (Listing, string, error) {
	for {
		page := ls.Pages
		if page >= maxListPages {
			return ls, cursor, fmt.Errorf("more than %d pages of own writes", maxListPages)
		}
		pg, err := p.ListOwn(ctx, provider.ListQuery{Cursor: cursor, Since: since})
		if errors.Is(err, provider.ErrUnsupported) && page == 0 {
			ls.Supported = false
			return ls, "", nil
		}
		if err != nil {
			return ls, cursor, fmt.Errorf("list own writes: %w", err)
		}
		ls.Requests++
		ls.Pages++
		f := Fresh(pg.Meta.Date, pg.Meta.EffectiveAge(), pg.Meta.RequestTime, time.Time{}, skew)
		snap := time.Time{} // an age that cannot be told: older than any attempt
		if f.SnapshotAt != nil {
			snap = *f.SnapshotAt
		}
		if ls.ListedAt == nil || snap.Before(*ls.ListedAt) {
			ls.ListedAt = &snap
			ls.Evidence = fmt.Sprintf("listing page %d: request %s, Date %q, Age %q, Cache-Control %q: %s", page,
				pg.Meta.RequestTime.UTC().Format(time.RFC3339Nano), pg.Meta.Date, pg.Meta.Age, pg.Meta.CacheControl, f.Reason)
		}
		if pg.Horizon != nil && (ls.Horizon == nil || pg.Horizon.After(*ls.Horizon)) {
			h := *pg.Horizon
			ls.Horizon = &h
		}
		if ls.Writes == nil {
			ls.Writes = make([]OwnWrite, 0, len(pg.Writes))
		}
		for _, w := range pg.Writes {
			ls.Writes = append(ls.Writes, OwnWrite{RemoteID: w.RemoteID, CreatedAt: w.CreatedAt, Target: w.Target,
				Parent: w.Parent, HasParent: w.HasParent, BodySHA256: w.BodySHA256})
		}
		if pg.Next == "" {
			return ls, "", nil
		}
		if pg.Next == cursor {
			return ls, cursor, fmt.Errorf("list own writes: page %d repeats cursor %q", page, cursor)
		}
		cursor = pg.Next
	}
}
