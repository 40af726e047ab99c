package ingest

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/tidemark/tidemark"
)

// Scheduler claims due sources and runs them on a bounded pool of workers.
// Any number of schedulers, in any number of processes, may share one
// database: the claims decide who runs what.
type Scheduler struct {
	Service *Service
	// Workers bounds the runs in flight (default 4).
	Workers int
	// Poll is the longest the scheduler sleeps between looks for due
	// sources (default 5s).
	Poll   time.Duration
	Logger *slog.Logger
	// OnReport, if set, is told about every finished run.
	OnReport func(Report, error)
}

func (sc *Scheduler) workers() int {
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
	s := sc.Service
	if err := s.check(); err != nil {
		return nil, err
	}
	srcs, err := s.Store.Sources(ctx)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	var due []tidemark.Source
	for _, src := range srcs {
		if src.State == tidemark.SourceActive && src.Window == tidemark.WindowOpen && !src.NextDueAt.After(now) {
			due = append(due, src)
		}
	}
	var (
		mu      sync.Mutex
		reports = make([]Report, len(due))
		wg      sync.WaitGroup
		sem     = make(chan struct{}, sc.workers())
	)
	for i, src := range due {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := s.RunSource(ctx, src.ID)
			if r.Source == "" {
				r.Source = src.Name
			}
			if err != nil && r.Error == "" {
				r.Error = err.Error()
			}
			mu.Lock()
			reports[i] = r
			sc.report(r, err) // serialized, so a printer needs no lock of its own
			mu.Unlock()
		}()
	}
	wg.Wait()
	return reports, ctx.Err()
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
	slots := make(chan struct{}, sc.workers())
	wake := make(chan struct{}, 1)
	for {
		free := cap(slots) - len(slots)
		if free > 0 && ctx.Err() == nil {
			claims, err := s.Store.ClaimDue(ctx, s.Holder, s.leaseTTL(), free)
			if err != nil && !errors.Is(err, context.Canceled) {
				sc.logger().Error("claim due sources", "err", err)
			}
			for _, c := range claims {
				slots <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() {
						<-slots
						select {
						case wake <- struct{}{}:
						default:
						}
					}()
					r, err := s.RunClaim(ctx, c)
					sc.report(r, err)
				}()
			}
		}
		wait := poll
		if at, ok, err := s.Store.NextDue(ctx); err == nil && ok {
			if d := at.Sub(s.Clock.Now()); d < wait {
				wait = max(d, 50*time.Millisecond)
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
