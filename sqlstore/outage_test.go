package sqlstore_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// tcpRelay forwards connections to target until it is cut: then it takes
// none and drops those it carries, as a database server that went away.
type tcpRelay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func mustRelay(tb testing.TB, target string) *tcpRelay {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	r := &tcpRelay{ln: ln, target: target}
	go r.serve()
	tb.Cleanup(r.cut)
	return r
}

func (r *tcpRelay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", r.target)
		if err != nil {
			c.Close()
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, c, up)
		r.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); up.Close() }()
		go func() { _, _ = io.Copy(c, up); c.Close() }()
	}
}

func (r *tcpRelay) cut() {
	r.ln.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}

// A PostgreSQL server that goes away under an open database is an outage
// (tidemark.ErrUnavailable: exit 5, HTTP 503), on a query and on a token's
// check alike, not an internal error, and not a token refused.
func TestAServerGoneIsUnavailable(t *testing.T) {
	base := sqltest.NewPostgresURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	relay := mustRelay(t, u.Host)
	u.Host = relay.ln.Addr().String()
	db := sqltest.MustOpenURL(t, u.String(), sqltest.NewEnv(1))
	ctx := context.Background()
	if _, err := db.Ingest().Sources(ctx); err != nil {
		t.Fatal(err)
	}
	relay.cut()
	// The pool's connections went with the server: the next query connects.
	db.SQL().SetMaxIdleConns(0)
	_, err = db.Ingest().Sources(ctx)
	if !errors.Is(err, tidemark.ErrUnavailable) || tidemark.ExitCode(err) != tidemark.ExitUnavailable {
		t.Fatalf("a query with the server gone: %v (exit %d), want tidemark.ErrUnavailable", err, tidemark.ExitCode(err))
	}
	_, err = db.Auth().Authenticate(ctx, "tmk_something")
	if !errors.Is(err, tidemark.ErrUnavailable) || errors.Is(err, tidemark.ErrUnauthenticated) {
		t.Fatalf("a token's check with the server gone: %v, want tidemark.ErrUnavailable", err)
	}
}
