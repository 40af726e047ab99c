package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/failpoint"
)

func newFailpointsCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "failpoints",
		Short: "List every failpoint and the two steps it separates",
		Long: `List every named failpoint. Failpoints are inert unless armed through
TIDEMARK_FAILPOINTS, e.g.

  TIDEMARK_FAILPOINTS='ingest.settle.after-events=crash' tidemark run --once

Syntax: name=action[@N], several separated by ';'. Actions: crash (the process
dies on the spot, as if killed with SIGKILL), error, delay(ms), off. With @N the
point fires only the Nth time it is reached.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			points := failpoint.List()
			if asJSON {
				type row struct {
					Name      string `json:"name"`
					Separates string `json:"separates"`
					Armed     string `json:"armed,omitempty"`
				}
				rows := make([]row, 0, len(points))
				for _, p := range points {
					rows = append(rows, row{p.Name, p.Separates, p.Armed()})
				}
				return writeJSON(a.stdout, rows)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSEPARATES\tARMED")
			for _, p := range points {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, p.Separates, p.Armed())
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: [{name, separates, armed}]")
	return cmd
}
