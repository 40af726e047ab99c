package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/pipeline"
)

func newRunsCmd(a *app) *cobra.Command {
	var f ingest.RunFilter
	var outcome string
	list := opCmd(a, "list", "List runs, newest first, with outcome and error", cobra.NoArgs,
		func(cmd *cobra.Command, p *pipeline.Pipeline, _ []string) (texter, error) {
			f.Outcome = tidemark.Outcome(outcome)
			return answer(p.Runs(cmd.Context(), f))
		})
	list.Flags().StringVar(&f.SourceID, "source", "", "only this source")
	list.Flags().StringVar(&outcome, "outcome", "", "only this outcome")
	list.Flags().StringVar(&f.BeforeID, "after", "", "the page after this run (the last ID of the previous page)")
	limitFlag(list.Flags(), &f.Limit, 50, "at most this many")
	jsonFlag(list, "an array of runs; fields in the README")
	cmd := &cobra.Command{Use: "runs", Short: "Inspect ingest runs"}
	cmd.AddCommand(list)
	return cmd
}

func newEventsCmd(a *app) *cobra.Command {
	var f ingest.EventFilter
	list := opCmd(a, "list", "List events, newest first", cobra.NoArgs,
		func(cmd *cobra.Command, p *pipeline.Pipeline, _ []string) (texter, error) {
			return answer(p.Events(cmd.Context(), f))
		})
	list.Flags().StringVar(&f.SourceID, "source", "", "only this source")
	list.Flags().StringVar(&f.RunID, "run", "", "only the events this run created or re-froze last")
	list.Flags().StringVar(&f.BeforeID, "after", "", "the page after this event (the last ID of the previous page)")
	limitFlag(list.Flags(), &f.Limit, 50, "at most this many")
	jsonFlag(list, "an array of events; fields in the README")
	var revision int
	show := rawOp(a, "evidence EVENT-ID", "Print an event's frozen evidence (the exact bytes it was judged on)", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (rawOut, error) {
			b, hash, err := p.Evidence(cmd.Context(), args[0], revision)
			if err == nil {
				fmt.Fprintf(a.stderr, "sha256 %s\n", hash)
			}
			return rawOut(b), err
		})
	show.Flags().IntVar(&revision, "revision", 0, "an earlier revision (default: the current one)")
	cmd := &cobra.Command{Use: "events", Short: "Inspect events and their frozen evidence"}
	cmd.AddCommand(list, show)
	return cmd
}
