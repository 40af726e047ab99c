package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
)

// SQLite parses every statement it is given, and the driver gives it the
// text of every Exec and Query anew: on a hot path most of the CPU went to
// SQLite's parser. A statement cache per connection keeps each statement
// that connection has run prepared, keyed by its text, and runs the next
// call of the same text on it: every statement of tidemark's, on every
// path, is parsed once per connection.
//
// A cached statement serves one call at a time: a second call of the same
// text while the first's rows are still open (a nested query) runs
// unprepared. The least recently used statement not in use is closed when
// the cache is full, so statements whose text is built per call (a list of
// placeholders) cannot grow it without bound.

// stmtCacheSize is how many statements a connection keeps prepared: more
// than the stores' fixed statements, with room for built ones.
const stmtCacheSize = 256

// cachingConnector opens connections that keep their statements.
type cachingConnector struct {
	driver.Connector
	size int
}

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	q, okQ := conn.(driver.QueryerContext)
	e, okE := conn.(driver.ExecerContext)
	p, okP := conn.(driver.ConnPrepareContext)
	b, okB := conn.(driver.ConnBeginTx)
	if !okQ || !okE || !okP || !okB {
		// Nothing to cache through; the driver's own paths serve.
		return conn, nil
	}
	return &cachedConn{Conn: conn, query: q, exec: e, prepare: p, begin: b, size: c.size, stmts: map[string]*cachedStmt{}}, nil
}

// ctxStmt is a prepared statement that runs with a context.
type ctxStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

type cachedStmt struct {
	stmt    ctxStmt
	inUse   bool
	lastUse uint64
}

// cachedConn is a driver connection that keeps its statements prepared.
// database/sql uses a connection from one goroutine at a time, so its
// cache needs no lock.
type cachedConn struct {
	driver.Conn
	query   driver.QueryerContext
	exec    driver.ExecerContext
	prepare driver.ConnPrepareContext
	begin   driver.ConnBeginTx
	size    int
	stmts   map[string]*cachedStmt
	uses    uint64
	// prepares counts statements prepared for the cache (tests).
	prepares int
}

// take returns the statement for query, prepared on first use, marked in
// use; nil when it is in use already (run it unprepared).
func (c *cachedConn) take(ctx context.Context, query string) (*cachedStmt, error) {
	c.uses++
	if cs, ok := c.stmts[query]; ok {
		if cs.inUse {
			return nil, nil
		}
		cs.inUse, cs.lastUse = true, c.uses
		return cs, nil
	}
	st, err := c.prepare.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	cst, ok := st.(ctxStmt)
	if !ok {
		st.Close()
		return nil, nil
	}
	c.prepares++
	if len(c.stmts) >= c.size {
		c.evict()
	}
	cs := &cachedStmt{stmt: cst, inUse: true, lastUse: c.uses}
	c.stmts[query] = cs
	return cs, nil
}

// evict closes the least recently used statement not in use.
func (c *cachedConn) evict() {
	var oldest string
	var found *cachedStmt
	for q, cs := range c.stmts {
		if !cs.inUse && (found == nil || cs.lastUse < found.lastUse) {
			oldest, found = q, cs
		}
	}
	if found != nil {
		found.stmt.Close()
		delete(c.stmts, oldest)
	}
}

func (c *cachedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	cs, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.exec.ExecContext(ctx, query, args)
	}
	defer func() { cs.inUse = false }()
	return cs.stmt.ExecContext(ctx, args)
}

func (c *cachedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	cs, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.query.QueryContext(ctx, query, args)
	}
	rows, err := cs.stmt.QueryContext(ctx, args)
	if err != nil {
		cs.inUse = false
		return nil, err
	}
	return &cachedRows{Rows: rows, release: func() { cs.inUse = false }}, nil
}

// Close closes the cached statements, then the connection.
func (c *cachedConn) Close() error {
	var errs []error
	for q, cs := range c.stmts {
		errs = append(errs, cs.stmt.Close())
		delete(c.stmts, q)
	}
	return errors.Join(append(errs, c.Conn.Close())...)
}

func (c *cachedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.prepare.PrepareContext(ctx, query)
}

func (c *cachedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.begin.BeginTx(ctx, opts)
}

func (c *cachedConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *cachedConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *cachedConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// cachedRows gives its statement back to the cache when closed.
type cachedRows struct {
	driver.Rows
	release func()
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	if r.release != nil {
		r.release()
		r.release = nil
	}
	return err
}
