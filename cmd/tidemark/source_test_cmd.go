package main

import (
	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/pipeline"
)

func newSourceTestCmd(a *app) *cobra.Command {
	var req pipeline.TestRequest
	var config []string
	var cmd *cobra.Command
	// Nothing is stored, so no database is opened.
	cmd = localOp(a, "test LOCATION", "Fetch a location once, without storing anything, and show what would become events", cobra.ExactArgs(1),
		func(_ *cobra.Command, _ *pipeline.Pipeline, args []string) (texter, error) {
			ns, err := newSource(a, cmd, req.Source, args[0], config)
			if err != nil {
				return nil, err
			}
			req.Source = ns
			rep, err := pipeline.TestSource(cmd.Context(), pipeline.NewKinds(a.cfg), req)
			if err != nil {
				return nil, err
			}
			return rep, rep.Err()
		})
	cmd.Long = `Fetch a location once as a new source of its kind and show what a first run
would record, storing nothing. Exit 0 for items or empty, 5 unreachable, 2 invalid.`
	sourceFlags(cmd.Flags(), &req.Source, &config)
	cmd.Flags().StringVar(&req.Cursor, "cursor", "", "fetch as if the source's cursor were this (default: a new source)")
	cmd.Flags().BoolVar(&req.Evidence, "evidence", false, "include each item's evidence")
	jsonFlag(cmd, "fields in docs/sources.md")
	return cmd
}
