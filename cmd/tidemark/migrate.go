package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/internal/terminal"
	"github.com/tidemark/tidemark/pipeline"
)

// progress returns a progress reporter for a run, drawn on stderr when it
// is a terminal (so scripts and --json stay clean), and its finish.
func (a *app) progress() (func(content.Run), func()) {
	report, finish := terminal.Progress(a.stderr, "docs")
	if report == nil {
		return nil, finish
	}
	return func(r content.Run) { report(r.Progress()) }, finish
}

// driven is a run command: claim (claim) or record the run, then carry it
// out here in the foreground with a progress bar, unless detach.
func driven(a *app, use, short string, nargs int, detach *bool, claim func(*cobra.Command, *pipeline.Pipeline, []string) (content.Run, error)) *cobra.Command {
	return opCmd(a, use, short, cobra.ExactArgs(nargs), func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
		r, err := claim(cmd, p, args)
		if err == nil && (detach == nil || !*detach) {
			report, finish := a.progress()
			r, err = p.DriveMigration(cmd.Context(), r.ID, report)
			finish()
		}
		if r.Status == content.RunRunning && detach != nil && *detach {
			return sayShown(r, err, "migration %s recorded: %s.%s %s→%s over %d documents; `tidemark run` carries it out", r.ID, r.Collection, r.Field, r.From, r.To, r.Total)
		}
		return sayShown(r, err, "%s", r.Describe())
	})
}

func newSetTypeCmd(a *app) *cobra.Command {
	var batch int
	var detach bool
	cmd := driven(a, "set-type NAME FIELD TYPE", "Change a field's type: a migration run converts every document, then flips the type", 3, &detach,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (content.Run, error) {
			return p.StartMigration(cmd.Context(), actor(), args[0], args[1], args[2], batch)
		})
	cmd.Long = `Change a field's type. A migration run walks the collection in ID order;
each batch's conversions, their version snapshots and the run's cursor commit
in one transaction, and the type flips with the last document. The run runs
here in the foreground (a progress bar on a terminal); --detach only records
it for ` + "`tidemark run`" + ` to carry out. A value its rule refuses fails the
run: fix the document (docs put) and ` + "`tidemark migrate resume ID`" + `, or
` + "`tidemark migrate abort ID`" + `.`
	cmd.Flags().IntVar(&batch, "batch", content.DefaultBatch, fmt.Sprintf("documents per transaction (1 to %d)", content.MaxBatch))
	cmd.Flags().BoolVar(&detach, "detach", false, "record the run and leave it to `tidemark run`")
	return cmd
}

func newMigrateCmd(a *app) *cobra.Command {
	var f content.RunFilter
	list := opCmd(a, "list", "List migration runs, newest first", cobra.NoArgs, func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
		return shown(p.MigrationRuns(cmd.Context(), f))
	})
	list.Flags().StringVar(&f.Collection, "collection", "", "only this collection")
	list.Flags().BoolVar(&f.Pending, "pending", false, "only runs a worker could take now (running or aborting, unclaimed or lease expired)")
	limitFlag(list.Flags(), &f.Limit, 50, "at most this many")
	show := opCmd(a, "show RUN", "Show a migration run: its cursor, counts, claim and any failure", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			return shown(p.MigrationRun(cmd.Context(), args[0]))
		})
	resume := driven(a, "resume RUN", "Carry a run on from its cursor (a failed run after its document is fixed; a crashed, detached or interrupted abort)", 1, nil,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (content.Run, error) {
			return p.ResumeMigration(cmd.Context(), actor(), args[0])
		})
	abort := driven(a, "abort RUN", "Abort a run: restore every converted document from its snapshot; the type stays as it was", 1, nil,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (content.Run, error) {
			return p.AbortMigration(cmd.Context(), actor(), args[0])
		})
	cmd := &cobra.Command{Use: "migrate", Short: "Inspect, resume and abort field migration runs (audited)"}
	cmd.AddCommand(list, show, resume, abort)
	return cmd
}
