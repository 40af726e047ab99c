package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
)

func newRunsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "runs", Short: "Inspect ingest runs"}
	var (
		source, outcome string
		limit           int
		asJSON          bool
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first, with outcome and error",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if outcome != "" && !tidemark.Outcome(outcome).Valid() {
				return tidemark.Invalidf("--outcome", outcome, "want one of items, empty, unreachable, invalid, error, lost")
			}
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			runs, err := db.Ingest().Runs(cmd.Context(), ingest.RunFilter{SourceID: source, Outcome: tidemark.Outcome(outcome), Limit: limit})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, runs)
			}
			printRuns(a.stdout, runs, true)
			return nil
		},
	}
	f := list.Flags()
	f.StringVar(&source, "source", "", "only this source")
	f.StringVar(&outcome, "outcome", "", "only this outcome")
	limitFlag(f, &limit, 50, "at most this many")
	f.BoolVar(&asJSON, "json", false, "print JSON (an array of runs; fields in the README)")
	cmd.AddCommand(list)
	return cmd
}

func printRuns(w io.Writer, runs []tidemark.Run, withSource bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if withSource {
		fmt.Fprint(tw, "SOURCE\t")
	}
	fmt.Fprintln(tw, "STARTED\tRUN\tSTATUS\tOUTCOME\tNEW\tCHANGED\tHOLDER\tERROR")
	for _, r := range runs {
		if withSource {
			fmt.Fprintf(tw, "%s\t", r.SourceName)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", r.StartedAt.Local().Format(time.DateTime), r.ID,
			r.Status, orDash(string(r.Outcome)), r.EventsNew, r.EventsChanged, r.Holder, short(r.Error, 80))
	}
	tw.Flush()
}

func newEventsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "events", Short: "Inspect events and their frozen evidence"}
	var (
		source string
		limit  int
		asJSON bool
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List events, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			evs, err := db.Ingest().Events(cmd.Context(), ingest.EventFilter{SourceID: source, Limit: limit})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, evs)
			}
			printEvents(a.stdout, evs)
			return nil
		},
	}
	f := list.Flags()
	f.StringVar(&source, "source", "", "only this source")
	limitFlag(f, &limit, 50, "at most this many")
	f.BoolVar(&asJSON, "json", false, "print JSON (an array of events; fields in the README)")
	var revision int
	show := &cobra.Command{
		Use:   "evidence EVENT-ID",
		Short: "Print an event's frozen evidence (the exact bytes it was judged on)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			b, hash, err := db.Ingest().Evidence(cmd.Context(), args[0], revision)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "sha256 %s\n", hash)
			_, err = raw(a.stdout).Write(b) // the exact bytes, as documented
			return err
		},
	}
	show.Flags().IntVar(&revision, "revision", 0, "an earlier revision (default: the current one)")
	cmd.AddCommand(list, show)
	return cmd
}

func printEvents(w io.Writer, evs []tidemark.Event) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OCCURRED\tEVENT\tREV\tTITLE")
	for _, e := range evs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", e.OccurredAt.Local().Format(time.DateTime), e.ID, e.Revision, short(e.Title, 72))
	}
	tw.Flush()
}
