package main

import (
	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/pipeline"
)

func newVersionCmd(a *app) *cobra.Command {
	cmd := localOp(a, "version", "Print tidemark's version, the commit it was built from and the Go version", cobra.NoArgs,
		func(*cobra.Command, *pipeline.Pipeline, []string) (texter, error) {
			return pipeline.BuildVersion(), nil
		})
	jsonFlag(cmd, "version, revision, time, modified, go_version, platform")
	return cmd
}
