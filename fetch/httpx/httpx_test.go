package httpx_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/fetch/httpx"
	"github.com/tidemark/tidemark/fetch/internal/fetchtest"
	"github.com/tidemark/tidemark/internal/testctx"
)

// mustServe starts a test server on 127.0.0.1 and a client allowed to dial
// exactly that server (and no other private address).
func mustServe(tb testing.TB, h http.HandlerFunc, opt httpx.Options) (*httptest.Server, *httpx.Client) {
	tb.Helper()
	return fetchtest.MustServeWith(tb, h, opt)
}

func outcomeOf(err error) tidemark.Outcome {
	o, _, _ := tidemark.Classify(err)
	return o
}

func TestGetSendsHonestHeadersAndValidators(t *testing.T) {
	var got http.Header
	srv, c := mustServe(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT")
		w.Header().Set("Cache-Control", "public, max-age=600")
		fmt.Fprint(w, "hello")
	}, httpx.Options{})
	ctx := context.Background()
	r, err := c.Get(ctx, httpx.Request{URL: srv.URL, Accept: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Get("User-Agent") != httpx.UserAgent || got.Get("Accept") != "text/plain" {
		t.Fatalf("headers sent: %v", got)
	}
	if string(r.Body) != "hello" || r.ETag != `"v1"` || r.MaxAge != 10*time.Minute {
		t.Fatalf("response: %+v", r)
	}
	r2, err := c.Get(ctx, httpx.Request{URL: srv.URL, Validators: r.Validators})
	if err != nil {
		t.Fatal(err)
	}
	if got.Get("If-Modified-Since") != r.LastModified {
		t.Fatalf("If-Modified-Since not sent: %v", got)
	}
	if !r2.NotModified || r2.ETag != `"v1"` || r2.LastModified != r.LastModified || len(r2.Body) != 0 {
		t.Fatalf("304 response: %+v", r2)
	}
}

// A 304 answers a conditional request only: to a request without
// If-None-Match or If-Modified-Since it is a misconfigured cache or proxy,
// and taking it for "nothing new" would let a source that never delivered
// a byte look healthy forever.
func TestGet304ToAnUnconditionalRequestIsInvalid(t *testing.T) {
	srv, c := mustServe(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotModified)
	}, httpx.Options{})
	r, err := c.Get(context.Background(), httpx.Request{URL: srv.URL})
	if err == nil {
		t.Fatalf("304 to an unconditional request was accepted: %+v", r)
	}
	if o := outcomeOf(err); o != tidemark.OutcomeInvalid {
		t.Fatalf("304 to an unconditional request: outcome %s (%v), want invalid", o, err)
	}
	if !strings.Contains(err.Error(), "304") || !strings.Contains(err.Error(), "unconditional request") {
		t.Fatalf("error does not say what was wrong: %v", err)
	}
	// Either validator alone makes the request conditional.
	for _, v := range []httpx.Validators{{ETag: `"v1"`}, {LastModified: "Mon, 02 Jan 2006 15:04:05 GMT"}} {
		r, err := c.Get(context.Background(), httpx.Request{URL: srv.URL, Validators: v})
		if err != nil || !r.NotModified {
			t.Fatalf("304 to a request with %+v: %+v, %v", v, r, err)
		}
	}
}

func TestGetClassifiesStatuses(t *testing.T) {
	cases := []struct {
		status     int
		header     string
		body       string
		want       tidemark.Outcome
		retryAfter time.Duration
	}{
		{500, "", "boom", tidemark.OutcomeUnreachable, 0},
		{503, "120", "", tidemark.OutcomeUnreachable, 2 * time.Minute},
		{429, "7", "", tidemark.OutcomeUnreachable, 7 * time.Second},
		{408, "", "", tidemark.OutcomeUnreachable, 0},
		{404, "", "no", tidemark.OutcomeInvalid, 0},
		{403, "", "no", tidemark.OutcomeInvalid, 0},
		{200, "", "", tidemark.OutcomeInvalid, 0}, // empty body
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			srv, c := mustServe(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}, httpx.Options{})
			_, err := c.Get(context.Background(), httpx.Request{URL: srv.URL})
			o, reason, ra := tidemark.Classify(err)
			if o != tc.want || ra != tc.retryAfter {
				t.Fatalf("got %s (%s) retry-after %s, want %s retry-after %s", o, reason, ra, tc.want, tc.retryAfter)
			}
		})
	}
}

func TestGetRefusesBodiesOverTheLimit(t *testing.T) {
	big := strings.Repeat("x", 4096)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			srv, c := mustServe(t, func(w http.ResponseWriter, r *http.Request) {
				if !chunked {
					w.Header().Set("Content-Length", fmt.Sprint(len(big)))
				}
				for i := 0; i < len(big); i += 512 {
					fmt.Fprint(w, big[i:i+512])
					w.(http.Flusher).Flush()
				}
			}, httpx.Options{MaxBodyBytes: 1000})
			_, err := c.Get(context.Background(), httpx.Request{URL: srv.URL})
			if outcomeOf(err) != tidemark.OutcomeInvalid || !strings.Contains(err.Error(), "over the limit") {
				t.Fatalf("got %v, want invalid over the limit", err)
			}
			// Exactly the limit is fine.
			if _, err := c.Get(context.Background(), httpx.Request{URL: srv.URL, MaxBodyBytes: int64(len(big))}); err != nil {
				t.Fatalf("body at the limit: %v", err)
			}
		})
	}
}

func TestGetTruncatedBodyIsInvalid(t *testing.T) {
	srv, c := mustServe(t, func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		fmt.Fprint(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/rss+xml\r\nContent-Length: 1000\r\n\r\n<rss><channel>")
		buf.Flush()
	}, httpx.Options{})
	_, err := c.Get(context.Background(), httpx.Request{URL: srv.URL})
	if outcomeOf(err) != tidemark.OutcomeInvalid || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("got %v, want invalid truncated", err)
	}
}

// A body whose length was not declared is truncated when its framing
// says so: a chunked stream the connection cut before its last chunk, or
// a gzip stream that ends before its trailer. Each is refused as
// truncated, never read as a shorter whole answer.
func TestGetTruncatedStreamIsInvalid(t *testing.T) {
	page := strings.Repeat("<p>price row: 10 EUR</p>\n", 2000)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(page))
	zw.Close()
	cut := gz.Bytes()[:gz.Len()/2]
	for name, raw := range map[string]string{
		"chunked cut": "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n" +
			fmt.Sprintf("%x\r\n%s\r\n", 1000, page[:1000]),
		"gzip cut, length of what was sent": "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n" +
			fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(cut), cut),
		"gzip cut, chunked": "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" +
			fmt.Sprintf("%x\r\n%s\r\n", len(cut), cut),
	} {
		t.Run(name, func(t *testing.T) {
			srv, c := mustServe(t, func(w http.ResponseWriter, r *http.Request) {
				conn, buf, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close()
				buf.WriteString(raw)
				buf.Flush()
			}, httpx.Options{})
			res, err := c.Get(context.Background(), httpx.Request{URL: srv.URL})
			if err == nil {
				t.Fatalf("accepted %d of %d bytes as the whole answer", len(res.Body), len(page))
			}
			if outcomeOf(err) != tidemark.OutcomeInvalid || !strings.Contains(err.Error(), "truncated") {
				t.Fatalf("got %v, want invalid truncated", err)
			}
		})
	}
}

func TestGuardRefusesPrivateAddressesAtDialTime(t *testing.T) {
	var hits atomic.Int32
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "secret")
	}))
	defer private.Close()

	t.Run("direct", func(t *testing.T) {
		c := httpx.New(httpx.Options{MinInterval: -1})
		_, err := c.Get(context.Background(), httpx.Request{URL: private.URL})
		var ae *httpx.AddrError
		if outcomeOf(err) != tidemark.OutcomeInvalid || !errors.As(err, &ae) {
			t.Fatalf("got %v, want a refused address", err)
		}
	})
	t.Run("hostname resolving to loopback", func(t *testing.T) {
		c := httpx.New(httpx.Options{MinInterval: -1})
		_, port, _ := net.SplitHostPort(private.Listener.Addr().String())
		_, err := c.Get(context.Background(), httpx.Request{URL: "http://localhost:" + port + "/"})
		var ae *httpx.AddrError
		if !errors.As(err, &ae) {
			t.Fatalf("got %v, want a refused address", err)
		}
	})
	for _, target := range []string{private.URL + "/x", "http://10.255.255.1:81/", "http://169.254.169.254/latest/meta-data/", "http://[::1]:9/"} {
		t.Run("redirect to "+target, func(t *testing.T) {
			srv, c := mustServe(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target, http.StatusFound)
			}, httpx.Options{})
			_, err := c.Get(context.Background(), httpx.Request{URL: srv.URL})
			var ae *httpx.AddrError
			if outcomeOf(err) != tidemark.OutcomeInvalid || !errors.As(err, &ae) {
				t.Fatalf("got %v, want a refused address", err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the private server was reached %d times", n)
	}
	t.Run("allowed", func(t *testing.T) {
		c := httpx.New(httpx.Options{MinInterval: -1, AllowPrivate: true})
		r, err := c.Get(context.Background(), httpx.Request{URL: private.URL})
		if err != nil || string(r.Body) != "secret" {
			t.Fatalf("with AllowPrivate: %v", err)
		}
	})
}

func TestGetRedirectLimitAndFinalURL(t *testing.T) {
	srv, c := mustServe(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Path, "/%d", &n)
		if n > 0 {
			http.Redirect(w, r, fmt.Sprintf("/%d", n-1), http.StatusMovedPermanently)
			return
		}
		fmt.Fprint(w, "done")
	}, httpx.Options{MaxRedirects: 3})
	r, err := c.Get(context.Background(), httpx.Request{URL: srv.URL + "/3"})
	if err != nil || r.URL != srv.URL+"/0" {
		t.Fatalf("3 redirects: %v %+v", err, r)
	}
	_, err = c.Get(context.Background(), httpx.Request{URL: srv.URL + "/4"})
	if outcomeOf(err) != tidemark.OutcomeInvalid || !strings.Contains(err.Error(), "redirects") {
		t.Fatalf("4 redirects: got %v, want invalid", err)
	}
}

func TestGetConnectFailureAndTimeoutAreUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := httpx.New(httpx.Options{MinInterval: -1, AllowAddrs: []string{addr}})
	_, err = c.Get(context.Background(), httpx.Request{URL: "http://" + addr + "/"})
	if outcomeOf(err) != tidemark.OutcomeUnreachable {
		t.Fatalf("closed port: got %v, want unreachable", err)
	}

	release := make(chan struct{})
	srv, c := mustServe(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}, httpx.Options{Timeout: 50 * time.Millisecond})
	defer close(release)
	_, err = c.Get(context.Background(), httpx.Request{URL: srv.URL})
	if outcomeOf(err) != tidemark.OutcomeUnreachable || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("slow server: got %v, want unreachable timed out", err)
	}

	// Our own cancellation is not the source's fault.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Get(ctx, httpx.Request{URL: srv.URL})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: got %v, want context.Canceled", err)
	}
}

func TestGetSpacesRequestsToOneHost(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var waits []time.Duration
	sleep := func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		clk.Advance(d)
		return nil
	}
	srv, c := mustServe(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") },
		httpx.Options{MinInterval: 2 * time.Second, Clock: clk, Sleep: sleep})
	for range 3 {
		if _, err := c.Get(context.Background(), httpx.Request{URL: srv.URL}); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(waits) != "[2s 2s]" {
		t.Fatalf("waits %v, want [2s 2s]", waits)
	}
	clk.Advance(time.Minute)
	if _, err := c.Get(context.Background(), httpx.Request{URL: srv.URL}); err != nil {
		t.Fatal(err)
	}
	if len(waits) != 2 {
		t.Fatalf("a request after a quiet minute waited: %v", waits)
	}
}

func TestGetBoundsRequestsInFlightPerHost(t *testing.T) {
	var inFlight, peak atomic.Int32
	entered := make(chan struct{}, 8)
	release := make(chan struct{})
	srv, c := mustServe(t, func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		entered <- struct{}{}
		<-release
		inFlight.Add(-1)
		fmt.Fprint(w, "ok")
	}, httpx.Options{PerHost: 2})
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Get(context.Background(), httpx.Request{URL: srv.URL}); err != nil {
				t.Error(err)
			}
		}()
	}
	<-entered
	<-entered
	close(release)
	wg.Wait()
	if p := peak.Load(); p > 2 {
		t.Fatalf("peak in flight %d, want at most 2", p)
	}
}

func TestRetryAfterAndMaxAge(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"":                              0,
		"30":                            30 * time.Second,
		"-5":                            0,
		"soon":                          0,
		"99999999":                      httpx.MaxHonouredAge,
		"Thu, 01 Jan 2026 12:05:00 GMT": 5 * time.Minute,
		"Thu, 01 Jan 2026 11:00:00 GMT": 0,
	}
	for in, want := range cases {
		if got := httpx.RetryAfter(in, now); got != want {
			t.Errorf("RetryAfter(%q) = %s, want %s", in, got, want)
		}
	}
	ages := map[string]time.Duration{
		"max-age=60":                       time.Minute,
		"public, max-age=60, s-maxage=120": 2 * time.Minute,
		"no-cache, max-age=60":             0,
		"max-age=oops":                     0,
		"max-age=999999999":                httpx.MaxHonouredAge,
	}
	for in, want := range ages {
		srv, c := mustServe(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", in)
			fmt.Fprint(w, "x")
		}, httpx.Options{})
		r, err := c.Get(context.Background(), httpx.Request{URL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		if r.MaxAge != want {
			t.Errorf("Cache-Control %q: max-age %s, want %s", in, r.MaxAge, want)
		}
	}
}

func TestCheckClassifiesAddresses(t *testing.T) {
	c := httpx.New(httpx.Options{AllowAddrs: []string{"127.0.0.1:8080"}})
	refused := []string{"127.0.0.1:80", "10.1.2.3:443", "172.16.0.1:80", "192.168.1.1:80", "169.254.169.254:80",
		"0.0.0.0:80", "224.0.0.1:80", "100.64.0.1:80", "[::1]:80", "[fe80::1]:80", "[fc00::1]:80",
		"[::ffff:10.0.0.1]:80", "[64:ff9b::a00:1]:80", "[::]:80"}
	for _, a := range refused {
		if c.Check(a) == nil {
			t.Errorf("%s allowed", a)
		}
	}
	for _, a := range []string{"93.184.216.34:443", "[2606:2800:220:1::1]:443", "127.0.0.1:8080", "[64:ff9b::5db8:d822]:80"} {
		if err := c.Check(a); err != nil {
			t.Errorf("%s refused: %v", a, err)
		}
	}
}

// Addresses that embed an IPv4 address are judged by the IPv4 address they
// carry: a private one hidden in IPv6 is still private.
func TestCheckJudgesEmbeddedIPv4(t *testing.T) {
	c := httpx.New(httpx.Options{})
	for _, tc := range []struct {
		form, addr string
		refused    bool
	}{
		{"IPv4-mapped loopback", "[::ffff:127.0.0.1]:80", true},
		{"IPv4-mapped public", "[::ffff:93.184.216.34]:80", false},
		{"IPv4-compatible loopback", "[::127.0.0.1]:80", true},
		{"IPv4-compatible private", "[::10.0.0.1]:80", true},
		{"IPv4-compatible metadata", "[::169.254.169.254]:80", true},
		{"IPv4-compatible public", "[::93.184.216.34]:80", false},
		{"6to4 loopback", "[2002:7f00:1::1]:80", true},
		{"6to4 private", "[2002:c0a8:101::1]:80", true},
		{"6to4 metadata", "[2002:a9fe:a9fe::]:80", true},
		{"6to4 public", "[2002:5db8:d822::1]:80", false},
		{"Teredo loopback client", "[2001:0:4136:e378:8000:63bf:80ff:fffe]:80", true}, // ~0x80fffffe = 127.0.0.1
		{"Teredo private client", "[2001:0:4136:e378:8000:63bf:f5ff:fffe]:80", true},  // ~0xf5fffffe = 10.0.0.1
		{"Teredo public client", "[2001:0:4136:e378:8000:63bf:a247:29dd]:80", false},  // ~0xa24729dd = 93.184.214.34
		{"NAT64 loopback", "[64:ff9b::7f00:1]:80", true},
		{"NAT64 private", "[64:ff9b::c0a8:101]:80", true},
		{"NAT64 public", "[64:ff9b::5db8:d822]:80", false},
		{"local-use NAT64 private", "[64:ff9b:1::a00:1]:80", true},
		{"local-use NAT64 public", "[64:ff9b:1::5db8:d822]:80", true}, // a local-use prefix is a private network's translator
	} {
		err := c.Check(tc.addr)
		if (err != nil) != tc.refused {
			t.Errorf("%s %s: refused=%v (%v), want refused=%v", tc.form, tc.addr, err != nil, err, tc.refused)
		}
	}
}

// The refusal says how to allow private addresses.
func TestRefusalNamesTheSwitch(t *testing.T) {
	err := httpx.New(httpx.Options{}).Check("10.0.0.1:80")
	if err == nil || !strings.Contains(err.Error(), httpx.AllowPrivateEnv) {
		t.Fatalf("refusal %v does not name %s", err, httpx.AllowPrivateEnv)
	}
}

// A source's own setting, carried in the fetch's context, lets one fetch
// reach a private address; a fetch without it is refused, even right after
// (an allowed connection is never reused for it).
func TestAllowPrivatePerFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	c := httpx.New(httpx.Options{MinInterval: -1})
	ctx := context.Background()
	var ae *httpx.AddrError
	if _, err := c.Get(ctx, httpx.Request{URL: srv.URL}); !errors.As(err, &ae) {
		t.Fatalf("fetch without the setting: %v, want a refusal", err)
	}
	r, err := c.Get(httpx.WithAllowPrivate(ctx, true), httpx.Request{URL: srv.URL})
	if err != nil || string(r.Body) != "ok" {
		t.Fatalf("fetch of a source that allows private addresses: %v", err)
	}
	if _, err := c.Get(httpx.WithAllowPrivate(ctx, false), httpx.Request{URL: srv.URL}); !errors.As(err, &ae) {
		t.Fatalf("fetch without the setting after an allowed one: %v, want a refusal", err)
	}
	if _, err := c.DialContext(ctx, "tcp", srv.Listener.Addr().String()); !errors.As(err, &ae) {
		t.Fatalf("dial without the setting: %v, want a refusal", err)
	}
	conn, err := c.DialContext(httpx.WithAllowPrivate(ctx, true), "tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatalf("dial with the setting: %v", err)
	}
	conn.Close()
}

// ResolveChecked sorts a host's addresses into those the guard lets
// through and its refusal of the others, under the source's own setting.
func TestResolveCheckedSortsAddresses(t *testing.T) {
	c := httpx.New(httpx.Options{MinInterval: -1})
	ctx := context.Background()
	allowed, refused, err := c.ResolveChecked(ctx, "127.0.0.1", "80")
	var ae *httpx.AddrError
	if err != nil || len(allowed) != 0 || !errors.As(refused, &ae) {
		t.Fatalf("loopback: allowed %v, refused %v, err %v; want refused by the guard", allowed, refused, err)
	}
	allowed, refused, err = c.ResolveChecked(httpx.WithAllowPrivate(ctx, true), "127.0.0.1", "80")
	if err != nil || refused != nil || len(allowed) != 1 || allowed[0].String() != "127.0.0.1" {
		t.Fatalf("loopback a source allows: allowed %v, refused %v, err %v", allowed, refused, err)
	}
	allowed, refused, err = c.ResolveChecked(ctx, "::ffff:93.184.216.34", "443")
	if err != nil || refused != nil || len(allowed) != 1 || allowed[0].String() != "93.184.216.34" {
		t.Fatalf("a public address, IPv4-mapped: allowed %v, refused %v, err %v", allowed, refused, err)
	}
}

// A host that answered 429 or 503 with Retry-After is not asked again by
// this client before then, whichever source asks (src.md #28): the next
// request to it is unreachable at once, with the time left as its
// Retry-After, and sends nothing. Another host is not held.
func TestRetryAfterHoldsTheHost(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var hits atomic.Int32
	srv, c := mustServe(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/limited" {
			w.Header().Set("Retry-After", "600")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprint(w, "ok")
	}, httpx.Options{Clock: clk})
	ctx := context.Background()
	_, err := c.Get(ctx, httpx.Request{URL: srv.URL + "/limited"})
	if o, _, ra := tidemark.Classify(err); o != tidemark.OutcomeUnreachable || ra != 10*time.Minute {
		t.Fatalf("the 429: %s %s (%v)", o, ra, err)
	}
	clk.Advance(4 * time.Minute)
	_, err = c.Get(ctx, httpx.Request{URL: srv.URL + "/other-feed.xml"})
	if err == nil {
		t.Fatalf("another source on the held host was fetched (%d requests)", hits.Load())
	}
	o, reason, ra := tidemark.Classify(err)
	if o != tidemark.OutcomeUnreachable || ra != 6*time.Minute || !strings.Contains(reason, "Retry-After") {
		t.Fatalf("another source on the held host: %s %q %s", o, reason, ra)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the held host was asked %d times, want 1", n)
	}
	clk.Advance(6 * time.Minute)
	if _, err := c.Get(ctx, httpx.Request{URL: srv.URL + "/other-feed.xml"}); err != nil || hits.Load() != 2 {
		t.Fatalf("after the hold: %v, %d requests", err, hits.Load())
	}
}

// A request cut short by its caller's deadline, sooner than the client's
// own timeout, says so, with the time it had: never the client's timeout,
// which did not pass.
func TestGetTimedOutAtTheCallersDeadlineSaysSo(t *testing.T) {
	started := make(chan struct{}, 1)
	srv, c := mustServe(t, func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done()
	}, httpx.Options{Timeout: time.Hour})
	ctx := testctx.WithDeadline(context.Background(), time.Now().Add(time.Minute))
	go func() { <-started; ctx.Pass() }()
	_, err := c.Get(ctx, httpx.Request{URL: srv.URL})
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "1h0m0s") || !strings.Contains(err.Error(), "caller's deadline") {
		t.Fatalf("past the caller's deadline: %v; want it said as the caller's deadline, not the client's hour", err)
	}
}
