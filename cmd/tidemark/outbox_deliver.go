package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/providers"
)

func init() {
	outboxSubcommands = append(outboxSubcommands, newOutboxDeliverCmd, newOutboxReconcileCmd, newOutboxGapsCmd)
	daemonLoops = append(daemonLoops, outboxDaemon)
}

// deliverer wires the single writer of a lane.
func (a *app) deliverer(ctx context.Context, lane string, ttl time.Duration) (*outbox.Deliverer, error) {
	db, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	l, err := db.Outbox().Lane(ctx, lane)
	if err != nil {
		return nil, err
	}
	secrets, err := db.Outbox().LaneSecrets(ctx, lane)
	if err != nil {
		return nil, err
	}
	p, err := providers.NewWithSecrets(l, secrets, a.clk())
	if err != nil {
		return nil, fmt.Errorf("lane %s: %w", lane, err)
	}
	return &outbox.Deliverer{Store: db.Outbox(), Provider: p, Lane: lane, Holder: a.holderID(), Clock: a.clk(), LeaseTTL: ttl, Logger: a.log}, nil
}

func (a *app) laneNames(ctx context.Context, only string) ([]string, error) {
	if only != "" {
		return []string{only}, nil
	}
	db, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	return db.Outbox().LaneNames(ctx)
}

// deliverReport is one lane's `deliver --once --json` entry.
type deliverReport struct {
	Lane  string        `json:"lane"`
	Steps []outbox.Step `json:"steps"`
	Error string        `json:"error,omitempty"`
}

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
			if !once {
				return deliverLoop(a, ctx, lane, ttl)
			}
			reports, derr := deliverOnce(a, ctx, lane, ttl)
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

// deliverOnce delivers what is pending on every lane (or only one), each
// under its lane's lease, and reports each lane's steps.
func deliverOnce(a *app, ctx context.Context, lane string, ttl time.Duration) ([]deliverReport, error) {
	names, err := a.laneNames(ctx, lane)
	if err != nil {
		return nil, err
	}
	reports := make([]deliverReport, 0, len(names))
	var errs []error
	for _, name := range names {
		r := deliverReport{Lane: name, Steps: []outbox.Step{}}
		d, err := a.deliverer(ctx, name, ttl)
		if err == nil {
			var steps []outbox.Step
			steps, err = d.RunOnce(ctx, nil)
			r.Steps = append(r.Steps, steps...)
			if rerr := d.Release(context.WithoutCancel(ctx)); err == nil {
				err = rerr
			}
		}
		if err != nil {
			r.Error = err.Error()
			errs = append(errs, fmt.Errorf("lane %s: %w", name, err))
		}
		reports = append(reports, r)
	}
	return reports, errors.Join(errs...)
}

func printDeliver(a *app, r deliverReport) {
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

// outboxDaemon is `tidemark run`'s delivery loop over every lane.
func outboxDaemon(ctx context.Context, a *app, _ *cobra.Command) error {
	return deliverLoop(a, ctx, "", time.Minute)
}

// deliverLoop steps every lane until ctx ends. A lane another process
// holds is passed over; a lane that fails is retried after a pause that
// grows with its consecutive failures; a failure to list the lanes is
// logged and retried the same way. It returns only when ctx ends.
func deliverLoop(a *app, ctx context.Context, only string, ttl time.Duration) error {
	const poll = 5 * time.Second
	ds := map[string]*outbox.Deliverer{}
	nextAt := map[string]time.Time{}
	failing := map[string]*backoff{}
	pause := func(name string) time.Duration {
		b := failing[name]
		if b == nil {
			b = newBackoff()
			failing[name] = b
		}
		return b.Fail()
	}
	defer func() {
		for _, d := range ds {
			_ = d.Release(context.WithoutCancel(ctx))
		}
	}()
	listing := newBackoff()
	for {
		names, err := a.laneNames(ctx, only)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			wait := listing.Fail()
			a.log.Error("outbox: listing lanes failed; retrying", "err", err, "retry_in", wait)
			if err := daemonSleep(ctx, wait); err != nil {
				return err
			}
			continue
		}
		listing.Reset()
		wake := a.clk().Now().Add(poll)
		for _, name := range names {
			now := a.clk().Now()
			if at, ok := nextAt[name]; ok && now.Before(at) {
				wake = minTime(wake, at)
				continue
			}
			d := ds[name]
			if d == nil {
				if d, err = a.deliverer(ctx, name, ttl); err != nil {
					wait := pause(name)
					a.log.Warn("outbox: lane not deliverable; retrying", "lane", name, "err", err, "retry_in", wait)
					nextAt[name] = now.Add(wait)
					wake = minTime(wake, nextAt[name])
					continue
				}
				ds[name] = d
			}
			s, err := d.Step(ctx)
			if b := failing[name]; b != nil && err == nil {
				b.Reset()
			}
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case errors.Is(err, tidemark.ErrClaimHeld):
				nextAt[name] = now.Add(poll)
			case err != nil:
				wait := pause(name)
				a.log.Error("outbox: step failed; retrying", "lane", name, "err", err, "retry_in", wait)
				nextAt[name] = now.Add(wait)
			case s.Kind == outbox.StepIdle:
				nextAt[name] = now.Add(poll)
			case s.Kind == outbox.StepWait:
				nextAt[name] = *s.Until
			default:
				nextAt[name] = now
				wake = now
				if s.Alert != "" {
					a.log.Error("outbox: duplicate alert", "lane", name, "intent", s.IntentID, "alert", s.Alert)
				}
			}
			wake = minTime(wake, nextAt[name])
		}
		if err := daemonSleep(ctx, wake.Sub(a.clk().Now())); err != nil {
			return err
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func newOutboxReconcileCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "reconcile LANE",
		Short: "Reconcile a lane now: one ordered read of our own writes, planned and recorded",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			d, err := a.deliverer(ctx, args[0], time.Minute)
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
