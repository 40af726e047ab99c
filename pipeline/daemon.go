package pipeline

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/summarize"
)

// The daemon's loops (delivery, publish and sweep, field migrations) never
// die silently: an error is logged and the loop goes on after a capped,
// growing pause, or, when retrying cannot help (bad configuration), the
// loop returns it and Run stops every other loop and returns it.

// sleep is how a daemon loop waits; tests replace it so that no test
// sleeps.
var sleep = outbox.Sleep

// Pauses after consecutive failures of a daemon loop.
const (
	backoffMin = time.Second
	backoffMax = 5 * time.Minute
	// migrationPoll is how often the daemon looks for pending migration
	// runs; lanePoll how often it looks at an idle lane.
	migrationPoll = 5 * time.Second
	lanePoll      = 5 * time.Second
	// maxSummarizerWait bounds how long the publish loop honours a
	// summarizer endpoint's Retry-After.
	maxSummarizerWait = time.Hour
)

// backoff is a pause that doubles with each consecutive failure, from Min
// up to Max, and starts over after a success.
type backoff struct {
	Min, Max time.Duration
	cur      time.Duration
}

func newBackoff() *backoff { return &backoff{Min: backoffMin, Max: backoffMax} }

// Fail returns the pause after one more failure.
func (b *backoff) Fail() time.Duration {
	if b.cur == 0 {
		b.cur = b.Min
	} else {
		b.cur = min(2*b.cur, b.Max)
	}
	return b.cur
}

// Reset starts over after a success.
func (b *backoff) Reset() { b.cur = 0 }

// fatal reports whether a loop's error stops the daemon: the configuration
// is wrong, and waiting will not fix it. Anything else (a database or an
// object store that is away, a provider that fails) is retried.
func fatal(err error) bool { return errors.Is(err, tidemark.ErrInvalid) }

// RunOptions configure the daemon.
type RunOptions struct {
	Workers int           // runs in flight at most (default 4)
	Lease   time.Duration // claim lease (default ingest.DefaultLeaseTTL)
	Poll    time.Duration // longest pause between looks for due sources (default 5s)
	// OnStart is called once the store is checked, before anything is
	// claimed.
	OnStart func(holder string, workers int)
	// OnReport is called after each ingest run.
	OnReport func(ingest.Report, error)
}

// Run is the daemon: the ingest scheduler, and the publish-and-sweep, the
// outbox's delivery and the migration loops beside it, until ctx ends or
// one of them fails in a way retrying cannot fix (then every other loop
// is stopped and the error returned). A store that is not the wiki's stops
// it before anything is claimed; a database or store that is away is
// waited out. A ctx that ends is a stop, not a failure, while waiting
// as when running: Run then returns nil.
func (p *Pipeline) Run(ctx context.Context, o RunOptions) error {
	ctx, holder, release, err := p.enter(ctx)
	if err != nil {
		return err
	}
	defer release()
	if _, err := retryStart(ctx, p, "check the wiki's store", func() (*publish.Service, error) { return p.BindStore(ctx) }); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil // stopped before anything was claimed
		}
		return err
	}
	svc := p.ingestAs(holder)
	svc.LeaseTTL = o.Lease
	sc := &ingest.Scheduler{Service: svc, Workers: o.Workers, Poll: o.Poll, Logger: p.log, OnReport: o.OnReport}
	if o.OnStart != nil {
		o.OnStart(svc.Holder, sc.WorkerLimit())
	}
	return p.group(ctx, sc.Run, []func(context.Context) error{
		p.publishLoop,
		func(ctx context.Context) error { return p.DeliverLoop(ctx, "", time.Minute) },
		p.migrationLoop,
		p.presenceLoop,
	})
}

// group runs main (the ingest scheduler) and every loop until ctx ends or
// one of them fails. A loop that returns an error other than ctx's end
// cancels the rest and its error is returned, so the process stops at
// once instead of running on without it.
func (p *Pipeline) group(ctx context.Context, main func(context.Context) error, loops []func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	type ended struct {
		loop bool
		err  error
	}
	done := make(chan ended, len(loops)+1)
	for _, loop := range loops {
		go func() { done <- ended{true, loop(ctx)} }()
	}
	go func() { done <- ended{false, main(ctx)} }()
	var failed []error
	for range len(loops) + 1 {
		e := <-done
		if e.err == nil || (ctx.Err() != nil && errors.Is(e.err, ctx.Err())) {
			continue
		}
		if e.loop {
			p.log.Error("daemon loop stopped; stopping the daemon", "err", e.err)
		}
		failed = append(failed, e.err)
		cancel(e.err)
	}
	return errors.Join(failed...)
}

// retryStart calls start until it succeeds, ctx ends, or it fails in a way
// retrying cannot fix; each other failure is logged and waited out.
func retryStart[T any](ctx context.Context, p *Pipeline, what string, start func() (T, error)) (T, error) {
	b := newBackoff()
	for {
		v, err := start()
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			return v, ctx.Err()
		}
		if fatal(err) {
			return v, fmt.Errorf("%s: %w", what, err)
		}
		pause := b.Fail()
		p.log.Error(what+" failed; retrying", "err", err, "retry_in", pause)
		if err := sleep(ctx, pause); err != nil {
			return v, err
		}
	}
}

// publishLoop summarizes, publishes and sweeps every SweepInterval. A
// failed round is logged and tried again after a growing pause, capped at
// the larger of the interval and backoffMax.
func (p *Pipeline) publishLoop(ctx context.Context) error {
	every := p.cfg.SweepInterval
	if every <= 0 {
		every = time.Minute
	}
	// One service for every round: the object store's client (and its
	// connections) lives as long as the loop.
	svc, err := retryStart(ctx, p, "publish loop: open", p.Publisher)
	if err != nil {
		return err
	}
	b := &backoff{Min: backoffMin, Max: max(every, backoffMax)}
	for {
		pause := every
		if err := p.newerSchema(ctx); err != nil {
			return err
		}
		if err := p.publishAndSweep(ctx, svc); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if fatal(err) {
				return err // another store than the wiki's: waiting will not fix it
			}
			// A summarizer that asked to be left alone is, up to a bound.
			pause = max(b.Fail(), min(summarize.RetryAfter(err), maxSummarizerWait))
			p.log.Error("publish round failed; retrying", "err", err, "retry_in", pause)
		} else {
			b.Reset()
		}
		if err := sleep(ctx, pause); err != nil {
			return err
		}
	}
}

// newerSchema is the error that stops a long-running loop when a newer
// tidemark has migrated the database under it (sqlstore.ErrNewerSchema):
// this build would go on with a schema it does not understand, and
// publish pages in its own format against the newer build's. nil when
// the schema is this build's, or when it cannot be read now (the loop's
// own work meets and reports that).
func (p *Pipeline) newerSchema(ctx context.Context) error {
	if err := p.db.CheckSchema(ctx); errors.Is(err, sqlstore.ErrNewerSchema) {
		return err
	}
	return nil
}

// publishAndSweep is one round of the publish loop. The sweep refreshes
// the listings (with the store's listing it reads), so the round's
// publishing leaves them to it; a round whose summarizer failed part-way
// still sweeps, so the pages it published are listed at once (and a page
// gone from the store is put back) while the summarizer is down.
func (p *Pipeline) publishAndSweep(ctx context.Context, svc *publish.Service) error {
	r, perr := p.publishRound(ctx, svc, "", publishRoundSize, svc.PublishPendingPages)
	p.observePublish(r.Published)
	if perr != nil {
		perr = fmt.Errorf("publish: %w", perr)
		if ctx.Err() != nil || fatal(perr) || !errors.Is(perr, tidemark.ErrUnavailable) {
			return perr
		}
	}
	start := time.Now()
	rep, err := svc.Sweep(ctx)
	if err != nil {
		return errors.Join(perr, fmt.Errorf("sweep: %w", err))
	}
	p.observeSweep(time.Since(start), rep)
	p.log.Info("publish round", "accepted", r.Summarized.Accepted, "published", r.Published.Published,
		"published_elsewhere", r.Published.PublishedElsewhere, "republished", rep.Republished, "overtaken", rep.Superseded, "withdrawn", rep.Withdrawn, "failed", r.Published.Failed+rep.Failed)
	return perr
}

// migrationLoop carries on every pending migration run (detached, or left
// by a worker that died) until ctx ends.
func (p *Pipeline) migrationLoop(ctx context.Context) error {
	m := p.migratorAs(p.holderOf(ctx))
	b := newBackoff()
	for {
		n, err := m.ResumePending(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		pause := migrationPoll
		switch {
		case err != nil:
			pause = max(pause, b.Fail())
			p.log.Error("migration runs failed; retrying", "err", err, "retry_in", pause)
		case n > 0:
			b.Reset()
			p.log.Info("migration runs finished", "count", n)
		default:
			b.Reset()
		}
		if err := sleep(ctx, pause); err != nil {
			return err
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// presenceLoop announces this daemon under its holder every
// ingest.PresenceEvery until ctx ends, then withdraws it. Another live
// daemon under the same holder (a copied unit file) is a mistake no claim
// can catch (each would re-enter the other's claims as its own): it is
// logged at WARN when first found, naming it, and again each
// presenceRewarn while it lasts. A failure to announce is logged and
// stops nothing: the presence is a check, not a claim.
func (p *Pipeline) presenceLoop(ctx context.Context) error {
	host, _ := os.Hostname()
	me := ingest.Presence{Holder: p.Holder(), Instance: rand.Text(), Host: host, PID: os.Getpid(), StartedAt: p.clock.Now()}
	defer func() {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = p.db.Withdraw(wctx, me.Holder, me.Instance)
	}()
	live := ingest.Local()
	warned := map[string]time.Time{}
	for {
		me.SeenAt = p.clock.Now()
		others, err := p.db.Announce(ctx, me)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			p.log.Warn("could not announce this daemon under its holder", "holder", me.Holder, "err", err)
		}
		for _, o := range others {
			if !me.Live(o, live) {
				continue // a crashed predecessor's, not yet stale
			}
			if last, ok := warned[o.Instance]; ok && me.SeenAt.Sub(last) < presenceRewarn {
				continue
			}
			warned[o.Instance] = me.SeenAt
			p.log.Warn("another daemon runs under this holder: two live processes must never share one (each re-enters the other's claims); give each its own --holder (TIDEMARK_HOLDER)",
				"holder", me.Holder, "other_host", o.Host, "other_pid", o.PID,
				"other_started", o.StartedAt.UTC().Format(time.RFC3339), "other_seen", o.SeenAt.UTC().Format(time.RFC3339))
		}
		if err := sleep(ctx, ingest.PresenceEvery); err != nil {
			return err
		}
	}
}

// presenceRewarn is how often the warning of another daemon under this
// holder is repeated while it lasts.
const presenceRewarn = 10 * time.Minute
