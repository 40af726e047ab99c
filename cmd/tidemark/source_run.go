package main

import (
	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/ingest"
)

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
			p, err := a.pipe(ctx)
			if err != nil {
				return err
			}
			reports, runErr := p.RunSource(ctx, args[0], maxPasses, func(r ingest.Report, err error) {
				if !asJSON {
					printReport(a, r, err)
				}
			})
			if len(reports) == 0 {
				return runErr // not run: not found, paused, terminal, held
			}
			if asJSON {
				if err := writeJSON(a.stdout, reports); err != nil {
					return err
				}
			}
			return runErr
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run reports as JSON")
	intFlag(cmd.Flags(), &maxPasses, "max-passes", ingest.DefaultMaxPasses, 1, 1000*ingest.DefaultMaxPasses, "runs at most while the source has a backlog")
	return cmd
}
