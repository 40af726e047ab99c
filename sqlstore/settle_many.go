package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/ingest"
)

var _ ingest.BatchSettler = (*IngestStore)(nil)

// settleManyPG settles many runs that read nothing in one statement: every
// row's source update is fenced on its own claim (token, cursor version,
// run), and only the runs whose fence held are updated and audited. The
// result names every source whose fence held; a source whose run row was
// not active fails the whole statement, so it is written all or nothing
// even outside a transaction.
const settleManyPG = `WITH req AS (
	SELECT * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[])
		AS r(source_id, token, version, run_id, cursor_after, next_due, holder, cursor_before)
), src AS (
	UPDATE sources s SET cursor = req.cursor_after, cursor_version = s.cursor_version + 1, claim_token = NULL,
		claim_holder = NULL, claim_run_id = NULL, lease_expires_at = NULL, window_attempts = 0, failing_since = NULL,
		next_due_at = req.next_due, last_outcome = 'empty', last_error = '', last_run_at = $1, updated_at = $1
	FROM req
	WHERE s.id = req.source_id AND s.claim_token = req.token AND s.cursor_version = req.version AND s.claim_run_id = req.run_id
	RETURNING s.id, s.name
), run AS (
	UPDATE ingest_runs r SET status = 'settled', outcome = 'empty', cursor_after = req.cursor_after,
		declared = 0, admitted = 0, events_new = 0, events_changed = 0, finished_at = $1
	FROM req JOIN src ON src.id = req.source_id
	WHERE r.id = req.run_id AND r.token = req.token AND r.source_id = req.source_id AND r.status = 'active'
	RETURNING r.id
), audit AS (
	INSERT INTO ingest_audit (run_id, source_id, holder, outcome, cursor_before, cursor_after, cursor_version_before,
		cursor_version_after, events_new, events_changed, at)
	SELECT req.run_id, req.source_id, req.holder, 'empty', req.cursor_before, req.cursor_after, req.version, req.version + 1, 0, 0, $1
	FROM req JOIN run ON run.id = req.run_id
	RETURNING run_id
), cleared AS (
	-- a settled run shows its holder can serve the source
	DELETE FROM source_unserved u USING req JOIN src ON src.id = req.source_id
	WHERE u.source_id = req.source_id AND u.holder = req.holder
)
SELECT src.id, CASE WHEN (SELECT COUNT(*) FROM run) = (SELECT COUNT(*) FROM src)
		AND (SELECT COUNT(*) FROM audit) = (SELECT COUNT(*) FROM src) THEN src.name
	-- a source settled without its run or its audit row: fail the statement,
	-- so none of it stays
	ELSE CAST('source ' || src.id || ' settled without its run' AS integer)::text END
FROM src`

// SettleMany implements ingest.BatchSettler: runs that finished together
// settle in one transaction, each fenced on its own claim, so a stale one
// fails alone (tidemark.ErrStaleClaim) while the others settle. Only
// settlements that admitted no items are taken; anything the batch cannot
// decide row by row (an error of the statement, a run whose source settled
// but whose run row did not) rolls the batch back and settles each on its
// own.
func (s *IngestStore) SettleMany(ctx context.Context, cs []tidemark.Claim, sts []ingest.Settlement) ([]ingest.SettleReport, []error) {
	reps, errs := make([]ingest.SettleReport, len(cs)), make([]error, len(cs))
	for i := range sts {
		if len(sts[i].Items) > 0 || sts[i].Declared > 0 || len(sts[i].Notes) > 0 {
			errs[i] = tidemark.Invalidf("batched settlement", cs[i].RunID, "takes only runs that admitted and noted nothing")
		}
	}
	names, err := s.settleMany(ctx, cs, sts, errs)
	if err != nil {
		// Settle each on its own: the batch wrote nothing.
		for i := range cs {
			if errs[i] == nil {
				reps[i], errs[i] = s.Settle(ctx, cs[i], sts[i])
			}
		}
		return reps, errs
	}
	now := fromMS(ms(s.db.Clock.Now()))
	for i, c := range cs {
		if errs[i] != nil {
			continue
		}
		name, ok := names[c.SourceID]
		if !ok {
			errs[i] = fmt.Errorf("settle run %s (cursor version %d): %w", c.RunID, c.CursorVersion, tidemark.ErrStaleClaim)
			continue
		}
		finished := now
		reps[i].Run = tidemark.Run{
			ID: c.RunID, SourceID: c.SourceID, SourceName: name, Holder: c.Holder, Attempt: c.Attempt,
			CursorVersion: c.CursorVersion, CursorBefore: c.Cursor, CursorAfter: sts[i].Cursor,
			Status: tidemark.RunSettled, Outcome: tidemark.OutcomeEmpty, StartedAt: fromMS(ms(c.StartedAt)), FinishedAt: &finished,
		}
	}
	return reps, errs
}

// settleMany writes the batch in one transaction and returns the names of
// the sources whose fence held. An error means nothing was written.
func (s *IngestStore) settleMany(ctx context.Context, cs []tidemark.Claim, sts []ingest.Settlement, errs []error) (map[string]string, error) {
	if s.db.Dialect.ModifyingCTE && !failpoint.Active() {
		// One statement is its own transaction: no BEGIN, no COMMIT round
		// trip. With failpoints armed, the explicit transaction below keeps
		// every settlement boundary in its place.
		return s.settleManyPG(ctx, s.db.db, cs, sts, errs)
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	now := s.db.Clock.Now()
	if err := fpSettleAfterEvents.Hit(ctx); err != nil {
		return nil, err
	}
	names := map[string]string{}
	if s.db.Dialect.ModifyingCTE {
		if names, err = s.settleManyPG(ctx, tx, cs, sts, errs); err != nil {
			return nil, err
		}
	} else {
		for i, c := range cs {
			if errs[i] != nil {
				continue
			}
			name, err := s.finish(ctx, tx, c, finish{
				sourceSet: `cursor = $2, cursor_version = cursor_version + 1, claim_token = NULL, claim_holder = NULL,
			claim_run_id = NULL, lease_expires_at = NULL, window_attempts = 0, failing_since = NULL,
			next_due_at = $3, last_outcome = $4, last_error = '', last_run_at = $1, updated_at = $1`,
				runSet: `status = 'settled', outcome = $4, cursor_after = $2, declared = $5, admitted = $6,
			events_new = $7, events_changed = $8, finished_at = $1`,
				cursorAfter: `$2`, versionAfter: c.CursorVersion + 1,
				args:    []any{sts[i].Cursor, ms(sts[i].NextDueAt), string(tidemark.OutcomeEmpty), 0, 0, 0, 0},
				outcome: tidemark.OutcomeEmpty, now: now, served: true,
			})
			switch {
			case err == nil:
				names[c.SourceID] = name
			case errors.Is(err, tidemark.ErrStaleClaim) && !errors.Is(err, errRunNotActive):
				// This one's fence failed and it wrote nothing; the
				// others go on.
			default:
				return nil, err
			}
		}
	}
	if err := fpSettleBeforeCommit.Hit(ctx); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("settle %d runs: commit: %w", len(cs), err)
	}
	if err := fpSettleAfterCommit.Hit(ctx); err != nil {
		return nil, err
	}
	return names, nil
}

// settleManyPG runs the batch's one statement on q (the pool: its own
// transaction; or the caller's). An error means it wrote nothing.
func (s *IngestStore) settleManyPG(ctx context.Context, q rowsQueryer, cs []tidemark.Claim, sts []ingest.Settlement, errs []error) (map[string]string, error) {
	var src, token, run, after, holder, before []string
	var version, due []int64
	for i, c := range cs {
		if errs[i] != nil {
			continue
		}
		src, token, version, run = append(src, c.SourceID), append(token, c.Token), append(version, c.CursorVersion), append(run, c.RunID)
		after, due, holder, before = append(after, sts[i].Cursor), append(due, ms(sts[i].NextDueAt)), append(holder, c.Holder), append(before, c.Cursor)
	}
	rows, err := q.QueryContext(ctx, settleManyPG, ms(s.db.Clock.Now()), src, token, version, run, after, due, holder, before)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	names := map[string]string{}
	for rows.Next() {
		var id string
		var name sql.NullString
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		names[id] = name.String
	}
	return names, rows.Err()
}
