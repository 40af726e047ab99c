package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"modernc.org/sqlite"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/internal/fieldtext"
)

const migrationRunColumns = `id, collection, field, from_type, to_type, status, batch_size, cursor, undo_cursor,
	total, walked, converted, restored, batches, error, failed_document_id, failed_value,
	claim_token, claim_holder, lease_expires_at, created_at, updated_at, finished_at`

type runRow struct {
	content.Run
	token sql.NullString
}

func scanRunRow(sc scanner) (runRow, error) {
	var (
		r                runRow
		holder           sql.NullString
		lease, finished  sql.NullInt64
		created, updated int64
		from, to, status string
	)
	err := sc.Scan(&r.ID, &r.Collection, &r.Field, &from, &to, &status, &r.BatchSize, &r.Cursor, &r.UndoCursor,
		&r.Total, &r.Walked, &r.Converted, &r.Restored, &r.Batches, &r.Error, &r.FailedDocumentID, &r.FailedValue,
		&r.token, &holder, &lease, &created, &updated, &finished)
	if err != nil {
		return r, err
	}
	r.From, r.To, r.Status = content.FieldType(from), content.FieldType(to), content.RunStatus(status)
	r.Holder = holder.String
	r.LeaseExpiresAt = fromNullMS(lease)
	r.CreatedAt, r.UpdatedAt = fromMS(created), fromMS(updated)
	r.FinishedAt = fromNullMS(finished)
	return r, nil
}

func (s *ContentStore) run(ctx context.Context, q queryer, id, lock string) (runRow, error) {
	r, err := scanRunRow(q.QueryRowContext(ctx, `SELECT `+migrationRunColumns+` FROM field_migrations WHERE id = $1`+lock, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("migration run %q: %w", id, tidemark.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("migration run %s: %w", id, err)
	}
	return r, nil
}

// Run implements content.Store.
func (s *ContentStore) Run(ctx context.Context, id string) (content.Run, error) {
	r, err := s.run(ctx, s.db.db, id, "")
	return r.Run, err
}

// Runs implements content.Store.
func (s *ContentStore) Runs(ctx context.Context, f content.RunFilter) ([]content.Run, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q := `SELECT ` + migrationRunColumns + ` FROM field_migrations WHERE ($1 = '' OR collection = $1)`
	args := []any{f.Collection}
	now := s.db.Clock.Now()
	if f.Pending {
		// Open runs are few (one per field being changed): every one is
		// read, and a claim whose holder is a process of this host that
		// is gone counts as none (ClaimRun takes it over).
		q += ` AND status IN ('running', 'aborting') ORDER BY created_at, id`
	} else {
		if f.BeforeID != "" {
			q += ` AND (created_at < $3 OR (created_at = $3 AND id < $4))`
		}
		q += ` ORDER BY created_at DESC, id DESC LIMIT $2`
		args = append(args, f.Limit)
		if f.BeforeID != "" {
			args = append(args, ms(f.BeforeCreatedAt), f.BeforeID)
		}
	}
	rows, err := queryAll(ctx, s.db.db, scanRunRow, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list migration runs: %w", err)
	}
	if f.Pending {
		rows = slices.DeleteFunc(rows, func(r runRow) bool {
			return r.token.Valid && r.Held(now) && !s.db.liveness.Gone(r.Holder)
		})
		rows = rows[:min(len(rows), f.Limit)]
	}
	out := make([]content.Run, len(rows)) // a JSON array, not null
	for i, r := range rows {
		out[i] = r.Run
	}
	return out, nil
}

// StartRun implements content.Store.
func (s *ContentStore) StartRun(ctx context.Context, collection, field string, to content.FieldType, batch int) (content.Run, error) {
	if batch < 1 || batch > content.MaxBatch {
		return content.Run{}, tidemark.Invalidf("batch size", fmt.Sprint(batch), "want 1 to %d", content.MaxBatch)
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return content.Run{}, err
	}
	defer tx.Rollback()
	c, err := s.collection(ctx, tx, collection, s.db.Dialect.LockRow)
	if err != nil {
		return content.Run{}, err
	}
	if err := content.CheckChange(c, field, to); err != nil {
		return content.Run{}, err
	}
	// The collection row is locked, so no other run can start between this
	// read and the insert; the unique index is the backstop. (Reading after
	// a failed insert would not work: PostgreSQL refuses every statement of
	// a transaction after an error.)
	open, err := s.openRuns(ctx, tx, collection)
	if err != nil {
		return content.Run{}, err
	}
	if o, ok := open[field]; ok {
		return content.Run{}, fmt.Errorf("field %s.%s already has an unfinished migration run %s (%s); resume or abort it first: %w",
			collection, field, o.ID, o.Status, tidemark.ErrConflict)
	}
	f, _ := c.Field(field)
	var total int64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM documents WHERE collection = $1`, collection).Scan(&total); err != nil {
		return content.Run{}, err
	}
	now := s.db.Clock.Now()
	id := s.db.IDs.New()
	_, err = tx.ExecContext(ctx, `INSERT INTO field_migrations (id, collection, field, from_type, to_type, status, batch_size, total, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, 'running', $6, $7, $8, $8)`, id, collection, field, string(f.Type), string(to), batch, total, ms(now))
	if IsUniqueViolation(err) {
		return content.Run{}, fmt.Errorf("field %s.%s already has an unfinished migration run; resume or abort it first: %w", collection, field, tidemark.ErrConflict)
	}
	if err != nil {
		return content.Run{}, fmt.Errorf("start migration of %s.%s: %w", collection, field, err)
	}
	if err := tx.Commit(); err != nil {
		return content.Run{}, err
	}
	if err := fpMigrateStartAfterCommit.Hit(ctx); err != nil {
		return content.Run{}, err
	}
	return s.Run(ctx, id)
}

// ClaimRun implements content.Store.
func (s *ContentStore) ClaimRun(ctx context.Context, runID, holder string, ttl time.Duration) (content.RunClaim, error) {
	return s.claim(ctx, runID, holder, ttl, false)
}

// AbortRun implements content.Store.
func (s *ContentStore) AbortRun(ctx context.Context, runID, holder string, ttl time.Duration) (content.RunClaim, error) {
	return s.claim(ctx, runID, holder, ttl, true)
}

// claim admits holder to the run: a running or aborting run keeps its
// status, a failed run is resumed (running) or, when abort is set, any open
// run becomes aborting. The update states the fence in its WHERE clause:
// no claim, an expired lease, or the same holder re-entering.
func (s *ContentStore) claim(ctx context.Context, runID, holder string, ttl time.Duration, abort bool) (content.RunClaim, error) {
	if holder == "" || ttl <= 0 {
		return content.RunClaim{}, tidemark.Invalidf("claim", holder, "needs a holder identity and a positive lease")
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return content.RunClaim{}, err
	}
	defer tx.Rollback()
	r, err := s.run(ctx, tx, runID, s.db.Dialect.LockRow)
	if err != nil {
		return content.RunClaim{}, err
	}
	if !r.Status.Open() {
		return content.RunClaim{}, fmt.Errorf("migration run %s is %s; nothing to resume or abort: %w", r.ID, r.Status, tidemark.ErrConflict)
	}
	now := s.db.Clock.Now()
	// A claim whose holder is a process of this host that is gone (a
	// daemon killed while it drove the run) is taken over at once, as
	// source claims are (ingest.Liveness): its token is fenced off.
	var goneToken string
	if r.token.Valid && r.Holder != holder && r.Held(now) {
		if !s.db.liveness.Gone(r.Holder) {
			return content.RunClaim{}, fmt.Errorf("migration run %s is held by %s until %s (pass --holder %s if that worker is gone): %w",
				r.ID, r.Holder, fieldtext.Day(*r.LeaseExpiresAt), r.Holder, tidemark.ErrClaimHeld)
		}
		goneToken = r.token.String
	}
	status := r.Status
	switch {
	case abort:
		status = content.RunAborting
	case r.Status == content.RunFailed:
		status = content.RunRunning
	}
	c := content.RunClaim{RunID: r.ID, Token: s.db.IDs.New(), Holder: holder, LeaseExpiresAt: now.Add(ttl)}
	err = exec1(ctx, tx, fmt.Errorf("migration run %s changed hands while being claimed: %w", r.ID, tidemark.ErrClaimHeld),
		`UPDATE field_migrations SET status = $1, claim_token = $2, claim_holder = $3, lease_expires_at = $4, updated_at = $5,
			error = CASE WHEN $1 = 'running' THEN '' ELSE error END,
			failed_document_id = CASE WHEN $1 = 'running' THEN '' ELSE failed_document_id END,
			failed_value = CASE WHEN $1 = 'running' THEN '' ELSE failed_value END
		WHERE id = $6 AND status = $7 AND (claim_token IS NULL OR claim_holder = $3 OR lease_expires_at <= $5 OR claim_token = $8)`,
		string(status), c.Token, holder, ms(c.LeaseExpiresAt), ms(now), r.ID, string(r.Status), goneToken)
	if err != nil {
		return content.RunClaim{}, err
	}
	if err := tx.Commit(); err != nil {
		return content.RunClaim{}, fmt.Errorf("claim migration run %s: commit: %w", r.ID, err)
	}
	if err := fpMigrateClaimAfterCommit.Hit(ctx); err != nil {
		return content.RunClaim{}, err
	}
	return c, nil
}

// ReleaseRun implements content.Store.
func (s *ContentStore) ReleaseRun(ctx context.Context, c content.RunClaim) error {
	_, err := s.db.w.ExecContext(ctx, `UPDATE field_migrations SET claim_token = NULL, claim_holder = NULL, lease_expires_at = NULL, updated_at = $1
		WHERE id = $2 AND claim_token = $3`, ms(s.db.Clock.Now()), c.RunID, c.Token)
	return err
}

// Step implements content.Store.
func (s *ContentStore) Step(ctx context.Context, c content.RunClaim, ttl time.Duration) (content.Run, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return content.Run{}, err
	}
	defer tx.Rollback()
	// Lock order, as every document write: the collection, then the run.
	// A batch takes the collection alone, so no write interleaves with it.
	var collection string
	if err := tx.QueryRowContext(ctx, `SELECT collection FROM field_migrations WHERE id = $1`, c.RunID).Scan(&collection); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return content.Run{}, fmt.Errorf("migration run %q: %w", c.RunID, tidemark.ErrNotFound)
		}
		return content.Run{}, err
	}
	coll, err := s.collection(ctx, tx, collection, s.db.Dialect.LockRow)
	if err != nil {
		return content.Run{}, err
	}
	r, err := s.run(ctx, tx, c.RunID, s.db.Dialect.LockRow)
	if err != nil {
		return content.Run{}, err
	}
	if !r.token.Valid || r.token.String != c.Token || !(r.Status == content.RunRunning || r.Status == content.RunAborting) {
		return content.Run{}, fmt.Errorf("migration run %s: the claim of %s is no longer current (run %s, held by %q): %w",
			r.ID, c.Holder, r.Status, r.Holder, tidemark.ErrStaleClaim)
	}
	now := s.db.Clock.Now()
	lease := now.Add(ttl)
	if r.Status == content.RunAborting {
		err = s.restoreBatch(ctx, tx, coll, r, now, lease)
	} else {
		err = s.convertBatch(ctx, tx, coll, r, now, lease)
	}
	if err != nil {
		return content.Run{}, err
	}
	if err := tx.Commit(); err != nil {
		return content.Run{}, fmt.Errorf("migration run %s: commit batch: %w", r.ID, err)
	}
	if err := fpMigrateAfterCommit.Hit(ctx); err != nil {
		return content.Run{}, err
	}
	return s.Run(ctx, c.RunID)
}

// anyRow reports whether query, a SELECT of one text column, returns a row.
func anyRow(ctx context.Context, q querier, query string, args ...any) (bool, error) {
	var v string
	err := q.QueryRowContext(ctx, query, args...).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// batchDoc is a document a batch read: its stored fields as they are
// (unless the batch was read for its bounds only), and their size.
type batchDoc struct {
	id      string
	version int64
	fields  []byte
	size    int
}

// fieldSpan finds field's value in a document's stored fields, a JSON
// object, checking the whole object as it goes: the value, nil when the
// field is absent, and where it lies, so a conversion can put its output in
// its place without decoding and encoding every other value.
func fieldSpan(dec *jsontext.Decoder, fields []byte, field string) (v []byte, start, end int, err error) {
	dec.Reset(bytes.NewBuffer(fields))
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, 0, 0, err
	}
	if tok.Kind() != '{' {
		return nil, 0, 0, fmt.Errorf("a JSON %s, not an object", tok.Kind())
	}
	for {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, 0, 0, err
		}
		if name.Kind() == '}' {
			break
		}
		if name.String() != field {
			if err := dec.SkipValue(); err != nil {
				return nil, 0, 0, err
			}
			continue
		}
		val, err := dec.ReadValue()
		if err != nil {
			return nil, 0, 0, err
		}
		end = int(dec.InputOffset())
		start = end - len(val)
		v = fields[start:end:end]
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, 0, 0, fmt.Errorf("data after the object (%v)", err)
	}
	return v, start, end, nil
}

// readBatch reads the documents after the run's cursor, in ID order: at
// most the run's batch size, and no more stored fields than
// content.MaxBatchBytes (at least one document, however large). last
// reports that no document follows them. No row locks: every document write
// takes the collection's row first (a share lock; a batch holds it
// exclusively), and each update is conditional on the version read here
// besides.
//
// An in-process database (SQLite) streams the rows and stops where the
// budget ends. Over a connection the database applies the budget, so a
// batch cut short transfers no document it does not use (a result left
// unread would still be sent); it counts the documents past the cursor,
// one more than the batch when the collection goes on, to tell whether
// this batch is the last.
//
// Without withFields, the documents' fields are not read out: the batch's
// bounds only (convertInSQL converts it inside the database).
func (s *ContentStore) readBatch(ctx context.Context, tx *sql.Tx, collection string, r runRow, withFields bool) ([]batchDoc, bool, error) {
	local := s.db.Dialect.RowAtATime
	fields := "fields"
	if !withFields {
		fields = "NULL"
	}
	query := `SELECT id, version, ` + fields + `, OCTET_LENGTH(fields), 0 FROM documents WHERE collection = $1 AND id > $2 ORDER BY id LIMIT $3`
	args := []any{collection, r.Cursor, r.BatchSize + 1}
	if !local {
		query = `SELECT id, version, ` + fields + `, OCTET_LENGTH(fields), n FROM (
			SELECT id, version, fields, COUNT(*) OVER () AS n, SUM(OCTET_LENGTH(fields)) OVER (ORDER BY id) - OCTET_LENGTH(fields) AS before
			FROM (SELECT id, version, fields FROM documents WHERE collection = $1 AND id > $2 ORDER BY id LIMIT $3) AS l
		) AS b WHERE before < $4 ORDER BY id LIMIT $5`
		args = append(args, content.MaxBatchBytes, r.BatchSize)
	}
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, false, fmt.Errorf("migration run %s: read batch: %w", r.ID, err)
	}
	defer rows.Close()
	docs := make([]batchDoc, 0, min(r.BatchSize, 1024))
	var after, size int
	for rows.Next() {
		if local && (len(docs) == r.BatchSize || size >= content.MaxBatchBytes) {
			return docs, false, nil // the batch is full; a document follows
		}
		var d batchDoc
		if err := rows.Scan(&d.id, &d.version, &d.fields, &d.size, &after); err != nil {
			return nil, false, fmt.Errorf("migration run %s: read batch: %w", r.ID, err)
		}
		size += d.size
		docs = append(docs, d)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("migration run %s: read batch: %w", r.ID, err)
	}
	return docs, local || after == len(docs), nil
}

// convertBatch converts the next batch of documents after the run's
// cursor. The conversions, their snapshots, the cursor's advance to the
// last document converted and — when no document is left — the type flip
// are written in tx, together. A value the rule refuses ends the batch
// there: the documents before it commit with the cursor just before it, and
// the run fails, naming the document, the value and the rule.
func (s *ContentStore) convertBatch(ctx context.Context, tx *sql.Tx, coll content.Collection, r runRow, now, lease time.Time) error {
	rule, ok := content.RuleFor(r.From, r.To)
	if !ok {
		return fmt.Errorf("migration run %s: no rule %s→%s: %w", r.ID, r.From, r.To, tidemark.ErrInvalid)
	}
	if f, ok := coll.Field(r.Field); !ok || f.Type != r.From {
		return fmt.Errorf("%w: migration run %s: field %s.%s is %s, the run converts from %s", tidemark.ErrUnconfirmed, r.ID, coll.Name, r.Field, f.Type, r.From)
	}
	if s.db.Dialect.ConvertInSQL {
		done, err := s.convertInSQL(ctx, tx, coll, r, now, lease)
		if done || err != nil {
			return err
		}
	}
	docs, last, err := s.readBatch(ctx, tx, coll.Name, r, true)
	if err != nil {
		return err
	}
	var (
		ws      []docWrite
		cursor  = r.Cursor
		walked  int64
		failure *content.RuleError
		failed  string
		dec     jsontext.Decoder
	)
	for _, d := range docs {
		enc, err := convertFields(&dec, d.fields, r.Field, rule)
		if errors.As(err, &failure) {
			failed = d.id
			break
		}
		if err != nil {
			return fmt.Errorf("migration run %s: document %s: stored fields: %w", r.ID, d.id, err)
		}
		if enc != nil {
			ws = append(ws, docWrite{ID: d.id, Base: d.version, Encoded: enc, Reason: content.ReasonMigrate, RunID: r.ID})
		}
		walked++
		cursor = d.id
	}
	advance := func(ctx context.Context, tx *sql.Tx) error {
		return s.advanceRun(ctx, tx, r, cursor, walked, int64(len(ws)), now, lease)
	}
	finish := func(ctx context.Context, tx *sql.Tx) error {
		if failure != nil {
			return exec1(ctx, tx, fmt.Errorf("%w: migration run %s: mark failed", tidemark.ErrUnconfirmed, r.ID),
				`UPDATE field_migrations SET status = 'failed', error = $1, failed_document_id = $2, failed_value = $3,
					claim_token = NULL, claim_holder = NULL, lease_expires_at = NULL, updated_at = $4
				WHERE id = $5 AND status = 'running'`,
				fmt.Sprintf("document %s: %v", failed, failure), failed, failure.Value, ms(now), r.ID)
		}
		// The batch read up to the last document (the collection is locked
		// against writers), or there are more after it.
		if !last {
			return nil
		}
		return s.flipType(ctx, tx, coll, r, now)
	}
	beforeCommit := func(ctx context.Context, tx *sql.Tx) error { return fpMigrateBeforeCommit.Hit(ctx) }
	err = s.writeVersions(ctx, tx, coll.Name, ws, now, advance, finish, beforeCommit)
	return err
}

// convertFields is a document's stored fields (a JSON object) with field
// converted by rule: the converted value in the place of the old one, and
// every other value as stored. It is nil when the field is absent or null:
// nothing to convert. A value the rule refuses, or whose conversion makes
// the document larger than a write may (content.MaxDocumentBytes), is a
// *content.RuleError: it fails the run at that document.
func convertFields(dec *jsontext.Decoder, fields []byte, field string, rule content.Rule) ([]byte, error) {
	v, start, end, err := fieldSpan(dec, fields, field)
	if err != nil || v == nil || content.IsNull(v) {
		return nil, err
	}
	out, err := rule.Apply(v)
	if err != nil {
		return nil, err
	}
	n := len(fields) - len(v) + len(out)
	if n > content.MaxDocumentBytes {
		return nil, rule.Refuse(v, fmt.Errorf("the converted document is %d bytes, at most %d", n, content.MaxDocumentBytes))
	}
	enc := make([]byte, 0, n)
	return append(append(append(enc, fields[:start]...), out...), fields[end:]...), nil
}

// advanceRun moves the run's cursor past a batch: walked documents, of
// which converted were written. The fence: this run, this claim, and the
// cursor the batch read.
func (s *ContentStore) advanceRun(ctx context.Context, tx *sql.Tx, r runRow, cursor string, walked, converted int64, now, lease time.Time) error {
	if err := fpMigrateAfterConvert.Hit(ctx); err != nil {
		return err
	}
	return exec1(ctx, tx, fmt.Errorf("migration run %s: cursor or claim moved under the batch: %w", r.ID, tidemark.ErrStaleClaim),
		`UPDATE field_migrations SET cursor = $1, walked = walked + $2, converted = converted + $3, batches = batches + 1,
			lease_expires_at = $4, updated_at = $5
		WHERE id = $6 AND claim_token = $7 AND cursor = $8 AND status = 'running'`,
		cursor, walked, converted, ms(lease), ms(now), r.ID, r.token.String, r.Cursor)
}

// flipType flips the field's declared type, once: the run's last document
// is converted in tx.
func (s *ContentStore) flipType(ctx context.Context, tx *sql.Tx, coll content.Collection, r runRow, now time.Time) error {
	if err := fpMigrateBeforeFlip.Hit(ctx); err != nil {
		return err
	}
	if err := exec1(ctx, tx, fmt.Errorf("%w: migration run %s: field %s.%s is no longer %s", tidemark.ErrUnconfirmed, r.ID, coll.Name, r.Field, r.From),
		`UPDATE collection_fields SET type = $1 WHERE collection = $2 AND name = $3 AND type = $4`,
		string(r.To), coll.Name, r.Field, string(r.From)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO field_type_changes (run_id, collection, field, from_type, to_type, at) VALUES ($1, $2, $3, $4, $5, $6)`,
		r.ID, coll.Name, r.Field, string(r.From), string(r.To), ms(now)); err != nil {
		return fmt.Errorf("migration run %s: record type change: %w", r.ID, err)
	}
	return exec1(ctx, tx, fmt.Errorf("%w: migration run %s: mark done", tidemark.ErrUnconfirmed, r.ID),
		`UPDATE field_migrations SET status = 'done', claim_token = NULL, claim_holder = NULL, lease_expires_at = NULL,
			updated_at = $1, finished_at = $1
		WHERE id = $2 AND status = 'running'`, ms(now), r.ID)
}

// restoreBatch restores the next batch of documents the run converted,
// each from the snapshot written just before its conversion, and advances
// the undo cursor with them. When none is left the run is aborted; the
// type never flipped, so it stays as it was.
func (s *ContentStore) restoreBatch(ctx context.Context, tx *sql.Tx, coll content.Collection, r runRow, now, lease time.Time) error {
	// One read gives each converted document of the batch with the
	// snapshot before its conversion and its live row, so a batch costs no
	// round trip per document. Where the database locks rows, the batch's
	// live rows are locked first (an outer join's rows cannot be).
	if lock := s.db.Dialect.LockRow; lock != "" {
		if _, err := tx.ExecContext(ctx, `SELECT d.id FROM document_versions v
			JOIN documents d ON d.collection = v.collection AND d.id = v.document_id
			WHERE v.run_id = $1 AND v.reason = 'migrate' AND v.document_id > $2 ORDER BY v.document_id LIMIT $3`+lock+` OF d`,
			r.ID, r.UndoCursor, r.BatchSize); err != nil {
			return fmt.Errorf("migration run %s: lock the batch's documents: %w", r.ID, err)
		}
	}
	type conv struct {
		id     string
		before sql.NullString
		doc    sql.NullString // the live row's id: NULL when it is gone
		d      content.Document
	}
	convs, err := queryAll(ctx, tx, func(sc scanner) (conv, error) {
		var (
			c                conv
			version          sql.NullInt64
			fields           sql.NullString
			created, updated sql.NullInt64
		)
		if err := sc.Scan(&c.id, &c.before, &c.doc, &version, &fields, &created, &updated); err != nil {
			return c, err
		}
		if !c.doc.Valid {
			return c, nil
		}
		c.d = content.Document{Collection: coll.Name, ID: c.doc.String, Version: version.Int64,
			CreatedAt: fromMS(created.Int64), UpdatedAt: fromMS(updated.Int64)}
		if err := json.Unmarshal([]byte(fields.String), &c.d.Fields); err != nil {
			return c, fmt.Errorf("document %s/%s: stored fields: %w", coll.Name, c.id, err)
		}
		return c, nil
	}, `SELECT v.document_id, prev.fields, d.id, d.version, d.fields, d.created_at, d.updated_at
		FROM document_versions v
		LEFT JOIN document_versions prev ON prev.collection = v.collection AND prev.document_id = v.document_id AND prev.version = v.version - 1
		LEFT JOIN documents d ON d.collection = v.collection AND d.id = v.document_id
		WHERE v.run_id = $1 AND v.reason = 'migrate' AND v.document_id > $2 ORDER BY v.document_id LIMIT $3`,
		r.ID, r.UndoCursor, r.BatchSize)
	if err != nil {
		return fmt.Errorf("migration run %s: read conversions: %w", r.ID, err)
	}
	ws := make([]docWrite, 0, len(convs))
	undo := r.UndoCursor
	for _, c := range convs {
		if !c.before.Valid {
			return fmt.Errorf("migration run %s: snapshot before converting %s: %w", r.ID, c.id, sql.ErrNoRows)
		}
		if !c.doc.Valid {
			return fmt.Errorf("document %s/%s: %w", coll.Name, c.id, tidemark.ErrNotFound)
		}
		var prior content.Fields
		if err := json.Unmarshal([]byte(c.before.String), &prior); err != nil {
			return err
		}
		fields := make(content.Fields, len(c.d.Fields))
		for k, x := range c.d.Fields {
			fields[k] = x
		}
		if v, ok := prior[r.Field]; ok {
			fields[r.Field] = v
		} else {
			delete(fields, r.Field)
		}
		ws = append(ws, docWrite{ID: c.id, Base: c.d.Version, Fields: fields, Reason: content.ReasonRestore, RunID: r.ID})
		undo = c.id
	}
	advance := func(ctx context.Context, tx *sql.Tx) error {
		return exec1(ctx, tx, fmt.Errorf("migration run %s: undo cursor or claim moved under the batch: %w", r.ID, tidemark.ErrStaleClaim),
			`UPDATE field_migrations SET undo_cursor = $1, restored = restored + $2, batches = batches + 1, lease_expires_at = $3, updated_at = $4
			WHERE id = $5 AND claim_token = $6 AND undo_cursor = $7 AND status = 'aborting'`,
			undo, int64(len(ws)), ms(lease), ms(now), r.ID, r.token.String, r.UndoCursor)
	}
	finish := func(ctx context.Context, tx *sql.Tx) error {
		if len(convs) == r.BatchSize {
			more, err := anyRow(ctx, tx, `SELECT document_id FROM document_versions WHERE run_id = $1 AND reason = 'migrate' AND document_id > $2
				ORDER BY document_id LIMIT 1`, r.ID, undo)
			if more || err != nil {
				return err
			}
		}
		return exec1(ctx, tx, fmt.Errorf("%w: migration run %s: mark aborted", tidemark.ErrUnconfirmed, r.ID),
			`UPDATE field_migrations SET status = 'aborted', claim_token = NULL, claim_holder = NULL, lease_expires_at = NULL,
				updated_at = $1, finished_at = $1
			WHERE id = $2 AND status = 'aborting'`, ms(now), r.ID)
	}
	beforeCommit := func(ctx context.Context, tx *sql.Tx) error { return fpMigrateRestoreBeforeCommit.Hit(ctx) }
	err = s.writeVersions(ctx, tx, coll.Name, ws, now, advance, finish, beforeCommit)
	return err
}

// convertFunction is the SQL function through which SQLite converts a
// batch inside the database: tidemark_convert(fields, field, from, to) is
// convertFields with the rule from→to, NULL when there is nothing to
// convert, an error (which fails the statement, and undoes it) when the
// stored fields are not an object, the rule refuses the value, or the
// converted value or document is too large.
const convertFunction = "tidemark_convert"

func sqlConvert(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	var in [4]string
	for i, a := range args {
		switch v := a.(type) {
		case string:
			in[i] = v
		case []byte:
			in[i] = string(v)
		default:
			return nil, fmt.Errorf("%s: argument %d is %T, want text", convertFunction, i+1, a)
		}
	}
	rule, ok := content.RuleFor(content.FieldType(in[2]), content.FieldType(in[3]))
	if !ok {
		return nil, fmt.Errorf("%s: no rule %s→%s", convertFunction, in[2], in[3])
	}
	var dec jsontext.Decoder
	out, err := convertFields(&dec, []byte(in[0]), in[1], rule)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", convertRefused, err)
	case out == nil:
		return nil, nil
	}
	return string(out), nil
}

// convertRefused begins the error of a conversion tidemark_convert refused
// (as SQLite passes it on, in the statement's error).
const convertRefused = convertFunction + " refused"

// convertInSQL converts the next batch inside the database (SQLite, where
// statements cost no round trip but each one costs its own bookkeeping):
// one statement writes every converted document's snapshot, with the
// conversion done by tidemark_convert as SQLite reads the batch, and one
// moves the documents on to their snapshots; then the cursor advances as
// the document-at-a-time path advances it. The documents never come out
// of the database.
//
// When the conversion statement fails (a value the rule refuses, stored
// fields that are not an object), SQLite undoes that statement alone and
// done is false: the caller converts the batch a document at a time in
// the same transaction, which commits the documents before the one that
// failed and fails the run naming it.
func (s *ContentStore) convertInSQL(ctx context.Context, tx *sql.Tx, coll content.Collection, r runRow, now, lease time.Time) (done bool, err error) {
	// The batch's bounds, as the document-at-a-time path draws them; the
	// documents stay in the database.
	docs, last, err := s.readBatch(ctx, tx, coll.Name, r, false)
	if err != nil {
		return false, err
	}
	cursor, walked := r.Cursor, int64(len(docs))
	if walked > 0 {
		cursor = docs[walked-1].id
	}
	var converted int64
	if walked > 0 {
		res, err := tx.ExecContext(ctx, `WITH c AS MATERIALIZED (
				SELECT id, version, `+convertFunction+`(fields, $3, $4, $5) AS f FROM documents
				WHERE collection = $1 AND id > $2 AND id <= $6)
			INSERT INTO document_versions (collection, document_id, version, fields, reason, run_id, at)
			SELECT $1, id, version + 1, f, 'migrate', $7, $8 FROM c WHERE f IS NOT NULL`,
			coll.Name, r.Cursor, r.Field, string(r.From), string(r.To), cursor, r.ID, ms(now))
		if err != nil {
			if strings.Contains(err.Error(), convertRefused) {
				return false, nil // the document-at-a-time path says what failed
			}
			if IsUniqueViolation(err) {
				return false, fmt.Errorf("%w: migration run %s: a version snapshot of a document of the batch already exists (a second conversion by one run)", tidemark.ErrConflict, r.ID)
			}
			return false, fmt.Errorf("migration run %s: convert batch: %w", r.ID, err)
		}
		if converted, err = res.RowsAffected(); err != nil {
			return false, err
		}
		if converted > 0 {
			res, err := tx.ExecContext(ctx, `UPDATE documents SET fields = v.fields, version = v.version, updated_at = $5
				FROM document_versions v
				WHERE v.run_id = $1 AND v.reason = 'migrate' AND v.document_id > $2 AND v.document_id <= $3 AND v.collection = $4
				  AND documents.collection = v.collection AND documents.id = v.document_id AND documents.version + 1 = v.version`,
				r.ID, r.Cursor, cursor, coll.Name, ms(now))
			var moved int64
			if err == nil {
				moved, err = res.RowsAffected()
			}
			if err == nil && moved != converted {
				err = fmt.Errorf("%w: %d moved", tidemark.ErrUnconfirmed, moved)
			}
			if err != nil {
				return false, fmt.Errorf("migration run %s: move %d documents to their converted versions: %w", r.ID, converted, err)
			}
		}
	}
	if err := s.advanceRun(ctx, tx, r, cursor, walked, converted, now, lease); err != nil {
		return false, err
	}
	if last {
		if err := s.flipType(ctx, tx, coll, r, now); err != nil {
			return false, err
		}
	}
	return true, fpMigrateBeforeCommit.Hit(ctx)
}
