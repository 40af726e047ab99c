package main

import (
	"github.com/spf13/cobra"
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
	cmd.AddCommand(newOutboxLaneCmd(a), newOutboxLanesCmd(a), newOutboxChannelCmd(a), newOutboxIntentsCmd(a),
		newOutboxDeliverCmd(a), newOutboxReconcileCmd(a), newOutboxGapsCmd(a), newOutboxPlanCmd(a), newOutboxProvidersCmd(a))
	return cmd
}
