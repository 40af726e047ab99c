package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/failpoint"
)

// Failpoints of a field migration, in the order a run reaches them.
var (
	fpMigrateStartAfterCommit = failpoint.Register("migrate.start.after-commit",
		"a migration run is recorded | it is claimed and its first batch runs")
	fpMigrateClaimAfterCommit = failpoint.Register("migrate.claim.after-commit",
		"a run's claim is committed | the worker learns its token")
	fpMigrateAfterConvert = failpoint.Register("migrate.batch.after-convert",
		"a batch's documents are converted and snapshotted | the statement that advances the run's cursor")
	fpMigrateBeforeFlip = failpoint.Register("migrate.batch.before-flip",
		"the last document is converted and the cursor advanced | the field's type flips")
	fpMigrateBeforeCommit = failpoint.Register("migrate.batch.before-commit",
		"a batch (conversions, snapshots, cursor, maybe the flip) is written | its commit")
	fpMigrateAfterCommit = failpoint.Register("migrate.batch.after-commit",
		"a batch is committed | the worker learns it")
	fpMigrateRestoreBeforeCommit = failpoint.Register("migrate.restore.before-commit",
		"an abort's batch of restorations and its undo cursor are written | its commit")
)

// ContentStore implements content.Store.
type ContentStore struct{ db *DB }

// Content returns the document store over d.
func (d *DB) Content() *ContentStore { return &ContentStore{db: d} }

var (
	_ content.Store      = (*ContentStore)(nil)
	_ content.PageReader = (*ContentStore)(nil)
)

// lockShare is appended to a SELECT of a collection row by a document
// write: writes share the collection, a migration batch takes it alone.
func (d *DB) lockShare() string {
	return d.Dialect.LockShare
}

// CreateCollection implements content.Store.
func (s *ContentStore) CreateCollection(ctx context.Context, name string, fields []content.Field) (content.Collection, error) {
	if err := content.CheckName("collection name", name); err != nil {
		return content.Collection{}, err
	}
	if err := content.CheckFields(fields); err != nil {
		return content.Collection{}, err
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return content.Collection{}, err
	}
	defer tx.Rollback()
	now := s.db.Clock.Now()
	_, err = tx.ExecContext(ctx, `INSERT INTO collections (name, built_in, created_at) VALUES ($1, 0, $2)`, name, ms(now))
	if IsUniqueViolation(err) {
		return content.Collection{}, fmt.Errorf("collection %q already exists: %w", name, tidemark.ErrConflict)
	}
	if err != nil {
		return content.Collection{}, fmt.Errorf("create collection %s: %w", name, err)
	}
	for i, f := range fields {
		if _, err := tx.ExecContext(ctx, `INSERT INTO collection_fields (collection, name, type, position) VALUES ($1, $2, $3, $4)`,
			name, f.Name, string(f.Type), i); err != nil {
			return content.Collection{}, fmt.Errorf("create collection %s: field %s: %w", name, f.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return content.Collection{}, err
	}
	return s.Collection(ctx, name)
}

// Collection implements content.Store.
func (s *ContentStore) Collection(ctx context.Context, name string) (content.Collection, error) {
	c, err := s.collection(ctx, s.db.db, name, "")
	if err != nil {
		return c, err
	}
	if err := s.db.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM documents WHERE collection = $1`, name).Scan(&c.Documents); err != nil {
		return c, fmt.Errorf("collection %s: count: %w", name, err)
	}
	return c, nil
}

// collection reads a collection and its fields, taking lock (""
// LockRow or lockShare) on the collection row.
func (s *ContentStore) collection(ctx context.Context, q queryer, name, lock string) (content.Collection, error) {
	c := content.Collection{Name: name}
	var builtIn int
	var created int64
	err := q.QueryRowContext(ctx, `SELECT built_in, created_at FROM collections WHERE name = $1`+lock, name).Scan(&builtIn, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("collection %q: %w", name, tidemark.ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("collection %s: %w", name, err)
	}
	c.BuiltIn = builtIn != 0
	c.CreatedAt = fromMS(created)
	c.Fields, err = queryAll(ctx, q, func(sc scanner) (content.Field, error) {
		var f content.Field
		return f, sc.Scan(&f.Name, &f.Type)
	}, `SELECT name, type FROM collection_fields WHERE collection = $1 ORDER BY position`, name)
	if err != nil {
		return c, fmt.Errorf("collection %s: fields: %w", name, err)
	}
	return c, nil
}

// Collections implements content.Store.
func (s *ContentStore) Collections(ctx context.Context) ([]content.Collection, error) {
	names, err := queryAll(ctx, s.db.db, scanString, `SELECT name FROM collections ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list collections: %w", err)
	}
	out := make([]content.Collection, 0, len(names))
	for _, n := range names {
		c, err := s.Collection(ctx, n)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// docWrite is one document's next version.
type docWrite struct {
	ID     string
	Base   int64 // the version the write was based on; 0 creates the document
	Fields content.Fields
	// Encoded, if set, is Fields already encoded: a migration puts the
	// converted value in the place of the old one in the stored object.
	Encoded []byte
	Reason  string
	RunID   string
}

// writeVersions is the one path by which documents change. Inside tx it
// updates each live row only if it is still at the version the write was
// based on (or creates it), inserts each new version's snapshot, and then
// runs extra statements — a migration's cursor advance, its type flip — so
// that all of it commits together or not at all. A write based on an old
// version is tidemark.ErrConflict. The caller commits.
func (s *ContentStore) writeVersions(ctx context.Context, tx *sql.Tx, collection string, ws []docWrite, now time.Time,
	extra ...func(ctx context.Context, tx *sql.Tx) error) error {
	encoded := make([]string, len(ws))
	seen := make(map[string]bool, len(ws))
	for i, w := range ws {
		if seen[w.ID] {
			return fmt.Errorf("document %s/%s written twice in one transaction: %w", collection, w.ID, tidemark.ErrInvalid)
		}
		seen[w.ID] = true
		b := w.Encoded
		if b == nil {
			var err error
			if b, err = json.Marshal(w.Fields); err != nil {
				return fmt.Errorf("document %s/%s: encode: %w", collection, w.ID, err)
			}
		}
		if len(b) > content.MaxDocumentBytes {
			return tidemark.Invalidf("document "+collection+"/"+w.ID, "", "is %d bytes, at most %d", len(b), content.MaxDocumentBytes)
		}
		encoded[i] = string(b)
	}
	if s.db.Dialect.RowAtATime {
		if err := s.writeEach(ctx, tx, collection, ws, encoded, now); err != nil {
			return err
		}
	} else if err := s.writeSet(ctx, tx, collection, ws, encoded, now); err != nil {
		return err
	}
	for _, f := range extra {
		if err := f(ctx, tx); err != nil {
			return err
		}
	}
	return nil
}

// writeEach is writeLive and insertSnapshots one row at a time through
// statements prepared once: on SQLite, where a statement costs no round
// trip, parsing one long multi-row statement costs more than it saves.
func (s *ContentStore) writeEach(ctx context.Context, tx *sql.Tx, collection string, ws []docWrite, encoded []string, now time.Time) error {
	if len(ws) == 0 {
		return nil
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO documents (collection, id, version, fields, created_at, updated_at) VALUES ($1, $2, 1, $3, $4, $4)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	upd, err := tx.PrepareContext(ctx, `UPDATE documents SET version = version + 1, fields = $1, updated_at = $2
		WHERE collection = $3 AND id = $4 AND version = $5`)
	if err != nil {
		return err
	}
	defer upd.Close()
	snap, err := tx.PrepareContext(ctx, `INSERT INTO document_versions (collection, document_id, version, fields, reason, run_id, at) VALUES ($1, $2, $3, $4, $5, $6, $7)`)
	if err != nil {
		return err
	}
	defer snap.Close()
	for i, w := range ws {
		if w.Base == 0 {
			_, err := ins.ExecContext(ctx, collection, w.ID, encoded[i], ms(now))
			if IsUniqueViolation(err) {
				return fmt.Errorf("document %s/%s already exists (a write based on version 0): %w", collection, w.ID, tidemark.ErrConflict)
			}
			if err != nil {
				return fmt.Errorf("create document %s/%s: %w", collection, w.ID, err)
			}
		} else {
			res, err := upd.ExecContext(ctx, encoded[i], ms(now), collection, w.ID, w.Base)
			if err := expectOne(res, err, errNone); errors.Is(err, errNone) {
				return s.staleWrite(ctx, tx, collection, ws[i:i+1])
			} else if err != nil {
				return fmt.Errorf("update document %s/%s: %w", collection, w.ID, err)
			}
		}
		_, err := snap.ExecContext(ctx, collection, w.ID, w.Base+1, encoded[i], w.Reason, nullString(w.RunID), ms(now))
		if IsUniqueViolation(err) {
			return fmt.Errorf("%w: a version snapshot of %s/%s already exists (a second write of one version, or a second conversion by one run)", tidemark.ErrConflict, collection, w.ID)
		}
		if err != nil {
			return fmt.Errorf("snapshot document %s/%s: %w", collection, w.ID, err)
		}
	}
	return nil
}

// errNone marks a conditional update that matched no row.
var errNone = errors.New("no row matched")

// writeSet writes the live rows and their snapshots set-based, the writes
// passed as arrays (unnest), so a batch of any size is the same two
// statements, planned once per connection: the documents created, then
// one statement that moves the others on from their base versions and
// inserts every write's snapshot. An update whose base version is no
// longer the document's writes no snapshot, and is named as stale.
func (s *ContentStore) writeSet(ctx context.Context, tx *sql.Tx, collection string, ws []docWrite, encoded []string, now time.Time) error {
	if len(ws) == 0 {
		return nil
	}
	n := len(ws)
	ids, reasons, runIDs := make([]string, n), make([]string, n), make([]string, n)
	bases := make([]int64, n)
	var newIDs, newFields []string
	for i, w := range ws {
		ids[i], bases[i], reasons[i], runIDs[i] = w.ID, w.Base, w.Reason, w.RunID
		if w.Base == 0 {
			newIDs, newFields = append(newIDs, w.ID), append(newFields, encoded[i])
		}
	}
	if len(newIDs) > 0 {
		_, err := tx.ExecContext(ctx, `INSERT INTO documents (collection, id, version, fields, created_at, updated_at)
			SELECT $1, id, 1, fields, $2, $2 FROM unnest($3::text[], $4::text[]) AS w(id, fields)`,
			collection, ms(now), newIDs, newFields)
		if IsUniqueViolation(err) {
			return fmt.Errorf("a document of %s already exists with an ID being created (a write based on version 0 of an existing document): %w", collection, tidemark.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("create documents in %s: %w", collection, err)
		}
	}
	// The statement returns only the updates that matched no row (none,
	// unless a base version is stale), not every document written.
	missedIDs, err := queryAll(ctx, tx, scanString, `WITH w AS (
			SELECT * FROM unnest($3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[]) AS w(id, base, fields, reason, run_id)
		), upd AS (
			UPDATE documents d SET version = w.base + 1, fields = w.fields, updated_at = $2
			FROM w WHERE w.base > 0 AND d.collection = $1 AND d.id = w.id AND d.version = w.base
			RETURNING d.id
		), ins AS (
			INSERT INTO document_versions (collection, document_id, version, fields, reason, run_id, at)
			SELECT $1, w.id, w.base + 1, w.fields, w.reason, NULLIF(w.run_id, ''), $2 FROM w
			WHERE w.base = 0 OR w.id IN (SELECT id FROM upd)
		)
		SELECT w.id FROM w WHERE w.base > 0 AND w.id NOT IN (SELECT id FROM upd)`,
		collection, ms(now), ids, bases, encoded, reasons, runIDs)
	if IsUniqueViolation(err) {
		return fmt.Errorf("%w: a version snapshot of %s already exists (a second write of one version, or a second conversion by one run)", tidemark.ErrConflict, collection)
	}
	if err != nil {
		return fmt.Errorf("write documents of %s: %w", collection, err)
	}
	if len(missedIDs) > 0 {
		stale := make(map[string]bool, len(missedIDs))
		for _, id := range missedIDs {
			stale[id] = true
		}
		var missed []docWrite
		for _, w := range ws {
			if stale[w.ID] {
				missed = append(missed, w)
			}
		}
		return s.staleWrite(ctx, tx, collection, missed)
	}
	return nil
}

// staleWrite names the first of the writes whose conditional update
// matched nothing: its base version is no longer the document's.
func (s *ContentStore) staleWrite(ctx context.Context, tx *sql.Tx, collection string, ws []docWrite) error {
	for _, w := range ws {
		if w.Base == 0 {
			continue
		}
		var v int64
		err := tx.QueryRowContext(ctx, `SELECT version FROM documents WHERE collection = $1 AND id = $2`, collection, w.ID).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("document %s/%s: %w", collection, w.ID, tidemark.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if v != w.Base {
			return fmt.Errorf("document %s/%s is at version %d; the write was based on version %d: %w", collection, w.ID, v, w.Base, tidemark.ErrConflict)
		}
	}
	return fmt.Errorf("%w: a versioned update of %s matched fewer rows than it wrote", tidemark.ErrUnconfirmed, collection)
}

// openRuns returns the unfinished migration runs of a collection by field.
func (s *ContentStore) openRuns(ctx context.Context, q queryer, collection string) (map[string]content.Run, error) {
	runs, err := queryAll(ctx, q, scanRunRow, `SELECT `+migrationRunColumns+` FROM field_migrations WHERE collection = $1 AND status IN ('running', 'failed', 'aborting')`, collection)
	if err != nil {
		return nil, fmt.Errorf("collection %s: open migrations: %w", collection, err)
	}
	out := make(map[string]content.Run, len(runs))
	for _, r := range runs {
		out[r.Field] = r.Run
	}
	return out, nil
}

// writeType is the type a write of field to document id is checked
// against. While a run is running or aborting, writes to its field are
// refused. While it is failed (waiting for an operator), each document has
// one type: the new one if the run converted it (ID at or before the
// cursor), the old one otherwise — so the document that failed can be fixed
// in its old type and the run resumed.
//
// A document at or before the cursor that the run did not convert (its
// field was empty when the run passed it, or it was created since) has no
// such type: a resumed run will not come back to it, so a finished run
// wants the new type there, and an abort, which restores only what the run
// converted, wants the old. A value written to that field is refused until
// the run ends (setting it empty is not a value, and passes); converted
// reports whether the run converted the document.
func writeType(c content.Collection, runs map[string]content.Run, field, id string, v json.RawMessage,
	converted func(r content.Run) (bool, error)) (content.FieldType, error) {
	f, ok := c.Field(field)
	if !ok {
		return "", tidemark.Invalidf("document "+c.Name+"/"+id+" field", field, "no such field in collection %s", c.Name)
	}
	r, ok := runs[field]
	if !ok {
		return f.Type, nil
	}
	switch r.Status {
	case content.RunFailed:
		if id > r.Cursor {
			return r.From, nil
		}
		if v == nil || content.IsNull(v) {
			return r.To, nil // nothing to convert either way
		}
		ok, err := converted(r)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("document %s/%s was not converted by failed migration run %s of %s.%s (%s→%s) (its field was empty when the run passed it, or it was created since): "+
				"the field takes a value there again once the run ends; resume or abort it first: %w",
				c.Name, id, r.ID, c.Name, field, r.From, r.To, tidemark.ErrConflict)
		}
		return r.To, nil
	default:
		return "", fmt.Errorf("field %s.%s is being migrated %s→%s by run %s (%s); writes to it are refused until the run ends: %w",
			c.Name, field, r.From, r.To, r.ID, r.Status, tidemark.ErrConflict)
	}
}

// convertedBy reports whether run r converted document id: it wrote the
// document's migrate snapshot.
func convertedBy(ctx context.Context, q queryer, collection, id string) func(r content.Run) (bool, error) {
	return func(r content.Run) (bool, error) {
		ok, err := anyRow(ctx, q, `SELECT document_id FROM document_versions
			WHERE run_id = $1 AND document_id = $2 AND reason = 'migrate' AND collection = $3`, r.ID, id, collection)
		if err != nil {
			return false, fmt.Errorf("document %s/%s: converted by run %s: %w", collection, id, r.ID, err)
		}
		return ok, nil
	}
}

// notConverted is convertedBy for a document being created: no run has
// converted it.
func notConverted(content.Run) (bool, error) { return false, nil }

// prepare validates a put against the collection and merges it into the
// document's current fields (nil for a new document). converted reports
// whether a failed run converted the document (see writeType).
func prepare(c content.Collection, runs map[string]content.Run, p content.Put, cur content.Fields,
	converted func(r content.Run) (bool, error)) (content.Fields, error) {
	out := content.Fields{}
	for k, v := range cur {
		out[k] = v
	}
	for _, k := range p.Unset {
		if _, err := writeType(c, runs, k, p.ID, nil, converted); err != nil {
			return nil, err
		}
		delete(out, k)
	}
	for k, v := range p.Set {
		t, err := writeType(c, runs, k, p.ID, v, converted)
		if err != nil {
			return nil, err
		}
		nv, err := content.Normalize(t, v)
		if err != nil {
			var ve *content.ValueError
			if errors.As(err, &ve) {
				return nil, tidemark.Invalidf("document "+c.Name+"/"+p.ID+" field "+k, ve.Value, "not a valid %s: %s", t, ve.Reason)
			}
			return nil, err
		}
		if content.IsNull(nv) {
			delete(out, k)
		} else {
			out[k] = nv
		}
	}
	return out, nil
}

// Put implements content.Store.
func (s *ContentStore) Put(ctx context.Context, collection string, p content.Put) (content.Document, error) {
	if p.BaseVersion < 0 {
		return content.Document{}, tidemark.Invalidf("base version", fmt.Sprint(p.BaseVersion), "want 0 (create) or the version the write is based on")
	}
	if p.ID == "" {
		if p.BaseVersion != 0 {
			return content.Document{}, tidemark.Invalidf("document id", "", "an update names the document")
		}
		p.ID = s.db.IDs.New()
	}
	if err := content.CheckID(p.ID); err != nil {
		return content.Document{}, err
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return content.Document{}, err
	}
	defer tx.Rollback()
	c, err := s.collection(ctx, tx, collection, s.db.lockShare())
	if err != nil {
		return content.Document{}, err
	}
	runs, err := s.openRuns(ctx, tx, collection)
	if err != nil {
		return content.Document{}, err
	}
	var cur content.Fields
	if p.BaseVersion > 0 {
		d, err := s.document(ctx, tx, collection, p.ID, s.db.Dialect.LockRow)
		if err != nil {
			return content.Document{}, err
		}
		if d.Version != p.BaseVersion {
			return content.Document{}, fmt.Errorf("document %s/%s is at version %d; the write was based on version %d: %w",
				collection, p.ID, d.Version, p.BaseVersion, tidemark.ErrConflict)
		}
		cur = d.Fields
	}
	converted := notConverted
	if p.BaseVersion > 0 {
		converted = convertedBy(ctx, tx, collection, p.ID)
	}
	fields, err := prepare(c, runs, p, cur, converted)
	if err != nil {
		return content.Document{}, err
	}
	reason := content.ReasonPut
	if p.BaseVersion == 0 {
		reason = content.ReasonCreate
	}
	if err := s.writeVersions(ctx, tx, collection, []docWrite{{ID: p.ID, Base: p.BaseVersion, Fields: fields, Reason: reason}}, s.db.Clock.Now()); err != nil {
		return content.Document{}, err
	}
	if p.Actor != "" {
		if _, err := s.record(ctx, tx, content.Action{Action: content.ActionPut, Collection: collection, DocumentID: p.ID,
			Version: p.BaseVersion + 1, Actor: p.Actor}); err != nil {
			return content.Document{}, err
		}
	}
	if err := tx.Commit(); err != nil {
		return content.Document{}, fmt.Errorf("put %s/%s: commit: %w", collection, p.ID, err)
	}
	return s.Document(ctx, collection, p.ID)
}

// importChunk is how many imported documents share one multi-row write.
const importChunk = 500

// Import implements content.Store.
func (s *ContentStore) Import(ctx context.Context, collection string, next func() (content.Put, bool, error)) (int, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	c, err := s.collection(ctx, tx, collection, s.db.lockShare())
	if err != nil {
		return 0, err
	}
	runs, err := s.openRuns(ctx, tx, collection)
	if err != nil {
		return 0, err
	}
	now := s.db.Clock.Now()
	var ws []docWrite
	n := 0
	flush := func() error {
		if len(ws) == 0 {
			return nil
		}
		err := s.writeVersions(ctx, tx, collection, ws, now)
		ws = ws[:0]
		return err
	}
	for {
		p, ok, err := next()
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		n++
		if p.BaseVersion != 0 {
			return 0, tidemark.Invalidf(fmt.Sprintf("import item %d base version", n), fmt.Sprint(p.BaseVersion), "an import only creates documents")
		}
		if p.ID == "" {
			p.ID = s.db.IDs.New()
		}
		if err := content.CheckID(p.ID); err != nil {
			return 0, fmt.Errorf("import item %d: %w", n, err)
		}
		fields, err := prepare(c, runs, p, nil, notConverted)
		if err != nil {
			return 0, fmt.Errorf("import item %d: %w", n, err)
		}
		ws = append(ws, docWrite{ID: p.ID, Fields: fields, Reason: content.ReasonCreate})
		if len(ws) == importChunk {
			if err := flush(); err != nil {
				return 0, fmt.Errorf("import items up to %d: %w", n, err)
			}
		}
	}
	if err := flush(); err != nil {
		return 0, fmt.Errorf("import items up to %d: %w", n, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("import into %s: commit: %w", collection, err)
	}
	return n, nil
}

const documentColumns = `id, version, fields, created_at, updated_at`

func scanDocument(sc scanner, collection string) (content.Document, error) {
	d := content.Document{Collection: collection}
	var fields string
	var created, updated int64
	if err := sc.Scan(&d.ID, &d.Version, &fields, &created, &updated); err != nil {
		return d, err
	}
	if err := json.Unmarshal([]byte(fields), &d.Fields); err != nil {
		return d, fmt.Errorf("document %s/%s: stored fields: %w", collection, d.ID, err)
	}
	d.CreatedAt, d.UpdatedAt = fromMS(created), fromMS(updated)
	return d, nil
}

func (s *ContentStore) document(ctx context.Context, q queryer, collection, id, lock string) (content.Document, error) {
	d, err := scanDocument(q.QueryRowContext(ctx, `SELECT `+documentColumns+` FROM documents WHERE collection = $1 AND id = $2`+lock, collection, id), collection)
	if errors.Is(err, sql.ErrNoRows) {
		if _, cerr := s.collection(ctx, q, collection, ""); cerr != nil {
			return d, cerr
		}
		return d, fmt.Errorf("document %s/%s: %w", collection, id, tidemark.ErrNotFound)
	}
	if err != nil {
		return d, fmt.Errorf("document %s/%s: %w", collection, id, err)
	}
	return d, nil
}

// Document implements content.Store.
func (s *ContentStore) Document(ctx context.Context, collection, id string) (content.Document, error) {
	return s.document(ctx, s.db.db, collection, id, "")
}

// Documents implements content.Store.
func (s *ContentStore) Documents(ctx context.Context, collection, after string, limit int) ([]content.Document, error) {
	if limit <= 0 {
		limit = 100
	}
	if _, err := s.collection(ctx, s.db.db, collection, ""); err != nil {
		return nil, err
	}
	out, err := queryAll(ctx, s.db.db, func(sc scanner) (content.Document, error) { return scanDocument(sc, collection) },
		`SELECT `+documentColumns+` FROM documents WHERE collection = $1 AND id > $2 ORDER BY id LIMIT $3`, collection, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", collection, err)
	}
	if out == nil {
		out = []content.Document{} // a JSON array, not null
	}
	return out, nil
}

// Versions implements content.Store.
func (s *ContentStore) Versions(ctx context.Context, collection, id string) ([]content.Version, error) {
	if _, err := s.document(ctx, s.db.db, collection, id, ""); err != nil {
		return nil, err
	}
	out, err := queryAll(ctx, s.db.db, func(sc scanner) (content.Version, error) {
		v := content.Version{DocumentID: id}
		var fields string
		var run sql.NullString
		var at int64
		if err := sc.Scan(&v.Version, &fields, &v.Reason, &run, &at); err != nil {
			return v, err
		}
		if err := json.Unmarshal([]byte(fields), &v.Fields); err != nil {
			return v, fmt.Errorf("version %d of %s/%s: %w", v.Version, collection, id, err)
		}
		v.RunID, v.At = run.String, fromMS(at)
		return v, nil
	}, `SELECT version, fields, reason, run_id, at FROM document_versions
		WHERE collection = $1 AND document_id = $2 ORDER BY version`, collection, id)
	if err != nil {
		return nil, fmt.Errorf("versions of %s/%s: %w", collection, id, err)
	}
	return out, nil
}

// PageOverrides implements content.PageReader.
func (s *ContentStore) PageOverrides(ctx context.Context, eventID string) (content.PageOverrides, bool, error) {
	d, err := s.Document(ctx, content.PagesCollection, eventID)
	if errors.Is(err, tidemark.ErrNotFound) {
		return content.PageOverrides{EventID: eventID}, false, nil
	}
	if err != nil {
		return content.PageOverrides{}, false, err
	}
	return content.OverridesOf(d), true, nil
}
