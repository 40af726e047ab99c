package main

import (
	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/pipeline"
)

func newFailpointsCmd(a *app) *cobra.Command {
	cmd := localOp(a, "failpoints", "List every failpoint and the two steps it separates", cobra.NoArgs,
		func(*cobra.Command, *pipeline.Pipeline, []string) (texter, error) {
			return failpoint.Snapshot(), nil
		})
	cmd.Long = `List every named failpoint. Failpoints are inert unless armed through
TIDEMARK_FAILPOINTS, e.g.

  TIDEMARK_FAILPOINTS='ingest.settle.after-events=crash' tidemark run --once

Syntax: name=action[@N], several separated by ';'. Actions: crash (the process
dies on the spot, as if killed with SIGKILL), error, delay(ms), off. With @N the
point fires only the Nth time it is reached.`
	jsonFlag(cmd, "[{name, separates, armed}]")
	return cmd
}
