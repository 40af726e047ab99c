package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
)

func newOutboxIntentsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "intents", Short: "List, show, draft, retire and revive intents"}
	cmd.AddCommand(newIntentsListCmd(a), newIntentsShowCmd(a), newIntentsDraftCmd(a),
		newIntentsOperateCmd(a, "retire", "Retire an intent (pending, unresolved, unexecutable or in collision); it is never sent"),
		newIntentsOperateCmd(a, "revive", "Revive a retired, unexecutable or colliding intent (a collision only once its twin is retired)"))
	return cmd
}

var intentStates = []outbox.State{outbox.StatePending, outbox.StateSending, outbox.StateLanded, outbox.StateUnresolved, outbox.StateUnexecutable, outbox.StateRetired, outbox.StateCollision}

func newIntentsListCmd(a *app) *cobra.Command {
	var (
		lane, state string
		limit       int
		asJSON      bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List intents by lane and rank",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if state != "" {
				ok := false
				for _, s := range intentStates {
					ok = ok || string(s) == state
				}
				if !ok {
					return tidemark.Invalidf("--state", state, "want one of %v", intentStates)
				}
			}
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			ins, err := db.Outbox().ListIntents(cmd.Context(), outbox.IntentFilter{Lane: lane, State: outbox.State(state), Limit: limit})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, ins)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "LANE\tRANK\tINTENT\tSTATE\tTARGET\tREMOTE\tATTEMPTS\tREASON")
			for _, in := range ins {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\n", in.Lane, in.Rank, in.ID, in.State, short(in.Target, 40),
					orDash(in.RemoteID), in.Attempts, short(in.StateReason, 60))
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&lane, "lane", "", "only this lane")
	f.StringVar(&state, "state", "", "only this state: pending, sending, landed, unresolved, unexecutable, retired, collision")
	limitFlag(f, &limit, 200, "at most this many")
	f.BoolVar(&asJSON, "json", false, "print JSON (an array of intents)")
	return cmd
}

// intentDetail is `intents show --json`: the intent, the evidence of each
// check, and the audit trail.
type intentDetail struct {
	outbox.Intent
	Checks  []outbox.Check  `json:"checks"`
	Actions []outbox.Action `json:"actions"`
}

func newIntentsShowCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show an intent with the evidence of every check and its audit trail",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			st := db.Outbox()
			in, err := st.Intent(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			d := intentDetail{Intent: in}
			if d.Checks, err = st.Checks(cmd.Context(), in.ID); err != nil {
				return err
			}
			if d.Actions, err = st.Actions(cmd.Context(), in.ID); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, d)
			}
			fmt.Fprintf(a.stdout, "intent %s  lane %s  rank %d  %s\n", in.ID, in.Lane, in.Rank, in.State)
			fmt.Fprintf(a.stdout, "target %s  parent %s  body %s…  key %s\n", in.Target, orDash(in.Parent), in.BodySHA256[:12], in.IdempotencyKey)
			if in.RemoteID != "" {
				fmt.Fprintf(a.stdout, "landed as %s\n", in.RemoteID)
			}
			if in.StateReason != "" {
				fmt.Fprintf(a.stdout, "reason: %s\n", in.StateReason)
			}
			for _, c := range d.Checks {
				fmt.Fprintf(a.stdout, "check %s  %s  %s\n", c.At.Local().Format(time.DateTime), c.Verdict, c.Evidence)
			}
			for _, ac := range d.Actions {
				fmt.Fprintf(a.stdout, "%s %s by %s: %s → %s (%s)\n", ac.At.Local().Format(time.DateTime), ac.Action, ac.Actor, ac.From, ac.To, ac.Reason)
			}
			fmt.Fprintf(a.stdout, "\n%s\n", in.Body)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the intent, its checks and actions as JSON")
	return cmd
}

func newIntentsDraftCmd(a *app) *cobra.Command {
	var (
		d      outbox.Draft
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "draft --lane LANE --target TARGET --body TEXT [--parent PARENT]",
		Short: "Draft an intent by hand at the end of its lane",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			in, err := db.Outbox().Draft(cmd.Context(), d)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, in)
			}
			fmt.Fprintf(a.stdout, "drafted intent %s (rank %d) on lane %s\n", in.ID, in.Rank, in.Lane)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&d.Lane, "lane", "", "the lane (required)")
	f.StringVar(&d.Target, "target", "", "the target (required)")
	f.StringVar(&d.Parent, "parent", "", "what the write answers")
	f.StringVar(&d.Body, "body", "", "the body (required)")
	f.BoolVar(&asJSON, "json", false, "print the intent as JSON")
	for _, n := range []string{"lane", "target", "body"} {
		_ = cmd.MarkFlagRequired(n)
	}
	return cmd
}

func newIntentsOperateCmd(a *app, action, short string) *cobra.Command {
	var (
		reason string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   action + " ID --reason TEXT",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			op := db.Outbox().Retire
			if action == "revive" {
				op = db.Outbox().Revive
			}
			in, err := op(cmd.Context(), args[0], actor(), reason)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, in)
			}
			fmt.Fprintf(a.stdout, "intent %s is now %s\n", in.ID, in.State)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit trail (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the intent as JSON")
	_ = cmd.MarkFlagRequired("reason")
	return cmd
}
