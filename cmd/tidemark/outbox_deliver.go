package main

import (
	"context"
	"errors"
	"fmt"
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
				return nil, a.deliverLoop(cmd.Context(), p, lane, ttl)
			}
			reports, err := p.DeliverOnce(cmd.Context(), lane, ttl)
			return reports, err // what was delivered, and what failed (a nil report prints nothing)
		})
	cmd.Long = `Deliver: for each lane (or --lane), take the lane's lease, reconcile if an
attempt is in doubt (one ordered read of our own writes), then send pending
intents in rank order, one at a time, through the pacing gate. With --once it
stops when nothing is pending, or, on a lane whose provider asks to wait (429 or
503 with Retry-After), defers the intent to a later pass and exits 5; a pass in
which a write failed (it did not land, or no answer said whether it did) and
had not landed by its end exits 5 too. Without --once it runs until Ctrl-C (as
'tidemark run' does), waiting the provider out.`
	f := cmd.Flags()
	f.StringVar(&lane, "lane", "", "only this lane")
	f.BoolVar(&once, "once", false, "deliver what is pending, then exit")
	durationFlag(f, &ttl, "lease", time.Minute, pipeline.MinLease, pipeline.MaxLease, "the lane lease; renewed at every step")
	return cmd
}

// deliverLoop runs the delivery loop until a signal stops it. Like the
// daemon, it is stopped that way, so a signal is a clean stop: exit 0.
func (a *app) deliverLoop(ctx context.Context, p *pipeline.Pipeline, lane string, ttl time.Duration) error {
	what := "every lane"
	if lane != "" {
		what = fmt.Sprintf("lane %q", lane)
	}
	fmt.Fprintf(a.stderr, "tidemark: delivering %s on %s; Ctrl-C to stop\n", what, p.DB().URL())
	err := p.DeliverLoop(ctx, lane, ttl)
	if ctx.Err() == nil || (err != nil && !errors.Is(err, ctx.Err())) {
		return err
	}
	fmt.Fprintln(a.stderr, "tidemark: stopped delivering; a write in flight was recorded as landed, not landed or in doubt "+
		"(reconciliation decides it), and every lane's lease was given up; start it again to resume")
	return nil
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
