package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/pipeline"
)

func newOutboxIntentsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "intents", Short: "List, show, draft, retire and revive intents"}
	var (
		f     outbox.IntentFilter
		state string
		d     outbox.Draft
	)
	list := opCmd(a, "list", "List intents by lane and rank", cobra.NoArgs,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			f.State = outbox.State(state)
			return answer(p.Intents(cmd.Context(), f))
		})
	list.Flags().StringVar(&f.Lane, "lane", "", "only this lane")
	list.Flags().StringVar(&state, "state", "", "only this state: pending, sending, landed, unresolved, unexecutable, retired, collision")
	limitFlag(list.Flags(), &f.Limit, 200, "at most this many")
	show := opCmd(a, "show ID", "Show an intent with the evidence of every check and its audit trail", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			return answer(p.Intent(cmd.Context(), args[0]))
		})
	draft := opCmd(a, "draft --lane LANE --target TARGET --body TEXT [--parent PARENT]", "Draft an intent by hand at the end of its lane", cobra.NoArgs,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			in, err := p.Draft(cmd.Context(), d)
			return answer(say(in, "drafted intent %s (rank %d) on lane %s", in.ID, in.Rank, in.Lane), err)
		})
	requiredFlags(draft, map[string]*string{"lane": &d.Lane, "target": &d.Target, "body": &d.Body}, "the %s (required)")
	draft.Flags().StringVar(&d.Parent, "parent", "", "what the write answers")
	cmd.AddCommand(list, show, draft,
		newIntentsOperateCmd(a, "retire", "Retire an intent (pending, unresolved, unexecutable or in collision); it is never sent", (*pipeline.Pipeline).RetireIntent),
		newIntentsOperateCmd(a, "revive", "Revive a retired, unexecutable or colliding intent (a collision only once its twin is retired)", (*pipeline.Pipeline).ReviveIntent))
	return cmd
}

func newIntentsOperateCmd(a *app, action, short string, op func(*pipeline.Pipeline, context.Context, string, string, string) (outbox.Intent, error)) *cobra.Command {
	var reason string
	cmd := opCmd(a, action+" ID --reason TEXT", short, cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			in, err := op(p, cmd.Context(), args[0], actor(), reason)
			return answer(say(in, "intent %s is now %s", in.ID, in.State), err)
		})
	requiredFlags(cmd, map[string]*string{"reason": &reason}, "why, for the audit trail (%s required)")
	return cmd
}
