package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/publish"
)

// OnceOptions configure RunOnce.
type OnceOptions struct {
	// MaxPasses bounds the runs of one source while it has a backlog
	// (default ingest.DefaultMaxPasses).
	MaxPasses int
	Workers   int           // runs in flight at most (default 4)
	Lease     time.Duration // claim lease (default ingest.DefaultLeaseTTL)
	Poll      time.Duration
	// Track names git repositories to add as sources first, unless a
	// source already tracks them.
	Track []string
	// OnTracked is called for each source Track added.
	OnTracked func(tidemark.Source)
	// OnReport is called after each ingest run.
	OnReport func(ingest.Report, error)
	// OnProgress describes the work under way ("ingest: 12 runs, 340
	// events", "publish: 340 summaries, 120 pages"), for a progress
	// display: each step says so when it starts, and then as each run,
	// summary and page is done.
	OnProgress func(desc string)
}

// progress says what is under way now: each step says so when it starts,
// so the display never shows a step that has ended.
func (o OnceOptions) progress(desc string) {
	if o.OnProgress != nil {
		o.OnProgress(desc)
	}
}

// OnceResult is what RunOnce did.
type OnceResult struct {
	// Ingested says the ingest step ran (its Reports are all there are).
	Ingested bool
	// Reports are the ingest runs, in the order they ended; never nil.
	Reports []ingest.Report
	// Migrations counts the detached migration runs finished; MigrationErr
	// is what stopped one. A run that failed is left for an operator, and
	// the pass, which set out to finish it, is incomplete.
	Migrations   int
	MigrationErr error
	// Publish adds up the publishing rounds; nil when nothing was
	// published (no store or nothing to do before an error).
	Publish *publish.Totals
	// Deliveries are each lane's steps.
	Deliveries []DeliverReport
}

// RunOnce runs every source due now until it has caught up, finishes
// detached field migrations, summarizes and publishes every pending page,
// and delivers what publication drafted. A pass that leaves anything
// undone (a source that failed, a migration that failed, pages not
// published, a lane whose delivery failed or was deferred) returns an
// *IncompleteError (tidemark.ErrUnavailable; a lane's own error, such as
// a *LaneBrokenError, is found through it): what succeeded is kept, and
// running it again, later, does the rest. A ctx that ends stops the pass:
// the error then wraps ctx's (errors.Is(err, context.Canceled) or
// context.DeadlineExceeded: test for it first, as it may come joined with
// an *IncompleteError); what settled is kept, and runs cut short spend no
// retry budget.
func (p *Pipeline) RunOnce(ctx context.Context, o OnceOptions) (OnceResult, error) {
	res := OnceResult{Reports: []ingest.Report{}} // a list even when nothing ran: JSON shows [], not null
	ctx, _, release, err := p.enter(ctx)
	if err != nil {
		return res, err
	}
	defer release()
	// A worker whose store is not the wiki's refuses before it claims
	// anything.
	svc, err := p.BindStore(ctx)
	if err != nil {
		return res, err
	}
	var tracked []tidemark.Source
	for _, path := range o.Track {
		src, added, err := p.TrackRepo(ctx, path)
		if err != nil {
			return res, err
		}
		if added && o.OnTracked != nil {
			o.OnTracked(src)
		}
		if !added {
			tracked = append(tracked, src)
		}
	}
	t := &tally{}
	ran, err := p.runTracked(ctx, o, tracked, t, &res)
	if err == nil {
		err = p.ingestOnce(ctx, o, ran, t, &res)
	}
	res.Ingested = true
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return res, t.interrupted(err)
		}
		return res, err
	}
	// Detached migrations: a run that fails is reported and left for an
	// operator; the pass goes on, and ends incomplete.
	o.progress("migrations: finishing detached runs")
	res.Migrations, res.MigrationErr = p.migratorAs(p.holderOf(ctx)).ResumePending(ctx)
	if res.MigrationErr != nil && ctx.Err() != nil {
		return res, errors.Join(res.MigrationErr, t.err())
	}
	if res.MigrationErr != nil {
		t.undone = append(t.undone, tidemark.Text(res.MigrationErr))
	}
	if err := p.publishOnce(ctx, svc, o, t, &res); err != nil {
		return res, errors.Join(err, t.err())
	}
	// Deliver what the new pages drafted, so a change goes all the way out.
	o.progress("deliver: sending what the pages drafted")
	deliveries, err := p.DeliverOnce(ctx, "", time.Minute)
	res.Deliveries = deliveries
	if err != nil && ctx.Err() != nil {
		return res, errors.Join(err, t.err())
	}
	if err != nil {
		// A lane left undone (broken here, a write that failed, a
		// deferral) is work left like any other: the pass is incomplete,
		// and says which lanes, with their errors.
		var lanes []string
		for _, r := range deliveries {
			if r.Error != "" {
				lanes = append(lanes, r.Lane)
			}
		}
		t.undone = append(t.undone, fmt.Sprintf("delivery left work undone on %d lane(s) (%s)", len(lanes), strings.Join(lanes, ", ")))
		t.cause = err
	}
	return res, t.err()
}

// runTracked runs now, due or not, the sources that track the
// repositories --track named and that were tracked already (a new one is
// due at once anyway): whoever names a repository wants what it holds
// now; its interval paces the daemon. One that cannot be run now (held,
// paused, terminal) is left to the drain that follows, as a due source
// would be. It returns the runs it gave each source, by ID, which count
// against --max-passes in the drain (ingest.DrainOptions.Ran).
func (p *Pipeline) runTracked(ctx context.Context, o OnceOptions, srcs []tidemark.Source, t *tally, res *OnceResult) (map[string]int, error) {
	svc := p.ingestAs(p.holderOf(ctx))
	svc.LeaseTTL = o.Lease
	ran := map[string]int{}
	for _, src := range srcs {
		if ran[src.ID] > 0 {
			continue // named twice: run once
		}
		_, err := p.runSource(ctx, svc, src.Name, o.MaxPasses, func(r ingest.Report, err error) {
			ran[src.ID]++
			t.add(ctx, r, err)
			res.Reports = append(res.Reports, r)
			if o.OnReport != nil {
				o.OnReport(r, err)
			}
		})
		var failed *SourceFailedError
		switch {
		case err == nil, errors.As(err, &failed): // counted by t.add
		case errors.Is(err, tidemark.ErrClaimHeld), errors.Is(err, tidemark.ErrNotClaimable):
		default:
			return ran, err
		}
	}
	return ran, nil
}

func (p *Pipeline) ingestOnce(ctx context.Context, o OnceOptions, ran map[string]int, t *tally, res *OnceResult) error {
	svc := p.ingestAs(p.holderOf(ctx))
	svc.LeaseTTL = o.Lease
	sc := &ingest.Scheduler{Service: svc, Workers: o.Workers, Poll: o.Poll, Logger: p.log}
	maxPasses := o.MaxPasses
	if maxPasses <= 0 {
		maxPasses = ingest.DefaultMaxPasses
	}
	var runs, events int
	sc.OnReport = func(r ingest.Report, err error) {
		t.add(ctx, r, err)
		runs++
		events += r.EventsNew + r.EventsChanged
		if o.OnReport != nil {
			o.OnReport(r, err)
		}
		if o.OnProgress != nil {
			o.OnProgress(fmt.Sprintf("ingest: %d runs, %d events", runs, events))
		}
	}
	drained, err := sc.Drain(ctx, ingest.DrainOptions{MaxPasses: maxPasses, Ran: ran})
	res.Reports = append(res.Reports, drained.Reports...)
	if drained.Pending > 0 {
		t.undone = append(t.undone, fmt.Sprintf("%d sources still have a backlog after %d runs each", drained.Pending, maxPasses))
	}
	return err
}

func (p *Pipeline) publishOnce(ctx context.Context, svc *publish.Service, o OnceOptions, t *tally, res *OnceResult) error {
	tot, err := p.PublishAll(ctx, svc, o.OnProgress)
	if tot.Index == "" {
		return err // nothing was published
	}
	res.Publish = &tot
	if errors.Is(err, tidemark.ErrUnavailable) {
		// What was published may have drafted intents: deliver them, and
		// report the outage at the end of the pass.
		t.undone = append(t.undone, fmt.Sprintf("summarizer unavailable: events wait to be summarized (%d pages published now)", tot.Published))
		err = nil
	}
	// Events failed, held or claimed by another worker, and pages not
	// published: each is work this pass set out to do.
	t.undone = append(t.undone, tot.Undone()...)
	if tot.More {
		t.undone = append(t.undone, fmt.Sprintf("more pages are pending after %d publishing rounds", publishRoundsLimit))
	}
	if err != nil {
		return err
	}
	return p.restoreMissing(ctx, svc, t, res.Publish)
}

// restoreMissing sweeps when the books record published pages missing
// from the store (the wiki was rebound to an emptied store, or a sweep
// could not republish them), so a pass that publishes every page puts them
// back; otherwise it costs one indexed query and lists nothing.
func (p *Pipeline) restoreMissing(ctx context.Context, svc *publish.Service, t *tally, tot *publish.Totals) error {
	n, err := svc.Missing(ctx)
	if err != nil || n == 0 {
		return err
	}
	rep, err := svc.Sweep(ctx)
	tot.Restored, tot.Missing = rep.Republished, rep.Missing
	if err != nil {
		return fmt.Errorf("republish %d pages missing from the object store: %w", n, err)
	}
	if rep.Missing > 0 {
		t.undone = append(t.undone, fmt.Sprintf("%d pages missing from the object store", rep.Missing))
	}
	return nil
}

// tally is what RunOnce could not do: the sources whose run failed, and
// the work its later steps left undone.
type tally struct {
	runs, settled, failed int
	// cut counts the runs that ended after an interrupt without settling:
	// they were released without spending their retry budget.
	cut    int
	names  []string
	undone []string
	// cause is what left the undone work undone, when it is an error of
	// its own the caller may tell apart (a lane's): the IncompleteError
	// wraps it.
	cause error
}

// add counts one run's report. A source another worker holds is not a
// failure of this pass: that worker is running it.
func (t *tally) add(ctx context.Context, r ingest.Report, err error) {
	t.runs++
	switch {
	case r.Outcome.Advances():
		t.settled++
	case ctx.Err() != nil:
		t.cut++
	case r.Outcome == "" && (err == nil || errors.Is(err, tidemark.ErrClaimHeld) || errors.Is(err, context.Canceled)):
	default:
		t.failed++
		what := string(r.Outcome)
		if what == "" {
			what = "not run"
		}
		if len(t.names) < 5 {
			t.names = append(t.names, fmt.Sprintf("%s %s", r.Source, what))
		}
	}
}

// err is nil when the pass did everything it set out to do.
func (t *tally) err() error {
	if t.failed == 0 && len(t.undone) == 0 {
		return nil
	}
	var parts []string
	if t.failed > 0 {
		names := strings.Join(t.names, ", ")
		if t.failed > len(t.names) {
			names += ", …"
		}
		parts = append(parts, fmt.Sprintf("%d of %d sources failed (%s)", t.failed, t.runs, names))
	}
	parts = append(parts, t.undone...)
	return &IncompleteError{What: strings.Join(parts, "; "), Err: t.cause}
}

// interrupted says what an interrupted pass kept.
func (t *tally) interrupted(err error) error {
	return fmt.Errorf("run --once interrupted: %d runs settled and are kept, %d failed, %d were cut short and released "+
		"without spending their retry budget; publishing and delivery did not run: %w", t.settled, t.failed, t.cut, err)
}

// IncompleteError says a pass finished with work left undone; it matches
// tidemark.ErrUnavailable (exit 5): running the same pass again, later, is
// how the rest gets done.
type IncompleteError struct {
	What string
	// Op is the pass: "" for RunOnce (`run --once`), "publish" for a
	// publishing round (see PublishIncomplete).
	Op string
	// Err is what left the work undone, when it is an error of its own
	// (a delivery's: errors.As finds a *LaneBrokenError through it); nil
	// otherwise.
	Err error
}

func (e *IncompleteError) Error() string {
	if e.Op == "publish" {
		return "publish left work undone: " + e.What + ".\nWhat succeeded is kept (accepted summaries, published pages); " +
			"run the same command again to retry the rest"
	}
	what := e.What
	if e.Err != nil {
		what += ":\n" + e.Err.Error()
	}
	return "run --once left work undone: " + what + ".\nWhat succeeded is kept (settled runs, published pages, sent intents); " +
		"run the same command again to retry the rest (a failed source is due again after its backoff: `tidemark source list`)"
}

// PublishIncomplete is the error of a publishing round that did all it
// could and still left work undone (publish.Totals.Undone: events failed,
// held or claimed by another worker, pages not published): an
// *IncompleteError, or nil when it left nothing. `publish` exits 5 with
// it; the API and the console show the round, which carries the same.
func PublishIncomplete(r publish.Round) error {
	if undone := r.Totals().Undone(); len(undone) > 0 {
		return &IncompleteError{What: strings.Join(undone, "; "), Op: "publish"}
	}
	return nil
}
func (e *IncompleteError) Unwrap() []error {
	if e.Err != nil {
		return []error{tidemark.ErrUnavailable, e.Err}
	}
	return []error{tidemark.ErrUnavailable}
}

// Recent is the newest events of the sources some runs found events in,
// so a person sees what was ingested, and the database they are in.
type Recent struct {
	Sources  []SourceEvents `json:"sources"`
	Database string         `json:"database"`
}

// SourceEvents is a source's newest events.
type SourceEvents struct {
	Source string           `json:"source"`
	Events ingest.EventList `json:"events"`
}

// Recent returns the newest events (at most limit each) of the sources
// whose runs in reports found new or changed events. A source whose
// events cannot be read now is left out: this is a courtesy, not a check.
func (p *Pipeline) Recent(ctx context.Context, reports []ingest.Report, limit int) Recent {
	out := Recent{Database: p.db.URL()}
	shown := map[string]bool{}
	for _, r := range reports {
		if r.EventsNew+r.EventsChanged == 0 || shown[r.Source] {
			continue
		}
		shown[r.Source] = true
		evs, err := p.db.Ingest().Events(ctx, ingest.EventFilter{SourceID: r.Source, Limit: limit})
		if err == nil && len(evs) > 0 {
			out.Sources = append(out.Sources, SourceEvents{r.Source, evs})
		}
	}
	return out
}

// WriteText writes each source's newest events, then where the data is.
func (r Recent) WriteText(w io.Writer) error {
	for _, s := range r.Sources {
		fmt.Fprintf(w, "\nnewest events of %s:\n", s.Source)
		if err := s.Events.WriteText(w); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "\ndata: %s\n", r.Database)
	return err
}
