package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newConfigCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration: every setting, its value and where it came from",
		Long: `Print every setting tidemark reads (from its flag, its environment variables,
or its default), the value in effect and where it came from. Secrets are shown
only as set; a database URL's password is never shown.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			settings := a.cfg.Effective()
			if asJSON {
				return writeJSON(a.stdout, settings)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SETTING\tVALUE\tFROM\tREAD FROM")
			for _, s := range settings {
				from := s.Env
				if s.Flag != "" {
					from = append([]string{s.Flag}, from...)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, orDash(s.Value), s.From, strings.Join(from, ", "))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: an array of {name, value, from, secret, usage, env, flag}")
	return cmd
}
