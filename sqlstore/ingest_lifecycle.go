package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
)

// Set implements ingest.Store.
func (s *IngestStore) Set(ctx context.Context, ref string, ch ingest.Settings, actor string) (tidemark.Source, error) {
	if ch.Empty() {
		return tidemark.Source{}, tidemark.Invalidf("settings", "", "name one to change: allow_private, interval, retry_budget or config")
	}
	if err := ch.Validate(); err != nil {
		return tidemark.Source{}, err
	}
	return s.operate(ctx, ref, func(tx *sql.Tx, r sourceRow) (err error) {
		allow, interval, budget := r.AllowPrivate, r.Interval.Std(), r.RetryBudget
		if ch.AllowPrivate != nil {
			allow = *ch.AllowPrivate
		}
		if ch.Interval != nil {
			interval = *ch.Interval
		}
		if ch.RetryBudget != nil {
			budget = *ch.RetryBudget
		}
		newConfig := ch.ApplyConfig(r.Config)
		cfg := []byte("{}")
		if len(newConfig) > 0 {
			if cfg, err = json.Marshal(newConfig); err != nil {
				return err
			}
		}
		if err := s.rekey(ctx, tx, r, newConfig, allow); err != nil {
			return err
		}
		now := s.db.Clock.Now()
		// A smaller budget than the attempts already spent takes effect at the
		// window's next failure, which then finds the budget spent. A config
		// change leaves the cursor as it is: it stands for what was read.
		err = exec1(ctx, tx, fmt.Errorf("source %s: %w", r.Name, tidemark.ErrNotFound),
			`UPDATE sources SET allow_private = $1, interval_ms = $2, retry_budget = $3, config = $4, updated_at = $5 WHERE id = $6`,
			boolInt(allow), interval.Milliseconds(), budget, string(cfg), ms(now), r.ID)
		if err != nil {
			return err
		}
		if err := s.insertAction(ctx, tx, r, "set", actor, r.Cursor, r.CursorVersion, ch.Note(r.Source), now); err != nil {
			return err
		}
		// The change may let the workers that could not serve the source.
		if _, err := tx.ExecContext(ctx, `DELETE FROM source_unserved WHERE source_id = $1`, r.ID); err != nil {
			return fmt.Errorf("source %s: clear the workers that could not serve it: %w", r.Name, err)
		}
		return nil
	})
}

// rekey keys the source r anew for a change that leaves it config and
// allow (its kind and location stay), in tx, before the change is
// written: with the store's key function, the one source add keys with.
// The key changes when the stored key is not the one the change leaves,
// and a source without a key (added before keys were kept) takes one
// when the change changes what it watches. A key another source holds is
// refused, naming that source: the caller's transaction then writes
// nothing.
func (s *IngestStore) rekey(ctx context.Context, tx *sql.Tx, r sourceRow, config map[string]string, allow bool) error {
	var stored sql.NullString
	if err := tx.QueryRowContext(ctx, `SELECT source_key FROM sources WHERE id = $1`, r.ID).Scan(&stored); err != nil {
		return fmt.Errorf("source %s: read its key: %w", r.Name, err)
	}
	keyOf := s.db.sourceKey
	if keyOf == nil {
		if stored.Valid && !maps.Equal(config, r.Config) {
			return fmt.Errorf("source %s: a change of config changes its duplicate key, and this store was opened without the rule "+
				"that keys sources (sqlstore.Options.SourceKey): %w", r.Name, tidemark.ErrInvalid)
		}
		return nil
	}
	ns := ingest.NewSource{Name: r.Name, Kind: r.Kind, Location: r.Location, Config: config, AllowPrivate: allow}
	key := keyOf(ns)
	if stored.Valid && stored.String == key {
		return nil
	}
	if !stored.Valid {
		was := ingest.NewSource{Name: r.Name, Kind: r.Kind, Location: r.Location, Config: r.Config, AllowPrivate: r.AllowPrivate}
		if keyOf(was) == key {
			return nil // watches what it watched: no key to take
		}
	}
	holder, err := scanSource(tx.QueryRowContext(ctx, `SELECT `+sourceColumns+` FROM sources WHERE source_key = $1 AND id <> $2`, key, r.ID))
	switch {
	case err == nil:
		return fmt.Errorf("set source %q: %w", r.Name, &ingest.DuplicateError{Source: holder.Source})
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("source %s: look for the holder of its new key: %w", r.Name, err)
	}
	_, err = tx.ExecContext(ctx, `UPDATE sources SET source_key = $1 WHERE id = $2`, key, r.ID)
	if IsUniqueViolation(err) {
		// A source added meanwhile took the key (PostgreSQL, where the
		// look above does not see an add not yet committed).
		if h, herr := scanSource(s.db.db.QueryRowContext(ctx, `SELECT `+sourceColumns+` FROM sources WHERE source_key = $1`, key)); herr == nil {
			return fmt.Errorf("set source %q: %w", r.Name, &ingest.DuplicateError{Source: h.Source})
		}
		return fmt.Errorf("set source %q: another source watches what the change leaves: %w", r.Name, tidemark.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("source %s: key it anew: %w", r.Name, err)
	}
	return nil
}

// RenameSource implements ingest.Store.
func (s *IngestStore) RenameSource(ctx context.Context, ref, name, actor string) (tidemark.Source, error) {
	if err := ingest.CheckName(name); err != nil {
		return tidemark.Source{}, err
	}
	return s.operate(ctx, ref, func(tx *sql.Tx, r sourceRow) (err error) {
		if r.Name == name {
			return tidemark.Invalidf("new name", name, "source %s already has it", r.Name)
		}
		// Names and IDs share one namespace of references (Source finds by
		// either): a name that is another source's ID would shadow it.
		var taken int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sources WHERE (name = $1 OR id = $1) AND id <> $2`, name, r.ID).Scan(&taken); err != nil {
			return err
		}
		if taken > 0 {
			return fmt.Errorf("source %q already exists: %w", name, tidemark.ErrConflict)
		}
		now := s.db.Clock.Now()
		_, err = tx.ExecContext(ctx, `UPDATE sources SET name = $1, updated_at = $2 WHERE id = $3`, name, ms(now), r.ID)
		if IsUniqueViolation(err) {
			return fmt.Errorf("source %q already exists: %w", name, tidemark.ErrConflict)
		}
		if err != nil {
			return err
		}
		// Its pages show the old name: as rendered by no known format,
		// the next publishing round republishes them (Restyle).
		if _, err := tx.ExecContext(ctx, `UPDATE pages SET published_format = '' WHERE source_id = $1 AND published_summary_id IS NOT NULL`, r.ID); err != nil {
			return fmt.Errorf("mark the pages of %s to show its new name: %w", r.Name, err)
		}
		return s.insertAction(ctx, tx, r, "rename", actor, r.Cursor, r.CursorVersion, r.Name+" → "+name, now)
	})
}

// What a source's removal deletes, children first (the foreign keys'
// order). $1 is the source's ID. The search index is cleared per page by
// the dialect before these run.
var removeSourceStatements = []string{
	`DELETE FROM outbox_channels WHERE source_id = $1`,
	`DELETE FROM source_unserved WHERE source_id = $1`,
	`DELETE FROM wiki_objects WHERE source_id = $1`,
	`DELETE FROM pages WHERE source_id = $1`,
	`DELETE FROM summary_lifted_rejections WHERE summary_id IN (SELECT s.id FROM summaries s JOIN events e ON e.id = s.event_id WHERE e.source_id = $1)`,
	`DELETE FROM summaries WHERE event_id IN (SELECT id FROM events WHERE source_id = $1)`,
	`DELETE FROM summary_failures WHERE event_id IN (SELECT id FROM events WHERE source_id = $1)`,
	`DELETE FROM summary_claims WHERE event_id IN (SELECT id FROM events WHERE source_id = $1)`,
	`DELETE FROM event_revisions WHERE event_id IN (SELECT id FROM events WHERE source_id = $1)`,
	`DELETE FROM events WHERE source_id = $1`,
	`DELETE FROM ingest_audit WHERE run_id IN (SELECT id FROM ingest_runs WHERE source_id = $1)`,
	`DELETE FROM ingest_runs WHERE source_id = $1`,
	`DELETE FROM sources WHERE id = $1`,
}

// RemoveSource implements ingest.Store. The audit row is written in the
// same transaction as the deletion, in source_actions, which (since 0017)
// does not reference sources: the removal and every action before it stay
// readable by the source's ID (Actions) and in Removals.
func (s *IngestStore) RemoveSource(ctx context.Context, ref, actor string, force bool) (ingest.Removal, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return ingest.Removal{}, err
	}
	defer tx.Rollback()
	r, err := s.source(ctx, tx, ref, true)
	if err != nil {
		return ingest.Removal{}, err
	}
	rm, err := s.removalCounts(ctx, tx, r.ID)
	if err != nil {
		return rm, err
	}
	rm.Source = r.Source
	if loses := rm.Loses(); loses != "" && !force {
		return rm, tidemark.Inputf("source %s has %s; removing it with %s deletes them: %w", r.Name, loses, tidemark.Input("force"), tidemark.ErrConflict)
	}
	now := s.db.Clock.Now()
	// A run in progress would settle into a source that is gone; an
	// abandoned one is recorded lost first (then deleted with the rest).
	if r, err = s.releaseForOperator(ctx, tx, r, now); err != nil {
		return rm, err
	}
	if rm.IntentsRetired, err = s.db.Outbox().retireOfSource(ctx, tx, r.ID, actor, "its source "+r.Name+" was removed"); err != nil {
		return rm, fmt.Errorf("remove source %s: %w", r.Name, err)
	}
	for _, q := range s.db.Dialect.search.unindexSource {
		if _, err := tx.ExecContext(ctx, q, r.ID); err != nil {
			return rm, fmt.Errorf("remove the pages of %s from search: %w", r.Name, err)
		}
	}
	// Its pages' objects leave the wiki at the next publication, which
	// finds them by this record once their rows are gone.
	if _, err := tx.ExecContext(ctx, `INSERT INTO page_removals (page_id, removed_at)
		SELECT id, $2 FROM pages WHERE source_id = $1`, r.ID, ms(now)); err != nil {
		return rm, fmt.Errorf("remove source %s: record its pages: %w", r.Name, err)
	}
	for _, q := range removeSourceStatements {
		if _, err := tx.ExecContext(ctx, q, r.ID); err != nil {
			return rm, fmt.Errorf("remove source %s: %w", r.Name, err)
		}
	}
	note := "nothing else to delete"
	if loses := rm.Loses(); loses != "" {
		note = "deleted " + loses
	}
	act, err := s.recordAction(ctx, tx, r, "remove", actor, "", r.CursorVersion, note, now)
	if err != nil {
		return rm, err
	}
	if err := tx.Commit(); err != nil {
		return rm, err
	}
	rm.Action = act
	return rm, nil
}

// RemovalOf implements ingest.Store.
func (s *IngestStore) RemovalOf(ctx context.Context, ref string) (ingest.Removal, error) {
	src, err := s.Source(ctx, ref)
	if err != nil {
		return ingest.Removal{}, err
	}
	rm, err := s.removalCounts(ctx, s.db.db, src.ID)
	rm.Source = src
	return rm, err
}

func (s *IngestStore) removalCounts(ctx context.Context, q querier, sourceID string) (ingest.Removal, error) {
	var rm ingest.Removal
	err := q.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM events WHERE source_id = $1),
		(SELECT COUNT(*) FROM event_revisions WHERE event_id IN (SELECT id FROM events WHERE source_id = $1)),
		(SELECT COUNT(*) FROM ingest_runs WHERE source_id = $1),
		(SELECT COUNT(*) FROM pages WHERE source_id = $1),
		(SELECT COUNT(*) FROM pages WHERE source_id = $1 AND published_summary_id IS NOT NULL),
		(SELECT COUNT(*) FROM outbox_channels WHERE source_id = $1),
		(SELECT COUNT(*) FROM outbox_intents WHERE source_id = $1 AND state IN ('pending', 'collision'))`, sourceID).
		Scan(&rm.Events, &rm.Revisions, &rm.Runs, &rm.Pages, &rm.Published, &rm.Channels, &rm.IntentsRetired)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return rm, err
}

func (s *IngestStore) actionsOf(ctx context.Context, sourceID string, limit int) ([]ingest.Action, error) {
	return queryAll(ctx, s.db.db, scanAction, `SELECT `+actionColumns+` FROM source_actions
		WHERE source_id = $1 ORDER BY at DESC, id DESC LIMIT $2`, sourceID, limit)
}

// Removals implements ingest.Store.
func (s *IngestStore) Removals(ctx context.Context, limit int) ([]ingest.Action, error) {
	if limit <= 0 {
		limit = 100
	}
	return queryAll(ctx, s.db.db, scanAction, `SELECT `+actionColumns+` FROM source_actions
		WHERE action = 'remove' ORDER BY at DESC, id DESC LIMIT $1`, limit)
}

// Run implements ingest.Store.
func (s *IngestStore) Run(ctx context.Context, id string) (tidemark.Run, error) {
	return s.run(ctx, id)
}

// Revisions implements ingest.Store.
func (s *IngestStore) Revisions(ctx context.Context, eventID string) ([]ingest.Revision, error) {
	if _, err := s.Event(ctx, eventID); err != nil {
		return nil, err
	}
	return queryAll(ctx, s.db.db, func(sc scanner) (ingest.Revision, error) {
		var rv ingest.Revision
		var at int64
		err := sc.Scan(&rv.EventID, &rv.Revision, &rv.EvidenceHash, &rv.Bytes, &rv.RunID, &at)
		rv.CreatedAt = fromMS(at)
		return rv, err
	}, `SELECT event_id, revision, evidence_hash, LENGTH(evidence), run_id, created_at
		FROM event_revisions WHERE event_id = $1 ORDER BY revision DESC`, eventID)
}
