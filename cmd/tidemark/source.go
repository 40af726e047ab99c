package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/httpx"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/pipeline"
)

// AllowPrivateEnv names the variable that makes private addresses allowed
// by default for new sources.
const AllowPrivateEnv = httpx.AllowPrivateEnv

func newSourceCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "source", Short: "Add, test, list, show, change, pause, resume, retry, skip, rename and remove sources"}
	list := opCmd(a, "list", "List sources with their health, window and last outcome", cobra.NoArgs,
		func(cmd *cobra.Command, p *pipeline.Pipeline, _ []string) (texter, error) {
			return answer(p.Sources(cmd.Context()))
		})
	jsonFlag(list, "an array of sources; fields in the README")
	show := opCmd(a, "show NAME", "Show one source, its recent runs and operator actions", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			return answer(p.SourceDetail(cmd.Context(), args[0], 10))
		})
	jsonFlag(show, "the source with runs and actions")
	state := func(verb, short string, op func(*pipeline.Pipeline, context.Context, string, string) (tidemark.Source, error)) *cobra.Command {
		return opCmd(a, verb+" NAME", short, cobra.ExactArgs(1), func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			src, err := op(p, cmd.Context(), args[0], actor())
			return answer(said{src, ingest.StateLine(src)}, err)
		})
	}
	rename := opCmd(a, "rename OLD NEW", "Give a source a new name (audited); its events and pages stay", cobra.ExactArgs(2),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			src, err := p.RenameSource(cmd.Context(), args[0], args[1], actor())
			return answer(said{src, ingest.RenamedLine(args[0], src)}, err)
		})
	cmd.AddCommand(newSourceAddCmd(a), newSourceSetCmd(a), list, show, state("pause", "Pause a source (audited)", (*pipeline.Pipeline).PauseSource),
		state("resume", "Resume a source (audited)", (*pipeline.Pipeline).ResumeSource), rename, newSourceRetryCmd(a), newSourceSkipCmd(a),
		newSourceRemoveCmd(a), newSourceRunCmd(a), newSourceTestCmd(a), newSourceImportOPMLCmd(a), newSourceExportOPMLCmd(a))
	return cmd
}

// sourceFlags are the flags that describe a new source to add or test.
func sourceFlags(f *pflag.FlagSet, ns *ingest.NewSource, config *[]string) {
	f.StringVar(&ns.Kind, "kind", "", "the source kind (default: detected from the location)")
	f.StringArrayVar(config, "config", nil, "kind-specific setting key=value (repeatable), e.g. branch=main")
	f.BoolVar(&ns.AllowPrivate, "allow-private", false, "let the source reach private, loopback and link-local addresses (default: env "+AllowPrivateEnv+")")
}

// newSource completes ns from the command line (and --allow-private's default).
// An empty name means "derive one from the location", so a --name given
// empty (often a shell variable that expanded to nothing) is refused here,
// where it can still be told from a --name not given, as a blank one is.
func newSource(a *app, cmd *cobra.Command, ns ingest.NewSource, loc string, config []string) (ingest.NewSource, error) {
	if cmd.Flags().Changed("name") && ns.Name == "" {
		return ns, tidemark.Invalidf("--name", ns.Name, "must not be empty")
	}
	if !cmd.Flags().Changed("allow-private") {
		ns.AllowPrivate = a.cfg.AllowPrivate
	}
	cfg, err := tidemark.ParseKeyValues("--config", config)
	ns.Location, ns.Config = loc, cfg
	return ns, err
}

func newSourceAddCmd(a *app) *cobra.Command {
	var ns ingest.NewSource
	var config []string
	cmd := opCmd(a, "add LOCATION", "Add a source (a git repository path or URL, a feed, a page, …)", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			ns, err := newSource(a, cmd, ns, args[0], config)
			if err != nil {
				return nil, err
			}
			src, err := p.AddSource(cmd.Context(), ns)
			return answer(said{src, ingest.AddedLine(src)}, err)
		})
	sourceFlags(cmd.Flags(), &ns, &config)
	cmd.Flags().StringVar(&ns.Name, "name", "", "a unique name (default: derived from the location)")
	cmd.Flags().DurationVar(&ns.Interval, "interval", pipeline.DefaultInterval, "how often to fetch")
	cmd.Flags().IntVar(&ns.RetryBudget, "retry-budget", pipeline.DefaultRetryBudget, "attempts at one window before it goes terminal")
	jsonFlag(cmd, "the added source")
	return cmd
}

// newSourceSetCmd changes the settings of a source that every worker reads
// from the database.
func newSourceSetCmd(a *app) *cobra.Command {
	var (
		private  bool
		interval time.Duration
		budget   int
		config   []string
		cmd      *cobra.Command
	)
	cmd = opCmd(a, "set NAME [--allow-private[=false]] [--interval D] [--retry-budget N] [--config branch=B]",
		"Change a source's settings, stored with it for every worker (audited)", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			var ch ingest.Settings
			for name, set := range map[string]func(){"allow-private": func() { ch.AllowPrivate = &private },
				"interval": func() { ch.Interval = &interval }, "retry-budget": func() { ch.RetryBudget = &budget }} {
				if cmd.Flags().Changed(name) {
					set()
				}
			}
			if len(config) > 0 {
				cfg, err := tidemark.ParseKeyValues("--config", config)
				if err != nil {
					return nil, err
				}
				ch.Config = cfg
			}
			if ch.Empty() {
				return nil, tidemark.Invalidf("settings", "", "name one to change: --allow-private[=false], --interval, --retry-budget or --config")
			}
			src, err := p.SetSource(cmd.Context(), args[0], ch, actor())
			// The kind settings given are said as they now stand; the
			// others are always said.
			changed := ""
			for _, k := range slices.Sorted(maps.Keys(ch.Config)) {
				if v, ok := src.Config[k]; ok {
					changed += "config " + k + "=" + v + "; "
				} else {
					changed += "config " + k + " unset; "
				}
			}
			return answer(said{src, fmt.Sprintf("%s: %sprivate addresses %s, every %s, retry budget %d", src.Name, changed,
				map[bool]string{true: "allowed", false: "refused"}[src.AllowPrivate], src.Interval.Std(), src.RetryBudget)}, err)
		})
	cmd.Flags().BoolVar(&private, "allow-private", false, "let the source reach private, loopback and link-local addresses (=false: refuse them)")
	cmd.Flags().DurationVar(&interval, "interval", 0, "how often to fetch")
	cmd.Flags().IntVar(&budget, "retry-budget", 0, "attempts at one window before it goes terminal")
	cmd.Flags().StringArrayVar(&config, "config", nil, "a kind setting to change, key=value (key= unsets it; repeatable): a git source's branch")
	jsonFlag(cmd, "the source")
	return cmd
}

func newSourceRetryCmd(a *app) *cobra.Command {
	var note string
	cmd := opCmd(a, "retry NAME", "Reopen a source's window with a fresh retry budget, due now (audited)", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			src, err := p.RetrySource(cmd.Context(), args[0], actor(), note)
			return answer(said{src, ingest.RetriedLine(src)}, err)
		})
	cmd.Flags().StringVar(&note, "note", "", "why, for the audit trail")
	return cmd
}

func newSourceSkipCmd(a *app) *cobra.Command {
	var to, note string
	cmd := opCmd(a, "skip NAME", "Move a source's cursor past a window it cannot read (audited)", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			src, err := p.SkipSource(cmd.Context(), args[0], to, actor(), note)
			return answer(said{src, ingest.SkippedLine(src)}, err)
		})
	cmd.Long = `Move a source's cursor to --to, recording what was skipped, or without --to
to its head (git); the window reopens with a fresh budget. A git --to is a commit
of the branch after the cursor (any commit of the branch once the cursor's
history was rewritten); for the other kinds --to is the kind's own cursor.`
	cmd.Flags().StringVar(&to, "to", "", "the cursor to move to (default: the source's head)")
	cmd.Flags().StringVar(&note, "note", "", "why, for the audit trail")
	return cmd
}

func newSourceRemoveCmd(a *app) *cobra.Command {
	var force bool
	cmd := opCmd(a, "remove NAME", "Remove a source (audited); one with events only with --force", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			return answer(p.RemoveSource(cmd.Context(), args[0], actor(), force))
		})
	cmd.Long = `Remove a source and its runs. One with events or outbox channels is refused
unless --force, which deletes them with their evidence and pages; the next
sweep withdraws its pages from the wiki. The audit outlives the source.`
	cmd.Flags().BoolVar(&force, "force", false, "delete its events, evidence, pages and channels too")
	jsonFlag(cmd, "what was removed")
	return cmd
}
