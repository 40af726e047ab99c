package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/publish"
)

func init() { register(newRunCmd) }

// onceStep is a step `run --once` takes after ingesting. Steps run in the
// order declared here, whatever order their files register them in.
type onceStep int

const (
	stepMigrate onceStep = iota // finish detached field migrations
	stepPublish                 // summarize and publish what changed
	stepDeliver                 // deliver what publication drafted
	onceSteps
)

// afterRunOnce holds each step's functions; pipelines' files add theirs.
var afterRunOnce [onceSteps][]func(a *app, cmd *cobra.Command) error

// daemonLoops are the long-running loops `run` starts beside the ingest
// scheduler (the publish sweeper, the outbox writer, …). A loop retries
// what may pass and returns only when ctx ends or on an error that stops
// the daemon (runDaemon).
var daemonLoops []func(ctx context.Context, a *app, cmd *cobra.Command) error

func newRunCmd(a *app) *cobra.Command {
	var (
		once      bool
		track     []string
		workers   int
		lease     time.Duration
		poll      time.Duration
		asJSON    bool
		maxPasses int
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the pipeline: ingest due sources, publish, deliver (daemon, or --once)",
		Long: `Run the pipeline. Without --once it is a daemon: it claims due sources and
runs them on a bounded pool of workers, summarizes, publishes and sweeps the
wiki, delivers every outbox lane and resumes pending field migrations, until
SIGINT or SIGTERM; then it stops claiming and lets runs in flight settle or
fail. Any number of processes may share one PostgreSQL database.

With --once it runs every source due now until it has caught up (a run that
filled its window is followed at once by the next, up to --max-passes runs per
source), finishes detached migrations, summarizes and publishes every pending
page, delivers what publication drafted, and exits. On a terminal, stderr
shows the progress.
--track PATH adds the git repository at PATH as a source first (if it is not
already tracked).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if !once {
				// Refuse a bad setting before anything starts.
				if _, err := sweepInterval(); err != nil {
					return err
				}
			}
			// A worker whose store is not the wiki's refuses before it
			// claims anything.
			// A daemon waits out a store or database that is away; a store
			// that is not the wiki's stops it at once.
			bind := func() (*publish.Service, error) { return a.bindStore(ctx) }
			if once {
				if _, err := bind(); err != nil {
					return err
				}
			} else if _, err := retryStart(ctx, a, "check the wiki's store", bind); err != nil {
				return err
			}
			svc, err := a.ingestService(ctx)
			if err != nil {
				return err
			}
			svc.LeaseTTL = lease
			for _, path := range track {
				if err := a.trackRepo(cmd, path); err != nil {
					return err
				}
			}
			sc := &ingest.Scheduler{Service: svc, Workers: workers, Poll: poll, Logger: a.log}
			if !once {
				fmt.Fprintf(a.stderr, "tidemark: running as %s on %s (%d workers); Ctrl-C to stop\n", svc.Holder, a.db.URL(), sc.Workers)
				sc.OnReport = func(r ingest.Report, err error) { printReport(a, r, err) }
				loops := make([]func(context.Context) error, 0, len(daemonLoops))
				for _, loop := range daemonLoops {
					loops = append(loops, func(ctx context.Context) error { return loop(ctx, a, cmd) })
				}
				err := runDaemon(ctx, a, sc.Run, loops)
				fmt.Fprintln(a.stderr, "tidemark: stopped; every run in flight settled or failed, and what settled is kept "+
					"(a fetch cut short was released without spending its retry budget); start it again to resume")
				return err
			}
			tally := &onceTally{}
			a.onceUndone = &tally.undone
			drained, err := a.ingestOnce(ctx, sc, maxPasses, asJSON, tally)
			reports := drained.Reports
			if asJSON {
				if jerr := writeJSON(a.stdout, reports); jerr != nil {
					return jerr
				}
			} else {
				if len(reports) == 0 {
					fmt.Fprintln(a.stdout, "no source is due; `tidemark source list` shows when each is")
				}
			}
			if errors.Is(err, context.Canceled) {
				return tally.interrupted(err)
			}
			if err != nil {
				return err
			}
			for _, step := range afterRunOnce {
				for _, after := range step {
					if err := after(a, cmd); err != nil {
						return errors.Join(err, tally.err())
					}
				}
			}
			if !asJSON {
				a.printRecentEvents(cmd, reports)
			}
			return tally.err()
		},
	}
	f := cmd.Flags()
	f.BoolVar(&once, "once", false, "run every due source until it has caught up, publish everything pending, then exit")
	intFlag(f, &maxPasses, "max-passes", ingest.DefaultMaxPasses, 1, 1000*ingest.DefaultMaxPasses, "with --once: runs of one source at most while it has a backlog")
	f.StringArrayVar(&track, "track", nil, "track the git repository at PATH first (repeatable)")
	intFlag(f, &workers, "workers", 4, 1, maxWorkers, "runs in flight at most")
	durationFlag(f, &lease, "lease", ingest.DefaultLeaseTTL, minLease, maxLease, "claim lease; heartbeats extend it every third of it while a fetch runs")
	durationFlag(f, &poll, "poll", 5*time.Second, 10*time.Millisecond, time.Hour, "longest pause between looks for due sources")
	f.BoolVar(&asJSON, "json", false, "with --once: print the run reports as JSON")
	return cmd
}

func printReport(a *app, r ingest.Report, err error) {
	switch {
	case r.Outcome == "" && err != nil:
		fmt.Fprintf(a.stdout, "%-20s not run: %v%s\n", r.Source, err, heldHint(err))
	case r.Outcome.Advances():
		fmt.Fprintf(a.stdout, "%-20s %-11s %d new, %d changed events  cursor %s → %s\n", r.Source, r.Outcome,
			r.EventsNew, r.EventsChanged, orDash(short(r.CursorBefore, 12)), orDash(short(r.CursorAfter, 12)))
	default:
		fmt.Fprintf(a.stdout, "%-20s %-11s %s (cursor stays at %s)\n", r.Source, r.Outcome, r.Error, orDash(short(r.CursorBefore, 12)))
	}
}

// trackRepo adds the git repository containing path as a source, unless a
// source already tracks it.
func (a *app) trackRepo(cmd *cobra.Command, path string) error {
	ctx := cmd.Context()
	ns, err := resolveNewSource(ctx, ingest.NewSource{Kind: "git", Location: path,
		Interval: defaultInterval, RetryBudget: defaultRetryBudget, AllowPrivate: allowPrivate()}, nil)
	if err != nil {
		return fmt.Errorf("--track %s: %w", path, err)
	}
	db, err := a.open(ctx)
	if err != nil {
		return err
	}
	srcs, err := db.Ingest().Sources(ctx)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, s := range srcs {
		if s.Kind == "git" && s.Location == ns.Location {
			return nil
		}
		names[s.Name] = true
	}
	for i, base := 2, ns.Name; names[ns.Name]; i++ {
		ns.Name = fmt.Sprintf("%s-%d", base, i)
	}
	src, err := db.Ingest().AddSource(ctx, ns)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "tracking git repository %s as source %q\n", src.Location, src.Name)
	return nil
}

// printRecentEvents shows the newest events of the sources just run, so the
// user sees what was ingested.
func (a *app) printRecentEvents(cmd *cobra.Command, reports []ingest.Report) {
	st := a.db.Ingest()
	shown := map[string]bool{}
	for _, r := range reports {
		if r.EventsNew+r.EventsChanged == 0 || shown[r.Source] {
			continue
		}
		shown[r.Source] = true
		evs, err := st.Events(cmd.Context(), ingest.EventFilter{SourceID: r.Source, Limit: 10})
		if err != nil || len(evs) == 0 {
			continue
		}
		fmt.Fprintf(a.stdout, "\nnewest events of %s:\n", r.Source)
		printEvents(a.stdout, evs)
	}
	fmt.Fprintf(a.stdout, "\ndata: %s\n", a.db.URL())
}
