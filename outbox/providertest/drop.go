package providertest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
)

// Dropper wraps a receiver's handler to lose answers the way a receiver
// that commits and then crashes, or a proxy that times out, does: every
// write (a POST or a PUT) is served by the wrapped handler, so the receiver records
// it, and the answer to every nth accepted write is never sent: the
// connection is hijacked and closed instead. Reads pass through.
//
// A client that re-sends a request whose answer was lost (Go's transport
// does, for a request with an Idempotency-Key on a reused connection)
// writes it twice here.
type Dropper struct {
	next http.Handler

	mu      sync.Mutex
	every   int
	killAt  int    // the accepted write whose answer kill precedes (0: none)
	kill    func() // kills the writer (SIGKILL) while its write is answered
	writes  int    // accepted writes
	dropped int
	reused  int // writes that arrived on a connection that had served a request before
}

// NewDropper wraps next; it drops nothing until DropEvery.
func NewDropper(next http.Handler) *Dropper { return &Dropper{next: next} }

// DropEvery loses the answer to every nth accepted write (0: none).
func (d *Dropper) DropEvery(n int) { d.mu.Lock(); d.every = n; d.mu.Unlock() }

// KillAt calls kill (which kills the writing process, as kill -9 from
// outside does) once the nth accepted write has been taken and before its
// answer leaves; the answer is then lost with the process: a crash in the
// middle of a send.
func (d *Dropper) KillAt(n int, kill func()) { d.mu.Lock(); d.killAt, d.kill = n, kill; d.mu.Unlock() }

// Dropped is how many answers were lost.
func (d *Dropper) Dropped() int { d.mu.Lock(); defer d.mu.Unlock(); return d.dropped }

// Reused is how many writes arrived on a kept-alive connection.
func (d *Dropper) Reused() int { d.mu.Lock(); defer d.mu.Unlock(); return d.reused }

type connKey struct{}

// ConnContext counts the requests served on each connection; install it as
// the http.Server's ConnContext so Reused can tell kept-alive writes.
func ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, new(atomic.Int64))
}

func (d *Dropper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	served := int64(0)
	if n, ok := r.Context().Value(connKey{}).(*atomic.Int64); ok {
		served = n.Add(1) - 1
	}
	d.mu.Lock()
	every, hooked := d.every, d.kill != nil
	d.mu.Unlock()
	if (r.Method != http.MethodPost && r.Method != http.MethodPut) || (every == 0 && !hooked) {
		d.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	d.next.ServeHTTP(rec, r)
	d.mu.Lock()
	drop := false
	var kill func()
	if rec.Code/100 == 2 {
		d.writes++
		if served > 0 {
			d.reused++
		}
		drop = every > 0 && d.writes%every == 0
		if d.kill != nil && d.writes == d.killAt {
			kill, drop = d.kill, true
		}
		if drop {
			d.dropped++
		}
	}
	d.mu.Unlock()
	if kill != nil {
		kill()
	}
	if drop {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// NewDropServer starts a server on 127.0.0.1 serving h through a Dropper,
// with ConnContext installed. It stops when the test ends.
func NewDropServer(tb interface {
	Helper()
	Cleanup(func())
}, h http.Handler) (*httptest.Server, *Dropper) {
	tb.Helper()
	d := NewDropper(h)
	srv := httptest.NewUnstartedServer(d)
	srv.Config.ConnContext = ConnContext
	srv.Start()
	tb.Cleanup(srv.Close)
	return srv, d
}
