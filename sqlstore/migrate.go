package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migration is one versioned schema change. Files are named
// NNNN_name.sql; {{bytes}} stands for the dialect's raw-bytes column type.
// A change that the dialects cannot share (a full-text index) is a pair of
// files NNNN_name.sqlite.sql and NNNN_name.postgres.sql: one version, each
// applied on its own dialect only.
type Migration struct {
	Version int
	Name    string
	// Dialect is "" for every dialect, else the only one it applies to.
	Dialect string
	SQL     string
	// SHA256 is the hex SHA-256 of the file's bytes as released. A
	// database records it when it applies the migration and refuses to
	// open when the file no longer matches: released migrations are
	// immutable; a change is a new file.
	SHA256 string
}

var migrationDialects = map[string]bool{SQLite.Name: true, Postgres.Name: true}

// AppliesTo says whether the migration runs on d. A dialect's name is how
// a migration file says which dialect it is written for; this is the one
// place the name is compared, every behaviour is a capability of Dialect.
func (m Migration) AppliesTo(d Dialect) bool { return m.Dialect == "" || m.Dialect == d.Name }

// File is the migration's file name.
func (m Migration) File() string {
	if m.Dialect != "" {
		return fmt.Sprintf("%04d_%s.%s.sql", m.Version, m.Name, m.Dialect)
	}
	return fmt.Sprintf("%04d_%s.sql", m.Version, m.Name)
}

// Migrations returns every migration in version order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []Migration
	seen := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		num, rest, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(rest, ".sql") {
			return nil, fmt.Errorf("sqlstore: migration %s: want NNNN_name.sql", name)
		}
		base, dialect := strings.TrimSuffix(rest, ".sql"), ""
		if i := strings.LastIndex(base, "."); i >= 0 {
			base, dialect = base[:i], base[i+1:]
			if !migrationDialects[dialect] {
				return nil, fmt.Errorf("sqlstore: migration %s: unknown dialect %q", name, dialect)
			}
		}
		// One version per dialect: a shared file, or one file per dialect
		// under the same name.
		for _, d := range []string{dialect, ""} {
			if prev, dup := seen[fmt.Sprint(v, "/", d)]; dup && (d == "" || dialect == d) {
				return nil, fmt.Errorf("sqlstore: migrations %s and %s share version %d", prev, name, v)
			}
		}
		if dialect == "" {
			for d := range migrationDialects {
				if prev, dup := seen[fmt.Sprint(v, "/", d)]; dup {
					return nil, fmt.Errorf("sqlstore: migrations %s and %s share version %d", prev, name, v)
				}
			}
		}
		seen[fmt.Sprint(v, "/", dialect)] = name
		b, err := migrationFS.ReadFile("migrations/" + name)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		out = append(out, Migration{Version: v, Name: base, Dialect: dialect, SQL: string(b), SHA256: hex.EncodeToString(sum[:])})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Version != out[j].Version {
			return out[i].Version < out[j].Version
		}
		return out[i].Dialect < out[j].Dialect
	})
	return out, nil
}

// migrate applies every pending migration, each in its own transaction.
// Concurrent processes starting together serialize on SQLite's write lock
// or PostgreSQL's advisory lock, and each migration is applied once.
func (d *DB) migrate(ctx context.Context, upTo int) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	if err := d.bootstrapMigrations(ctx, ms); err != nil {
		return err
	}
	if err := d.CheckSchema(ctx); err != nil {
		return err
	}
	// One read finds what is applied already, so a start on a migrated
	// database costs no transaction per migration. apply reads again
	// under the lock: another process may be migrating now.
	applied, err := d.appliedMigrations(ctx)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if upTo > 0 && m.Version > upTo {
			break
		}
		if !m.AppliesTo(d.Dialect) {
			continue
		}
		if sum, ok := applied[m.Version]; ok && sum == m.SHA256 {
			continue
		}
		if err := d.apply(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// appliedMigrations returns the checksum of every applied migration by
// version.
func (d *DB) appliedMigrations(ctx context.Context) (map[int]string, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT version, sha256 FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: read schema_migrations: %w", err)
	}
	defer rows.Close()
	out := map[int]string{}
	for rows.Next() {
		var (
			v   int
			sum sql.NullString
		)
		if err := rows.Scan(&v, &sum); err != nil {
			return nil, fmt.Errorf("sqlstore: read schema_migrations: %w", err)
		}
		out[v] = sum.String
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: read schema_migrations: %w", err)
	}
	return out, nil
}

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at BIGINT NOT NULL,
    sha256     TEXT
)`

// bootstrapMigrations creates the migrator's own table, and brings one made
// before checksums were recorded up to date: it adds the sha256 column and
// records, for migrations applied without one, the hash of the file as it
// is now (the only witness left). The table is the migrator's bookkeeping,
// not a numbered migration, so it needs no migration file of its own.
func (d *DB) bootstrapMigrations(ctx context.Context, ms []Migration) error {
	tx, err := d.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if d.Dialect.MigrationLock != "" {
		// CREATE TABLE IF NOT EXISTS is not safe under concurrency on
		// PostgreSQL; take the migration lock around it too.
		if _, err := tx.ExecContext(ctx, d.Dialect.MigrationLock); err != nil {
			return fmt.Errorf("sqlstore: migration lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, createMigrationsTable); err != nil {
		return fmt.Errorf("sqlstore: schema_migrations: %w", err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, d.Dialect.ColumnCount, "schema_migrations", "sha256").Scan(&n); err != nil {
		return fmt.Errorf("sqlstore: schema_migrations: look for its sha256 column: %w", err)
	}
	if n == 0 {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE schema_migrations ADD COLUMN sha256 TEXT`); err != nil {
			return fmt.Errorf("sqlstore: schema_migrations: add its sha256 column: %w", err)
		}
	}
	for _, m := range ms {
		if !m.AppliesTo(d.Dialect) {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE schema_migrations SET sha256 = $1 WHERE version = $2 AND sha256 IS NULL`,
			m.SHA256, m.Version); err != nil {
			return fmt.Errorf("sqlstore: record the checksum of migration %s: %w", m.File(), err)
		}
	}
	return tx.Commit()
}

// ErrNewerSchema: the database has a migration this build does not know;
// a newer tidemark migrated it (see NewerSchemaError).
var ErrNewerSchema = fmt.Errorf("sqlstore: database migrated by a newer tidemark: %w", tidemark.ErrConflict)

// NewerSchemaError names the first migration of the database that this
// build does not know.
type NewerSchemaError struct {
	Version int
	Name    string
	Known   int // the last migration this build knows
}

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("%v: it has migration %04d_%s, and this tidemark knows migrations up to %04d only: "+
		"run the newer tidemark that migrated it (every worker on one database must run it), not this one",
		ErrNewerSchema, e.Version, e.Name, e.Known)
}

func (e *NewerSchemaError) Unwrap() error { return ErrNewerSchema }

// CheckSchema refuses a database that a newer tidemark migrated: this
// build would run on a schema it does not understand. Open checks it; a
// process that runs for long checks it again, since a newer build may
// migrate the database under it.
func (d *DB) CheckSchema(ctx context.Context) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	known := ms[len(ms)-1].Version
	var (
		v    int
		name string
	)
	err = d.db.QueryRowContext(ctx, `SELECT version, name FROM schema_migrations WHERE version > $1 ORDER BY version LIMIT 1`, known).Scan(&v, &name)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("sqlstore: read schema_migrations: %w", err)
	}
	return &NewerSchemaError{Version: v, Name: name, Known: known}
}

// ErrMigrationChanged: a migration file differs from the one the database
// applied. Released migrations are immutable; a change is a new file.
var ErrMigrationChanged = fmt.Errorf("sqlstore: migration changed after it was applied: %w", tidemark.ErrConflict)

func (d *DB) apply(ctx context.Context, m Migration) error {
	tx, err := d.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if d.Dialect.MigrationLock != "" {
		if _, err := tx.ExecContext(ctx, d.Dialect.MigrationLock); err != nil {
			return fmt.Errorf("sqlstore: migration lock: %w", err)
		}
	}
	var applied sql.NullString
	err = tx.QueryRowContext(ctx, `SELECT sha256 FROM schema_migrations WHERE version = $1`, m.Version).Scan(&applied)
	switch {
	case err == nil && applied.String != m.SHA256:
		return fmt.Errorf("%w: migrations/%s has sha256 %s, the database applied %s; restore the released file and put the change in a new migration",
			ErrMigrationChanged, m.File(), m.SHA256, applied.String)
	case err == nil:
		return nil
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("sqlstore: migration %d: %w", m.Version, err)
	}
	body := strings.ReplaceAll(m.SQL, "{{bytes}}", d.Dialect.Bytes)
	for _, stmt := range splitStatements(body) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sqlstore: migration %04d_%s: %w\n%s", m.Version, m.Name, err, stmt)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at, sha256) VALUES ($1, $2, $3, $4)`,
		m.Version, m.Name, ms(d.Clock.Now()), m.SHA256); err != nil {
		return fmt.Errorf("sqlstore: record migration %d: %w", m.Version, err)
	}
	return tx.Commit()
}

// splitStatements splits a migration on semicolons that end a line, after
// dropping -- comments. Migrations keep to that shape (no semicolons inside
// string literals at a line's end).
func splitStatements(body string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(body, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			s := strings.TrimSpace(cur.String())
			out = append(out, strings.TrimSuffix(s, ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
