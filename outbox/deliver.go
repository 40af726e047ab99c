package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/failpoint"
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
	// Until is when the gate opens (StepWait).
	Until *time.Time `json:"until,omitempty"`
	Plan  *Plan      `json:"plan,omitempty"`
	// Requests counts the provider reads a reconciliation made.
	Requests int `json:"requests,omitempty"`
	// Alert is set when a counter showed duplicates.
	Alert string `json:"alert,omitempty"`
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
		d.lease = nil
		if !errors.Is(err, tidemark.ErrStaleClaim) {
			return Lease{}, err
		}
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
	return d.Store.Release(ctx, l)
}

// Step does one unit of work: reconcile a lane in doubt, or send the next
// pending intent through the gate.
func (d *Deliverer) Step(ctx context.Context) (Step, error) {
	l, err := d.ensureLease(ctx)
	if err != nil {
		return Step{}, err
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

// RunOnce steps until nothing is pending, waiting on the gate with sleep
// (nil: a timer). It returns the steps taken.
func (d *Deliverer) RunOnce(ctx context.Context, sleep func(context.Context, time.Duration) error) ([]Step, error) {
	if sleep == nil {
		sleep = Sleep
	}
	var steps []Step
	for {
		s, err := d.Step(ctx)
		if err != nil {
			return steps, err
		}
		switch s.Kind {
		case StepIdle:
			return steps, nil
		case StepWait:
			if err := sleep(ctx, s.Until.Sub(d.Clock.Now())); err != nil {
				return steps, err
			}
			continue
		case StepReconciled:
			if len(steps) > 0 && steps[len(steps)-1].Kind == StepReconciled {
				// Two looks in a row: the store keeps the lane in doubt;
				// stop rather than read again and again.
				return append(steps, s), nil
			}
		}
		steps = append(steps, s)
	}
}

// Sleep waits d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *Deliverer) send(ctx context.Context, l Lease) (Step, error) {
	in, ok, err := d.Store.NextPending(ctx, l)
	if err != nil || !ok {
		return Step{Kind: StepIdle}, err
	}
	lane, err := d.Store.Lane(ctx, d.Lane)
	if err != nil {
		return Step{}, err
	}
	if now := d.Clock.Now(); now.Before(lane.NextSendAt) {
		until := lane.NextSendAt
		return Step{Kind: StepWait, IntentID: in.ID, Until: &until}, nil
	}
	w, err := d.Provider.CanWrite(ctx, in.Target, in.Parent)
	if err != nil {
		return Step{}, fmt.Errorf("outbox: lane %s: check target %s: %w", d.Lane, in.Target, err)
	}
	if !w.OK {
		check := Check{At: d.Clock.Now(), Verdict: "unexecutable", Evidence: "target refuses writes: " + w.Reason}
		if err := d.Store.Bucket(ctx, l, in.ID, w.Reason, check); errors.Is(err, tidemark.ErrConflict) {
			return Step{Kind: StepSkipped, IntentID: in.ID}, nil
		} else if err != nil {
			return Step{}, err
		}
		return Step{Kind: StepBucketed, IntentID: in.ID}, nil
	}
	var before *int64
	if n, err := d.Provider.Count(ctx); err == nil {
		before = &n
	} else if !errors.Is(err, provider.ErrUnsupported) {
		return Step{}, fmt.Errorf("outbox: lane %s: count before: %w", d.Lane, err)
	}
	att, err := d.Store.Begin(ctx, l, in.ID, before)
	if err != nil {
		var gate *GateClosedError
		if errors.As(err, &gate) {
			return Step{Kind: StepWait, IntentID: in.ID, Until: &gate.Until}, nil
		}
		if errors.Is(err, tidemark.ErrConflict) {
			// An operator retired it since it was picked: nothing was
			// journaled; the next step picks again.
			return Step{Kind: StepSkipped, IntentID: in.ID}, nil
		}
		return Step{}, err
	}
	if err := fpAfterJournal.Hit(ctx); err != nil {
		return Step{}, err
	}
	// The fence, once more, immediately before the write leaves.
	if err := d.Store.CheckLease(ctx, l); err != nil {
		return Step{}, fmt.Errorf("outbox: lane %s: refused before sending %s: %w", d.Lane, in.ID, err)
	}
	// From here on the journal is finished whatever happens to ctx (Ctrl-C,
	// a shutdown): an answer the provider gave must be recorded, and a write
	// that never left must not be left looking in doubt.
	finishCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if err := ctx.Err(); err != nil {
		res := Result{Outcome: OutcomeNotLanded, Error: "interrupted before sending: " + err.Error()}
		if ferr := d.Store.Finish(finishCtx, l, att, res); ferr != nil {
			return Step{}, errors.Join(err, ferr)
		}
		return Step{}, err
	}
	sentAt := d.Clock.Now()
	posted, perr := d.Provider.Post(ctx, provider.Write{Target: in.Target, Parent: in.Parent, Body: []byte(in.Body), IdempotencyKey: in.IdempotencyKey})
	if err := fpAfterSend.Hit(finishCtx); err != nil {
		return Step{}, err
	}
	res := Result{SentAt: sentAt, RemoteID: posted.RemoteID}
	var (
		retry *provider.RetryAfterError
		rej   *provider.RejectedError
	)
	switch {
	case perr == nil:
		res.Outcome = OutcomeLanded
	case errors.As(perr, &retry):
		res.Outcome, res.RetryAfter = OutcomeDeferred, retry.After
	case errors.Is(perr, provider.ErrUnexecutable):
		res.Outcome = OutcomeUnexecutable
	case errors.As(perr, &rej):
		res.Outcome = OutcomeUnexecutable
	default:
		res.Outcome = OutcomeUnknown
	}
	if perr != nil {
		res.Error = perr.Error()
	}
	step := Step{Kind: StepSent, IntentID: in.ID}
	if before != nil && (res.Outcome == OutcomeLanded || res.Outcome == OutcomeUnknown) {
		// Verify by subtraction. With one write in flight on the lane,
		// nothing else of ours moves the counter.
		if after, err := d.Provider.Count(finishCtx); err == nil {
			res.CountAfter = &after
			verdict, alert := VerifyCount(*before, after)
			res.CountVerdict = verdict
			switch verdict {
			case CountLandedOnce:
				res.Outcome = OutcomeLanded
			case CountDuplicate:
				res.Outcome = OutcomeLanded
				step.Alert = alert.Error()
				d.log().Error("outbox: duplicate write", "lane", d.Lane, "intent", in.ID, "count_before", *before, "count_after", after)
			case CountNotLanded:
				if res.Outcome == OutcomeUnknown {
					res.Outcome = OutcomeNotLanded
				} else {
					// A 2xx the counter does not show: let a fresh read decide.
					res.Outcome = OutcomeUnknown
					res.Error = "the provider accepted the write but its counter did not move"
				}
			}
		}
	}
	if err := d.Store.Finish(finishCtx, l, att, res); err != nil {
		return Step{}, err
	}
	step.Outcome = res.Outcome
	return step, nil
}

// Reconcile takes the lane's lease and reconciles it now.
func (d *Deliverer) Reconcile(ctx context.Context) (Step, error) {
	l, err := d.ensureLease(ctx)
	if err != nil {
		return Step{}, err
	}
	return d.reconcile(ctx, l)
}

func (d *Deliverer) reconcile(ctx context.Context, l Lease) (Step, error) {
	lane, err := d.Store.Lane(ctx, d.Lane)
	if err != nil {
		return Step{}, err
	}
	intents, err := d.Store.Intents(ctx, l)
	if err != nil {
		return Step{}, err
	}
	step := Step{Kind: StepReconciled}
	// One ordered read of our own writes, paginated.
	ls, err := ReadOwn(ctx, d.Provider, lane.Skew.Std())
	if err != nil {
		return Step{}, fmt.Errorf("outbox: lane %s: %w", d.Lane, err)
	}
	step.Requests += ls.Requests
	own, listedAt, listed, evidence := ls.Writes, ls.ListedAt, ls.Supported, ls.Evidence
	if err := fpMidReconcile.Hit(ctx); err != nil {
		return Step{}, err
	}
	in := PlanInput{OwnWrites: own, ListedAt: listedAt}
	if !listed {
		// Nothing to read in order: every attempt in doubt needs a probe.
		old := time.Time{}
		in.ListedAt = &old
		evidence = "the provider cannot list own writes"
	}
	fp, _ := d.Provider.(provider.Fingerprinter)
	at := make(map[string]int, len(intents)) // index in intents and in.Intents
	for i, it := range intents {
		at[it.ID] = i
		pi := PlanIntent{ID: it.ID, Rank: it.Rank, Target: it.Target, Parent: it.Parent, HasParent: true, BodySHA256: it.BodySHA256}
		if fp != nil {
			// The listing shows what the provider made of the body.
			pi.BodySHA256 = fp.Fingerprint([]byte(it.Body))
		}
		switch it.State {
		case StateLanded:
			pi.KnownLanded, pi.KnownRemoteID = true, it.RemoteID
		case StateSending, StateUnresolved:
			start := it.attemptStart()
			pi.AttemptStartedAt = &start
			if ls.Horizon != nil && start.Before(*ls.Horizon) && in.ListedAt != nil {
				// The listing no longer keeps writes that old: that it
				// does not show this one proves nothing.
				pi.AttemptStartedAt = in.ListedAt
			}
		case StateUnexecutable:
			in.Unexecutable = append(in.Unexecutable, it.ID)
		}
		in.Intents = append(in.Intents, pi)
	}
	plan, err := MakePlan(in)
	if err != nil {
		return Step{}, fmt.Errorf("outbox: lane %s: plan refused: %w", d.Lane, err)
	}
	rec := Reconciliation{Checks: map[string]Check{}, Retire: map[string]string{}}
	now := d.Clock.Now()
	// What the listing could not say, a fresh probe may.
	if len(plan.Unresolved) > 0 {
		changed := false
		for i, id := range plan.Unresolved {
			if i >= maxProbesPerRound {
				break
			}
			it := intents[at[id]]
			start := it.attemptStart()
			pr, err := d.Provider.Probe(ctx, provider.Write{Target: it.Target, Parent: it.Parent, Body: []byte(it.Body)})
			if errors.Is(err, provider.ErrUnsupported) {
				rec.Checks[id] = Check{At: now, Verdict: "unresolved", Evidence: evidence + "; no probe"}
				continue
			}
			if err != nil {
				rec.Checks[id] = Check{At: now, Verdict: "unresolved", Evidence: evidence + "; probe failed: " + err.Error()}
				continue
			}
			step.Requests++
			res, f := Resolve(ProbeAnswer{RequestTime: pr.Meta.RequestTime, Date: pr.Meta.Date, Age: pr.Meta.EffectiveAge(), Found: pr.Found, RemoteID: pr.RemoteID}, start, lane.Skew.Std())
			if res == Pending && pr.Horizon != nil && start.Before(*pr.Horizon) {
				res = Unresolved
				f.Reason += "; but the provider keeps writes only since " + pr.Horizon.UTC().Format(time.RFC3339) + ", after the attempt started"
			}
			ev := fmt.Sprintf("probe: request %s, Date %q, Age %q, Cache-Control %q, found %v: %s", pr.Meta.RequestTime.UTC().Format(time.RFC3339Nano), pr.Meta.Date, pr.Meta.Age, pr.Meta.CacheControl, pr.Found, f.Reason)
			rec.Checks[id] = Check{At: now, Verdict: string(res), Evidence: ev}
			switch pi := &in.Intents[at[id]]; res {
			case Landed:
				pi.KnownLanded, pi.KnownRemoteID = true, pr.RemoteID
				changed = true
			case Pending:
				pi.AttemptStartedAt = nil
				changed = true
			}
		}
		if changed {
			if plan, err = MakePlan(in); err != nil {
				return Step{}, fmt.Errorf("outbox: lane %s: plan refused: %w", d.Lane, err)
			}
		}
	}
	// What no fresh read decided is resent only where the lane's guarantee
	// says so: the server honours the key (within its window), or the lane
	// opted in to at least once. Otherwise it stays unresolved: at most
	// once, never twice.
	if g := d.guarantee(); g.ResendInDoubt && len(plan.Unresolved) > 0 {
		changed := false
		for _, id := range plan.Unresolved {
			it := intents[at[id]]
			if !g.OptedIn && g.KeyWindow > 0 && now.Sub(it.attemptStart()) >= g.KeyWindow.Std() {
				continue // the server may have forgotten the key
			}
			in.Intents[at[id]].AttemptStartedAt = nil
			ev := "resent in doubt (" + string(g.Guarantee) + "): " + g.Why
			if c, ok := rec.Checks[id]; ok {
				ev = c.Evidence + "; " + ev
			}
			rec.Checks[id] = Check{At: now, Verdict: "pending", Evidence: ev}
			changed = true
		}
		if changed {
			if plan, err = MakePlan(in); err != nil {
				return Step{}, fmt.Errorf("outbox: lane %s: plan refused: %w", d.Lane, err)
			}
		}
	}
	for _, id := range plan.Unresolved {
		if _, ok := rec.Checks[id]; !ok {
			rec.Checks[id] = Check{At: now, Verdict: "unresolved", Evidence: evidence}
		}
	}
	// Unexecutable targets are looked at again, spaced by the policy.
	kept := map[string][]Check{} // the checks read so far, by intent
	for i, id := range plan.Unexecutable {
		if i >= maxRechecksPerRound {
			break
		}
		it := intents[at[id]]
		checks, err := d.Store.Checks(ctx, id)
		if err != nil {
			return Step{}, err
		}
		kept[id] = checks
		var last *time.Time
		if len(checks) > 0 {
			last = &checks[len(checks)-1].At
		}
		if !lane.Retirement.CheckDue(last, now) {
			continue
		}
		w, err := d.Provider.CanWrite(ctx, it.Target, it.Parent)
		if err != nil {
			continue
		}
		if w.OK {
			rec.Revive = append(rec.Revive, id)
			rec.Checks[id] = Check{At: now, Verdict: "pending", Evidence: "target accepts writes again"}
			continue
		}
		rec.Checks[id] = Check{At: now, Verdict: "unexecutable", Evidence: "target refuses writes: " + w.Reason}
	}
	// The retirement policy, over the checks kept so far plus this one.
	for id, c := range rec.Checks {
		if c.Verdict != "unresolved" && c.Verdict != "unexecutable" {
			continue
		}
		checks, ok := kept[id]
		if !ok {
			var err error
			if checks, err = d.Store.Checks(ctx, id); err != nil {
				return Step{}, err
			}
		}
		if due, why := lane.Retirement.Due(append(checks, c)); due {
			rec.Retire[id] = "policy: " + why
		}
	}
	rec.Plan = plan
	if err := d.Store.Apply(ctx, l, rec); err != nil {
		return Step{}, err
	}
	step.Plan = plan
	return step, nil
}

// Listing is the result of one ordered read of a lane's own writes.
type Listing struct {
	Writes []OwnWrite
	// ListedAt is the snapshot time of the oldest page (the zero time when
	// a page's age could not be told).
	ListedAt *time.Time
	// Requests is the number of pages read.
	Requests int
	// Supported is false when the provider cannot list own writes.
	Supported bool
	// Evidence describes the oldest page's age headers.
	Evidence string
	// Horizon is the latest of the pages' horizons: a write made before it
	// may be missing from the listing though it landed.
	Horizon *time.Time
}

// ReadOwn reads every page of the provider's listing of our own writes, in
// its stable order. The listing is as old as its oldest page.
func ReadOwn(ctx context.Context, p provider.Provider, skew time.Duration) (Listing, error) {
	ls := Listing{Supported: true}
	cursor := ""
	for page := 0; ; page++ {
		if page >= maxListPages {
			return ls, fmt.Errorf("more than %d pages of own writes", maxListPages)
		}
		pg, err := p.ListOwn(ctx, cursor)
		if errors.Is(err, provider.ErrUnsupported) && page == 0 {
			ls.Supported = false
			return ls, nil
		}
		if err != nil {
			return ls, fmt.Errorf("list own writes: %w", err)
		}
		ls.Requests++
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
			return ls, nil
		}
		if pg.Next == cursor {
			return ls, fmt.Errorf("list own writes: page %d repeats cursor %q", page, cursor)
		}
		cursor = pg.Next
	}
}
