package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tidemark/tidemark/content"
)

func (a *app) migrator(cmd *cobra.Command) (*content.Migrator, error) {
	p, err := a.pipe(cmd.Context())
	if err != nil {
		return nil, err
	}
	return p.Migrator(), nil
}

// progress returns a progress reporter for a run: a bar on stderr when
// stderr is a terminal, nothing otherwise (so scripts and --json stay clean).
func (a *app) progress(r content.Run) (func(content.Run), func()) {
	f, ok := raw(a.stderr).(*os.File) // the bar draws with escape sequences of its own
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, func() {}
	}
	total := r.Total
	desc := fmt.Sprintf("%s.%s %s→%s", r.Collection, r.Field, r.From, r.To)
	done := r.Walked
	if r.Status == content.RunAborting {
		total, done, desc = r.Converted, r.Restored, "aborting "+desc
	}
	bar := progressbar.NewOptions64(max(total, 1),
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("docs"),
		progressbar.OptionShowIts(),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	_ = bar.Set64(done)
	return func(r content.Run) {
			n := r.Walked
			if r.Status == content.RunAborting || r.Status == content.RunAborted {
				n = r.Restored
			}
			if n > bar.GetMax64() {
				bar.ChangeMax64(n)
			}
			_ = bar.Set64(n)
		}, func() {
			_ = bar.Finish()
		}
}

// drive runs act (m.Drive or m.Abort) on r in the foreground with a
// progress bar and prints the run as it ends.
func (a *app) drive(ctx context.Context, m *content.Migrator, r content.Run, asJSON bool, act func(context.Context, string) (content.Run, error)) error {
	report, finish := a.progress(r)
	m.Progress = report
	out, err := act(ctx, r.ID)
	finish()
	var failed *content.FailedError
	if errors.As(err, &failed) {
		out = failed.Run
	}
	if out.ID == "" {
		return err
	}
	if asJSON {
		if jerr := writeJSON(a.stdout, out); jerr != nil {
			return jerr
		}
	} else {
		printRun(a, out)
	}
	return err
}

func printRun(a *app, r content.Run) {
	switch r.Status {
	case content.RunDone:
		fmt.Fprintf(a.stdout, "migration %s done: %s.%s is now %s (%d documents walked, %d converted, %d batches)\n",
			r.ID, r.Collection, r.Field, r.To, r.Walked, r.Converted, r.Batches)
	case content.RunAborted:
		fmt.Fprintf(a.stdout, "migration %s aborted: %s.%s stays %s (%d documents restored)\n", r.ID, r.Collection, r.Field, r.From, r.Restored)
	case content.RunFailed:
		fmt.Fprintf(a.stdout, "migration %s failed at document %s (value %s): %s\n", r.ID, r.FailedDocumentID, r.FailedValue, r.Error)
	default:
		fmt.Fprintf(a.stdout, "migration %s is %s: %s.%s %s→%s, %d of %d walked\n", r.ID, r.Status, r.Collection, r.Field, r.From, r.To, r.Walked, r.Total)
	}
}

func newSetTypeCmd(a *app) *cobra.Command {
	var (
		batch  int
		detach bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "set-type NAME FIELD TYPE",
		Short: "Change a field's type: a migration run converts every document, then flips the type",
		Long: `Change a field's type. A migration run walks the collection in ID order;
each batch's conversions, their version snapshots and the run's cursor commit
in one transaction, and the type flips with the last document. The run runs
here in the foreground (a progress bar on a terminal); --detach only records
it for ` + "`tidemark run`" + ` to carry out. A value its rule refuses fails the
run: fix the document (docs put) and ` + "`tidemark migrate resume ID`" + `, or
` + "`tidemark migrate abort ID`" + `.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			to, err := content.ParseType(args[2])
			if err != nil {
				return err
			}
			m, err := a.migrator(cmd)
			if err != nil {
				return err
			}
			r, err := m.Start(cmd.Context(), args[0], args[1], to, batch)
			if err != nil {
				return err
			}
			if detach {
				if asJSON {
					return writeJSON(a.stdout, r)
				}
				fmt.Fprintf(a.stdout, "migration %s recorded: %s.%s %s→%s over %d documents; `tidemark run` carries it out\n",
					r.ID, r.Collection, r.Field, r.From, r.To, r.Total)
				return nil
			}
			return a.drive(cmd.Context(), m, r, asJSON, m.Drive)
		},
	}
	cmd.Flags().IntVar(&batch, "batch", content.DefaultBatch, fmt.Sprintf("documents per transaction (1 to %d)", content.MaxBatch))
	cmd.Flags().BoolVar(&detach, "detach", false, "record the run and leave it to `tidemark run`")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON when it ends")
	return cmd
}

func newMigrateCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "migrate", Short: "Inspect, resume and abort field migration runs"}
	cmd.AddCommand(newMigrateListCmd(a), newMigrateShowCmd(a), newMigrateResumeCmd(a), newMigrateAbortCmd(a))
	return cmd
}

func newMigrateListCmd(a *app) *cobra.Command {
	var (
		collection string
		pending    bool
		limit      int
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List migration runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.content(cmd)
			if err != nil {
				return err
			}
			runs, err := st.Runs(cmd.Context(), content.RunFilter{Collection: collection, Pending: pending, Limit: limit})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, runs)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tFIELD\tCHANGE\tSTATUS\tWALKED\tCONVERTED\tRESTORED\tHOLDER\tERROR")
			for _, r := range runs {
				fmt.Fprintf(tw, "%s\t%s.%s\t%s→%s\t%s\t%d/%d\t%d\t%d\t%s\t%s\n", r.ID, r.Collection, r.Field, r.From, r.To, r.Status,
					r.Walked, r.Total, r.Converted, r.Restored, orDash(r.Holder), short(r.Error, 60))
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&collection, "collection", "", "only this collection")
	f.BoolVar(&pending, "pending", false, "only runs a worker could take now (running or aborting, unclaimed or lease expired)")
	limitFlag(f, &limit, 50, "at most this many")
	f.BoolVar(&asJSON, "json", false, "print JSON: an array of runs")
	return cmd
}

func newMigrateShowCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a migration run: its cursor, counts, claim and any failure",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.content(cmd)
			if err != nil {
				return err
			}
			r, err := st.Run(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, r)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
			row("run", r.ID)
			row("field", r.Collection+"."+r.Field)
			row("change", string(r.From)+"→"+string(r.To))
			row("status", string(r.Status))
			row("batch size", fmt.Sprint(r.BatchSize))
			row("cursor", orDash(r.Cursor))
			row("walked", fmt.Sprintf("%d of %d (at start)", r.Walked, r.Total))
			row("converted", fmt.Sprint(r.Converted))
			row("batches", fmt.Sprint(r.Batches))
			if r.Status == content.RunAborting || r.Status == content.RunAborted {
				row("undo cursor", orDash(r.UndoCursor))
				row("restored", fmt.Sprint(r.Restored))
			}
			if r.Holder != "" {
				row("holder", fmt.Sprintf("%s until %s", r.Holder, r.LeaseExpiresAt.Local().Format(time.DateTime)))
			}
			if r.Error != "" {
				row("failed at", r.FailedDocumentID)
				row("value", r.FailedValue)
				row("error", r.Error)
			}
			row("created", r.CreatedAt.Local().Format(time.DateTime))
			if r.FinishedAt != nil {
				row("finished", r.FinishedAt.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	return cmd
}

func newMigrateResumeCmd(a *app) *cobra.Command {
	return newRunActionCmd(a, "resume RUN",
		"Carry a run on from its cursor (a failed run after its document is fixed; a crashed, detached or interrupted abort)", false)
}

func newMigrateAbortCmd(a *app) *cobra.Command {
	return newRunActionCmd(a, "abort RUN",
		"Abort a run: restore every converted document from its snapshot; the type stays as it was", true)
}

// newRunActionCmd is resume and abort: read the run (for the progress
// bar), then drive it in the foreground. Claiming an aborting run carries
// the abort on, so resume drives every open run the same way.
func newRunActionCmd(a *app, use, short string, abort bool) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := a.migrator(cmd)
			if err != nil {
				return err
			}
			r, err := m.Store.Run(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			act := m.Drive
			if abort {
				r.Status, act = content.RunAborting, m.Abort
			}
			return a.drive(cmd.Context(), m, r, asJSON, act)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON when it ends")
	return cmd
}
