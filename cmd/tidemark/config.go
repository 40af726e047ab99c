package main

import (
	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/pipeline"
)

func newConfigCmd(a *app) *cobra.Command {
	cmd := localOp(a, "config", "Print the effective configuration: every setting, its value and where it came from", cobra.NoArgs,
		func(*cobra.Command, *pipeline.Pipeline, []string) (texter, error) {
			return a.cfg.Effective(), nil
		})
	cmd.Long = `Print every setting tidemark reads (from its flag, its environment variables,
or its default), the value in effect and where it came from. Secrets are shown
only as set; a database URL's password is never shown.`
	jsonFlag(cmd, "an array of {name, value, from, secret, usage, env, flag}")
	return cmd
}
