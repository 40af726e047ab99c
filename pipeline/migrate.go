package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
)

// MigrationRuns lists field migration runs, newest first.
func (p *Pipeline) MigrationRuns(ctx context.Context, f content.RunFilter) (content.Runs, error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.Runs{}, err
	}
	return p.db.Content().Runs(ctx, f)
}

// MigrationRun returns one field migration run.
func (p *Pipeline) MigrationRun(ctx context.Context, id string) (content.Run, error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.Run{}, err
	}
	return p.db.Content().Run(ctx, id)
}

// StartMigration records a run that changes collection.field to type to
// (batch documents per transaction, 1 to content.MaxBatch: a face that
// was given none passes content.DefaultBatch, so a batch of 0 is refused
// as any other out of range), audited with actor. It does not carry the
// run out: DriveMigration does, or the daemon.
func (p *Pipeline) StartMigration(ctx context.Context, actor, collection, field, to string, batch int) (content.Run, error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.Run{}, err
	}
	if batch < 1 || batch > content.MaxBatch {
		return content.Run{}, tidemark.Invalidf("batch", fmt.Sprint(batch), "want 1 to %d documents per transaction", content.MaxBatch)
	}
	t, err := content.ParseType(to)
	if err != nil {
		return content.Run{}, err
	}
	r, err := p.Migrator().Start(ctx, collection, field, t, batch)
	if err != nil {
		return r, err
	}
	return r, p.audit(ctx, content.ActionMigrationStart, actor, r)
}

// ResumeMigration claims an unfinished run for this worker (a failed run
// becomes running again, an interrupted abort carries on), audited with
// actor; DriveMigration then carries it out.
func (p *Pipeline) ResumeMigration(ctx context.Context, actor, id string) (content.Run, error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.Run{}, err
	}
	return p.claimMigration(ctx, actor, id, false)
}

// AbortMigration turns a running or failed run into an aborting one
// claimed by this worker, audited with actor; DriveMigration then restores
// every document it converted. The field's type stays as it was.
func (p *Pipeline) AbortMigration(ctx context.Context, actor, id string) (content.Run, error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.Run{}, err
	}
	return p.claimMigration(ctx, actor, id, true)
}

func (p *Pipeline) claimMigration(ctx context.Context, actor, id string, abort bool) (content.Run, error) {
	m := p.Migrator()
	r, err := m.Store.Run(ctx, id)
	if err != nil {
		return r, err
	}
	if !r.Status.Open() {
		return r, fmt.Errorf("migration %s is %s: nothing to resume or abort: %w", r.ID, r.Status, tidemark.ErrConflict)
	}
	action := content.ActionMigrationResume
	if abort {
		action = content.ActionMigrationAbort
		_, err = m.Store.AbortRun(ctx, id, m.Holder, content.DefaultLeaseTTL)
	} else {
		_, err = m.Store.ClaimRun(ctx, id, m.Holder, content.DefaultLeaseTTL)
	}
	if err != nil {
		return r, fmt.Errorf("migration %s: %w", id, err)
	}
	if r, err = m.Store.Run(ctx, id); err != nil {
		return r, err
	}
	return r, p.audit(ctx, action, actor, r)
}

func (p *Pipeline) audit(ctx context.Context, action, actor string, r content.Run) error {
	_, err := p.db.Content().Record(ctx, content.Action{Action: action, Collection: r.Collection, RunID: r.ID, Actor: actor,
		Note: fmt.Sprintf("%s %s→%s", r.Field, r.From, r.To)})
	return err
}

// DriveMigration carries a run out in the foreground, batch by batch, to
// its end: done, aborted, or failed on a value its rule refuses (then the
// run is returned with a *content.FailedError). progress, if set, is told
// the run as it starts and after every batch.
func (p *Pipeline) DriveMigration(ctx context.Context, id string, progress func(content.Run)) (content.Run, error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.Run{}, err
	}
	m := p.Migrator()
	r, err := m.Store.Run(ctx, id)
	if err != nil {
		return r, err
	}
	if progress != nil {
		progress(r)
	}
	m.Progress = progress
	out, err := m.Drive(ctx, id)
	var failed *content.FailedError
	if errors.As(err, &failed) {
		out = failed.Run
	}
	return out, err
}
