package main

import (
	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/pipeline"
)

func newOutboxCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "outbox",
		Short: "Deliver outbound writes: lanes, channels, intents, delivery, reconciliation, plans",
		Long: `The outbox delivers outbound writes (webhooks, Mastodon statuses, GitHub
comments, Slack, Discord and Matrix messages, ntfy notifications, mail) to
systems tidemark does not own, across crashes, with the guarantee each lane
states (tidemark outbox providers).

Each lane is one provider account with a single fenced writer and a pacing
gate. Publishing a page drafts intents for its source's channels in the same
transaction. After a crash a lane is reconciled with one ordered read of its
own writes. See docs/outbox.md.`,
	}
	var intents, own, unexec string
	plan := localOp(a, "plan --intents INTENTS.jsonl --own-writes OWN.jsonl [--unexecutable IDS.txt]",
		"Plan a recovery from exported intents and own writes (no database)", cobra.NoArgs,
		func(*cobra.Command, *pipeline.Pipeline, []string) (texter, error) {
			p, err := outbox.PlanFiles(intents, own, unexec)
			if err == nil && p != nil && !p.Accounting.Balanced {
				err = outbox.ErrUnbalanced // MakePlan never returns one without it; the exit code says so regardless
			}
			return p, err // an unbalanced plan is shown, with its error
		})
	plan.Long = outbox.PlanFilesHelp
	requiredFlags(plan, map[string]*string{"intents": &intents, "own-writes": &own}, "the %s, JSON lines (required)")
	plan.Flags().StringVar(&unexec, "unexecutable", "", "ids of intents whose targets cannot accept a write, one a line")
	kinds := localOp(a, "providers", "List provider kinds with the guarantee each can give, what it needs, and why", cobra.NoArgs,
		func(*cobra.Command, *pipeline.Pipeline, []string) (texter, error) {
			return providers.TableRows(providers.Table()), nil
		})
	kinds.Long = providers.GuaranteesHelp
	cmd.AddCommand(newOutboxLaneCmd(a), newOutboxLanesCmd(a), newOutboxChannelCmd(a), newOutboxIntentsCmd(a),
		newOutboxDeliverCmd(a), newOutboxReconcileCmd(a), newOutboxGapsCmd(a), plan, kinds)
	return cmd
}
