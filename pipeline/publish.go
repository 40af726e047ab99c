package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/publish"
)

// Publishing rounds: a round handles up to publishRoundSize events and
// pages; PublishAll stops after publishRoundsLimit rounds (ten million
// pages).
const (
	publishRoundSize   = 1000
	publishRoundsLimit = 10000
)

// PublishRound summarizes what is new with the summarizer called
// summarizer ("": the configured one), publishes what is pending (at most
// limit of each) and refreshes the listings. An unavailable summarizer
// stops summarizing at its first refusal; what it accepted before, and
// what was pending already, is still published, and the round then
// returns the outage (tidemark.ErrUnavailable). Index is empty when
// nothing was published; More says the round was full.
func (p *Pipeline) PublishRound(ctx context.Context, svc *publish.Service, summarizer string, limit int) (publish.Round, error) {
	if err := p.checkOpen(ctx); err != nil {
		return publish.Round{}, err
	}
	r, err := p.publishRound(ctx, svc, summarizer, limit, svc.PublishPending)
	p.observePublish(r.Published)
	return r, err
}

// AddObserver adds o to the observers told every publishing round and
// sweep this process runs from now on (the web site's PipelineMetrics, so
// a server that publishes shows what it published).
func (p *Pipeline) AddObserver(o PublishObserver) {
	p.obsMu.Lock()
	defer p.obsMu.Unlock()
	p.observers = append(p.observers, o)
}

// Observers are the observers of this process's publishing: Config.Observer
// and those added since.
func (p *Pipeline) Observers() []PublishObserver {
	p.obsMu.Lock()
	defer p.obsMu.Unlock()
	return slices.Clone(p.observers)
}

func (p *Pipeline) observePublish(rep publish.PublishReport) {
	for _, o := range p.Observers() {
		o.ObservePublish(rep)
	}
}

func (p *Pipeline) observeSweep(d time.Duration, rep publish.SweepReport) {
	for _, o := range p.Observers() {
		o.ObserveSweep(d, rep)
	}
}

// publishRound is PublishRound publishing with pending (PublishPending, or
// PublishPendingPages when a sweep follows and refreshes the listings).
func (p *Pipeline) publishRound(ctx context.Context, svc *publish.Service, summarizer string, limit int,
	pending func(context.Context, int) (publish.PublishReport, error)) (publish.Round, error) {
	var r publish.Round
	sum, err := p.Summarizer(summarizer)
	if err != nil {
		return r, err
	}
	var serr error
	r.Summarized, serr = svc.Summarize(ctx, sum, limit)
	if errors.Is(serr, context.Canceled) {
		return r, fmt.Errorf("publish interrupted: %d summaries accepted and kept, no page published in this round: %w", r.Summarized.Accepted, serr)
	}
	if serr != nil && !errors.Is(serr, tidemark.ErrUnavailable) {
		return r, serr
	}
	if r.Published, err = pending(ctx, limit); err != nil {
		if errors.Is(err, context.Canceled) {
			return r, fmt.Errorf("publish interrupted: %d summaries accepted, %d pages published, all kept: %w",
				r.Summarized.Accepted, r.Published.Published, err)
		}
		return r, errors.Join(serr, err)
	}
	r.Index = p.IndexLocation()
	r.More = limit > 0 && (r.Summarized.Considered >= limit || r.Published.Published+r.Published.Failed >= limit ||
		r.Published.Restyled >= limit || r.Published.Withdrawn >= limit)
	if serr != nil {
		serr = fmt.Errorf("%w\n(%d pages published now; the events not summarized wait for the next `tidemark publish` or `run` once the summarizer answers)",
			serr, r.Published.Published)
	}
	return r, serr
}

// Publish binds the wiki's store (see BindStore) and runs a PublishRound
// on it. It claims the events it summarizes under a holder slot of its
// own, as every claiming operation does (see enter).
func (p *Pipeline) Publish(ctx context.Context, summarizer string, limit int) (publish.Round, error) {
	if err := p.checkOpen(ctx); err != nil {
		return publish.Round{}, err
	}
	ctx, _, release, err := p.enter(ctx)
	if err != nil {
		return publish.Round{}, err
	}
	defer release()
	svc, err := p.BindStore(ctx)
	if err != nil {
		return publish.Round{}, err
	}
	return p.PublishRound(ctx, svc, summarizer, limit)
}

// PublishAll summarizes and publishes in rounds until nothing is pending:
// a round that made no progress (everything left failed) or handled less
// than a full round ends it, so a failure that repeats cannot spin.
// progress, if set, is told the running totals when it starts and as each
// summary and page is done (see publish.WithProgress), not only when a
// round of 1,000 ends.
func (p *Pipeline) PublishAll(ctx context.Context, svc *publish.Service, progress func(string)) (publish.Totals, error) {
	if err := p.checkOpen(ctx); err != nil {
		return publish.Totals{}, err
	}
	var t publish.Totals
	var live publishProgress // this round's steps so far
	if progress != nil {
		progress(live.line(t))
		ctx = publish.WithProgress(ctx, func(s publish.Step) {
			live.add(s)
			progress(live.line(t))
		})
	}
	for round := 0; ; round++ {
		if round == publishRoundsLimit {
			t.More = true
			return t, nil
		}
		r, err := p.PublishRound(ctx, svc, "", publishRoundSize)
		t.Add(r)
		live = publishProgress{}
		s, pr := r.Summarized, r.Published
		if progress != nil {
			progress(live.line(t))
		}
		if err != nil {
			// What the round did is counted above and kept; the caller
			// says what the error left undone.
			return t, err
		}
		if !r.More || s.Accepted+pr.Published+pr.Restyled+pr.Withdrawn == 0 {
			return t, nil
		}
	}
}

// WithPublishProgress returns ctx telling progress, when it starts and as
// each summary and page of the publishing it carries is done, the counts
// so far ("publish: 3 summaries, 2 pages"): for a display of `publish`,
// whose model may take minutes over hundreds of events. progress is
// called one call at a time (see publish.WithProgress).
func WithPublishProgress(ctx context.Context, progress func(string)) context.Context {
	var live publishProgress
	progress(live.line(publish.Totals{}))
	return publish.WithProgress(ctx, func(s publish.Step) {
		live.add(s)
		progress(live.line(publish.Totals{}))
	})
}

// publishProgress counts the steps of a publishing round told so far.
type publishProgress struct{ accepted, published, restyled, withdrawn int }

func (l *publishProgress) add(s publish.Step) {
	switch s {
	case publish.StepSummarized:
		l.accepted++
	case publish.StepPublished:
		l.published++
	case publish.StepRestyled:
		l.restyled++
	case publish.StepWithdrawn:
		l.withdrawn++
	}
}

// line says the totals of the rounds done, t, with this round's so far.
func (l *publishProgress) line(t publish.Totals) string {
	line := fmt.Sprintf("publish: %d summaries, %d pages", t.Accepted+l.accepted, t.Published+l.published)
	if n := t.Restyled + l.restyled; n > 0 {
		line += fmt.Sprintf(", %d restyled", n)
	}
	if n := t.Withdrawn + l.withdrawn; n > 0 {
		line += fmt.Sprintf(", %d withdrawn", n)
	}
	return line
}

// PublishSummary publishes one summary on its page (refused unless it is
// the event's current, unrejected summary of its current evidence) and
// refreshes the listings.
func (p *Pipeline) PublishSummary(ctx context.Context, summaryID string) (publish.Result, error) {
	if err := p.checkOpen(ctx); err != nil {
		return publish.Result{}, err
	}
	svc, err := p.BindStore(ctx)
	if err != nil {
		return publish.Result{}, err
	}
	res, err := svc.Publish(ctx, summaryID)
	if err != nil {
		return res, err
	}
	_, err = svc.RefreshListings(ctx)
	return res, err
}

// Sweep converges every page to its current published summary and
// collects orphans. Pages that failed to converge make it an error
// (tidemark.ErrUnconfirmed) beside the report.
func (p *Pipeline) Sweep(ctx context.Context) (publish.SweepReport, error) {
	if err := p.checkOpen(ctx); err != nil {
		return publish.SweepReport{}, err
	}
	svc, err := p.BindStore(ctx)
	if err != nil {
		return publish.SweepReport{}, err
	}
	start := time.Now()
	rep, err := svc.Sweep(ctx)
	p.observeSweep(time.Since(start), rep)
	if err == nil && rep.Failed > 0 {
		err = fmt.Errorf("sweep: %d pages failed to converge: %w", rep.Failed, tidemark.ErrUnconfirmed)
	}
	return rep, err
}

// Summaries lists summaries, newest first. An event the filter names
// must exist (tidemark.ErrNotFound naming it), as a source or run a run or
// event listing names must: the CLI and the API both list through here.
func (p *Pipeline) Summaries(ctx context.Context, f publish.SummaryFilter) (publish.SummaryList, error) {
	if err := p.checkOpen(ctx); err != nil {
		return publish.SummaryList{}, err
	}
	if f.EventID != "" {
		if _, err := p.db.Ingest().Event(ctx, f.EventID); err != nil {
			return nil, fmt.Errorf("the summaries of event %s: %w", f.EventID, err)
		}
	}
	return p.db.Publish().Summaries(ctx, f)
}

// RejectSummary rejects a summary: it is never published, and the next
// sweep withdraws its page.
func (p *Pipeline) RejectSummary(ctx context.Context, summaryID, reason string) (publish.Summary, error) {
	if err := p.checkOpen(ctx); err != nil {
		return publish.Summary{}, err
	}
	return p.db.Publish().Reject(ctx, summaryID, reason)
}

// UnrejectSummary lifts a summary's rejection, for a reason, keeping the
// rejection on record: a summary of its event's current evidence is
// current again, and the next publishing round publishes its page.
func (p *Pipeline) UnrejectSummary(ctx context.Context, summaryID, reason string) (publish.Summary, error) {
	if err := p.checkOpen(ctx); err != nil {
		return publish.Summary{}, err
	}
	return p.db.Publish().Unreject(ctx, summaryID, reason)
}

// Rebind binds the wiki to the configured store, after moving or emptying
// it on purpose; the next sweep republishes what the store does not show.
func (p *Pipeline) Rebind(ctx context.Context) (publish.StoreIdentity, error) {
	if err := p.checkOpen(ctx); err != nil {
		return publish.StoreIdentity{}, err
	}
	svc, err := p.Publisher()
	if err != nil {
		return publish.StoreIdentity{}, err
	}
	return svc.Rebind(ctx)
}
