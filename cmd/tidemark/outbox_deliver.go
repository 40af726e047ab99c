package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/pipeline"
)

func newOutboxDeliverCmd(a *app) *cobra.Command {
	var (
		lane string
		once bool
		ttl  time.Duration
	)
	cmd := opCmd(a, "deliver --once [--lane LANE]", "Send pending intents through each lane's gate, reconciling first where in doubt", cobra.NoArgs,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			if !once {
				return nil, p.DeliverLoop(cmd.Context(), lane, ttl)
			}
			reports, err := p.DeliverOnce(cmd.Context(), lane, ttl)
			return reports, err // what was delivered, and what failed (a nil report prints nothing)
		})
	cmd.Long = `Deliver: for each lane (or --lane), take the lane's lease, reconcile if an
attempt is in doubt (one ordered read of our own writes), then send pending
intents in rank order, one at a time, through the pacing gate. With --once it
stops when nothing is pending, or, on a lane whose provider asks to wait (429 or
503 with Retry-After), defers the intent to a later pass and exits 5; without,
it runs until Ctrl-C (as 'tidemark run' does), waiting the provider out.`
	f := cmd.Flags()
	f.StringVar(&lane, "lane", "", "only this lane")
	f.BoolVar(&once, "once", false, "deliver what is pending, then exit")
	durationFlag(f, &ttl, "lease", time.Minute, pipeline.MinLease, pipeline.MaxLease, "the lane lease; renewed at every step")
	return cmd
}

func newOutboxReconcileCmd(a *app) *cobra.Command {
	return opCmd(a, "reconcile LANE", "Reconcile a lane now: one ordered read of our own writes, planned and recorded (audited)", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			r, err := p.Reconcile(cmd.Context(), args[0], actor())
			return answer(said{r.Plan, r}, err) // --json: the recorded plan, as `outbox plan --json`
		})
}

func newOutboxGapsCmd(a *app) *cobra.Command {
	var lane string
	cmd := opCmd(a, "gaps [--lane LANE]", "Report the gaps the pacing gate achieved: count, minimum and median against the threshold", cobra.NoArgs,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			return answer(p.Gaps(cmd.Context(), lane))
		})
	cmd.Flags().StringVar(&lane, "lane", "", "only this lane")
	return cmd
}
