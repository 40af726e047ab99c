package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tidemark/tidemark/pipeline"
)

func newVersionCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print tidemark's version, the commit it was built from and the Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := pipeline.BuildVersion()
			if asJSON {
				return writeJSON(a.stdout, v)
			}
			fmt.Fprintln(a.stdout, v)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (version, revision, time, modified, go_version, platform)")
	return cmd
}
