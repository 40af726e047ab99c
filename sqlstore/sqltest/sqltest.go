// Package sqltest gives each test its own tidemark database: a temporary
// SQLite file always, and a fresh PostgreSQL schema when
// TIDEMARK_TEST_POSTGRES_URL names a server. Suites call ForEachBackend so
// the same assertions run against every backend that is available.
package sqltest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/ids"
	"github.com/tidemark/tidemark/sqlstore"
)

// PostgresEnv names the variable holding a PostgreSQL URL for tests, e.g.
// postgres://tidemark:tidemark@127.0.0.1:5432/tidemark?sslmode=disable.
const PostgresEnv = "TIDEMARK_TEST_POSTGRES_URL"

// Epoch is the fake clock's starting time in tests.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Backend is one database a suite runs against.
type Backend struct {
	Name string // "sqlite" or "postgres"
	// NewURL returns the URL of a fresh, empty database for this test.
	NewURL func(tb testing.TB) string
}

// Backends returns SQLite, and PostgreSQL when its variable is set.
func Backends() []Backend {
	bs := []Backend{{Name: "sqlite", NewURL: NewSQLiteURL}}
	if os.Getenv(PostgresEnv) != "" {
		bs = append(bs, Backend{Name: "postgres", NewURL: NewPostgresURL})
	}
	return bs
}

// ForEachBackend runs fn as a subtest per available backend.
func ForEachBackend(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Helper()
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) { fn(t, b) })
	}
}

// NewSQLiteURL returns a URL for a SQLite file in the test's temp dir.
func NewSQLiteURL(tb testing.TB) string {
	tb.Helper()
	return "sqlite:" + filepath.Join(tb.TempDir(), "tidemark.db")
}

// NewPostgresURL creates a fresh schema on the test server, drops it when
// the test ends, and returns a URL whose connections use it.
func NewPostgresURL(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		tb.Skipf("%s not set", PostgresEnv)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", base)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		admin.Close()
		tb.Fatalf("create schema: %v", err)
	}
	tb.Cleanup(func() {
		_, _ = admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Env is a test's injected world: a fake clock, seeded IDs and randomness.
type Env struct {
	Clock *clock.Fake
	IDs   *ids.ULIDs
	Rand  *ids.Rand
}

// NewEnv returns a deterministic Env for seed.
func NewEnv(seed uint64) Env {
	clk := clock.NewFake(Epoch)
	r := ids.NewRand(seed)
	return Env{Clock: clk, IDs: ids.NewULIDs(clk, ids.NewRand(seed+1)), Rand: r}
}

// MustOpen opens a fresh database on backend b with env's clock and IDs.
// A SQLite database starts as a copy of one this process migrated once:
// migrating costs a test a fifth of a second, the copy a millisecond, and
// the copy is the same file. Open still checks every migration against
// it. Tests of the migrations themselves open NewURL's empty database.
func MustOpen(tb testing.TB, b Backend, env Env) *sqlstore.DB {
	tb.Helper()
	url := b.NewURL(tb)
	if b.Name == "sqlite" {
		body, err := sqliteTemplate()
		if err != nil {
			tb.Fatalf("sqltest: migrate the SQLite template: %v", err)
		}
		if err := os.WriteFile(strings.TrimPrefix(url, "sqlite:"), body, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return MustOpenURL(tb, url, env)
}

// sqliteTemplate returns a migrated SQLite database file, made once per
// process in a directory that is removed as soon as the file is read.
var sqliteTemplate = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "tidemark-sqltest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tidemark.db")
	ctx := context.Background()
	clk := clock.NewFake(Epoch)
	db, err := sqlstore.Open(ctx, "sqlite:"+path, sqlstore.Options{Clock: clk, IDs: ids.NewULIDs(clk, ids.NewRand(1))})
	if err != nil {
		return nil, err
	}
	// Fold the write-ahead log into the file, so the file alone is the
	// database.
	if _, err := db.SQL().ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
})

// MustOpenURL opens url with env's clock and IDs and closes it at cleanup.
func MustOpenURL(tb testing.TB, url string, env Env) *sqlstore.DB {
	tb.Helper()
	// A zero Env means the system clock and random IDs (tests whose
	// processes share real time).
	var opt sqlstore.Options
	if env.Clock != nil {
		opt.Clock = env.Clock
	}
	if env.IDs != nil {
		opt.IDs = env.IDs
	}
	db, err := sqlstore.Open(context.Background(), url, opt)
	if err != nil {
		tb.Fatalf("open %s: %v", url, err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}
