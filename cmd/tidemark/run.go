package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/internal/terminal"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/pipeline/site"
)

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
already tracked), and runs it now, due or not.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := a.pipe(ctx)
			if err != nil {
				return err
			}
			if !once {
				if a.cfg.MetricsAddr != "" {
					// What a program embedding tidemark calls beside Run.
					addr, _, err := site.ServeMetrics(ctx, p)
					if err != nil {
						return err
					}
					fmt.Fprintf(a.stderr, "tidemark: metrics on http://%s/metrics\n", addr)
				}
				err := p.Run(ctx, pipeline.RunOptions{Workers: workers, Lease: lease, Poll: poll,
					OnStart: func(holder string, workers int) {
						fmt.Fprintf(a.stderr, "tidemark: running as %s on %s (%d workers); Ctrl-C to stop\n", holder, p.DB().URL(), workers)
					},
					OnReport: func(r ingest.Report, err error) { _ = ingest.WriteReport(a.stdout, r, err) }})
				fmt.Fprintln(a.stderr, "tidemark: stopped; every run in flight settled or failed, and what settled is kept "+
					"(a fetch cut short was released without spending its retry budget); start it again to resume")
				return err
			}
			prog := &terminal.Activity{}
			if !asJSON {
				prog = terminal.NewActivity(a.stderr, "run --once")
			}
			res, err := p.RunOnce(ctx, pipeline.OnceOptions{MaxPasses: maxPasses, Workers: workers, Lease: lease, Poll: poll, Track: track,
				OnTracked: func(src tidemark.Source) {
					// With --json, stdout is the run reports alone.
					w := a.stdout
					if asJSON {
						w = a.stderr
					}
					fmt.Fprintf(w, "tracking git repository %s as source %q\n", src.ShownLocation(), src.Name)
				},
				OnReport: func(r ingest.Report, err error) {
					if !asJSON {
						prog.Print(func() { _ = ingest.WriteReport(a.stdout, r, err) })
					}
				},
				OnProgress: prog.Describe,
			})
			prog.Finish()
			if asJSON {
				if jerr := writeJSON(a.stdout, res.Reports); jerr != nil {
					return jerr
				}
			} else if res.Ingested && len(res.Reports) == 0 {
				fmt.Fprintln(a.stdout, "no source is due; `tidemark source list` shows when each is")
			}
			if res.Migrations > 0 {
				fmt.Fprintf(a.stderr, "tidemark: %d migration run(s) finished\n", res.Migrations)
			}
			if t := res.Publish; t != nil {
				if asJSON {
					fmt.Fprintf(a.stderr, "tidemark: %d pages published now%s, %d in all; wiki: %s\n", t.Published, t.ElsewhereNote(), t.Pages, t.Index)
				} else {
					fmt.Fprintln(a.stdout)
					_ = t.WriteText(a.stdout)
				}
			}
			// Each lane's delivery in a line; with --json stdout is the run
			// reports alone, one JSON document, so the lines go to stderr,
			// as the publish summary does (outbox deliver --once --json
			// gives delivery reports as JSON).
			deliveries := a.stdout
			if asJSON {
				deliveries = a.stderr
			}
			for _, r := range res.Deliveries {
				_ = r.WriteText(deliveries)
			}
			if _, incomplete := err.(*pipeline.IncompleteError); !asJSON && res.Ingested && (err == nil || incomplete) {
				_ = p.Recent(ctx, res.Reports, 10).WriteText(a.stdout)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.BoolVar(&once, "once", false, "run every due source until it has caught up, publish everything pending, then exit")
	intFlag(f, &maxPasses, "max-passes", ingest.DefaultMaxPasses, 1, 1000*ingest.DefaultMaxPasses, "with --once: runs of one source at most while it has a backlog")
	f.StringArrayVar(&track, "track", nil, "track the git repository at PATH first (repeatable)")
	intFlag(f, &workers, "workers", 4, 1, pipeline.MaxWorkers, "runs in flight at most")
	durationFlag(f, &lease, "lease", ingest.DefaultLeaseTTL, pipeline.MinLease, pipeline.MaxLease, "claim lease; heartbeats extend it every third of it while a fetch runs")
	durationFlag(f, &poll, "poll", 5*time.Second, 10*time.Millisecond, time.Hour, "longest pause between looks for due sources")
	f.BoolVar(&asJSON, "json", false, "with --once: print the run reports as JSON")
	return cmd
}
