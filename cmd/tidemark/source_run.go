package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
)

func init() { sourceSubcommands = append(sourceSubcommands, newSourceRunCmd) }

func newSourceRunCmd(a *app) *cobra.Command {
	var (
		asJSON    bool
		maxPasses int
	)
	cmd := &cobra.Command{
		Use:   "run NAME",
		Short: "Run one source now, due or not, until it has caught up",
		Long: `Claim the source now, whether or not it is due, and run it; while a run fills
its window (a backlog), run it again, up to --max-passes runs. A paused source
or a terminal window is refused (resume, retry or skip it first), and so is a
source another worker holds. Publication is left to the next 'run' or
'publish'.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			svc, err := a.ingestService(ctx)
			if err != nil {
				return err
			}
			var reports []ingest.Report
			var runErr error
			for pass := 0; pass < maxPasses; pass++ {
				r, err := svc.RunSource(ctx, args[0])
				if r.Outcome == "" && err != nil {
					return err // not run: not found, paused, terminal, held
				}
				reports = append(reports, r)
				if !asJSON {
					printReport(a, r, err)
				}
				if err != nil {
					runErr = err
					break
				}
				if !r.Backlog {
					break
				}
			}
			if asJSON {
				if err := writeJSON(a.stdout, reports); err != nil {
					return err
				}
			}
			var failed *ingest.RunFailedError
			if errors.As(runErr, &failed) && failed.Outcome == tidemark.OutcomeUnreachable {
				return fmt.Errorf("source %s: %w: %w", args[0], tidemark.ErrUnavailable, runErr)
			}
			return runErr
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run reports as JSON")
	intFlag(cmd.Flags(), &maxPasses, "max-passes", ingest.DefaultMaxPasses, 1, 1000*ingest.DefaultMaxPasses, "runs at most while the source has a backlog")
	return cmd
}
