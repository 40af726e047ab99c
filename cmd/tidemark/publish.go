package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/publish"
)

func printRound(a *app, r pipeline.PublishRound) {
	s, p := r.Summarized, r.Published
	fmt.Fprintf(a.stdout, "summaries: %d accepted, %d unchanged, %d failed\n", s.Accepted, s.Unchanged, s.Failed)
	fmt.Fprintf(a.stdout, "pages:     %d published now, %d failed, %d in all\n", p.Published, p.Failed, p.Pages)
	for _, e := range append(s.Errors, p.Errors...) {
		fmt.Fprintf(a.stdout, "  %s\n", e)
	}
	fmt.Fprintf(a.stdout, "wiki:      %s\n", r.Index)
}

// printTotals prints what `run --once` published.
func printTotals(a *app, t pipeline.PublishTotals) {
	fmt.Fprintf(a.stdout, "summaries: %d accepted, %d unchanged, %d failed\n", t.Accepted, t.Unchanged, t.SummariesFailed)
	fmt.Fprintf(a.stdout, "pages:     %d published now, %d failed, %d in all\n", t.Published, t.PagesFailed, t.Pages)
	for _, e := range t.Errors {
		fmt.Fprintf(a.stdout, "  %s\n", e)
	}
	fmt.Fprintf(a.stdout, "wiki:      %s\n", t.Index)
}

func newPublishCmd(a *app) *cobra.Command {
	var (
		summarizer string
		limit      int
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "publish [SUMMARY_ID]",
		Short: "Summarize new events and publish their wiki pages (or publish one summary)",
		Long: `Without an argument: summarize every event that has no summary of its current
evidence under the configured summarizer, publish every current summary whose
page does not show it yet, and refresh the index and source cards.

With SUMMARY_ID: publish that summary alone (refused unless it is the event's
current, unrejected summary of its current evidence).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := a.pipe(ctx)
			if err != nil {
				return err
			}
			svc, err := p.BindStore(ctx)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				res, err := svc.Publish(ctx, args[0])
				if err != nil {
					return err
				}
				if _, err := svc.RefreshListings(ctx); err != nil {
					return err
				}
				if asJSON {
					return writeJSON(a.stdout, res)
				}
				fmt.Fprintf(a.stdout, "published summary %s on page %s (%s, generation %d)\n", res.SummaryID, res.PageID, res.Key, res.Generation)
				return nil
			}
			r, err := p.PublishRound(ctx, svc, summarizer, limit)
			if r.Index == "" {
				return err // nothing was published
			}
			if asJSON {
				if jerr := writeJSON(a.stdout, r); jerr != nil {
					return jerr
				}
			} else {
				printRound(a, r)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&summarizer, "summarizer", "", "extractive or openai (env TIDEMARK_SUMMARIZER; default extractive)")
	limitFlag(f, &limit, 1000, "events to summarize and summaries to publish, at most")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.AddCommand(newSweepCmd(a), newSummariesCmd(a), newRejectCmd(a), newRebindCmd(a))
	return cmd
}

func newSweepCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Converge every page to its current published summary; collect orphans",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := a.pipe(cmd.Context())
			if err != nil {
				return err
			}
			svc, err := p.BindStore(cmd.Context())
			if err != nil {
				return err
			}
			rep, err := svc.Sweep(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, rep)
			}
			fmt.Fprintf(a.stdout, "pages %d: %d republished, %d withdrawn, %d orphan objects deleted, %d awaiting a new summary, %d overtaken, %d failed\n",
				rep.Pages, rep.Republished, rep.Withdrawn, rep.Orphans, rep.Awaiting, rep.Superseded, rep.Failed)
			fmt.Fprintf(a.stdout, "listings: %d written, %d unchanged, %d source cards collected\n",
				rep.Listings.Written, rep.Listings.Unchanged, rep.Listings.Collected)
			for _, e := range rep.Errors {
				fmt.Fprintf(a.stdout, "  %s\n", e)
			}
			if rep.Failed > 0 {
				return fmt.Errorf("sweep: %d pages failed to converge: %w", rep.Failed, tidemark.ErrUnconfirmed)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func newSummariesCmd(a *app) *cobra.Command {
	var (
		event  string
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "summaries",
		Short: "List summaries, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			sums, err := db.Publish().Summaries(cmd.Context(), publish.SummaryFilter{EventID: event, Limit: limit})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, sums)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tEVENT\tMODEL\tPROMPT\tSTATE\tTEXT")
			for _, s := range sums {
				state := "retired"
				switch {
				case s.Rejected():
					state = "rejected"
				case s.Current && s.PublishedAt != nil:
					state = "published"
				case s.Current:
					state = "current"
				}
				text, _, _ := strings.Cut(s.Text, "\n")
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.EventID, s.Model, s.PromptVersion, state, short(text, 60))
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&event, "event", "", "only this event's summaries")
	limitFlag(f, &limit, 50, "at most this many")
	f.BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newRejectCmd(a *app) *cobra.Command {
	var (
		reason string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "reject SUMMARY_ID --reason TEXT",
		Short: "Reject a summary: it is never published; its page is withdrawn by the next sweep",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			s, err := db.Publish().Reject(cmd.Context(), args[0], reason)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, s)
			}
			fmt.Fprintf(a.stdout, "rejected summary %s of event %s: %s\n", s.ID, s.EventID, s.RejectedReason)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return cmd
}

func newRebindCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rebind",
		Short: "Bind the wiki to --store after moving or emptying it on purpose",
		Long: `The database records the object store its wiki lives in (a marker object in
the store and the store's location) at the first publication, and every worker
whose --store differs refuses to publish or sweep. After moving the wiki (or
emptying it) on purpose, rebind binds it to --store; the next sweep
republishes every page the store does not show. Every other worker must then
use the same --store.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := a.pipe(cmd.Context())
			if err != nil {
				return err
			}
			svc, err := p.Publisher()
			if err != nil {
				return err
			}
			id, err := svc.Rebind(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, id)
			}
			fmt.Fprintf(a.stdout, "the wiki now lives in %s (marker %s); run `tidemark publish sweep` to republish its pages there\n", id.Location, id.ID)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the store's identity as JSON")
	return cmd
}
