package git_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/git"
	"github.com/tidemark/tidemark/fetch/httpx"
)

// mustDumbHTTPRemote serves a bare repository over git's dumb HTTP protocol
// on 127.0.0.1 and counts the connections made to it.
func mustDumbHTTPRemote(tb testing.TB) (url string, conns *atomic.Int32) {
	tb.Helper()
	tmp := tb.TempDir()
	work, bare := filepath.Join(tmp, "work"), filepath.Join(tmp, "x.git")
	mustGit(tb, tmp, "init", "-q", "-b", "main", work)
	mustCommitFile(tb, work, "a.txt", "one")
	mustGit(tb, tmp, "clone", "-q", "--bare", work, bare)
	mustGit(tb, bare, "update-server-info")
	conns = new(atomic.Int32)
	srv := httptest.NewUnstartedServer(http.FileServer(http.Dir(tmp)))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	tb.Cleanup(srv.Close)
	return srv.URL + "/x.git", conns
}

// The git kind dials through the same guard as the HTTP kinds: a remote on
// a private address is refused before any connection is made, and served
// once private addresses are allowed.
func TestRemoteOnPrivateAddressIsRefusedWithoutConnecting(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary")
	}
	ctx := context.Background()
	remote, conns := mustDumbHTTPRemote(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(strings.TrimSuffix(remote, "/x.git"), "http://"))

	// Neither the environment nor the user's git config can take git past
	// the guard: proxy exceptions and a per-URL "no proxy" are overridden.
	t.Setenv("no_proxy", "*")
	t.Setenv("NO_PROXY", "*")
	global := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(global, []byte("[http \"http://127.0.0.1:"+port+"\"]\n\tproxy = \"\"\n[http \"http://localhost:"+port+"\"]\n\tproxy = \"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", global)

	for _, loc := range []string{remote, "http://localhost:" + port + "/x.git"} {
		f := &git.Fetcher{CacheDir: t.TempDir(), Guard: httpx.New(httpx.Options{})}
		_, err := f.Fetch(ctx, tidemark.Source{Name: "r", Kind: "git", Location: loc}, "")
		var fe *tidemark.FetchError
		var ae *httpx.AddrError
		if !errors.As(err, &fe) || fe.Outcome != tidemark.OutcomeInvalid || !errors.As(err, &ae) {
			t.Fatalf("%s: got %v, want an invalid run refused by the address guard", loc, err)
		}
		if !strings.Contains(err.Error(), httpx.AllowPrivateEnv) {
			t.Errorf("refusal %q does not say how to allow private addresses", err)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("the private remote was connected to %d times", n)
	}

	f := &git.Fetcher{CacheDir: t.TempDir(), Guard: httpx.New(httpx.Options{AllowPrivate: true})}
	res, err := f.Fetch(ctx, tidemark.Source{Name: "r", Kind: "git", Location: remote}, "")
	if err != nil || len(res.Items) != 1 {
		t.Fatalf("with private addresses allowed: %+v, %v", res.Items, err)
	}
	if conns.Load() == 0 {
		t.Fatal("allowed fetch made no connection: the test server was not used")
	}
}

// ssh and git:// cannot be tunnelled through the in-process guard, so their
// host is resolved through the guard first; a private one is refused
// before git runs.
func TestSSHAndGitProtocolRemotesOnPrivateAddressesAreRefused(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary")
	}
	ctx := context.Background()
	for _, loc := range []string{"git@127.0.0.1:o/r.git", "ssh://git@localhost/o/r.git", "git://10.0.0.1/r.git", "ssh://[::1]:2222/r.git"} {
		f := &git.Fetcher{CacheDir: t.TempDir(), Guard: httpx.New(httpx.Options{}), Git: "/nonexistent/git-must-not-run"}
		_, err := f.Fetch(ctx, tidemark.Source{Name: "r", Kind: "git", Location: loc}, "")
		var ae *httpx.AddrError
		if o, _, _ := tidemark.Classify(err); !errors.As(err, &ae) || o != tidemark.OutcomeInvalid {
			t.Errorf("%s: got %v, want an invalid run refused by the address guard", loc, err)
		}
	}
}

// mustFakeSSH puts an ssh on PATH that answers -G as if ~/.ssh/config
// mapped every host to hostname, and records the arguments of any other
// call to the returned file.
func mustFakeSSH(tb testing.TB, hostname string) (record string) {
	tb.Helper()
	bin := tb.TempDir()
	record = filepath.Join(bin, "record")
	script := "#!/bin/sh\nif [ \"$1\" = -G ]; then echo \"hostname " + hostname + "\"; echo 'port 22'; exit 0; fi\n" +
		"printf '%s\\n' \"$@\" > '" + record + "'\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(script), 0o755); err != nil {
		tb.Fatal(err)
	}
	tb.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return record
}

// The host ssh would really connect to (after its config) is the one
// checked, and ssh is pinned to the address checked.
func TestSSHRemotesAreCheckedAfterSSHConfigAndPinned(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary")
	}
	ctx := context.Background()
	src := tidemark.Source{Name: "r", Kind: "git", Location: "git@myalias:o/r.git"}

	mustFakeSSH(t, "10.1.2.3")
	_, err := (&git.Fetcher{CacheDir: t.TempDir(), Guard: httpx.New(httpx.Options{})}).Fetch(ctx, src, "")
	var ae *httpx.AddrError
	if !errors.As(err, &ae) {
		t.Fatalf("an alias for a private host: %v, want refused", err)
	}

	record := mustFakeSSH(t, "127.0.0.1")
	_, err = (&git.Fetcher{CacheDir: t.TempDir(), Guard: httpx.New(httpx.Options{AllowPrivate: true})}).Fetch(ctx, src, "")
	if err == nil {
		t.Fatal("the fake ssh cannot serve a repository")
	}
	args, rerr := os.ReadFile(record)
	if rerr != nil {
		t.Fatalf("ssh was not run: %v (fetch: %v)", rerr, err)
	}
	if !strings.Contains(string(args), "HostName=127.0.0.1\n") || !strings.Contains(string(args), "HostKeyAlias=127.0.0.1\n") {
		t.Fatalf("ssh not pinned to the checked address; args:\n%s", args)
	}
}

// mustGitDaemon serves a repository over git:// on 127.0.0.1, one git
// daemon (in inetd mode) per connection, and counts the connections.
func mustGitDaemon(tb testing.TB) (url string, conns *atomic.Int32) {
	tb.Helper()
	tmp := tb.TempDir()
	work := filepath.Join(tmp, "work")
	mustGit(tb, tmp, "init", "-q", "-b", "main", work)
	mustCommitFile(tb, work, "a.txt", "one")
	mustGit(tb, tmp, "clone", "-q", "--bare", work, filepath.Join(tmp, "x.git"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	conns = new(atomic.Int32)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			cmd := exec.Command("git", "daemon", "--inetd", "--export-all", "--base-path="+tmp, tmp)
			cmd.Stdin, cmd.Stdout = c, c
			cmd.Run()
			c.Close()
		}
	}()
	tb.Cleanup(func() { ln.Close(); <-done })
	return "git://" + ln.Addr().String() + "/x.git", conns
}

func TestGitProtocolRemoteObeysTheGuard(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary")
	}
	ctx := context.Background()
	remote, conns := mustGitDaemon(t)
	src := tidemark.Source{Name: "r", Kind: "git", Location: remote}
	_, err := (&git.Fetcher{CacheDir: t.TempDir(), Guard: httpx.New(httpx.Options{})}).Fetch(ctx, src, "")
	var ae *httpx.AddrError
	if !errors.As(err, &ae) || conns.Load() != 0 {
		t.Fatalf("private git:// remote: %v after %d connections, want refused before any", err, conns.Load())
	}
	f := &git.Fetcher{CacheDir: t.TempDir(), Guard: httpx.New(httpx.Options{AllowPrivate: true})}
	for i := 0; i < 2; i++ { // a clone, then a fetch into the mirror
		res, err := f.Fetch(ctx, src, "")
		if err != nil || len(res.Items) != 1 {
			t.Fatalf("allowed, run %d: %+v %v", i, res.Items, err)
		}
	}
	if conns.Load() < 2 {
		t.Fatalf("%d connections for a clone and a fetch", conns.Load())
	}
}
