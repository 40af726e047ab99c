package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/pipeline"
)

func newOutboxDeliverCmd(a *app) *cobra.Command {
	var (
		lane   string
		once   bool
		ttl    time.Duration
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "deliver --once [--lane LANE]",
		Short: "Send pending intents through each lane's gate, reconciling first where in doubt",
		Long: `Deliver: for each lane (or --lane), take the lane's lease, reconcile if an
attempt is in doubt (one ordered read of our own writes), then send pending
intents in rank order, one at a time, through the pacing gate. With --once it
stops when nothing is pending; without, it runs until Ctrl-C (as 'tidemark run'
does).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := a.pipe(ctx)
			if err != nil {
				return err
			}
			if !once {
				return p.DeliverLoop(ctx, lane, ttl)
			}
			reports, derr := p.DeliverOnce(ctx, lane, ttl)
			if reports == nil && derr != nil {
				return derr
			}
			if asJSON {
				if err := writeJSON(a.stdout, reports); err != nil {
					return err
				}
			} else {
				for _, r := range reports {
					printDeliver(a, r)
				}
			}
			return derr
		},
	}
	f := cmd.Flags()
	f.StringVar(&lane, "lane", "", "only this lane")
	f.BoolVar(&once, "once", false, "deliver what is pending, then exit")
	durationFlag(f, &ttl, "lease", time.Minute, minLease, maxLease, "the lane lease; renewed at every step")
	f.BoolVar(&asJSON, "json", false, "with --once: print each lane's steps as JSON")
	return cmd
}

func printDeliver(a *app, r pipeline.DeliverReport) {
	counts := map[string]int{}
	for _, s := range r.Steps {
		switch s.Kind {
		case outbox.StepSent:
			counts[string(s.Outcome)]++
		case outbox.StepBucketed:
			counts["unexecutable"]++
		case outbox.StepReconciled:
			counts["reconciled"]++
		}
		if s.Alert != "" {
			fmt.Fprintf(a.stdout, "%s: ALERT intent %s: %s\n", r.Lane, s.IntentID, s.Alert)
		}
	}
	fmt.Fprintf(a.stdout, "%-16s landed %d, not landed %d, deferred %d, unexecutable %d, unknown %d, reconciled %d", r.Lane,
		counts["landed"], counts["not_landed"], counts["deferred"], counts["unexecutable"], counts["unknown"], counts["reconciled"])
	if r.Error != "" {
		fmt.Fprintf(a.stdout, "  error: %s", r.Error)
	}
	fmt.Fprintln(a.stdout)
}

func newOutboxReconcileCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "reconcile LANE",
		Short: "Reconcile a lane now: one ordered read of our own writes, planned and recorded",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := a.pipe(ctx)
			if err != nil {
				return err
			}
			d, err := p.Deliverer(ctx, args[0], time.Minute)
			if err != nil {
				return err
			}
			defer d.Release(context.WithoutCancel(ctx))
			s, err := d.Reconcile(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, s.Plan)
			}
			fmt.Fprintf(a.stdout, "lane %s reconciled with %d provider request(s)\n", args[0], s.Requests)
			return s.Plan.WriteText(a.stdout)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the recorded plan as JSON (the same fields as `outbox plan --json`)")
	return cmd
}

func newOutboxGapsCmd(a *app) *cobra.Command {
	var (
		lane   string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "gaps [--lane LANE]",
		Short: "Report the gaps the pacing gate achieved: count, minimum and median against the threshold",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			rs, err := db.Outbox().Gaps(cmd.Context(), lane)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, rs)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "LANE\tGAPS\tMIN\tMEDIAN\tTHRESHOLD\tBELOW\tVERDICT")
			for _, r := range rs {
				verdict := "ok"
				if !r.OK {
					verdict = "GAPS BELOW THRESHOLD"
				}
				if r.Count == 0 {
					verdict = "no gaps yet"
				}
				ms := func(v int64) string { return (time.Duration(v) * time.Millisecond).String() }
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%s\n", r.Lane, r.Count, ms(r.MinMS), ms(r.MedianMS), ms(r.ThresholdMS), r.BelowThreshold, verdict)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&lane, "lane", "", "only this lane")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (an array of per-lane reports)")
	return cmd
}
