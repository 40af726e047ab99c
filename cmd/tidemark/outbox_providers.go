package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/providers"
)

func newOutboxProvidersCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "providers",
		Short: "List provider kinds with the guarantee each can give, what it needs, and why",
		Long: `List provider kinds with the delivery guarantee each can give, derived from
what the provider can do to decide a write in doubt (an idempotency key the
server honours, a listing of our own writes, a probe, a counter, and the
signals that prove a read's age):

  exactly-once   a write in doubt is decided by the provider: landed, or sent again
  at-most-once   nothing can decide it: it is never resent, it stays unresolved
  at-least-once  the lane set resend_in_doubt=true: it is sent again, maybe twice

"needs" names the lane settings of which any one raises a kind to its best
guarantee. "min gap" is the default gap between writes that lane add takes
from the provider's published rate limits (--min-gap overrides it). A lane
shows the guarantee it has with its settings (lane show).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rows := providers.Table()
			if asJSON {
				return writeJSON(a.stdout, rows)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PROVIDER\tGUARANTEE\tNEEDS\tDECIDED BY\tFRESHNESS\tMIN GAP")
			for _, r := range rows {
				g := string(r.Best)
				if r.Default != r.Best {
					g += " (" + string(r.Default) + " without)"
				}
				needs := "-"
				if len(r.Needs) > 0 {
					needs = "one of " + strings.ReplaceAll(strings.Join(r.Needs, ", "), "|", " or ")
				}
				gap := "-"
				if r.MinGap > 0 {
					gap = r.MinGap.Std().String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Kind, g, needs, capabilityNames(r.Capabilities),
					orDash(strings.Join(r.Capabilities.Freshness, ", ")), gap)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (an array, one object per provider kind)")
	return cmd
}

func capabilityNames(c provider.Capabilities) string {
	var out []string
	for _, x := range []struct {
		name string
		c    *provider.Capability
	}{{"idempotency key", c.IdempotencyKey}, {"listing", c.ListOwn}, {"probe", c.Probe}, {"counter", c.Counter}} {
		if x.c != nil {
			out = append(out, x.name)
		}
	}
	return orDash(strings.Join(out, ", "))
}

// shownLane is a lane as the CLI shows it: with the guarantee it has.
type shownLane struct {
	outbox.Lane
	Guarantee *provider.LaneGuarantee `json:"guarantee"`
}

func withGuarantees(ls []outbox.Lane) []shownLane {
	out := make([]shownLane, 0, len(ls))
	for _, l := range ls {
		s := shownLane{Lane: l}
		if g, err := providers.Guarantee(l.Provider, l.Settings); err == nil {
			s.Guarantee = &g
		}
		out = append(out, s)
	}
	return out
}
