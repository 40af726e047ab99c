package sqlstore

import (
	"context"
	"database/sql"

	"github.com/tidemark/tidemark/content"
)

// WriteVersionsForTest runs the versioned-write helper on its own, in one
// transaction, with extra statements after the documents.
func (s *ContentStore) WriteVersionsForTest(ctx context.Context, collection string, ids []string, bases []int64, fields []content.Fields, extra func() error) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ws := make([]docWrite, len(ids))
	for i := range ids {
		ws[i] = docWrite{ID: ids[i], Base: bases[i], Fields: fields[i], Reason: content.ReasonPut}
		if bases[i] == 0 {
			ws[i].Reason = content.ReasonCreate
		}
	}
	x := func(context.Context, *sql.Tx) error { return extra() }
	if err := s.writeVersions(ctx, tx, collection, ws, s.db.Clock.Now(), x); err != nil {
		return err
	}
	return tx.Commit()
}

// OpenUpToForTest opens url with the migrations up to version applied only.
func OpenUpToForTest(ctx context.Context, url string, opt Options, version int) (*DB, error) {
	opt.migrateUpTo = version
	return Open(ctx, url, opt)
}

// CountForTest counts the rows of table where any text column named col
// equals value: a test's look at what is stored, behind the store's back.
func (d *DB) CountForTest(ctx context.Context, table, col, value string) (int, error) {
	var n int
	err := d.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table+` WHERE `+col+` = $1`, value).Scan(&n)
	return n, err
}
