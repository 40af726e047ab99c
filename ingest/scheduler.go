package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/internal/fieldtext"
)

// Scheduler claims due sources and runs them on a bounded pool of workers.
// Any number of schedulers, in any number of processes, may share one
// database: the claims decide who runs what.
type Scheduler struct {
	Service *Service
	// Workers bounds the fetches in flight (default 4). A run's settlement
	// does not hold a worker: up to a group commit's worth of runs (256)
	// more may be settling.
	Workers int
	// Poll is the longest the scheduler sleeps between looks for due
	// sources (default 5s).
	Poll   time.Duration
	Logger *slog.Logger
	// OnReport, if set, is told about every finished run.
	OnReport func(Report, error)
}

// WorkerLimit is how many runs the scheduler has in flight at most: Workers,
// or 4.
func (sc *Scheduler) WorkerLimit() int {
	if sc.Workers <= 0 {
		return 4
	}
	return sc.Workers
}

func (sc *Scheduler) report(r Report, err error) {
	if sc.OnReport != nil {
		sc.OnReport(r, err)
	}
}

// RunOnce runs every source due now, once each, and returns when all have
// settled or failed. Sources held by other workers or not claimable are
// passed over and reported with their error.
func (sc *Scheduler) RunOnce(ctx context.Context) ([]Report, error) {
	res, err := sc.Drain(ctx, DrainOptions{MaxPasses: 1})
	return res.Reports, err
}

// DrainOptions bound a drain.
type DrainOptions struct {
	// MaxPasses bounds how many runs one drain gives a single source
	// (default DefaultMaxPasses). A source with a backlog is run again as
	// soon as its run settles, until it has caught up or this many runs.
	MaxPasses int
	// Ran counts, by source ID, the runs this pass already gave a source
	// before the drain (run --once --track runs what it names first): the
	// drain gives it only what is left of MaxPasses, and one that has had
	// them all and is still due with a backlog is Pending, not run again.
	Ran map[string]int
}

// DefaultMaxPasses is how many runs a drain gives one source at most:
// 10,000 full windows (five million commits of a git history).
const DefaultMaxPasses = 10000

// DrainResult is what a drain did, counted for people and for exit codes.
type DrainResult struct {
	// Reports holds every run (and every source that could not be run), in
	// the order they ended.
	Reports []Report
	// Runs counts the runs that settled or failed; Settled those that
	// settled; Failed those that failed, plus sources that could not be
	// claimed (held by another worker, paused or terminal meanwhile).
	Runs, Settled, Failed    int
	EventsNew, EventsChanged int
	// Pending counts the sources that still had a backlog when the drain
	// stopped (their MaxPasses spent, or ctx cancelled): work left undone.
	Pending int
}

func (r *DrainResult) add(rep Report, err error) {
	r.Reports = append(r.Reports, rep)
	switch {
	case rep.Outcome == "":
		r.Failed++ // not run
	case rep.Outcome.Advances():
		r.Runs++
		r.Settled++
	default:
		r.Runs++
		r.Failed++
	}
	r.EventsNew += rep.EventsNew
	r.EventsChanged += rep.EventsChanged
}

// Drain runs every due source until it has caught up, and returns when
// none is left due. A run that filled its window (Report.Backlog) is
// followed at once by the next run of the same source, on the same worker;
// a source that caught up, failed or could not be claimed is not run again
// by this drain, so a drain always ends: at most MaxPasses runs per source,
// and every source listed once. Sources that fall due while the drain runs
// are picked up by a further listing.
func (sc *Scheduler) Drain(ctx context.Context, opt DrainOptions) (DrainResult, error) {
	s := sc.Service
	if err := s.check(); err != nil {
		return DrainResult{}, err
	}
	maxPasses := opt.MaxPasses
	if maxPasses <= 0 {
		maxPasses = DefaultMaxPasses
	}
	var (
		res  DrainResult
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	for ctx.Err() == nil {
		// Claims of killed workers of this host are taken over first, due
		// or not (the daemon's ClaimDue makes the same look): a source due
		// is then free for this drain, and one not due runs on its
		// schedule instead of staying held until then.
		if _, err := s.Store.TakeOverGone(ctx, s.holder()); err != nil {
			return res, err
		}
		srcs, err := s.Store.Sources(ctx)
		if err != nil {
			return res, err
		}
		now := s.clock().Now()
		var due []tidemark.Source
		for _, src := range srcs {
			if at, ok := src.DueAt(); ok && !at.After(now) && !seen[src.ID] {
				seen[src.ID] = true
				if opt.Ran[src.ID] >= maxPasses {
					res.Pending++ // due again at once after all its runs: a backlog
					continue
				}
				due = append(due, src)
			}
		}
		if len(due) == 0 {
			break
		}
		if due, err = sc.passOverUnserved(ctx, due, now, &res); err != nil {
			return res, err
		}
		var (
			wg  sync.WaitGroup
			sem = make(chan struct{}, sc.WorkerLimit())
		)
		for _, src := range due {
			if ctx.Err() != nil {
				break
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				for pass := 1 + opt.Ran[src.ID]; ; pass++ {
					r, err := s.RunSource(ctx, src.ID)
					if r.Source == "" {
						r.Source = src.Name
					}
					if err != nil && r.Error == "" {
						r.Error = tidemark.Text(err)
					}
					mu.Lock()
					res.add(r, err)
					sc.report(r, err) // serialized, so a printer needs no lock of its own
					stop := !r.Backlog || err != nil
					if !stop && (pass >= maxPasses || ctx.Err() != nil) {
						res.Pending++
						stop = true
					}
					mu.Unlock()
					if stop {
						return
					}
				}
			}()
		}
		wg.Wait()
		if maxPasses == 1 {
			break // RunOnce: one listing, one run each
		}
	}
	return res, ctx.Err()
}

// passOverUnserved reports, without running them, the due sources this
// worker recorded it could not serve, until the record expires (as
// ClaimDue passes them over): other workers serve them meanwhile, and a
// run here would only fail again. It returns the others.
func (sc *Scheduler) passOverUnserved(ctx context.Context, due []tidemark.Source, now time.Time, res *DrainResult) ([]tidemark.Source, error) {
	s := sc.Service
	kept := due[:0]
	for _, src := range due {
		us, err := s.Store.Unserved(ctx, src.ID)
		if err != nil {
			return nil, err
		}
		var mine *Unserved
		for i := range us {
			if us[i].Holder == s.holder() && us[i].Until.After(now) {
				mine = &us[i]
			}
		}
		if mine == nil {
			kept = append(kept, src)
			continue
		}
		err = fmt.Errorf("source %s passed over: worker %s could not serve it at %s, and leaves it to other workers until %s (or its settings change): %w",
			src.Name, s.holder(), fieldtext.Day(mine.At), fieldtext.Day(mine.Until), tidemark.ErrCannotServe)
		r := Report{Source: src.Name, Error: tidemark.Text(err)}
		res.add(r, err)
		sc.report(r, err)
	}
	return kept, nil
}

// Run claims and runs due sources until ctx is cancelled, then stops
// claiming and waits for runs in flight: each settles or fails, none is
// left half-written.
func (sc *Scheduler) Run(ctx context.Context) error {
	s := sc.Service
	if err := s.check(); err != nil {
		return err
	}
	poll := sc.Poll
	if poll <= 0 {
		poll = 5 * time.Second
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, sc.WorkerLimit())
	// Runs in flight, fetching or settling: a run frees its fetch slot
	// when its fetch returns, and this one when it has settled. Settling
	// holds no worker, and runs that admitted nothing settle together in
	// one group commit, so up to a group's worth may wait on the database
	// while the workers fetch: claims go on while a commit is under way.
	inflight := make(chan struct{}, sc.WorkerLimit()+maxGroup)
	// The runs in flight by ID: ClaimDue re-enters the holder's other
	// claims (those of a worker that died under this identity), never
	// these, which would then run twice.
	var (
		runsMu sync.Mutex
		runs   = map[string]bool{}
	)
	running := func() []string {
		runsMu.Lock()
		defer runsMu.Unlock()
		ids := make([]string, 0, len(runs))
		for id := range runs {
			ids = append(ids, id)
		}
		return ids
	}
	wake := make(chan struct{}, 1)
	for {
		free := min(cap(slots)-len(slots), cap(inflight)-len(inflight))
		busy := free == 0 // every slot taken: the next wake-up is a slot freeing
		if free > 0 && ctx.Err() == nil {
			claims, err := s.Store.ClaimDue(ctx, s.holder(), s.leaseTTL(), free, running()...)
			if err != nil && !errors.Is(err, context.Canceled) {
				sc.logger().Error("claim due sources", "err", err)
			}
			// As many claims as slots: more may be due, but no slot is free.
			busy = err == nil && len(claims) == free
			for _, c := range claims {
				slots <- struct{}{}
				inflight <- struct{}{}
				runsMu.Lock()
				runs[c.RunID] = true
				runsMu.Unlock()
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() {
						runsMu.Lock()
						delete(runs, c.RunID)
						runsMu.Unlock()
						<-inflight
						select {
						case wake <- struct{}{}:
						default:
						}
					}()
					// The slot bounds fetches in flight: it is freed as soon as
					// the fetch returns, so the next claim overlaps this run's
					// settlement (which may join others' in one commit).
					var once sync.Once
					free := func() {
						once.Do(func() {
							<-slots
							select {
							case wake <- struct{}{}:
							default:
							}
						})
					}
					defer free()
					r, err := s.runClaim(ctx, c, free)
					sc.report(r, err)
				}()
			}
		}
		if busy {
			select {
			case <-ctx.Done():
				return nil
			case <-wake:
			}
			continue
		}
		// Sleep exactly until the next source is due (or a run ends, which
		// may leave its source due at once), never longer than poll: other
		// processes add and reschedule sources too.
		wait := poll
		if at, ok, err := s.Store.NextDue(ctx, s.holder()); err == nil && ok {
			if d := at.Sub(s.clock().Now()); d < wait {
				// Due already but not claimable here (another worker's
				// row lock): look again shortly rather than spin.
				wait = max(d, 10*time.Millisecond)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-wake:
			t.Stop()
		case <-t.C:
		}
	}
}

func (sc *Scheduler) logger() *slog.Logger {
	if sc.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return sc.Logger
}
