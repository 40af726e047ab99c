// Package httpx is the one HTTP layer every web source kind fetches
// through. It guarantees:
//
//   - honesty: an identifying User-Agent, conditional GETs with the
//     validators the caller kept;
//   - limits: a request timeout, a body size limit enforced while reading
//     (a body is never buffered past the limit), a redirect limit;
//   - politeness: a per-host limit on requests in flight and a minimum
//     interval between requests to the same host;
//   - safety: a guard at dial time that refuses private, loopback,
//     link-local, unspecified and multicast addresses unless allowed, so
//     neither a redirect nor a DNS answer can bypass it; an IPv6 address
//     that carries an IPv4 one (mapped, compatible, 6to4, Teredo, NAT64) is
//     judged by the IPv4 address; environment proxies are never used (a
//     proxy would dial for us); DialContext offers the same guard to other
//     transports (the git kind);
//   - honest classification: DNS, connect, TLS, timeout, 5xx, 408 and 429
//     are tidemark.Unreachable (with Retry-After); a reached server whose
//     answer is unusable (other 4xx, an empty or oversized or truncated
//     body, too many redirects, a refused address) is tidemark.Unusable.
package httpx

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/internal/fieldtext"
)

// UserAgent is the honest User-Agent every request carries.
const UserAgent = "tidemark/0.1 (+https://github.com/tidemark/tidemark)"

// Defaults of Options.
const (
	DefaultTimeout            = 30 * time.Second
	DefaultMaxBodyBytes int64 = 20 << 20
	DefaultMaxRedirects       = 5
	DefaultPerHost            = 2
	DefaultMinInterval        = time.Second
	// MaxHonouredAge bounds how far Cache-Control or Retry-After may push a
	// source's next fetch.
	MaxHonouredAge = 24 * time.Hour
)

// Options configure a Client. Zero values take the defaults.
type Options struct {
	UserAgent    string
	Timeout      time.Duration // one request, including reading the body
	MaxBodyBytes int64
	MaxRedirects int
	// PerHost bounds requests in flight to one host.
	PerHost int
	// MinInterval is the least time between the starts of two requests to
	// one host. Negative: no interval.
	MinInterval time.Duration
	// AllowPrivate lets the client dial private, loopback, link-local and
	// other non-public addresses. Off by default.
	AllowPrivate bool
	// AllowAddrs lets the client dial exactly these addresses (ip:port)
	// even when AllowPrivate is off: tests allow their own server and
	// nothing else.
	AllowAddrs []string
	Clock      clock.Clock
	// Sleep waits for d or until ctx ends (default: a timer). Tests inject
	// one that advances a fake clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// Transport, if set, replaces the guarded transport (tests only; it
	// bypasses the address guard).
	Transport http.RoundTripper
}

// Client fetches over HTTP with the guarantees of the package. It is safe
// for concurrent use; share one per process so per-host limits hold.
type Client struct {
	opt   Options
	hc    *http.Client
	mu    sync.Mutex
	hosts map[string]*hostState
}

type hostState struct {
	slots chan struct{}
	mu    sync.Mutex
	next  time.Time // earliest start of the next request
	// heldUntil is when the host's last Retry-After (on a 429 or 503)
	// ends: no request is sent to it before then, for any source.
	heldUntil time.Time
}

// New returns a Client.
func New(opt Options) *Client {
	if opt.UserAgent == "" {
		opt.UserAgent = UserAgent
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opt.MaxRedirects <= 0 {
		opt.MaxRedirects = DefaultMaxRedirects
	}
	if opt.PerHost <= 0 {
		opt.PerHost = DefaultPerHost
	}
	if opt.MinInterval == 0 {
		opt.MinInterval = DefaultMinInterval
	}
	if opt.Clock == nil {
		opt.Clock = clock.System{}
	}
	if opt.Sleep == nil {
		opt.Sleep = clock.Sleep
	}
	c := &Client{opt: opt, hosts: map[string]*hostState{}}
	rt := opt.Transport
	if rt == nil {
		// Two pools: a connection dialled for a source that may reach a
		// private address is never reused for one that may not.
		rt = splitTransport{public: c.transport(false), private: c.transport(true)}
	}
	c.hc = &http.Client{
		Transport: rt,
		CheckRedirect: CredentialsStayOnOrigin(func(req *http.Request, via []*http.Request) error {
			if len(via) > opt.MaxRedirects {
				return &redirectError{n: len(via)}
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return &schemeError{scheme: req.URL.Scheme}
			}
			return nil
		}),
	}
	return c
}

// AllowPrivateEnv names the environment variable that gives new sources
// their default: whether they may reach private addresses. The setting is
// each source's own, stored with it (so every worker reads one source the
// same way); a refusal names both so the user knows the way out. The
// program reads the variable (one place: the command's allowPrivate); the
// package only names it.
const AllowPrivateEnv = "TIDEMARK_ALLOW_PRIVATE"

type allowPrivateKey struct{}

// WithAllowPrivate returns ctx carrying one source's own setting: whether
// its fetch may reach private, loopback and link-local addresses. Requests
// and dials under ctx obey it (on top of Options.AllowPrivate).
func WithAllowPrivate(ctx context.Context, allow bool) context.Context {
	return context.WithValue(ctx, allowPrivateKey{}, allow)
}

// AllowsPrivate reports the setting WithAllowPrivate put in ctx (false
// when none).
func AllowsPrivate(ctx context.Context) bool {
	allow, _ := ctx.Value(allowPrivateKey{}).(bool)
	return allow
}

// CheckContext is Check for a dial under ctx: a source whose setting
// allows private addresses may dial them.
func (c *Client) CheckContext(ctx context.Context, addr string) error {
	if AllowsPrivate(ctx) {
		return nil
	}
	return c.Check(addr)
}

// ResolveChecked resolves host (an IP address stands for itself) and
// checks each of its addresses on port with CheckContext. It returns the
// addresses the guard lets through, in the resolver's order, and the
// guard's refusal of the last one it refused (nil: none was); err is the
// resolver's failure.
func (c *Client) ResolveChecked(ctx context.Context, host, port string) (allowed []netip.Addr, refused, err error) {
	var addrs []netip.Addr
	if ip, perr := netip.ParseAddr(host); perr == nil {
		addrs = []netip.Addr{ip}
	} else if addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, nil, err
	}
	for _, a := range addrs {
		a = a.Unmap()
		if cerr := c.CheckContext(ctx, net.JoinHostPort(a.String(), port)); cerr != nil {
			refused = cerr
			continue
		}
		allowed = append(allowed, a)
	}
	return allowed, refused, nil
}

// splitTransport sends a request whose context allows private addresses
// through the transport that may dial them, every other one through the
// one that may not; each keeps its own connections.
type splitTransport struct{ public, private http.RoundTripper }

func (t splitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if AllowsPrivate(req.Context()) {
		return t.private.RoundTrip(req)
	}
	return t.public.RoundTrip(req)
}

// AddrError is the guard's refusal of an address.
type AddrError struct {
	Addr   string
	Reason string
}

func (e *AddrError) Error() string {
	return fmt.Sprintf("refused to connect to %s: %s address (private addresses are allowed only for a source that allows them: "+
		"`tidemark source set NAME --allow-private`; %s=1 makes it the default for new sources)", e.Addr, e.Reason, AllowPrivateEnv)
}

type redirectError struct{ n int }

func (e *redirectError) Error() string { return fmt.Sprintf("stopped after %d redirects", e.n-1) }

type schemeError struct{ scheme string }

func (e *schemeError) Error() string {
	return fmt.Sprintf("redirect to unsupported scheme %q", e.scheme)
}

// Check reports why addr (ip:port) may not be dialled, or nil.
func (c *Client) Check(addr string) error {
	if c.opt.AllowPrivate {
		return nil
	}
	for _, a := range c.opt.AllowAddrs {
		if a == addr {
			return nil
		}
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return &AddrError{Addr: addr, Reason: "unparseable"}
	}
	if reason := nonPublic(ap.Addr()); reason != "" {
		return &AddrError{Addr: addr, Reason: reason}
	}
	return nil
}

// nonPublic names why ip is not a public unicast address, or "".
func nonPublic(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	}
	// An address that carries an IPv4 address reaches that address in
	// the end (through a tunnel or a translator): the IPv4 address must
	// pass on its own.
	if v4, form := embeddedIPv4(ip); form != "" {
		if reason := nonPublic(v4); reason != "" {
			return reason + " (" + form + " of " + v4.String() + ")"
		}
	}
	// Carrier-grade NAT (100.64.0.0/10) and the IPv4 "this network" and
	// benchmarking ranges are not the public internet either.
	for _, p := range reserved {
		if p.Contains(ip) {
			return "reserved"
		}
	}
	return ""
}

var (
	ipv4Compatible = netip.MustParsePrefix("::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	teredo         = netip.MustParsePrefix("2001::/32")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
)

// embeddedIPv4 returns the IPv4 address an IPv6 address carries, and the
// form that carries it ("" when none): IPv4-compatible ::a.b.c.d (the low
// 32 bits), 6to4 2002:AABB:CCDD::/48 (bits 16–47), Teredo 2001:0::/32 (the
// client, the low 32 bits inverted) and NAT64 64:ff9b::/96 (the low 32
// bits). IPv4-mapped addresses are unmapped before. The local-use NAT64
// prefix 64:ff9b:1::/48 is refused whole, as reserved: it is a private
// network's translator, whatever it embeds.
func embeddedIPv4(ip netip.Addr) (netip.Addr, string) {
	if !ip.Is6() {
		return netip.Addr{}, ""
	}
	b := ip.As16()
	low := [4]byte(b[12:16])
	switch {
	case ipv4Compatible.Contains(ip):
		return netip.AddrFrom4(low), "IPv4-compatible"
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4"
	case teredo.Contains(ip):
		for i := range low {
			low[i] ^= 0xff
		}
		return netip.AddrFrom4(low), "Teredo"
	case nat64.Contains(ip):
		return netip.AddrFrom4(low), "NAT64"
	}
	return netip.Addr{}, ""
}

var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// transport is the guarded transport: the guard runs in the dialer's
// Control hook, after DNS resolution and before the socket connects, so
// every connection — the first, each redirect's, each DNS answer's — passes
// through it.
func (c *Client) transport(allowPrivate bool) *http.Transport {
	return &http.Transport{
		Proxy: nil, // a proxy would dial on our behalf, past the guard
		// The transport's own setting, not the dial's context: its
		// connections are reused by later requests.
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			return c.DialContext(WithAllowPrivate(ctx, allowPrivate), network, address)
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          64,
		MaxConnsPerHost:       c.opt.PerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   c.opt.Timeout,
		ResponseHeaderTimeout: c.opt.Timeout,
		ExpectContinueTimeout: time.Second,
	}
}

// DialContext connects to address (host:port) through the guard: the guard
// runs after DNS resolution and before each socket connects, so a name
// that resolves to a refused address is never connected to. It is the one
// way out for other transports that must obey the same rule (the git kind
// tunnels every connection git makes through it). A source's own setting
// comes in ctx (WithAllowPrivate). A refusal wraps an *AddrError.
func (c *Client) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d := &net.Dialer{
		Timeout:   c.opt.Timeout,
		KeepAlive: 30 * time.Second,
		ControlContext: func(ctx context.Context, network, address string, _ syscall.RawConn) error {
			return c.CheckContext(ctx, address)
		},
	}
	return d.DialContext(ctx, network, address)
}

// Validators are the HTTP validators of a fetch. A web kind keeps those of
// its last settled fetch in its cursor (they advance only when a run
// settles) and sends them back as If-None-Match and If-Modified-Since.
type Validators struct {
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
}

// DecodeValidators reads validators stored as a cursor; an empty or
// unreadable one is the zero Validators (a fetch without validators is
// always safe).
func DecodeValidators(cursor string) Validators {
	var v Validators
	if cursor != "" {
		_ = json.Unmarshal([]byte(cursor), &v)
	}
	return v
}

// Encode returns the validators' stored form ("" when they hold nothing).
func (v Validators) Encode() string {
	if v == (Validators{}) {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Request is one conditional GET.
type Request struct {
	URL string
	// Accept is the Accept header (default */*).
	Accept string
	// Validators are those of the last successful fetch (zero: an
	// unconditional GET).
	Validators
	// MaxBodyBytes overrides the client's limit when > 0.
	MaxBodyBytes int64
	// AllowEmpty accepts a 200 with an empty body (default: invalid).
	AllowEmpty bool
}

// Response is a usable answer.
type Response struct {
	Status int
	// URL is the final URL after redirects.
	URL    string
	Header http.Header
	Body   []byte
	// NotModified: the server answered 304; Body is empty and the
	// caller's validators still hold.
	NotModified bool
	// Validators are the ones to keep for the next fetch (the request's
	// own when the answer was 304 without new ones).
	Validators
	// MaxAge is the Cache-Control max-age (or s-maxage), bounded by
	// MaxHonouredAge; 0 when absent, no-cache or no-store.
	MaxAge time.Duration
}

// ContentType returns the response's media type, lower-cased, without
// parameters.
func (r *Response) ContentType() string {
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	return strings.ToLower(strings.TrimSpace(ct))
}

// Get performs a conditional GET and classifies every failure.
func (c *Client) Get(ctx context.Context, r Request) (*Response, error) {
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, tidemark.Unusable("not an http(s) URL: "+r.URL, err)
	}
	limit := c.opt.MaxBodyBytes
	if r.MaxBodyBytes > 0 {
		limit = r.MaxBodyBytes
	}
	if wait := c.held(u.Host); wait > 0 {
		// The host asked to be left alone (Retry-After on a 429 or 503
		// answer to any source): asking it again for another source would
		// be impolite, and answered the same.
		return nil, tidemark.Unreachable(fmt.Sprintf("%s asked (Retry-After) not to be asked again before %s; not asked",
			u.Host, fieldtext.Day(c.opt.Clock.Now().Add(wait))), wait, nil)
	}
	release, err := c.acquire(ctx, u.Host)
	if err != nil {
		return nil, err
	}
	defer release()

	// What a deadline that passes is said as: ours, or the caller's when
	// it comes first.
	timedOut := fmt.Sprintf("timed out after %s", c.opt.Timeout)
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < c.opt.Timeout {
			timedOut = fmt.Sprintf("timed out after %s, at its caller's deadline", left.Round(100*time.Millisecond))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.opt.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, tidemark.Unusable("bad request URL", err)
	}
	req.Header.Set("User-Agent", c.opt.UserAgent)
	accept := r.Accept
	if accept == "" {
		accept = "*/*"
	}
	req.Header.Set("Accept", accept)
	if r.ETag != "" {
		req.Header.Set("If-None-Match", r.ETag)
	}
	if r.LastModified != "" {
		req.Header.Set("If-Modified-Since", r.LastModified)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.classify(ctx, err, timedOut)
	}
	defer resp.Body.Close()
	out := &Response{
		Status: resp.StatusCode, URL: resp.Request.URL.String(), Header: resp.Header,
		Validators: Validators{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")},
		MaxAge:     maxAge(resp.Header),
	}
	switch {
	case resp.StatusCode == http.StatusNotModified:
		// A 304 only answers a conditional request. To one that sent no
		// validators it says nothing about the resource: taking it for
		// "nothing new" would let a source that never delivered a byte look
		// healthy forever. The request asked is the one after redirects.
		if sent := resp.Request.Header; sent.Get("If-None-Match") == "" && sent.Get("If-Modified-Since") == "" {
			return nil, tidemark.Unusable(fmt.Sprintf("HTTP 304 Not Modified from %s to an unconditional request (no If-None-Match or If-Modified-Since was sent): a misconfigured cache or proxy", u.Host), nil)
		}
		out.NotModified = true
		if out.ETag == "" {
			out.ETag = r.ETag
		}
		if out.LastModified == "" {
			out.LastModified = r.LastModified
		}
		return out, nil
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusRequestTimeout:
		ra := RetryAfter(resp.Header.Get("Retry-After"), c.opt.Clock.Now())
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			c.hold(u.Host, ra)
		}
		return nil, tidemark.Unreachable(fmt.Sprintf("HTTP %d from %s", resp.StatusCode, u.Host), ra, nil)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, tidemark.Unusable(fmt.Sprintf("HTTP %d from %s", resp.StatusCode, u.Host), nil)
	}
	if resp.ContentLength > limit {
		return nil, tidemark.Unusable(fmt.Sprintf("body of %d bytes is over the limit of %d", resp.ContentLength, limit), nil)
	}
	body, err := readLimited(resp.Body, limit, resp.ContentLength)
	if errors.Is(err, errOverLimit) {
		return nil, tidemark.Unusable(fmt.Sprintf("body is over the limit of %d bytes", limit), nil)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, c.classify(ctx, err, timedOut)
		}
		return nil, tidemark.Unusable("truncated body", err)
	}
	if int64(len(body)) > limit {
		return nil, tidemark.Unusable(fmt.Sprintf("body is over the limit of %d bytes", limit), nil)
	}
	if len(body) == 0 && !r.AllowEmpty {
		return nil, tidemark.Unusable(fmt.Sprintf("empty body (HTTP %d)", resp.StatusCode), nil)
	}
	out.Body = body
	return out, nil
}

// Now is the client's clock: the time a fetch reads as now.
func (c *Client) Now() time.Time { return c.opt.Clock.Now() }

// host returns the state of host, made on first use.
func (c *Client) host(host string) *hostState {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.hosts[host]
	if h == nil {
		h = &hostState{slots: make(chan struct{}, c.opt.PerHost)}
		c.hosts[host] = h
	}
	return h
}

// hold keeps requests off host for d (a Retry-After), unless a longer hold
// stands.
func (c *Client) hold(host string, d time.Duration) {
	if d <= 0 {
		return
	}
	h := c.host(host)
	h.mu.Lock()
	defer h.mu.Unlock()
	if until := c.opt.Clock.Now().Add(d); until.After(h.heldUntil) {
		h.heldUntil = until
	}
}

// held is how long host's hold has left (0: none).
func (c *Client) held(host string) time.Duration {
	h := c.host(host)
	h.mu.Lock()
	defer h.mu.Unlock()
	return max(h.heldUntil.Sub(c.opt.Clock.Now()), 0)
}

// acquire waits for a slot for host and for its minimum interval.
func (c *Client) acquire(ctx context.Context, host string) (func(), error) {
	h := c.host(host)
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	release := func() { <-h.slots }
	if c.opt.MinInterval > 0 {
		h.mu.Lock()
		now := c.opt.Clock.Now()
		start := now
		if h.next.After(now) {
			start = h.next
		}
		h.next = start.Add(c.opt.MinInterval)
		h.mu.Unlock()
		if wait := start.Sub(now); wait > 0 {
			if err := c.opt.Sleep(ctx, wait); err != nil {
				release()
				return nil, err
			}
		}
	}
	return release, nil
}

// classify turns a transport error into an outcome. A context cancelled by
// our caller (shutdown) is returned as is: it is not the source's fault.
func (c *Client) classify(ctx context.Context, err error, timedOut string) error {
	var ae *AddrError
	var re *redirectError
	var se *schemeError
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var uaErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recErr tls.RecordHeaderError
	switch {
	case errors.As(err, &ae):
		return tidemark.Unusable("network safety", ae)
	case errors.As(err, &re):
		return tidemark.Unusable("too many redirects", err)
	case errors.As(err, &se):
		return tidemark.Unusable(se.Error(), err)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.DeadlineExceeded) {
			return err
		}
		return tidemark.Unreachable(timedOut, 0, err)
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &dnsErr):
		return tidemark.Unreachable("DNS: "+dnsErr.Err, 0, err)
	case errors.As(err, &certErr), errors.As(err, &uaErr), errors.As(err, &hostErr), errors.As(err, &recErr):
		return tidemark.Unreachable("TLS", 0, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return tidemark.Unreachable("timed out", 0, err)
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return tidemark.Unreachable("connect: "+oe.Op, 0, err)
	}
	// Anything else on the way there (a reset, a closed connection, a
	// protocol error before the status line) means we did not get an
	// answer.
	return tidemark.Unreachable("connection failed", 0, err)
}

// RetryAfter parses a Retry-After header (seconds or an HTTP date),
// bounded by MaxHonouredAge; 0 when absent or unreadable.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > int64(MaxHonouredAge/time.Second) {
			return MaxHonouredAge
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxHonouredAge)
}

// maxAge reads Cache-Control's s-maxage or max-age; no-store and no-cache
// ask for no delay.
func maxAge(h http.Header) time.Duration {
	var age, shared time.Duration = -1, -1
	for _, line := range h.Values("Cache-Control") {
		for _, dir := range strings.Split(line, ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(dir), "=")
			k = strings.ToLower(strings.TrimSpace(k))
			v = strings.Trim(strings.TrimSpace(v), `"`)
			switch k {
			case "no-store", "no-cache":
				return 0
			case "max-age", "s-maxage":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 {
					continue
				}
				d := MaxHonouredAge
				if n < int64(MaxHonouredAge/time.Second) {
					d = time.Duration(n) * time.Second
				}
				if k == "max-age" {
					age = d
				} else {
					shared = d
				}
			}
		}
	}
	if shared >= 0 {
		return shared
	}
	return max(age, 0)
}

var errOverLimit = errors.New("httpx: body over the limit")

// fill reads into buf until it is full or r fails. Unlike io.ReadFull it
// keeps the reader's own error: io.EOF is the body's end, anything else
// (io.ErrUnexpectedEOF included) is a body that broke off.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// readChunk is the unit in which a body of unknown length is read.
const readChunk = 256 << 10

// readLimited reads at most limit+1 bytes of r. A body of known length is
// read into one buffer of that size; one of unknown length is read in
// fixed chunks joined once at the end, so a body over the limit costs about
// the limit in memory, never a doubling buffer's slack. Only io.EOF ends a
// body: a chunked stream the connection cut, or a gzip stream without its
// trailer, ends in io.ErrUnexpectedEOF, which is an error (truncated).
func readLimited(r io.Reader, limit, length int64) ([]byte, error) {
	r = io.LimitReader(r, limit+1)
	if length >= 0 && length <= limit {
		buf := make([]byte, length+1)
		n, err := fill(r, buf)
		switch {
		case err == io.EOF && int64(n) < length:
			return nil, io.ErrUnexpectedEOF // fewer bytes than declared: truncated
		case err != nil && err != io.EOF:
			return nil, err
		}
		return buf[:n], nil // more than declared, if n > length; the caller sees the size
	}
	var chunks [][]byte
	total := 0
	for {
		c := make([]byte, readChunk)
		n, err := fill(r, c)
		if n > 0 {
			chunks = append(chunks, c[:n])
			total += n
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if int64(total) > limit {
		return nil, errOverLimit // refused before the chunks are joined
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	body := make([]byte, 0, total)
	for _, c := range chunks {
		body = append(body, c...)
	}
	return body, nil
}

// credentialHeaders are the request headers that carry a credential.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Cookie2"}

// CredentialsStayOnOrigin wraps a client's redirect policy (next; nil: Go's
// default of at most 10 redirects) so that a credential goes only to the
// origin it was given for: a redirect to another origin than the first
// request's (another scheme, host or port) is sent without the headers
// that carry one. Go's client keeps them for the same host name on any
// port, which is another service on a shared host or gateway. Every
// client that sends a credential (the outbox's providers, the OpenAI
// summarizer) and the fetchers' client use it.
//
// No redirect carries a Referer: Go's client sets one to the URL
// redirected from, query included, where a source's or a lane's token may
// travel, and the place a redirect points to is not the one the token was
// given for.
func CredentialsStayOnOrigin(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		req.Header.Del("Referer")
		if len(via) > 0 && Origin(req.URL) != Origin(via[0].URL) {
			for _, h := range credentialHeaders {
				req.Header.Del(h)
			}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// Origin is a URL's origin: its scheme, host name and port (the scheme's
// default when it names none), in lower case.
func Origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}
