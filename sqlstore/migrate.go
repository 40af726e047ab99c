package sqlstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
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
}

var migrationDialects = map[string]bool{SQLite.Name: true, Postgres.Name: true}

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
		out = append(out, Migration{Version: v, Name: base, Dialect: dialect, SQL: string(b)})
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
	if d.Dialect.Name == "postgres" {
		// CREATE TABLE IF NOT EXISTS is not safe under concurrency on
		// PostgreSQL; take the advisory lock around it too.
		tx, err := d.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(746564)`); err != nil {
			return fmt.Errorf("sqlstore: migration lock: %w", err)
		}
		if _, err := tx.ExecContext(ctx, createMigrationsTable); err != nil {
			return fmt.Errorf("sqlstore: schema_migrations: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	} else if _, err := d.db.ExecContext(ctx, createMigrationsTable); err != nil {
		return fmt.Errorf("sqlstore: schema_migrations: %w", err)
	}
	for _, m := range ms {
		if upTo > 0 && m.Version > upTo {
			break
		}
		if m.Dialect != "" && m.Dialect != d.Dialect.Name {
			continue
		}
		if err := d.apply(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at BIGINT NOT NULL
)`

func (d *DB) apply(ctx context.Context, m Migration) error {
	tx, err := d.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if d.Dialect.Name == "postgres" {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(746564)`); err != nil {
			return fmt.Errorf("sqlstore: migration lock: %w", err)
		}
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = $1`, m.Version).Scan(&n); err != nil {
		return fmt.Errorf("sqlstore: migration %d: %w", m.Version, err)
	}
	if n > 0 {
		return nil
	}
	body := strings.ReplaceAll(m.SQL, "{{bytes}}", d.Dialect.Bytes)
	for _, stmt := range splitStatements(body) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sqlstore: migration %04d_%s: %w\n%s", m.Version, m.Name, err, stmt)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
		m.Version, m.Name, ms(d.Clock.Now())); err != nil {
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
