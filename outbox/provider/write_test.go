package provider_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/providertest"
)

// wrapped hides a pooled transport behind another RoundTripper, so the
// write client cannot give it a fresh connection per write: only the
// one-shot body keeps the transport from sending the write again.
type wrapped struct{ http.RoundTripper }

func TestWriteClientNeverReplaysOnAKeptAliveConnection(t *testing.T) {
	var (
		mu     sync.Mutex
		writes int
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /warm", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("POST /hook", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		writes++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	})
	srv, drop := providertest.NewDropServer(t, mux)
	drop.DropEvery(1)
	pooled := &http.Transport{MaxIdleConnsPerHost: 1}
	t.Cleanup(pooled.CloseIdleConnections)
	for name, base := range map[string]*http.Client{
		"own transport":     {Transport: pooled},
		"opaque transport":  {Transport: wrapped{pooled}},
		"default transport": nil,
	} {
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			writes = 0
			mu.Unlock()
			c := base
			if c == nil {
				c = http.DefaultClient
			}
			// Leave a kept-alive connection in the pool.
			resp, err := c.Get(srv.URL + "/warm")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/hook", bytes.NewReader([]byte(`{"x":1}`)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Idempotency-Key", "tm-1") // what makes net/http replay a POST
			_, err = provider.NewWriteClient(base).Post(context.Background(), time.Now, req)
			var unknown *provider.UnknownError
			if !errors.As(err, &unknown) {
				t.Fatalf("a lost answer gave %v; want an outcome unknown", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if writes != 1 {
				t.Fatalf("the receiver got the write %d times", writes)
			}
		})
	}
}

func TestWriteClientRefusesABodilessWrite(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/hook", nil)
	req.Header.Set("Idempotency-Key", "tm-1")
	if _, err := provider.NewWriteClient(nil).Post(context.Background(), time.Now, req); err == nil {
		t.Fatal("a bodiless write was sent; with an Idempotency-Key it would be replayable")
	}
}

func TestTheReadPathRefusesWrites(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/hook", bytes.NewReader([]byte("x")))
	if _, _, err := provider.GetJSON(context.Background(), http.DefaultClient, time.Now, req, nil); !errors.Is(err, provider.ErrNotARead) {
		t.Fatalf("a POST through the read path: %v", err)
	}
}

// A read the remote asks to wait for (429, or 503 with a hint, or
// GitHub's rate-limit 403) says how long, read as a write's wait is.
func TestARefusedReadSaysHowLongToWait(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		status int
		header http.Header
		body   string
		want   time.Duration
	}{
		{429, http.Header{"Retry-After": {"60"}}, "", time.Minute},
		{503, http.Header{"Retry-After": {"120"}}, "", 2 * time.Minute},
		{429, nil, `{"errcode":"M_LIMIT_EXCEEDED","retry_after_ms":2500}`, 2500 * time.Millisecond},
		{429, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"2026-12-01T12:05:00Z"}}, "", 5 * time.Minute},
		{403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {fmt.Sprint(now.Add(10 * time.Minute).Unix())}}, "", 10 * time.Minute},
		{429, nil, "", 0}, // no hint: the caller's own backoff
		{503, nil, "", 0},
		{404, http.Header{"Retry-After": {"60"}}, "", 0},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for k, v := range tc.header {
				w.Header()[k] = v
			}
			w.WriteHeader(tc.status)
			fmt.Fprint(w, tc.body)
		}))
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		_, _, _, err := provider.GetBody(context.Background(), srv.Client(), func() time.Time { return now }, req)
		srv.Close()
		var se *provider.StatusError
		if !errors.As(err, &se) || se.Wait != tc.want {
			t.Errorf("%d %v %s: %v, want a wait of %v", tc.status, tc.header, tc.body, err, tc.want)
		}
	}
}

// deadAddr is a loopback address nothing listens on: a listener bound to
// it and closed, so a dial is refused.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func mustWrite(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(`{"x":1}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", "tm-1")
	return req
}

// A write that provably never left (no connection was ever obtained: the
// dial was refused, the name did not resolve, the TLS handshake failed
// before a byte of the request was written) did not land: it is a
// *NotSentError, never an outcome in doubt.
func TestAWriteThatNeverLeftIsNotSent(t *testing.T) {
	var hits atomic.Int32
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(tlsSrv.Close)
	noDNS := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, &net.DNSError{Err: "no such host", Name: "hooks.invalid", IsNotFound: true}
	}}
	for name, tc := range map[string]struct {
		base *http.Client
		url  string
	}{
		"dial refused":  {nil, "http://" + deadAddr(t) + "/hook"},
		"no such host":  {&http.Client{Transport: noDNS}, "http://hooks.invalid/hook"},
		"untrusted TLS": {&http.Client{Transport: &http.Transport{}}, tlsSrv.URL + "/hook"}, // the test server's certificate is not trusted
	} {
		t.Run(name, func(t *testing.T) {
			_, err := provider.NewWriteClient(tc.base).Post(context.Background(), time.Now, mustWrite(t, tc.url))
			var notSent *provider.NotSentError
			if !errors.As(err, &notSent) {
				t.Fatalf("a write that never left gave %v; want it not sent", err)
			}
			if _, unknown := errors.AsType[*provider.UnknownError](err); unknown {
				t.Fatalf("a write that never left is in doubt: %v", err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the TLS server's handler ran %d times", n)
	}
}

// A write whose connection was obtained stays in doubt when the answer
// never comes, however little of it the receiver read: it may have
// acted on it. And a transport the client cannot see into (not its own
// *http.Transport) proves nothing by failing: its error stays in doubt.
func TestAWriteThatMayHaveLeftStaysInDoubt(t *testing.T) {
	// listen accepts connections and, for each, reads what serve says
	// before it closes it without an answer.
	listen := func(t *testing.T, serve func(net.Conn)) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { defer c.Close(); serve(c) }()
			}
		}()
		return "http://" + ln.Addr().String() + "/hook"
	}
	var got atomic.Int32
	for name, tc := range map[string]struct {
		base *http.Client
		url  func(t *testing.T) string
	}{
		"the whole request read, then the connection dropped": {nil, func(t *testing.T) string {
			return listen(t, func(c net.Conn) {
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err == nil {
					_, _ = io.Copy(io.Discard, req.Body)
					got.Add(1)
				}
			})
		}},
		"the headers read, then the connection dropped": {nil, func(t *testing.T) string {
			return listen(t, func(c net.Conn) {
				if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
					got.Add(1)
				}
			})
		}},
		"dropped at once": {nil, func(t *testing.T) string {
			return listen(t, func(c net.Conn) {})
		}},
		"an opaque transport that failed": {&http.Client{Transport: wrapped{&http.Transport{}}}, func(t *testing.T) string {
			return "http://" + deadAddr(t) + "/hook"
		}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := provider.NewWriteClient(tc.base).Post(context.Background(), time.Now, mustWrite(t, tc.url(t)))
			var unknown *provider.UnknownError
			if !errors.As(err, &unknown) {
				t.Fatalf("a write that may have left gave %v; want its outcome unknown", err)
			}
			if _, notSent := errors.AsType[*provider.NotSentError](err); notSent {
				t.Fatalf("a write that may have left is said not sent: %v", err)
			}
		})
	}
	if got.Load() < 2 {
		t.Fatalf("the receiver read %d requests; the test proves nothing", got.Load())
	}
}

// A write goes out over HTTP/1.1, whatever the client it is built from
// speaks: HTTP/2 has a retry loop of its own. A transport that has spoken
// HTTP/2 once offers "h2" in its TLS handshake from then on (net/http adds
// it, as it does to http.DefaultTransport's on its first HTTPS request),
// and a transport's Protocols may ask for HTTP/2 outright; neither may
// reach a write, nor break it (a server that agreed to "h2" takes an
// HTTP/1.1 request for a broken connection).
func TestAWriteNeverGoesOutOverHTTP2(t *testing.T) {
	var proto atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		proto.Store(int32(r.ProtoMajor))
		w.WriteHeader(http.StatusCreated)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	trusting := srv.Client().Transport.(*http.Transport).TLSClientConfig
	for name, tr := range map[string]func() *http.Transport{
		"a transport that spoke HTTP/2": func() *http.Transport {
			return &http.Transport{TLSClientConfig: trusting.Clone(), ForceAttemptHTTP2: true} // as http.DefaultTransport
		},
		"Protocols asking for HTTP/2": func() *http.Transport {
			var p http.Protocols
			p.SetHTTP1(true)
			p.SetHTTP2(true)
			return &http.Transport{TLSClientConfig: trusting.Clone(), Protocols: &p}
		},
	} {
		t.Run(name, func(t *testing.T) {
			base := &http.Client{Transport: tr()}
			// The base client speaks HTTP/2 to this server.
			resp, err := base.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.ProtoMajor != 2 {
				t.Fatalf("the base client spoke HTTP/%d; the test proves nothing", resp.ProtoMajor)
			}
			proto.Store(0)
			if _, err := provider.NewWriteClient(base).Post(context.Background(), time.Now, mustWrite(t, srv.URL+"/hook")); err != nil {
				t.Fatalf("the write: %v", err)
			}
			if got := proto.Load(); got != 1 {
				t.Fatalf("the write went out over HTTP/%d, want HTTP/1.1", got)
			}
			// The base client still speaks HTTP/2: its config was not changed.
			if resp, err = base.Get(srv.URL); err != nil || resp.ProtoMajor != 2 {
				t.Fatalf("the base client after: %v, %v", resp, err)
			}
			resp.Body.Close()
		})
	}
}
