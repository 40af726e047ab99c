package main

import (
	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/internal/terminal"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/publish"
)

func newPublishCmd(a *app) *cobra.Command {
	var summarizer string
	var limit int
	cmd := opCmd(a, "publish [SUMMARY_ID]", "Summarize new events and publish their wiki pages (or publish one summary)", cobra.MaximumNArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			if len(args) == 1 {
				return answer(p.PublishSummary(cmd.Context(), args[0]))
			}
			// On a terminal, stderr follows the round as each summary and
			// page is done: a model may take minutes over many events.
			ctx, prog := cmd.Context(), &terminal.Activity{}
			if asJSON, _ := cmd.Flags().GetBool("json"); !asJSON {
				prog = terminal.NewActivity(a.stderr, "publish")
				ctx = pipeline.WithPublishProgress(ctx, prog.Describe)
			}
			r, err := p.Publish(ctx, summarizer, limit)
			prog.Finish()
			if err == nil {
				// Events failed, held or claimed by another worker, pages
				// not published: exit 5, saying which and why.
				err = pipeline.PublishIncomplete(r)
			}
			if r.Index == "" {
				return nil, err // nothing was published
			}
			return r, err
		})
	cmd.Long = `Without an argument: summarize every event that has no summary of its current
evidence under the configured summarizer, publish every current summary whose
page does not show it yet, and refresh the index and source cards.

With SUMMARY_ID: publish that summary alone (refused unless it is the event's
current, unrejected summary of its current evidence).`
	f := cmd.Flags()
	f.StringVar(&summarizer, "summarizer", "", "extractive or openai (env TIDEMARK_SUMMARIZER; default extractive)")
	limitFlag(f, &limit, 1000, "events to summarize and summaries to publish, at most")
	cmd.AddCommand(newSweepCmd(a), newSummariesCmd(a), newRejectCmd(a), newUnrejectCmd(a), newRebindCmd(a))
	return cmd
}

func newSweepCmd(a *app) *cobra.Command {
	return opCmd(a, "sweep", "Converge every page to its current published summary; collect orphans", cobra.NoArgs,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			return shown(p.Sweep(cmd.Context()))
		})
}

func newSummariesCmd(a *app) *cobra.Command {
	var f publish.SummaryFilter
	cmd := opCmd(a, "summaries", "List summaries, newest first", cobra.NoArgs, func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
		return shown(p.Summaries(cmd.Context(), f))
	})
	cmd.Flags().StringVar(&f.EventID, "event", "", "only this event's summaries")
	limitFlag(cmd.Flags(), &f.Limit, 50, "at most this many")
	return cmd
}

func newRejectCmd(a *app) *cobra.Command {
	var reason string
	cmd := opCmd(a, "reject SUMMARY_ID --reason TEXT", "Reject a summary: it is never published; its page is withdrawn by the next sweep", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			s, err := p.RejectSummary(cmd.Context(), args[0], reason)
			if err != nil {
				return nil, err // a refused rejection rejected nothing: say only why
			}
			return say(s, "rejected summary %s of event %s: %s", s.ID, s.EventID, s.RejectedReason), nil
		})
	cmd.Flags().StringVar(&reason, "reason", "", "why (required)")
	return cmd
}

func newUnrejectCmd(a *app) *cobra.Command {
	var reason string
	cmd := opCmd(a, "unreject SUMMARY_ID --reason TEXT", "Lift a summary's rejection: it is current again, and the next publishing round publishes its page", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			s, err := p.UnrejectSummary(cmd.Context(), args[0], reason)
			if err != nil {
				return nil, err // nothing was lifted: say only why
			}
			return say(s, "%s", publish.UnrejectedLine(s)), nil
		})
	cmd.Long = `A rejected summary is never published, and its event is not summarized again
under the same model and prompt version. If the rejection was a mistake, lift
it: the rejection is kept on record (the summary's "lifted" in --json), and a
summary of the event's current evidence becomes the event's current summary
again, retiring the one current. Another summarizer's summary comes back by
switching to that summarizer instead (publish --summarizer S).`
	cmd.Flags().StringVar(&reason, "reason", "", "why (required)")
	return cmd
}

func newRebindCmd(a *app) *cobra.Command {
	cmd := opCmd(a, "rebind", "Bind the wiki to --store after moving or emptying it on purpose", cobra.NoArgs,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			id, err := p.Rebind(cmd.Context())
			return sayShown(id, err, "the wiki now lives in %s (marker %s); run `tidemark publish sweep` (or `tidemark run --once`) to republish its pages there", id.Location, id.ID)
		})
	cmd.Long = `The database records the object store its wiki lives in (a marker object in
the store and the store's location) at the first publication, and every worker
whose --store differs refuses to publish or sweep. After moving the wiki (or
emptying it) on purpose, rebind binds it to --store, lists the pages the store
holds and records the others missing from it, so no listing links to one until
it is there again; the next sweep (or run --once) republishes them. Every other
worker must then use the same --store.`
	return cmd
}
