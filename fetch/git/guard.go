package git

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/httpx"
)

// How a remote is kept to the address guard (the one of fetch/httpx, which
// refuses private, loopback and link-local addresses unless allowed):
//
//   - http and https: every connection git makes goes through an in-process
//     SOCKS5 proxy on 127.0.0.1 (passed as http.proxy=socks5h://…, so git
//     hands the proxy host names, never addresses it resolved itself) that
//     dials with the guard. Redirects and every DNS answer pass through it,
//     as they do for the HTTP kinds. Proxies from the environment and from
//     git's config are overridden: they would dial for us.
//   - ssh (ssh://, git+ssh://, user@host:path): ssh cannot be tunnelled
//     through an in-process proxy without a helper program, so the host ssh
//     would connect to (after ~/.ssh/config, read with ssh -G) is resolved
//     and every address checked before git runs, and ssh is pinned to the
//     address checked (HostName, with HostKeyAlias keeping the host-key
//     lookup on the name), so a second DNS answer cannot send it elsewhere.
//   - git://: the host is resolved and checked before git runs, and git is
//     given the URL with the checked address in place of the name (git://
//     has no certificates or host keys tied to the name).
//
// Pinning to one checked address gives up ssh's and git's own fallback to
// a host's other addresses; the resolver's first (preferred) one is used.
//   - file:// and local paths are the user's own machine: not guarded.
//
// Remote-helper transports (<transport>::<address>, such as ext::, which
// runs commands) are refused, and GIT_ALLOW_PROTOCOL lets git use only the
// protocol of the location.

// remote is a parsed remote location.
type remote struct {
	scheme string // http, https, ssh, git or file
	user   string
	host   string // without brackets
	port   string // "" for the scheme's default
}

var helperSyntax = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*::`)

// parseRemote reads a remote location: a URL or scp-like [user@]host:path.
func parseRemote(loc string) (remote, error) {
	if helperSyntax.MatchString(loc) {
		return remote{}, tidemark.Invalidf("location", loc, "remote-helper transports (%s) are not allowed", loc[:strings.Index(loc, "::")+2])
	}
	if strings.Contains(loc, "://") {
		u, err := url.Parse(loc)
		if err != nil {
			return remote{}, tidemark.Invalidf("location", loc, "not a URL: %v", err)
		}
		r := remote{scheme: strings.ToLower(u.Scheme), host: u.Hostname(), port: u.Port()}
		if u.User != nil {
			r.user = u.User.Username()
		}
		switch r.scheme {
		case "git+ssh", "ssh+git":
			r.scheme = "ssh"
		case "http", "https", "ssh", "git", "file":
		default:
			return remote{}, tidemark.Invalidf("location", loc, "unsupported scheme %q (want https, http, ssh, git or file)", u.Scheme)
		}
		if r.scheme != "file" && r.host == "" {
			return remote{}, tidemark.Invalidf("location", loc, "no host")
		}
		return r, nil
	}
	// scp-like: [user@]host:path, host possibly [bracketed].
	r := remote{scheme: "ssh"}
	hostPart, _, ok := strings.Cut(loc, ":")
	if i := strings.Index(loc, "["); i >= 0 && (i == 0 || loc[i-1] == '@') && !strings.Contains(loc[:i], ":") {
		end := strings.Index(loc[i:], "]:")
		if end < 0 {
			return remote{}, tidemark.Invalidf("location", loc, "not a [host]:path location")
		}
		hostPart, ok = loc[:i+end+1], true
	}
	if !ok || hostPart == "" {
		return remote{}, tidemark.Invalidf("location", loc, "not a host:path location")
	}
	at := strings.LastIndex(hostPart, "@")
	if strings.HasSuffix(hostPart, "]") {
		at = strings.Index(hostPart, "@[") // an @ inside the brackets is the host's
	}
	if at >= 0 {
		r.user, hostPart = hostPart[:at], hostPart[at+1:]
	}
	r.host = strings.TrimSuffix(strings.TrimPrefix(hostPart, "["), "]")
	if r.host == "" {
		return remote{}, tidemark.Invalidf("location", loc, "no host")
	}
	return r, nil
}

// guard returns the address guard: the configured one, or one that
// refuses every non-public address.
func (f *Fetcher) guard() *httpx.Client {
	if f.Guard != nil {
		return f.Guard
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.defaultGuard == nil {
		f.defaultGuard = httpx.New(httpx.Options{})
	}
	return f.defaultGuard
}

// runRemote runs a git command that talks to the remote loc (clone, fetch,
// ls-remote), kept to the address guard; args builds the command's
// arguments for the URL git must be given (loc, or loc pinned to the
// checked address). A connection the guard refused makes the command fail
// as invalid (network safety), never unreachable.
func (f *Fetcher) runRemote(ctx context.Context, loc, dir string, argsFor func(url string) []string) ([]byte, error) {
	args := argsFor(loc)
	r, err := parseRemote(loc)
	if err != nil {
		return nil, tidemark.Unusable("location", err)
	}
	inv := invocation{env: []string{"GIT_ALLOW_PROTOCOL=" + r.scheme, "GIT_SSH_COMMAND=" + sshCommand}}
	switch r.scheme {
	case "http", "https":
		inv.env[0] = "GIT_ALLOW_PROTOCOL=http:https"
		t, err := startTunnel(ctx, f.guard().DialContext)
		if err != nil {
			return nil, fmt.Errorf("git: address guard: %w", err)
		}
		defer t.Close()
		proxy := "socks5h://" + t.addr()
		keys, err := f.proxyKeys(ctx, dir)
		if err != nil {
			return nil, err
		}
		for _, k := range append([]string{"http.proxy"}, keys...) {
			inv.config = append(inv.config, k+"="+proxy)
		}
		out, err := f.exec(ctx, dir, "", inv, args...)
		if ae := t.refusal(); err != nil && ae != nil {
			return nil, tidemark.Unusable("network safety", ae)
		}
		return out, err
	case "ssh":
		host, port, alias, err := f.sshTarget(ctx, r)
		if err != nil {
			return nil, err
		}
		ip, err := f.resolveChecked(ctx, host, port)
		if err != nil {
			return nil, err
		}
		inv.env[1] = "GIT_SSH_COMMAND=" + sshCommand + " -o HostName=" + ip.String() + " -o HostKeyAlias=" + alias
	case "git":
		port := r.port
		if port == "" {
			port = "9418"
		}
		ip, err := f.resolveChecked(ctx, r.host, port)
		if err != nil {
			return nil, err
		}
		pinned, err := pinURL(loc, ip)
		if err != nil {
			return nil, err
		}
		args = argsFor(pinned)
	}
	return f.exec(ctx, dir, "", inv, args...)
}

// pinURL returns the URL loc with its host replaced by ip (its port kept).
func pinURL(loc string, ip netip.Addr) (string, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return "", tidemark.Unusable("location", err)
	}
	host := ip.String()
	if ip.Is6() {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" {
		host += ":" + p
	}
	u.Host = host
	return u.String(), nil
}

// sshCommand is the ssh git runs: never a prompt.
const sshCommand = "ssh -o BatchMode=yes"

// proxyKeys lists the proxy settings in git's config that would win over
// http.proxy for some URL or remote (http.<url>.proxy, remote.<name>.proxy),
// so that each is overridden with the guard's proxy.
func (f *Fetcher) proxyKeys(ctx context.Context, dir string) ([]string, error) {
	out, err := f.exec(ctx, dir, "", invocation{}, "config", "--null", "--name-only", "--get-regexp", `^(http\..+|remote\..+)\.proxy$`)
	var ge *gitError
	if errors.As(err, &ge) && ge.code == 1 {
		return nil, nil // no such keys
	}
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, k := range strings.Split(string(out), "\x00") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

var sshHostName = regexp.MustCompile(`^[A-Za-z0-9._:%-]+$`)

// sshTarget asks ssh which host and port it would connect to for r (its
// config may map an alias to another host name), and the name its
// host-key lookup uses.
func (f *Fetcher) sshTarget(ctx context.Context, r remote) (host, port, alias string, err error) {
	host, port, alias = r.host, r.port, r.host
	if port == "" {
		port = "22"
	}
	args := []string{"-G"}
	if r.port != "" {
		args = append(args, "-p", r.port)
	}
	if r.user != "" {
		args = append(args, "-l", r.user)
	}
	cmd := exec.CommandContext(ctx, "ssh", append(args, "--", r.host)...)
	if out, err := cmd.Output(); err == nil {
		keyAlias := ""
		for _, line := range strings.Split(string(out), "\n") {
			k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
			switch k {
			case "hostname":
				host, alias = v, v
			case "port":
				port = v
			case "hostkeyalias":
				if v != "none" {
					keyAlias = v
				}
			}
		}
		if keyAlias != "" {
			alias = keyAlias
		}
	}
	if !sshHostName.MatchString(host) || !sshHostName.MatchString(alias) {
		return "", "", "", tidemark.Unusable("location", tidemark.Invalidf("location", r.host, "ssh host name %q is not a plain host name", host))
	}
	return host, port, alias, nil
}

// resolveChecked resolves host and checks every address it has with the
// guard; it returns the first.
func (f *Fetcher) resolveChecked(ctx context.Context, host, port string) (netip.Addr, error) {
	allowed, refused, err := f.guard().ResolveChecked(ctx, host, port)
	switch {
	case err != nil:
		return netip.Addr{}, tidemark.Unreachable("DNS: could not resolve "+host, 0, err)
	case refused != nil:
		// Every address must pass: the tunnel dials the one returned, and
		// a host that also names a private address is not trusted.
		return netip.Addr{}, tidemark.Unusable("network safety", refused)
	case len(allowed) == 0:
		return netip.Addr{}, tidemark.Unreachable("DNS: no address for "+host, 0, nil)
	}
	return allowed[0], nil
}

// tunnel is a SOCKS5 proxy (RFC 1928: no authentication, CONNECT only) on
// 127.0.0.1 that dials every connection through the guard, for the length
// of one git command.
type tunnel struct {
	ln   net.Listener
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	ctx  context.Context

	mu      sync.Mutex
	refused *httpx.AddrError
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

func startTunnel(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*tunnel, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &tunnel{ln: ln, dial: dial, ctx: ctx, conns: map[net.Conn]struct{}{}}
	t.wg.Add(1)
	go t.serve()
	return t, nil
}

func (t *tunnel) addr() string { return t.ln.Addr().String() }

// refusal returns the first connection the guard refused, if any.
func (t *tunnel) refusal() *httpx.AddrError {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.refused
}

// Close stops the proxy and every connection through it.
func (t *tunnel) Close() {
	t.ln.Close()
	t.mu.Lock()
	for c := range t.conns {
		c.Close()
	}
	t.conns = nil // later connections are closed as they come
	t.mu.Unlock()
	t.wg.Wait()
}

func (t *tunnel) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conns == nil {
		return false
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *tunnel) serve() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return
		}
		if !t.track(c) {
			c.Close()
			return
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			defer c.Close()
			t.handle(c)
		}()
	}
}

// handshakeTimeout bounds the SOCKS greeting and request from git.
const handshakeTimeout = 10 * time.Second

// SOCKS5 reply codes.
const (
	socksOK          = 0
	socksNotAllowed  = 2
	socksUnreachable = 4
	socksBadCommand  = 7
	socksBadAddress  = 8
)

func (t *tunnel) handle(c net.Conn) {
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	var hdr [2]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil || hdr[0] != 5 {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(c, methods); err != nil {
		return
	}
	if bytes.IndexByte(methods, 0) < 0 {
		c.Write([]byte{5, 0xff})
		return
	}
	c.Write([]byte{5, 0})
	var req [4]byte
	if _, err := io.ReadFull(c, req[:]); err != nil || req[0] != 5 {
		return
	}
	var host string
	switch req[3] {
	case 1, 4: // IPv4, IPv6
		b := make([]byte, map[byte]int{1: 4, 4: 16}[req[3]])
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		ip, _ := netip.AddrFromSlice(b)
		host = ip.String()
	case 3: // a name
		var n [1]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		host = string(b)
	default:
		reply(c, socksBadAddress)
		return
	}
	var p [2]byte
	if _, err := io.ReadFull(c, p[:]); err != nil {
		return
	}
	if req[1] != 1 { // CONNECT only
		reply(c, socksBadCommand)
		return
	}
	addr := net.JoinHostPort(host, fmt.Sprint(binary.BigEndian.Uint16(p[:])))
	up, err := t.dial(t.ctx, "tcp", addr)
	if err != nil {
		var ae *httpx.AddrError
		if errors.As(err, &ae) {
			t.mu.Lock()
			if t.refused == nil {
				t.refused = ae
			}
			t.mu.Unlock()
			reply(c, socksNotAllowed)
			return
		}
		reply(c, socksUnreachable)
		return
	}
	defer up.Close()
	if !t.track(up) {
		return
	}
	reply(c, socksOK)
	c.SetDeadline(time.Time{})
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); closeWrite(up); done <- struct{}{} }()
	go func() { io.Copy(c, up); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
}

func reply(c net.Conn, code byte) {
	c.Write([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0})
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}
