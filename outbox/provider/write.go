package provider

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync/atomic"
	"time"
)

// ErrReplayed: the HTTP layer sent one write twice. It must never happen (the
// WriteClient is built so that it cannot); when it does, the outcome is
// unknown and reconciliation decides.
var ErrReplayed = errors.New("provider: the HTTP layer sent a write twice")

// ErrNotARead: a request that is not a GET or HEAD was handed to the read
// path (GetJSON); writes go through a WriteClient.
var ErrNotARead = errors.New("not a read; writes go through provider.WriteClient")

// WriteClient is the only way a provider sends a write (DESIGN §6: "no layer
// below the journal may replay a write"). It never follows a redirect and
// never lets net/http send a request a second time:
//
// Go's Transport (net/http/transport.go, persistConn.shouldRetryRequest)
// re-sends a request on a new connection when the connection it used was
// reused from the idle pool and broke before an answer, if the request
// "isReplayable" (request.go): its body is nil, NoBody or has GetBody, AND
// its method is GET/HEAD/OPTIONS/TRACE or it carries an Idempotency-Key or
// X-Idempotency-Key header. Both the webhook and Mastodon send that header,
// so a write whose answer was lost on a kept-alive connection was written
// twice and recorded as one attempt that landed.
//
// Each of these alone closes that path; the client does all of them so no
// future change to the transport's rule reopens it:
//
//  1. The body is handed over without GetBody (a one-shot reader), so the
//     request is not replayable and the body cannot be rewound, neither by
//     the HTTP/1 retry loop nor for a 307/308 redirect.
//  2. Writes go through a transport of their own with keep-alives off: every
//     write opens a fresh connection, and the transport never retries a
//     request on a connection that was not reused ("This was a fresh
//     connection. There's no reason the server should've hung up on us").
//  3. HTTP/2 is off for writes, so its own retry loop (GOAWAY,
//     REFUSED_STREAM) is never involved: no TLSNextProto, Protocols of
//     HTTP/1 alone, and no "h2" offered in the TLS handshake (a base
//     transport that has spoken HTTP/2, as http.DefaultTransport has after
//     its first HTTPS request, offers it, and a server that agreed would
//     take the HTTP/1.1 write for a broken connection).
//  4. A trace counts the connections the request was given; a second one
//     means the transport tried again, and the outcome is reported as unknown
//     (ErrReplayed), never as a clean answer.
//
// The same count tells a write that never left from one in doubt. The
// transport reports a connection (httptrace GotConn) once it has one, TLS
// handshake done, and before it writes a byte of the request; a dial that
// failed (refused, timed out, a name that did not resolve, a TLS handshake
// that failed) reports none, and the transport returns at once without
// retrying. So a failure with no connection given, on the client's own
// transport, is a *NotSentError: the write did not land and is sent again
// later. Once a connection was given, any failure is an *UnknownError
// (the request may have been read, in whole or in part). Through a
// RoundTripper the client did not build (a test double, a wrapper) the
// trace proves nothing, and every failure stays in doubt.
//
// A write is at most one TCP (and TLS) handshake more expensive than on a
// pooled connection; lanes are paced to one write in flight with a minimum
// gap, so the cost is small and bounded.
//
// Reads (listings, probes, counts) keep the lane's ordinary, pooled client.
type WriteClient struct {
	hc *http.Client
	// ownTransport: hc's transport is the *http.Transport the client
	// built, whose trace proves a write never left.
	ownTransport bool
}

// NewWriteClient returns a write client built from base's timeout and
// transport (nil: the defaults). When base's transport is an *http.Transport
// it is cloned with keep-alives and HTTP/2 off; another RoundTripper (a test
// double) is used as it is, and rules 1 and 4 still hold.
func NewWriteClient(base *http.Client) *WriteClient {
	if base == nil {
		base = &http.Client{Timeout: 30 * time.Second}
	}
	var rt http.RoundTripper
	tr := base.Transport
	if tr == nil {
		tr = http.DefaultTransport
	}
	own := false
	switch t := tr.(type) {
	case *http.Transport:
		rt, own = writeTransport(t), true
	default:
		rt = t
	}
	return &WriteClient{ownTransport: own, hc: &http.Client{
		Transport: rt,
		Timeout:   base.Timeout,
		// A write is made at the URL it names or not at all: following a
		// redirect would send it (or a GET in its place) somewhere else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func writeTransport(t *http.Transport) *http.Transport {
	w := t.Clone()
	w.DisableKeepAlives = true
	w.ForceAttemptHTTP2 = false
	// A non-nil, empty map turns HTTP/2 off (net/http's documented switch),
	// unless Protocols names it: a set of HTTP/1 alone overrides any the
	// base transport had.
	w.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	var p http.Protocols
	p.SetHTTP1(true)
	w.Protocols = &p
	if w.TLSClientConfig != nil {
		// A base transport that has spoken HTTP/2 offers "h2" in its TLS
		// handshake (net/http adds it to NextProtos on first use, as it
		// does to http.DefaultTransport's): a server would agree to it and
		// take the write, sent as HTTP/1.1, for a broken preface. The clone
		// has a config of its own; its NextProtos is copied, not changed.
		w.TLSClientConfig.NextProtos = slices.DeleteFunc(slices.Clone(w.TLSClientConfig.NextProtos), func(p string) bool { return p == "h2" })
	}
	return w
}

// oneShot is a request body without GetBody: read once, never rewound.
type oneShot struct{ io.ReadCloser }

// Post sends a write request and classifies the answer: a transport failure
// before a connection was obtained is a *NotSentError, one after the
// request may have been sent an *UnknownError; a non-2xx goes through
// ClassifyPost. On success it returns the body. The request must
// carry a body (every write has one; a bodiless request with an
// Idempotency-Key would be replayable).
func (c *WriteClient) Post(ctx context.Context, now func() time.Time, req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, fmt.Errorf("provider: %s %s: a write without a body", req.Method, req.URL.Redacted())
	}
	var conns atomic.Int32
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { conns.Add(1) }}
	req = req.WithContext(httptrace.WithClientTrace(ctx, trace))
	req.Body = oneShot{req.Body}
	req.GetBody = nil
	resp, err := c.hc.Do(req)
	if n := conns.Load(); n > 1 {
		if err == nil {
			resp.Body.Close()
		}
		return nil, &UnknownError{Err: fmt.Errorf("%s %s: %w (%d connections)", req.Method, req.URL.Redacted(), ErrReplayed, n)}
	}
	if err != nil {
		err = fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), err)
		if conns.Load() == 0 && c.ownTransport {
			return nil, &NotSentError{Err: err}
		}
		return nil, &UnknownError{Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
	if err != nil {
		return nil, &UnknownError{Err: fmt.Errorf("read answer: %w", err)}
	}
	if resp.StatusCode/100 != 2 {
		return nil, ClassifyPost(resp, body, now())
	}
	return body, nil
}
