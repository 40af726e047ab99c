package main

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/sqlstore"
)

func newOutboxLaneCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "lane", Short: "Add and show delivery lanes (one provider account each)"}
	var (
		kind          string
		settings      []string
		minGap, skew  time.Duration
		retireChecks  int
		retireSpacing time.Duration
		asJSON        bool
	)
	add := &cobra.Command{
		Use:   "add NAME --provider KIND --setting key=value…",
		Short: "Add a lane",
		Long: `Add a lane: one provider account, written by one fenced writer at a time
through a pacing gate.

Settings (--setting key=value, repeatable) depend on the provider:
  webhook:  url, secret or secret_env (default TIDEMARK_WEBHOOK_SECRET),
            list_url, probe_url, count_url, target_url, page_size, timeout
  mastodon: base_url, token or token_env (default MASTODON_TOKEN), visibility,
            target, account_id
  github:   api_url, token or token_env (default GITHUB_TOKEN), login, repos,
            since
  discord:  url (the webhook URL), bot_token or bot_token_env (to read the
            channel: exactly once), channel_id, target, api_url
  email:    smtp_url, from, username, password or password_env, timeout
            (at most once: no IMAP reconciliation yet)
  matrix:   homeserver_url, token or token_env (default MATRIX_TOKEN), rooms
            (ids, read on reconciliation), user_id
  slack:    token or token_env (default SLACK_TOKEN), channels (ids, read on
            reconciliation: exactly once), api_url
  ntfy:     base_url (default https://ntfy.sh), token or token_env (optional),
            topics (read on reconciliation), title, max_bytes, cache_duration
  every kind: resend_in_doubt=true resends a write in doubt that nothing
            could decide (at least once: it may arrive twice)

The lane's guarantee (exactly once, at most once, at least once) is derived
from what its provider can do with these settings; see
"tidemark outbox providers" and "tidemark outbox lane show".

A secret given directly (secret, token, a password or query value in a URL,
the whole path of a webhook url) is stored apart from the settings and never
shown again: the CLI, --json, the API and the status pages show ••• in its
place, and upstream errors are cleaned of it before they are logged or
stored. *_env settings name an environment variable that holds the secret
instead; only the name is stored.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !providers.Known(kind) {
				return tidemark.Invalidf("--provider", kind, "want one of %s", strings.Join(providers.Kinds(), ", "))
			}
			st, err := parseKeyValues("--setting", settings)
			if err != nil {
				return err
			}
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			// Secrets (a signing secret, a token, a URL's credential) are
			// kept apart from the settings that are shown.
			if !cmd.Flags().Changed("min-gap") {
				// The provider's published rate limits, unless overridden.
				minGap = providers.MinGap(kind, minGap)
			}
			g, err := providers.Guarantee(kind, st)
			if err != nil {
				return err
			}
			shown, secret := providers.Split(kind, st)
			l, err := db.Outbox().AddLane(cmd.Context(), sqlstore.NewLane{Name: args[0], Provider: kind, Settings: shown, Secrets: secret,
				MinGap: minGap, Skew: skew, Retirement: outbox.RetirementPolicy{Checks: retireChecks, Spacing: tidemark.Duration(retireSpacing)}})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, l)
			}
			fmt.Fprintf(a.stdout, "added %s lane %q: at least %s between writes; %s: %s\n", l.Provider, l.Name, l.MinGap.Std(), g.Guarantee, g.Why)
			return nil
		},
	}
	f := add.Flags()
	f.StringVar(&kind, "provider", "", "the provider kind: "+strings.Join(providers.Kinds(), ", "))
	f.StringArrayVar(&settings, "setting", nil, "a provider setting key=value (repeatable)")
	f.DurationVar(&minGap, "min-gap", 2*time.Second, "least time between two writes on the lane (default: the provider's published rate limit, else 2s)")
	f.DurationVar(&skew, "skew", 2*time.Second, "clock skew allowed for when judging an answer's freshness")
	f.IntVar(&retireChecks, "retire-checks", 0, "retire an intent unresolved or unexecutable through this many spaced checks (0: operators only)")
	f.DurationVar(&retireSpacing, "retire-spacing", 6*time.Hour, "least time between two counted checks")
	f.BoolVar(&asJSON, "json", false, "print the lane as JSON")

	var showJSON bool
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a lane: its lease, gate, and intents by state",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			l, err := db.Outbox().LaneDetail(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if showJSON {
				return writeJSON(a.stdout, withGuarantees([]outbox.Lane{l})[0])
			}
			printLanes(a, []outbox.Lane{l})
			if g, err := providers.Guarantee(l.Provider, l.Settings); err == nil {
				fmt.Fprintf(a.stdout, "\nguarantee: %s\n  %s\n", g.Guarantee, g.Why)
				if len(g.Missing) > 0 {
					fmt.Fprintf(a.stdout, "  exactly once needs one of: %s\n", strings.ReplaceAll(strings.Join(g.Missing, ", "), "|", " or "))
				}
			}
			return nil
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print the lane as JSON")
	cmd.AddCommand(add, show)
	return cmd
}

func newOutboxLanesCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "lanes",
		Short: "List lanes with their lease, gate and intents by state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			ls, err := db.Outbox().Lanes(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, withGuarantees(ls))
			}
			if len(ls) == 0 {
				fmt.Fprintln(a.stdout, "no lanes; add one with `tidemark outbox lane add`")
				return nil
			}
			printLanes(a, ls)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (an array of lanes)")
	return cmd
}

func printLanes(a *app, ls []outbox.Lane) {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LANE\tPROVIDER\tGUARANTEE\tMIN GAP\tTOKEN\tHOLDER\tIN FLIGHT\tNEXT SEND\tINTENTS")
	for _, sl := range withGuarantees(ls) {
		l, g := sl.Lane, "?"
		if sl.Guarantee != nil {
			g = string(sl.Guarantee.Guarantee)
		}
		var counts []string
		for st, n := range l.Counts {
			counts = append(counts, fmt.Sprintf("%s %d", st, n))
		}
		sort.Strings(counts)
		next := "now"
		if l.NextSendAt.After(a.clk().Now()) {
			next = l.NextSendAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", l.Name, l.Provider, g, l.MinGap.Std(), l.LeaseToken, orDash(l.LeaseHolder),
			orDash(l.InFlight), next, orDash(strings.Join(counts, ", ")))
	}
	tw.Flush()
}

func newOutboxChannelCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "channel", Short: "Say where a source's published pages are delivered"}
	var (
		source, lane, target, parent string
		asJSON                       bool
	)
	add := &cobra.Command{
		Use:   "add --source NAME --lane LANE --target TARGET [--parent PARENT]",
		Short: "Draft an intent on LANE for TARGET each time a page of the source is published",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			c, err := db.Outbox().AddChannel(cmd.Context(), source, lane, target, parent)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, c)
			}
			fmt.Fprintf(a.stdout, "pages of %s will be delivered to %s on lane %s\n", c.Source, c.Target, c.Lane)
			return nil
		},
	}
	f := add.Flags()
	f.StringVar(&source, "source", "", "the source, by name or id (required)")
	f.StringVar(&lane, "lane", "", "the lane (required)")
	f.StringVar(&target, "target", "", "the target: a webhook target, the Mastodon timeline name, owner/repo#number (required)")
	f.StringVar(&parent, "parent", "", "what the writes answer (a status id to reply to)")
	f.BoolVar(&asJSON, "json", false, "print the channel as JSON")
	for _, n := range []string{"source", "lane", "target"} {
		_ = add.MarkFlagRequired(n)
	}
	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List channels",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			cs, err := db.Outbox().Channels(cmd.Context())
			if err != nil {
				return err
			}
			if listJSON {
				return writeJSON(a.stdout, cs)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SOURCE\tLANE\tTARGET\tPARENT")
			for _, c := range cs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Source, c.Lane, c.Target, orDash(c.Parent))
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON (an array of channels)")
	cmd.AddCommand(add, list)
	return cmd
}
