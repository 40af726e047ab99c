package main

import (
	"fmt"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/httpx"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/pipeline"
)

func newSourceCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "source",
		Short: "Add, list, inspect, pause, resume, retry and skip sources",
	}
	cmd.AddCommand(newSourceAddCmd(a), newSourceSetCmd(a), newSourceListCmd(a), newSourceShowCmd(a),
		newSourceStateCmd(a, "pause", tidemark.SourcePaused), newSourceStateCmd(a, "resume", tidemark.SourceActive),
		newSourceRetryCmd(a), newSourceSkipCmd(a), newSourceRunCmd(a), newSourceTestCmd(a),
		newSourceImportOPMLCmd(a), newSourceExportOPMLCmd(a))
	return cmd
}

// actor names the person behind an operator action, for the audit trail.
func actor() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "operator"
}

// AllowPrivateEnv names the variable that makes private addresses allowed
// by default for new sources.
const AllowPrivateEnv = httpx.AllowPrivateEnv

// parseKeyValues reads the key=value pairs of a repeatable flag.
func parseKeyValues(flag string, kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			// Not repeated: a mistyped --setting may be a secret.
			return nil, tidemark.Invalidf(flag, "", "want key=value, got an argument of %d characters without a key and '=' (not shown: it may hold a secret)", len(kv))
		}
		m[k] = v
	}
	return m, nil
}

func newSourceAddCmd(a *app) *cobra.Command {
	var (
		name, kind string
		interval   time.Duration
		budget     int
		config     []string
		asJSON     bool
		private    bool
	)
	cmd := &cobra.Command{
		Use:   "add LOCATION",
		Short: "Add a source (a git repository path or URL, …)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if !cmd.Flags().Changed("allow-private") {
				private = a.cfg.AllowPrivate // the default for new sources
			}
			cfg, err := parseKeyValues("--config", config)
			if err != nil {
				return err
			}
			p, err := a.pipe(ctx)
			if err != nil {
				return err
			}
			src, err := p.AddSource(ctx, ingest.NewSource{Name: name, Kind: kind, Location: args[0],
				Interval: interval, RetryBudget: budget, AllowPrivate: private, Config: cfg})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, src)
			}
			fmt.Fprintf(a.stdout, "added %s source %q (%s), every %s\n", src.Kind, src.Name, src.Location, src.Interval.Std())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "a unique name (default: derived from the location)")
	f.StringVar(&kind, "kind", "", "the source kind (default: detected from the location)")
	f.DurationVar(&interval, "interval", pipeline.DefaultInterval, "how often to fetch")
	f.IntVar(&budget, "retry-budget", pipeline.DefaultRetryBudget, "attempts at one window before it goes terminal")
	f.StringArrayVar(&config, "config", nil, "kind-specific setting key=value (repeatable), e.g. branch=main")
	f.BoolVar(&asJSON, "json", false, "print the added source as JSON")
	f.BoolVar(&private, "allow-private", false, "let this source reach private, loopback and link-local addresses (default: env "+AllowPrivateEnv+")")
	return cmd
}

// newSourceSetCmd changes a source's settings that every worker reads from
// the database.
func newSourceSetCmd(a *app) *cobra.Command {
	var (
		private bool
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "set NAME --allow-private[=false]",
		Short: "Change a source's settings (whether it may reach private addresses)",
		Long: `Change a source's settings. They are stored with the source, so every worker
fetches it alike, whatever its own environment.

--allow-private lets the source reach private, loopback and link-local
addresses (a feed on the local network, a git server on localhost);
--allow-private=false takes that back.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("allow-private") {
				return tidemark.Invalidf("settings", "", "name one to change: --allow-private or --allow-private=false")
			}
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			src, err := db.Ingest().Set(cmd.Context(), args[0], ingest.Settings{AllowPrivate: &private}, actor())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, src)
			}
			fmt.Fprintf(a.stdout, "%s: private addresses %s\n", src.Name, map[bool]string{true: "allowed", false: "refused"}[src.AllowPrivate])
			return nil
		},
	}
	cmd.Flags().BoolVar(&private, "allow-private", false, "let the source reach private, loopback and link-local addresses")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the source as JSON")
	return cmd
}

func newSourceListCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sources with their cursor, window and last outcome",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			srcs, err := db.Ingest().Sources(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, srcs)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tKIND\tSTATE\tWINDOW\tLAST OUTCOME\tCURSOR\tNEXT DUE")
			for _, s := range srcs {
				window := string(s.Window)
				if s.Window == tidemark.WindowOpen {
					window = fmt.Sprintf("open %d/%d", s.WindowAttempts, s.RetryBudget)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Kind, s.State, window,
					orDash(string(s.LastOutcome)), orDash(short(s.Cursor, 12)), s.NextDueAt.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (an array of sources; fields in the README)")
	return cmd
}

func newSourceShowCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show one source, its recent runs and operator actions",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			db, err := a.open(ctx)
			if err != nil {
				return err
			}
			d, err := ingest.SourceDetail(ctx, db.Ingest(), args[0], 10)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, d)
			}
			src, runs, actions := d.Source, d.Runs, d.Actions
			w := a.stdout
			fmt.Fprintf(w, "name:          %s\nkind:          %s\nlocation:      %s\n", src.Name, src.Kind, src.Location)
			for k, v := range src.Config {
				fmt.Fprintf(w, "config:        %s=%s\n", k, v)
			}
			if src.AllowPrivate {
				fmt.Fprintln(w, "private:       allowed (it may reach private, loopback and link-local addresses)")
			}
			fmt.Fprintf(w, "state:         %s\ncursor:        %s (version %d)\n", src.State, orDash(src.Cursor), src.CursorVersion)
			fmt.Fprintf(w, "window:        %s, %d of %d attempts spent\n", src.Window, src.WindowAttempts, src.RetryBudget)
			if src.TerminalReason != "" {
				fmt.Fprintf(w, "terminal:      %s\n", src.TerminalReason)
			}
			if src.FailingSince != nil {
				fmt.Fprintf(w, "failing since: %s\n", src.FailingSince.Local().Format(time.DateTime))
			}
			fmt.Fprintf(w, "last outcome:  %s\n", orDash(string(src.LastOutcome)))
			if src.LastError != "" {
				fmt.Fprintf(w, "last error:    %s\n", src.LastError)
			}
			if src.ClaimHolder != "" {
				fmt.Fprintf(w, "claimed by:    %s (run %s, lease until %s)\n", src.ClaimHolder, src.ClaimRunID, src.LeaseExpiresAt.Local().Format(time.DateTime))
			}
			fmt.Fprintf(w, "next due:      %s\n", src.NextDueAt.Local().Format(time.DateTime))
			if len(d.UnservedBy) > 0 {
				fmt.Fprintln(w, "\nworkers that could not serve it (no budget spent; other workers take it):")
				for _, u := range d.UnservedBy {
					fmt.Fprintf(w, "  %s  %s: %s\n", u.At.Local().Format(time.DateTime), u.Holder, u.Reason)
				}
			}
			if len(runs) > 0 {
				fmt.Fprintln(w, "\nrecent runs:")
				printRuns(w, runs, false)
			}
			if len(actions) > 0 {
				fmt.Fprintln(w, "\noperator actions:")
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				for _, ac := range actions {
					fmt.Fprintf(tw, "  %s\t%s\tby %s\t%s → %s\t%s\n", ac.At.Local().Format(time.DateTime), ac.Action, ac.Actor,
						orDash(short(ac.CursorBefore, 12)), orDash(short(ac.CursorAfter, 12)), ac.Note)
				}
				tw.Flush()
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the source with runs and actions)")
	return cmd
}

func newSourceStateCmd(a *app, verb string, state tidemark.SourceState) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " NAME",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " a source",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			src, err := db.Ingest().SetState(cmd.Context(), args[0], state, actor())
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s is %s\n", src.Name, src.State)
			return nil
		},
	}
}

func newSourceRetryCmd(a *app) *cobra.Command {
	var note string
	cmd := &cobra.Command{
		Use:   "retry NAME",
		Short: "Reopen a source's window with a fresh retry budget, due now",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			src, err := db.Ingest().Retry(cmd.Context(), args[0], actor(), note)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s: window reopened with a budget of %d, due now\n", src.Name, src.RetryBudget)
			return nil
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "why, for the audit trail")
	return cmd
}

func newSourceSkipCmd(a *app) *cobra.Command {
	var to, note string
	cmd := &cobra.Command{
		Use:   "skip NAME",
		Short: "Move a source's cursor past a window it cannot read (audited)",
		Long: `Move a source's cursor to an explicit position, recording the move and what
was skipped. Without --to, the cursor moves to the source's current head (for
kinds that have one, such as git). The window reopens with a fresh budget.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := a.pipe(ctx)
			if err != nil {
				return err
			}
			src, err := p.Ingest().Skip(ctx, args[0], to, actor(), note)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s: cursor moved to %s (version %d)\n", src.Name, src.Cursor, src.CursorVersion)
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the cursor to move to (default: the source's head)")
	cmd.Flags().StringVar(&note, "note", "", "why, for the audit trail")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
