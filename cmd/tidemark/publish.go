package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/publish"
)

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
	var summarizer string
	var limit int
	// One summary's publication, or a round: the JSON shows either.
	type result struct {
		*publish.Result
		*pipeline.PublishRound
	}
	cmd := op(a, "publish [SUMMARY_ID]", "Summarize new events and publish their wiki pages (or publish one summary)", 0,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (result, error) {
			if len(args) == 1 {
				res, err := p.PublishSummary(cmd.Context(), args[0])
				if err != nil {
					return result{}, err
				}
				return result{Result: &res}, nil
			}
			svc, err := p.BindStore(cmd.Context())
			if err != nil {
				return result{}, err
			}
			r, err := p.PublishRound(cmd.Context(), svc, summarizer, limit)
			if r.Index == "" {
				return result{}, err // nothing was published
			}
			return result{PublishRound: &r}, err
		}, func(v result) {
			if res := v.Result; res != nil {
				fmt.Fprintf(a.stdout, "published summary %s on page %s (%s, generation %d)\n", res.SummaryID, res.PageID, res.Key, res.Generation)
				return
			}
			printTotals(a, v.Totals())
		})
	cmd.Args = cobra.MaximumNArgs(1)
	cmd.Long = `Without an argument: summarize every event that has no summary of its current
evidence under the configured summarizer, publish every current summary whose
page does not show it yet, and refresh the index and source cards.

With SUMMARY_ID: publish that summary alone (refused unless it is the event's
current, unrejected summary of its current evidence).`
	f := cmd.Flags()
	f.StringVar(&summarizer, "summarizer", "", "extractive or openai (env TIDEMARK_SUMMARIZER; default extractive)")
	limitFlag(f, &limit, 1000, "events to summarize and summaries to publish, at most")
	cmd.AddCommand(newSweepCmd(a), newSummariesCmd(a), newRejectCmd(a), newRebindCmd(a))
	return cmd
}

func newSweepCmd(a *app) *cobra.Command {
	return op(a, "sweep", "Converge every page to its current published summary; collect orphans", 0,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (publish.SweepReport, error) {
			return p.Sweep(cmd.Context())
		},
		func(rep publish.SweepReport) {
			fmt.Fprintf(a.stdout, "pages %d: %d republished, %d withdrawn, %d orphan objects deleted, %d awaiting a new summary, %d overtaken, %d failed\n",
				rep.Pages, rep.Republished, rep.Withdrawn, rep.Orphans, rep.Awaiting, rep.Superseded, rep.Failed)
			fmt.Fprintf(a.stdout, "listings: %d written, %d unchanged, %d source cards collected\n", rep.Listings.Written, rep.Listings.Unchanged, rep.Listings.Collected)
			for _, e := range rep.Errors {
				fmt.Fprintf(a.stdout, "  %s\n", e)
			}
		})
}

func newSummariesCmd(a *app) *cobra.Command {
	var f publish.SummaryFilter
	cmd := op(a, "summaries", "List summaries, newest first", 0, func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) ([]publish.Summary, error) {
		return p.Summaries(cmd.Context(), f)
	}, func(sums []publish.Summary) {
		lines := []string{"ID\tEVENT\tMODEL\tPROMPT\tSTATE\tTEXT"}
		for _, s := range sums {
			text, _, _ := strings.Cut(s.Text, "\n")
			lines = append(lines, fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", s.ID, s.EventID, s.Model, s.PromptVersion, s.State(), short(text, 60)))
		}
		table(a.stdout, lines...)
	})
	cmd.Flags().StringVar(&f.EventID, "event", "", "only this event's summaries")
	limitFlag(cmd.Flags(), &f.Limit, 50, "at most this many")
	return cmd
}

func newRejectCmd(a *app) *cobra.Command {
	var reason string
	cmd := op(a, "reject SUMMARY_ID --reason TEXT", "Reject a summary: it is never published; its page is withdrawn by the next sweep", 1,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (publish.Summary, error) {
			return p.RejectSummary(cmd.Context(), args[0], reason)
		}, func(s publish.Summary) {
			fmt.Fprintf(a.stdout, "rejected summary %s of event %s: %s\n", s.ID, s.EventID, s.RejectedReason)
		})
	cmd.Flags().StringVar(&reason, "reason", "", "why (required)")
	return cmd
}

func newRebindCmd(a *app) *cobra.Command {
	cmd := op(a, "rebind", "Bind the wiki to --store after moving or emptying it on purpose", 0,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (publish.StoreIdentity, error) {
			return p.Rebind(cmd.Context())
		},
		func(id publish.StoreIdentity) {
			fmt.Fprintf(a.stdout, "the wiki now lives in %s (marker %s); run `tidemark publish sweep` to republish its pages there\n", id.Location, id.ID)
		})
	cmd.Long = `The database records the object store its wiki lives in (a marker object in
the store and the store's location) at the first publication, and every worker
whose --store differs refuses to publish or sweep. After moving the wiki (or
emptying it) on purpose, rebind binds it to --store; the next sweep
republishes every page the store does not show. Every other worker must then
use the same --store.`
	return cmd
}
