package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ingest"
	"modernc.org/sqlite"
)

// openCached opens one SQLite connection through the statement cache.
func openCached(t *testing.T, size int) *cachedConn {
	t.Helper()
	inner, err := sqlite.NewConnector("file:" + filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := cachingConnector{Connector: inner, size: size}.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c, ok := conn.(*cachedConn)
	if !ok {
		t.Fatalf("Connect returned %T, want a caching connection", conn)
	}
	t.Cleanup(func() { c.Close() })
	exec(t, c, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b')`)
	return c
}

func exec(t *testing.T, c *cachedConn, query string, args ...any) {
	t.Helper()
	if _, err := c.ExecContext(context.Background(), query, named(args)); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func named(args []any) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, a := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return out
}

// readAll reads every row's first column.
func readAll(t *testing.T, rows driver.Rows) []any {
	t.Helper()
	var out []any
	dest := make([]driver.Value, len(rows.Columns()))
	for {
		err := rows.Next(dest)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, dest[0])
	}
}

func TestTheSameStatementIsParsedOncePerConnection(t *testing.T) {
	c := openCached(t, 8)
	ctx := context.Background()
	before := c.prepares
	const q = `SELECT v FROM t WHERE id = $1`
	for i := range 5 {
		rows, err := c.QueryContext(ctx, q, named([]any{int64(i%2 + 1)}))
		if err != nil {
			t.Fatal(err)
		}
		got := readAll(t, rows)
		rows.Close()
		if want := []string{"a", "b"}[i%2]; len(got) != 1 || got[0] != want {
			t.Fatalf("round %d: got %v, want [%s]", i, got, want)
		}
		exec(t, c, `UPDATE t SET v = v WHERE id = $1`, int64(1))
	}
	if n := c.prepares - before; n != 2 {
		t.Errorf("5 rounds of the same two statements prepared %d statements, want 2", n)
	}
}

// A query run again while its first rows are still open (a nested read)
// cannot share the statement: it runs unprepared, and both read their own
// rows.
func TestANestedRunOfTheSameQueryReadsItsOwnRows(t *testing.T) {
	c := openCached(t, 8)
	ctx := context.Background()
	const q = `SELECT v FROM t WHERE id >= $1 ORDER BY id`
	outer, err := c.QueryContext(ctx, q, named([]any{int64(1)}))
	if err != nil {
		t.Fatal(err)
	}
	dest := make([]driver.Value, 1)
	if err := outer.Next(dest); err != nil || dest[0] != "a" {
		t.Fatalf("outer first row: %v %v", dest[0], err)
	}
	inner, err := c.QueryContext(ctx, q, named([]any{int64(2)}))
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, inner); len(got) != 1 || got[0] != "b" {
		t.Errorf("nested query read %v, want [b]", got)
	}
	inner.Close()
	if got := readAll(t, outer); len(got) != 1 || got[0] != "b" {
		t.Errorf("outer query's remaining rows: %v, want [b]", got)
	}
	outer.Close()
	// Released: the next run uses the cached statement again.
	before := c.prepares
	rows, err := c.QueryContext(ctx, q, named([]any{int64(1)}))
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, rows); len(got) != 2 {
		t.Errorf("after release: %v", got)
	}
	rows.Close()
	if c.prepares != before {
		t.Errorf("a released statement was prepared again")
	}
}

// A full cache closes its least recently used statement, never one whose
// rows are open.
func TestAFullCacheClosesItsLeastRecentlyUsedStatementNotInUse(t *testing.T) {
	c := openCached(t, 2)
	ctx := context.Background()
	held, err := c.QueryContext(ctx, `SELECT v FROM t ORDER BY id`, nil) // oldest, and in use
	if err != nil {
		t.Fatal(err)
	}
	exec(t, c, `UPDATE t SET v = 'x' WHERE id = 3`) // evicts the CREATE script
	exec(t, c, `UPDATE t SET v = 'y' WHERE id = 3`) // evicts the first UPDATE, not the held query
	if _, ok := c.stmts[`SELECT v FROM t ORDER BY id`]; !ok {
		t.Error("the statement in use was evicted")
	}
	if _, ok := c.stmts[`UPDATE t SET v = 'x' WHERE id = 3`]; ok {
		t.Error("the least recently used statement was kept")
	}
	if len(c.stmts) != 2 {
		t.Errorf("cache holds %d statements, want 2", len(c.stmts))
	}
	if got := readAll(t, held); len(got) != 2 {
		t.Errorf("held rows: %v", got)
	}
	held.Close()
}

// A cached statement sees the schema as it is when it runs, not as it was
// when it was prepared (a migration between two runs).
func TestACachedStatementFollowsASchemaChange(t *testing.T) {
	c := openCached(t, 8)
	ctx := context.Background()
	const q = `SELECT * FROM t WHERE id = 1`
	rows, err := c.QueryContext(ctx, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rows.Columns()); n != 2 {
		t.Fatalf("%d columns, want 2", n)
	}
	rows.Close()
	exec(t, c, `ALTER TABLE t ADD COLUMN w TEXT NOT NULL DEFAULT 'w'`)
	rows, err = c.QueryContext(ctx, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if n := len(rows.Columns()); n != 3 {
		t.Errorf("after ALTER TABLE: %d columns, want 3", n)
	}
}

// A statement that does not parse is an error, and nothing is cached.
func TestABadStatementIsAnErrorAndIsNotCached(t *testing.T) {
	c := openCached(t, 8)
	n := len(c.stmts)
	if _, err := c.ExecContext(context.Background(), `UPDAT t SET v = 1`, nil); err == nil {
		t.Fatal("a statement that does not parse ran")
	}
	if len(c.stmts) != n {
		t.Error("a statement that does not parse was cached")
	}
}

// The pool keeps its connections, and with them their statements, however
// many workers come and go: a connection closed for being idle is one
// opened again, schema read and pragmas run, on the next burst.
func TestThePoolKeepsItsConnectionsBetweenBursts(t *testing.T) {
	ctx := context.Background()
	d := openSQLiteDB(t)
	for range 3 {
		var opened, done sync.WaitGroup
		opened.Add(8)
		for range 8 {
			done.Go(func() {
				rows, err := d.SQL().QueryContext(ctx, `SELECT COUNT(*) FROM sources`)
				opened.Done()
				if err != nil {
					t.Error(err)
					return
				}
				opened.Wait() // all eight open at once
				rows.Close()
			})
		}
		done.Wait()
	}
	if st := d.SQL().Stats(); st.MaxIdleClosed != 0 || st.OpenConnections != 8 {
		t.Errorf("after three bursts of 8: %d open, %d closed for being idle; want 8 and 0", st.OpenConnections, st.MaxIdleClosed)
	}
}

// On SQLite, write transactions queue for one connection in the process,
// rather than each sleeping in SQLite's busy handler until the
// database's lock is free: none fails, none is lost, and they ran one at
// a time on the one connection.
func TestSQLiteWritersQueueForOneConnection(t *testing.T) {
	ctx := context.Background()
	d := openSQLiteDB(t)
	if _, err := d.SQL().ExecContext(ctx, `CREATE TABLE n (v INTEGER NOT NULL); INSERT INTO n VALUES (0)`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 25 {
				tx, err := d.Begin(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := tx.ExecContext(ctx, `UPDATE n SET v = v + 1`); err != nil {
					t.Error(err)
				}
				if err := tx.Commit(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	var v int
	if err := d.SQL().QueryRowContext(ctx, `SELECT v FROM n`).Scan(&v); err != nil || v != 400 {
		t.Fatalf("counter %d (%v), want 400", v, err)
	}
	if st := d.w.Stats(); st.MaxOpenConnections != 1 || st.OpenConnections != 1 || st.WaitCount == 0 {
		t.Errorf("write pool: %+v; want one connection that writers waited for", st)
	}
}

// A write the store makes in one statement, outside Begin (adding a
// source), also takes its turn on the write connection: it does not race
// the queued transactions for SQLite's lock from another connection, where
// it would sleep in the busy handler while each commit hands the lock to
// the next writer in the queue.
func TestSQLiteWritesOutsideATransactionQueueToo(t *testing.T) {
	ctx := context.Background()
	d := openSQLiteDB(t)
	tx, err := d.Begin(ctx) // the write connection, held
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.Ingest().AddSource(ctx, ingest.NewSource{Name: "queued", Kind: "test", Location: "x", Interval: time.Minute, RetryBudget: 3})
		done <- err
	}()
	for d.w.Stats().WaitCount == 0 {
		select {
		case err := <-done:
			t.Fatalf("the write ran while the write connection was held (%v): it did not queue for it", err)
		case <-time.After(time.Millisecond):
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// openSQLiteDB opens a tidemark database on SQLite in a temporary
// directory, closed when the test ends.
func openSQLiteDB(t *testing.T) *DB {
	t.Helper()
	d, err := Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "t.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
