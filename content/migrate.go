package content

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tidemark/tidemark"
)

// Migrator drives field migrations: it claims a run and steps it batch by
// batch until it is done, failed or aborted. All progress is recorded by
// the store in the transaction of each batch, so a Migrator can die at any
// point and another (or the same holder, re-entering) carries on.
type Migrator struct {
	Store    Store
	Holder   string
	LeaseTTL time.Duration // 0: DefaultLeaseTTL
	// Progress, if set, is called after every batch.
	Progress func(Run)
}

// DefaultLeaseTTL is how long a run's claim lasts without a batch.
const DefaultLeaseTTL = time.Minute

func (m *Migrator) ttl() time.Duration {
	if m.LeaseTTL <= 0 {
		return DefaultLeaseTTL
	}
	return m.LeaseTTL
}

// Start records a run; an unsupported pair, an unknown field or a change
// to the same type is refused before any run exists (the store checks the
// change with CheckChange in the transaction that records the run).
func (m *Migrator) Start(ctx context.Context, collection, field string, to FieldType, batch int) (Run, error) {
	if batch == 0 {
		batch = DefaultBatch
	}
	if batch < 1 || batch > MaxBatch {
		return Run{}, tidemark.Invalidf("batch", fmt.Sprint(batch), "want 1 to %d documents per transaction", MaxBatch)
	}
	if _, err := ParseType(string(to)); err != nil {
		return Run{}, err
	}
	return m.Store.StartRun(ctx, collection, field, to, batch)
}

// CheckChange refuses a type change no run could carry out. A Store's
// StartRun calls it on the collection as it reads it under lock.
func CheckChange(c Collection, field string, to FieldType) error {
	f, ok := c.Field(field)
	if !ok {
		return tidemark.Invalidf("field", c.Name+"."+field, "no such field in collection %s", c.Name)
	}
	if c.BuiltIn {
		return tidemark.Invalidf("collection", c.Name, "built in; its field types are fixed because publication reads them")
	}
	if f.Type == to {
		return tidemark.Invalidf("type", string(to), "field %s.%s is already %s", c.Name, field, to)
	}
	if _, ok := RuleFor(f.Type, to); !ok {
		return tidemark.Invalidf("type change", string(f.Type)+"→"+string(to), "no conversion rule (supported: %s)", ruleNames())
	}
	return nil
}

func ruleNames() string {
	s := ""
	for i, r := range Rules() {
		if i > 0 {
			s += ", "
		}
		s += r.Name()
	}
	return s
}

// Drive claims the run (resuming it if it failed) and steps it to the end.
// A run that fails returns a *FailedError naming the document, value and
// rule; the run stays failed for an operator to fix and resume, or abort.
func (m *Migrator) Drive(ctx context.Context, runID string) (Run, error) {
	c, err := m.Store.ClaimRun(ctx, runID, m.Holder, m.ttl())
	if err != nil {
		return Run{}, err
	}
	return m.step(ctx, c)
}

// Abort turns the run into an aborting one and restores every document it
// converted, one transaction per batch.
func (m *Migrator) Abort(ctx context.Context, runID string) (Run, error) {
	c, err := m.Store.AbortRun(ctx, runID, m.Holder, m.ttl())
	if err != nil {
		return Run{}, err
	}
	return m.step(ctx, c)
}

// releaseTimeout bounds how long a stopping worker spends giving its claim
// up.
const releaseTimeout = 5 * time.Second

func (m *Migrator) step(ctx context.Context, c RunClaim) (Run, error) {
	for {
		if err := ctx.Err(); err != nil {
			// Interrupted between batches.
			m.release(ctx, c)
			return Run{}, &StoppedError{RunID: c.RunID, Err: err}
		}
		r, err := m.Store.Step(ctx, c, m.ttl())
		if err != nil {
			// Interrupted in a batch (the usual case of Ctrl-C or SIGTERM),
			// or the batch failed for a reason that is not the data's:
			// the batch rolled back and this worker stops driving the run.
			m.release(ctx, c)
			if errors.Is(err, tidemark.ErrStaleClaim) {
				return r, err // another worker has the run
			}
			return r, &StoppedError{RunID: c.RunID, Err: err}
		}
		if m.Progress != nil {
			m.Progress(r)
		}
		switch r.Status {
		case RunRunning, RunAborting:
			continue
		case RunFailed:
			return r, &FailedError{Run: r}
		default:
			return r, nil
		}
	}
}

// release gives the claim up, so the next worker (or this command run
// again) need not wait for the lease. It runs on a context the interrupt
// did not cancel, bounded; a claim that is no longer current is left as it
// is (the release is conditional on its token). Should it fail, the lease
// still runs out.
func (m *Migrator) release(ctx context.Context, c RunClaim) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	_ = m.Store.ReleaseRun(rctx, c)
}

// ResumePending drives every run a worker could claim now (running or
// aborting, unclaimed or with an expired lease), one after the other. Runs
// another worker holds are passed over. It returns how many it finished.
func (m *Migrator) ResumePending(ctx context.Context) (int, error) {
	runs, err := m.Store.Runs(ctx, RunFilter{Pending: true})
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, r := range runs {
		_, err := m.Drive(ctx, r.ID)
		var failed *FailedError
		switch {
		case err == nil:
			n++
		case errors.Is(err, tidemark.ErrClaimHeld), errors.Is(err, tidemark.ErrStaleClaim), errors.Is(err, tidemark.ErrConflict):
			// another worker has it
		case errors.As(err, &failed):
			errs = append(errs, err)
		case ctx.Err() != nil:
			return n, ctx.Err()
		default:
			errs = append(errs, fmt.Errorf("migration %s: %w", r.ID, err))
		}
	}
	return n, errors.Join(errs...)
}

// StoppedError is a run its worker stopped driving before the run ended:
// interrupted, or a batch failed for a reason that is not the data's. The
// batch in flight rolled back, the run stays where the batches before it
// left it, and the worker gave its claim up, so any worker can carry it on
// at once. It wraps the cause.
type StoppedError struct {
	RunID string
	Err   error
}

func (e *StoppedError) Error() string { return e.Err.Error() }
func (e *StoppedError) Unwrap() error { return e.Err }

// Hint says how to carry the run on (see tidemark.Hint).
func (e *StoppedError) Hint() string {
	return fmt.Sprintf("the run stays where its last batch left it, free for any worker: `tidemark migrate resume %s` carries it on (and so does `tidemark run`)", e.RunID)
}

// FailedError is a run that stopped on a value its rule refused. It
// matches tidemark.ErrInvalid: the data, not the program, is at fault.
type FailedError struct{ Run Run }

func (e *FailedError) Error() string {
	r := e.Run
	return fmt.Sprintf("migration %s of %s.%s (%s→%s) failed at document %s: %s; the collection is consistent (%d converted up to %s); fix the document and `tidemark migrate resume %s`, or `tidemark migrate abort %s`",
		r.ID, r.Collection, r.Field, r.From, r.To, r.FailedDocumentID, r.Error, r.Converted, orStart(r.Cursor), r.ID, r.ID)
}

func (e *FailedError) Is(target error) bool { return target == tidemark.ErrInvalid }

func orStart(s string) string {
	if s == "" {
		return "the start"
	}
	return s
}
