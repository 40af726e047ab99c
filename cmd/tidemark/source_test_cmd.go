package main

import (
	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/pipeline"
)

func newSourceTestCmd(a *app) *cobra.Command {
	var req pipeline.TestRequest
	var config []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "test LOCATION",
		Short: "Fetch a location once, without storing anything, and show what would become events",
		Long: `Fetch a location once as a new source of its kind and show what a first run
would record, storing nothing. Exit 0 for items or empty, 5 unreachable, 2 invalid.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := newSource(a, cmd, req.Source, args[0], config)
			if err != nil {
				return err
			}
			req.Source = ns
			// Nothing is stored, so no database is opened.
			rep, err := pipeline.TestSource(cmd.Context(), pipeline.NewKinds(a.cfg), req)
			if err := printOut(a, rep, asJSON, err); err != nil {
				return err
			}
			return rep.Err()
		},
	}
	sourceFlags(cmd.Flags(), &req.Source, &config)
	cmd.Flags().StringVar(&req.Cursor, "cursor", "", "fetch as if the source's cursor were this (default: a new source)")
	cmd.Flags().BoolVar(&req.Evidence, "evidence", false, "include each item's evidence")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (fields in docs/sources.md)")
	return cmd
}
