package main

import (
	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/pipeline"
)

func newSourceRunCmd(a *app) *cobra.Command {
	var maxPasses int
	cmd := opCmd(a, "run NAME", "Run one source now, due or not, until it has caught up", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			asJSON, _ := cmd.Flags().GetBool("json")
			reports, err := p.RunSource(cmd.Context(), args[0], maxPasses, func(r ingest.Report, err error) {
				if !asJSON {
					_ = ingest.WriteReport(a.stdout, r, err) // as each run ends
				}
			})
			if len(reports) > 0 && asJSON {
				if err := writeJSON(a.stdout, reports); err != nil {
					return nil, err
				}
			}
			return nil, err // not run at all: not found, paused, terminal, held
		})
	cmd.Long = `Run the source now, due or not, again while it has a backlog (--max-passes).
A paused, terminal or held source is refused. Publication is left to 'publish'.`
	jsonFlag(cmd, "the run reports")
	intFlag(cmd.Flags(), &maxPasses, "max-passes", ingest.DefaultMaxPasses, 1, 1000*ingest.DefaultMaxPasses, "runs at most while the source has a backlog")
	return cmd
}
