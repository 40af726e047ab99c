// Package sqlstore implements tidemark's stores over database/sql, once, for
// both SQLite (modernc.org/sqlite, pure Go, WAL, the write lock taken at
// BEGIN) and PostgreSQL (pgx). The two differ only in a small Dialect; the
// business rules live in the pipeline packages, and every fenced write here
// states its condition in its WHERE clause and checks the rows it affected.
//
// Schema changes are versioned migrations in migrations/, applied at Open,
// each in its own transaction.
package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // also registers the "pgx" driver
	"modernc.org/sqlite"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/ids"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/redact"
)

// Dialect is everything that differs between the backends. Queries are
// written once with $N placeholders, which both drivers accept.
type Dialect struct {
	Name string // "sqlite" or "postgres"
	// LockRow is appended to a SELECT that must lock the rows it reads
	// until commit. SQLite needs none: its write lock is taken at BEGIN.
	LockRow string
	// LockSkipLocked is appended to a SELECT that must lock rows and pass
	// over rows another transaction holds.
	LockSkipLocked string
	// LockShare is appended to a SELECT that must keep the rows it reads
	// from changing until commit while letting other readers share them.
	LockShare string
	// Bytes is the column type for raw bytes.
	Bytes string
	// MigrationLock, when set, is run first in every migrating transaction
	// to serialize processes migrating together (SQLite's write lock,
	// taken at BEGIN, already does). On PostgreSQL it is keyed by the
	// schema: tidemarks in other schemas of one server do not wait.
	MigrationLock string
	// ColumnCount counts the columns named $2 of table $1 (0 or 1).
	ColumnCount string
	// RowAtATime: a statement costs no round trip (SQLite runs in the
	// process), so writing row by row through statements prepared once
	// costs less than parsing one long multi-row statement. Dialects
	// without it take the set-based paths, which pass keys as array
	// parameters (unnest($n::text[])).
	RowAtATime bool
	// ModifyingCTE: several writes can be one statement through
	// data-modifying WITH clauses, one round trip instead of several.
	ModifyingCTE bool
	// CopyFrom: bulk rows stream in with COPY inside a transaction (pgx's
	// CopyFrom on the transaction's connection).
	CopyFrom bool
	// ConvertInSQL: a migration batch is converted inside the database,
	// by a function of tidemark's (see convertInSQL).
	ConvertInSQL bool
	// MaxParams is the most bind parameters one statement may carry.
	MaxParams int
	// search is the dialect's full-text search.
	search *searchDialect
}

var (
	SQLite = Dialect{Name: "sqlite", Bytes: "BLOB", RowAtATime: true, ConvertInSQL: true, MaxParams: 32766, search: sqliteSearch,
		ColumnCount: `SELECT COUNT(*) FROM pragma_table_info($1) WHERE name = $2`}
	Postgres = Dialect{Name: "postgres", LockRow: " FOR UPDATE", LockSkipLocked: " FOR UPDATE SKIP LOCKED", LockShare: " FOR SHARE", Bytes: "BYTEA",
		ModifyingCTE: true, CopyFrom: true, MaxParams: 65535, search: postgresSearch,
		MigrationLock: `SELECT pg_advisory_xact_lock(746564, hashtext(current_schema()))`,
		ColumnCount: `SELECT COUNT(*) FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2`}
)

// registerSQLiteFunctions registers tidemark's SQL functions with the
// SQLite driver, once, before its first connection opens.
var registerSQLiteFunctions sync.Once

// DB is an open tidemark database.
type DB struct {
	db *sql.DB
	// w runs every write: the write transactions (Begin) and the store's
	// writes of one statement. On SQLite it is a pool of one connection:
	// writers wait in the process and the next starts as the last ends,
	// where on the database's lock each would sleep in SQLite's busy
	// handler (1, 2, 5, 10 … ms) however soon the lock came free. A write
	// that went around it would race the queue for the lock from another
	// connection, and lose. The wait is bounded by the caller's context,
	// not by busy_timeout. Elsewhere w is db.
	w       *sql.DB
	Dialect Dialect
	Clock   clock.Clock
	IDs     ids.Source
	url     string
	// liveness tells which claim holders are gone (Options.Liveness).
	liveness *ingest.Liveness
	// sourceKey keys sources (Options.SourceKey).
	sourceKey ingest.KeyFunc
	// nextTakeover is when ClaimDue may next look for claims of gone
	// holders (Unix ms; 0: at once).
	nextTakeover atomic.Int64
}

// Options injects time and identity. Zero values mean the system clock and
// ULIDs from crypto/rand.
type Options struct {
	Clock clock.Clock
	IDs   ids.Source
	// MaxOpenConns bounds the pool (0: the backend's default).
	MaxOpenConns int
	// Liveness, when set, lets a claim take over at once a claim whose
	// holder is a process of this host that is no longer running, instead
	// of waiting for its lease to expire (see ingest.Liveness).
	Liveness *ingest.Liveness
	// SourceKey is the rule that keys sources (kinds.Set.Key, the one
	// source add uses): Set keys a source anew with it when a change of its
	// settings changes what the source watches. Without it, a change of
	// config to a source that has a key is refused: the store cannot tell
	// the key the change leaves.
	SourceKey ingest.KeyFunc

	// migrateUpTo stops the migrations after this version (0: all); tests
	// use it to build a database as an older release left it.
	migrateUpTo int
}

// wantURL is what a database URL may be, for the refusal of one that is
// none of it.
const wantURL = "want sqlite:PATH, postgres://… or a PostgreSQL keyword/value string (host=… dbname=…)"

// isPostgres reports whether url names a PostgreSQL database: a
// postgres:// or postgresql:// URL, or a keyword/value string
// (host=… user=… dbname=…), which pgx reads as libpq does.
func isPostgres(url string) bool {
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		return true
	}
	// A keyword/value string starts with a keyword and = (spaces around
	// it allowed); a path or another scheme does not.
	key, _, ok := strings.Cut(strings.TrimSpace(url), "=")
	key = strings.TrimSpace(key)
	return ok && key != "" && strings.IndexFunc(key, func(r rune) bool {
		return !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) < 0
}

// parseURL is the database url is read as: PostgreSQL's connection
// configuration, or a SQLite file's path. field names the setting in the
// refusal of a url that is neither; its password is never shown.
func parseURL(field, url string) (cfg *pgx.ConnConfig, sqlitePath string, err error) {
	switch {
	case isPostgres(url):
		cfg, err = pgx.ParseConfig(url)
		if err != nil {
			return nil, "", redact.Err(tidemark.Invalidf(field, redact.DatabaseURL(url), "%v", err), redact.DatabaseSecrets(url)...)
		}
		return cfg, "", nil
	case strings.HasPrefix(url, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(url, "sqlite:"), "//")
		if path == "" {
			return nil, "", tidemark.Invalidf(field, redact.DatabaseURL(url), "sqlite: needs a file path, e.g. sqlite:.tidemark/tidemark.db")
		}
		return nil, path, nil
	default:
		return nil, "", tidemark.Invalidf(field, redact.DatabaseURL(url), wantURL)
	}
}

// CheckURL refuses, as invalid input naming field, a database url Open
// would refuse before connecting: one of no known form, a PostgreSQL one
// pgx cannot read, a sqlite: one without a path. A command checks its
// settings with it before anything runs.
func CheckURL(field, url string) error {
	_, _, err := parseURL(field, url)
	return err
}

// Open opens the database named by url and applies pending migrations.
//
//	sqlite:PATH             a SQLite file (created with its directory)
//	postgres://...          PostgreSQL (also postgresql://)
//	host=… dbname=…         PostgreSQL, as a keyword/value string
func Open(ctx context.Context, url string, opt Options) (*DB, error) {
	if opt.Clock == nil {
		opt.Clock = clock.System{}
	}
	if opt.IDs == nil {
		opt.IDs = ids.NewULIDs(opt.Clock, rand.Reader)
	}
	d := &DB{Clock: opt.Clock, IDs: opt.IDs, url: url, liveness: opt.Liveness, sourceKey: opt.SourceKey}
	cfg, path, err := parseURL("database url", url)
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		d.Dialect = Postgres
		d.db = sql.OpenDB(outageConnector{stdlib.GetConnector(*cfg)})
		n := opt.MaxOpenConns
		if n == 0 {
			n = 20
		}
		d.db.SetMaxOpenConns(n)
		d.db.SetMaxIdleConns(n)
	} else {
		d.Dialect = SQLite
		if dir := filepath.Dir(path); dir != "." {
			// The database holds the lanes' secrets in clear: a directory
			// made for it is its owner's only.
			if err := os.MkdirAll(dir, 0o700); err != nil {
				// The caller named a place that cannot hold a database: input
				// to fix (exit 2), not an internal error.
				return nil, tidemark.Invalidf("database url", redact.DatabaseURL(url), "cannot create its directory: %v", err)
			}
		}
		if err := createOwnerOnly(path); err != nil {
			return nil, tidemark.Invalidf("database url", redact.DatabaseURL(url), "cannot create the database file: %v", err)
		}
		// _txlock=immediate takes the write lock at BEGIN, so two writers
		// never both read and then race to upgrade; busy_timeout makes the
		// second wait instead of failing.
		dsn := "file:" + uriPath(path) + "?_txlock=immediate&_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)"
		registerSQLiteFunctions.Do(func() {
			sqlite.MustRegisterDeterministicScalarFunction(convertFunction, 4, sqlConvert)
		})
		var conn driver.Connector
		conn, err = sqlite.NewConnector(dsn)
		if err == nil {
			d.db = sql.OpenDB(cachingConnector{Connector: conn, size: stmtCacheSize})
			n := opt.MaxOpenConns
			if n == 0 {
				n = 8
			}
			// Idle connections stay open (database/sql keeps two by
			// default): opening one reads the schema and runs the
			// pragmas, and closing one loses its prepared statements.
			d.db.SetMaxOpenConns(n)
			d.db.SetMaxIdleConns(n)
			d.w = sql.OpenDB(cachingConnector{Connector: conn, size: stmtCacheSize})
			d.w.SetMaxOpenConns(1)
			d.w.SetMaxIdleConns(1)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open: %w", err)
	}
	if d.w == nil {
		d.w = d.db
	}
	if err := d.db.PingContext(ctx); err != nil {
		d.Close()
		// pgx masks the password it parsed, but not a piece of the one
		// given that it took for something else (the tail of a password
		// with a raw @, taken for the host, in a lookup error).
		if errors.Is(err, tidemark.ErrUnavailable) || errors.Is(err, tidemark.ErrRefused) { // outageConnector said so
			return nil, redact.Err(fmt.Errorf("sqlstore: open %s: %w", redact.DatabaseURL(url), err), redact.DatabaseSecrets(url)...)
		}
		return nil, redact.Err(fmt.Errorf("sqlstore: connect %s: %w: %w", redact.DatabaseURL(url), tidemark.ErrUnavailable, err), redact.DatabaseSecrets(url)...)
	}
	if err := d.migrate(ctx, opt.migrateUpTo); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// takeoverDue reports whether a look for claims of gone holders is due at
// now, and if so books the next one every later. Of callers racing for the
// same look, one wins.
func (d *DB) takeoverDue(now time.Time, every time.Duration) bool {
	next := d.nextTakeover.Load()
	if next != 0 && ms(now) < next {
		return false
	}
	return d.nextTakeover.CompareAndSwap(next, ms(now.Add(every)))
}

// Close closes the database.
func (d *DB) Close() error {
	err := d.db.Close()
	if d.w != d.db {
		err = errors.Join(err, d.w.Close())
	}
	return err
}

// SQL returns the underlying pool, for packages that compose their own
// statements inside tidemark's transactions.
func (d *DB) SQL() *sql.DB { return d.db }

// Begin opens a transaction. On SQLite it waits its turn for the one
// write connection and holds the database's write lock until it ends.
func (d *DB) Begin(ctx context.Context) (*sql.Tx, error) {
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: begin: %w", err)
	}
	return tx, nil
}

// uriPath escapes the characters that end or escape a path in a SQLite
// URI filename, so a file named "a#b?c" opens as itself.
func uriPath(p string) string {
	return strings.NewReplacer("%", "%25", "#", "%23", "?", "%3f").Replace(p)
}

// createOwnerOnly creates an empty SQLite database file at path, readable
// and writable by its owner only, unless a file is there already (its mode
// is its owner's choice). SQLite gives the -wal and -shm files it makes
// the mode of the database file, so they are the owner's only too.
func createOwnerOnly(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// URL returns the database URL as it may be shown: without a password in
// any of the forms one can take (redact.DatabaseURL).
func (d *DB) URL() string { return redact.DatabaseURL(d.url) }

// ms converts a time to the stored form: Unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMS converts a stored time back.
func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func fromNullMS(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.Int64)
	return &t
}

// nullMS converts an optional time to its stored form.
func nullMS(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: ms(*t), Valid: true}
}

// rowsAffected is how many rows a write matched, for a conditional write
// whose caller tells what a count means (expectOne when only one will do).
func rowsAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%w: rows affected: %v", tidemark.ErrUnconfirmed, err)
	}
	return n, nil
}

// expectOne checks that a conditional write matched exactly one row. A
// condition that matched nothing is the caller's named error; more than one
// is a broken invariant.
func expectOne(res sql.Result, err error, none error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%w: rows affected: %v", tidemark.ErrUnconfirmed, err)
	}
	switch n {
	case 1:
		return nil
	case 0:
		return none
	default:
		return fmt.Errorf("%w: %d rows affected, want 1", tidemark.ErrUnconfirmed, n)
	}
}

// execer runs statements: a *sql.DB or a *sql.Tx.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// exec1 runs a conditional write that must match exactly one row; none is
// returned when it matched nothing.
func exec1(ctx context.Context, q execer, none error, query string, args ...any) error {
	res, err := q.ExecContext(ctx, query, args...)
	return expectOne(res, err, none)
}

// The statement runners, each satisfied by both a *sql.DB and a *sql.Tx.
type (
	rowsQueryer interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	}
	querier interface {
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
	queryer interface {
		rowsQueryer
		querier
	}
)

// queryAll runs query and scans every row with scan. No rows is an empty,
// non-nil slice, so a listing encodes as [] rather than null.
func queryAll[T any](ctx context.Context, q rowsQueryer, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// scanString scans a one-column row of text.
func scanString(sc scanner) (string, error) {
	var s string
	return s, sc.Scan(&s)
}

// IsUniqueViolation reports whether err is a unique-constraint violation on
// either backend.
func IsUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		return coded.SQLState() == "23505"
	}
	var sq interface{ Code() int }
	if errors.As(err, &sq) {
		// SQLITE_CONSTRAINT_UNIQUE (2067) and SQLITE_CONSTRAINT_PRIMARYKEY (1555)
		return sq.Code() == 2067 || sq.Code() == 1555
	}
	return false
}
