package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
)

// Delete implements content.Store.
func (s *ContentStore) Delete(ctx context.Context, collection, id string, base int64, a content.Action) (content.Action, error) {
	// On any error nothing was deleted, and no action is returned: a caller
	// shows what was deleted only when something was.
	done, err := s.delete(ctx, collection, id, base, a)
	if err != nil {
		return content.Action{}, err
	}
	return done, nil
}

func (s *ContentStore) delete(ctx context.Context, collection, id string, base int64, a content.Action) (content.Action, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return a, err
	}
	defer tx.Rollback()
	if _, err := s.collection(ctx, tx, collection, s.db.lockShare()); err != nil {
		return a, err
	}
	runs, err := s.openRuns(ctx, tx, collection)
	if err != nil {
		return a, err
	}
	for _, r := range runs {
		return a, fmt.Errorf("document %s/%s: migration %s of %s.%s is %s; documents of %s are not deleted until it ends (resume or abort it): %w",
			collection, id, r.ID, collection, r.Field, r.Status, collection, tidemark.ErrConflict)
	}
	d, err := s.document(ctx, tx, collection, id, s.db.Dialect.LockRow)
	if err != nil {
		return a, err
	}
	if d.Version != base {
		return a, fmt.Errorf("document %s/%s is at version %d; the delete was based on version %d: %w", collection, id, d.Version, base, tidemark.ErrConflict)
	}
	if err := exec1(ctx, tx, errNone, `DELETE FROM documents WHERE collection = $1 AND id = $2 AND version = $3`, collection, id, base); err != nil {
		return a, fmt.Errorf("delete %s/%s: %w", collection, id, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM document_versions WHERE collection = $1 AND document_id = $2`, collection, id); err != nil {
		return a, fmt.Errorf("delete versions of %s/%s: %w", collection, id, err)
	}
	a.Action, a.Collection, a.DocumentID, a.Version, a.Fields = content.ActionDelete, collection, id, d.Version, d.Fields
	if a, err = s.record(ctx, tx, a); err != nil {
		return a, err
	}
	if err := tx.Commit(); err != nil {
		return a, fmt.Errorf("delete %s/%s: commit: %w", collection, id, err)
	}
	return a, nil
}

// Record implements content.Store.
func (s *ContentStore) Record(ctx context.Context, a content.Action) (content.Action, error) {
	return s.record(ctx, s.db.db, a)
}

func (s *ContentStore) record(ctx context.Context, q execer, a content.Action) (content.Action, error) {
	if a.Action == "" || a.Collection == "" || a.Actor == "" {
		return a, fmt.Errorf("audit: an action names what was done, to which collection, and by whom: %w", tidemark.ErrInvalid)
	}
	a.ID, a.At = s.db.IDs.New(), s.db.Clock.Now()
	var fields sql.NullString
	if a.Fields != nil {
		b, err := json.Marshal(a.Fields)
		if err != nil {
			return a, fmt.Errorf("audit %s: %w", a.Action, err)
		}
		fields = sql.NullString{String: string(b), Valid: true}
	}
	forced := 0
	if a.Forced {
		forced = 1
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO content_actions (id, action, collection, document_id, run_id, version, fields, actor, forced, note, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		a.ID, a.Action, a.Collection, a.DocumentID, a.RunID, a.Version, fields, a.Actor, forced, a.Note, ms(a.At)); err != nil {
		return a, fmt.Errorf("audit %s of %s: %w", a.Action, a.Collection, err)
	}
	return a, nil
}

// Actions implements content.Store.
func (s *ContentStore) Actions(ctx context.Context, f content.ActionFilter) ([]content.Action, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	out, err := queryAll(ctx, s.db.db, func(sc scanner) (content.Action, error) {
		var a content.Action
		var fields sql.NullString
		var forced int
		var at int64
		if err := sc.Scan(&a.ID, &a.Action, &a.Collection, &a.DocumentID, &a.RunID, &a.Version, &fields, &a.Actor, &forced, &a.Note, &at); err != nil {
			return a, err
		}
		if fields.Valid {
			if err := json.Unmarshal([]byte(fields.String), &a.Fields); err != nil {
				return a, fmt.Errorf("audit %s: stored fields: %w", a.ID, err)
			}
		}
		a.Forced, a.At = forced != 0, fromMS(at)
		return a, nil
	}, `SELECT id, action, collection, document_id, run_id, version, fields, actor, forced, note, at FROM content_actions
		WHERE ($1 = '' OR collection = $1) AND ($2 = '' OR document_id = $2) AND ($3 = '' OR run_id = $3)
		ORDER BY at DESC, id DESC LIMIT $4`, f.Collection, f.DocumentID, f.RunID, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list the documents' audit: %w", err)
	}
	return out, nil
}
