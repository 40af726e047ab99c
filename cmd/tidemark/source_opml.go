package main

import (
	"bytes"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/pipeline"
)

func newSourceImportOPMLCmd(a *app) *cobra.Command {
	var o pipeline.OPMLImport
	var allowPrivate bool
	cmd := opCmd(a, "import-opml FILE", "Add the feeds of an OPML file (- for stdin) as feed sources; tracked feeds are skipped", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			r, err := openInput(args[0])
			if err != nil {
				return nil, err
			}
			defer r.Close()
			if cmd.Flags().Changed("allow-private") {
				o.AllowPrivate = &allowPrivate
			}
			return answer(p.ImportOPML(cmd.Context(), r, o))
		})
	f := cmd.Flags()
	f.DurationVar(&o.Interval, "interval", pipeline.DefaultInterval, "how often to fetch each feed")
	f.IntVar(&o.RetryBudget, "retry-budget", pipeline.DefaultRetryBudget, "attempts at one window before it goes terminal")
	f.BoolVar(&o.DryRun, "dry-run", false, "show what would be added; add nothing")
	f.BoolVar(&allowPrivate, "allow-private", false, "let the new sources reach private, loopback and link-local addresses (default: env "+AllowPrivateEnv+"); without it a feed on such an address is skipped")
	jsonFlag(cmd, `{"added": [...], "skipped": [...]}, each {name, location, reason}`)
	return cmd
}

func newSourceExportOPMLCmd(a *app) *cobra.Command {
	var output string
	cmd := rawOp(a, "export-opml", "Write the feed sources as an OPML 2.0 file (stdout, or --output)", cobra.NoArgs,
		func(cmd *cobra.Command, p *pipeline.Pipeline, _ []string) (rawOut, error) {
			if output != "" && output != "-" {
				return nil, p.ExportOPMLFile(cmd.Context(), output)
			}
			var b bytes.Buffer
			err := p.ExportOPML(cmd.Context(), &b)
			return rawOut(b.Bytes()), err
		})
	cmd.Flags().StringVar(&output, "output", "", "write to this file instead of stdout")
	return cmd
}
