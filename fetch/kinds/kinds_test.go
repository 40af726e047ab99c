package kinds_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/kinds"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/internal/gittest"
)

func TestResolveTellsKindsApart(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	s := kinds.New(kinds.Options{GitCache: t.TempDir()})
	plain := t.TempDir()
	repo := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	ctx := context.Background()
	for loc, want := range map[string]string{plain: "dir", repo: "git", "git@example.org:team/app.git": "git"} {
		ns, err := s.Resolve(ctx, ingest.NewSource{Location: loc})
		// A remote git source that cannot be reached is added as given.
		if err != nil && !strings.HasPrefix(loc, "git@") {
			t.Fatalf("%s: %v", loc, err)
		}
		if ns.Kind != want {
			t.Errorf("%s: kind %q, want %q", loc, ns.Kind, want)
		}
	}
	ns, err := s.Resolve(ctx, ingest.NewSource{Location: plain})
	if err != nil || ns.Name != filepath.Base(plain) {
		t.Fatalf("default name %q, %v", ns.Name, err)
	}
}

func TestResolveRefusesBadInput(t *testing.T) {
	s := kinds.New(kinds.Options{})
	dir := t.TempDir()
	for name, ns := range map[string]ingest.NewSource{
		"unknown kind":       {Kind: "ftp", Location: dir},
		"unknown config key": {Kind: "dir", Location: dir, Config: map[string]string{"branch": "main"}},
		"bad bound":          {Kind: "dir", Location: dir, Config: map[string]string{"max_files": "-3"}},
		"bad glob":           {Kind: "dir", Location: dir, Config: map[string]string{"include": "["}},
		"not a boolean":      {Kind: "dir", Location: dir, Config: map[string]string{"hidden": "yes"}},
		"credential":         {Location: "https://user:pw@example.org/feed.xml"},
		"token as user":      {Location: "https://ghp_token@example.org/feed.xml"},
		"not a directory":    {Kind: "dir", Location: filepath.Join(dir, "missing")},
		"no kind":            {Location: "nowhere-at-all"},
		"malformed ignore":   {Kind: "json", Location: "http://127.0.0.1:9/api", AllowPrivate: true, Config: map[string]string{"ignore": "stats..v"}},
	} {
		_, err := s.Resolve(context.Background(), ns)
		if !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%s: %v, want invalid input", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "pw@") {
			t.Errorf("%s: the refusal shows the credential: %v", name, err)
		}
	}
}

func TestFetchersCoverEveryKind(t *testing.T) {
	s := kinds.New(kinds.Options{})
	fs := s.Fetchers()
	for _, n := range s.Names() {
		if fs[n] == nil {
			t.Errorf("kind %s has no fetcher", n)
		}
		k, _ := s.Kind(n)
		if len(k.ConfigKeys) == 0 {
			t.Errorf("kind %s reads no config key", n)
		}
	}
	if len(fs) != 5 {
		t.Fatalf("%d kinds", len(fs))
	}

}

// A remote git source is checked at add time with the source's own
// allow_private, exactly as its fetches will be: allowed, a private remote
// is asked (and, unreachable now, added with a warning); not allowed, it is
// refused by the address guard.
func TestResolveGitRemoteHonoursAllowPrivate(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, loc := range []string{"git://127.0.0.1:9/repo.git", "http://127.0.0.1:9/repo.git"} {
		var warned []string
		s := kinds.New(kinds.Options{GitCache: t.TempDir(), Warn: func(m string) { warned = append(warned, m) }})
		ns, err := s.Resolve(context.Background(), ingest.NewSource{Location: loc, Kind: "git", AllowPrivate: true})
		if err != nil {
			t.Fatalf("%s with allow_private: %v", loc, err)
		}
		if ns.Location != loc || !ns.AllowPrivate || len(warned) != 1 || !strings.Contains(warned[0], "could not reach") {
			t.Fatalf("%s with allow_private: %+v, warnings %q", loc, ns, warned)
		}
		_, err = s.Resolve(context.Background(), ingest.NewSource{Location: loc, Kind: "git"})
		if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "loopback") {
			t.Fatalf("%s without allow_private: %v, want refused (loopback)", loc, err)
		}
	}
}

// Every kind whose cursor has a format checks a skip target against it:
// what the kind could not read back is refused and never stored.
func TestEveryKindChecksASkipTarget(t *testing.T) {
	s := kinds.New(kinds.Options{})
	good := map[string]string{
		"feed": `{"etag":"\"v1\"","last_modified":"Mon, 02 Jan 2026 03:04:05 GMT"}`,
		"json": `{"etag":"\"v1\""}`,
		"page": `{"etag":"\"v1\"","hash":"` + strings.Repeat("ab", 32) + `","matched":true,"text":"hello"}`,
		"dir":  `{"files":{"a.txt":"` + strings.Repeat("ab", 32) + `"}}`,
	}
	bad := []string{`{"garbage`, `garbage`, `[]`, `null`, `"etag"`, `{"etag":1}`, `{"nope":"x"}`, `{} {}`}
	for kind, ok := range good {
		r, is := s.Fetchers()[kind].(ingest.CursorResolver)
		if !is {
			t.Errorf("kind %s does not check a skip target", kind)
			continue
		}
		src := tidemark.Source{Name: "s", Kind: kind, Location: "x"}
		if got, err := r.ResolveCursor(context.Background(), src, ok); err != nil || got != ok {
			t.Errorf("%s --to %s: %q %v", kind, ok, got, err)
		}
		for _, to := range bad {
			if _, err := r.ResolveCursor(context.Background(), src, to); !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), kind+" cursor") {
				t.Errorf("%s --to %s: %v, want invalid naming the %s cursor", kind, to, err, kind)
			}
		}
	}
}

// A location refused for what it is says what was wrong and the fix that
// works, never advice that leads nowhere: a loopback or private address
// names --allow-private (detected or named by --kind, which would add a
// source that fails every run), and a URL whose scheme no kind reads says
// it is not an http(s) URL rather than "name it with --kind".
func TestResolveSaysWhatWasWrongAndTheFix(t *testing.T) {
	s := kinds.New(kinds.Options{GitCache: t.TempDir()})
	for _, tc := range []struct {
		ns        ingest.NewSource
		says      []string
		neverSays string
	}{
		{ingest.NewSource{Location: "http://127.0.0.1:9/feed.xml"}, []string{"loopback", "allow_private", "TIDEMARK_ALLOW_PRIVATE"}, "kind"},
		{ingest.NewSource{Location: "http://10.1.2.3:9/feed.xml"}, []string{"private", "allow_private"}, "kind"},
		{ingest.NewSource{Location: "http://127.0.0.1:9/feed.xml", Kind: "feed"}, []string{"loopback", "allow_private"}, "source set"},
		{ingest.NewSource{Location: "http://127.0.0.1:9/page", Kind: "page"}, []string{"loopback", "allow_private"}, "source set"},
		{ingest.NewSource{Location: "http://127.0.0.1:9/api", Kind: "json"}, []string{"loopback", "allow_private"}, "source set"},
		{ingest.NewSource{Location: "git://127.0.0.1:9/repo.git", Kind: "git"}, []string{"loopback", "allow_private"}, "source set"},
		{ingest.NewSource{Location: "htp://x"}, []string{"not an http(s) URL", `"htp"`}, "kind"},
	} {
		_, err := s.Resolve(context.Background(), tc.ns)
		if !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%+v: %v, want invalid input", tc.ns, err)
			continue
		}
		msg := tidemark.NamedText(err, func(in tidemark.Input) string { return string(in) })
		for _, want := range tc.says {
			if !strings.Contains(msg, want) {
				t.Errorf("%s (kind %q): %q does not say %q", tc.ns.Location, tc.ns.Kind, msg, want)
			}
		}
		if strings.Contains(msg, tc.neverSays) {
			t.Errorf("%s (kind %q): %q says %q, which is no fix here", tc.ns.Location, tc.ns.Kind, msg, tc.neverSays)
		}
	}
}

// A face whose users are not the machine's operator (the API and the
// console: anyone holding a token) admits a location on the server's
// machine only under a root it was given, and a source that may reach
// private addresses only when it allows them; nothing local is even
// looked at before that.
func TestResolveUnderAnAdmission(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	s := kinds.New(kinds.Options{GitCache: t.TempDir()})
	root, outside := t.TempDir(), t.TempDir()
	inside := filepath.Join(root, "notes")
	repo := filepath.Join(outside, "repo")
	for _, d := range []string{inside, repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	escape := filepath.Join(root, "escape")
	if err := os.Symlink(outside, escape); err != nil {
		t.Fatal(err)
	}
	none := kinds.WithAdmission(context.Background(), kinds.Admission{})
	rooted := kinds.WithAdmission(context.Background(), kinds.Admission{LocalRoots: []string{root}})
	for _, tc := range []struct {
		name string
		ctx  context.Context
		ns   ingest.NewSource
		says string // "" admits
	}{
		{"dir, no root", none, ingest.NewSource{Location: inside}, "local-root"},
		{"dir named, no root", none, ingest.NewSource{Location: inside, Kind: "dir"}, "local-root"},
		{"local git, no root", none, ingest.NewSource{Location: repo}, "local-root"},
		{"file:// git, no root", none, ingest.NewSource{Location: "file://" + repo, Kind: "git"}, "local-root"},
		{"missing path, no root", none, ingest.NewSource{Location: filepath.Join(outside, "nope")}, "local-root"},
		{"dir under the root", rooted, ingest.NewSource{Location: inside}, ""},
		{"the root itself", rooted, ingest.NewSource{Location: root, Kind: "dir"}, ""},
		{"dir outside the root", rooted, ingest.NewSource{Location: outside, Kind: "dir"}, "not under"},
		{"git outside the root", rooted, ingest.NewSource{Location: repo}, "not under"},
		{"a link out of the root", rooted, ingest.NewSource{Location: escape, Kind: "dir"}, "not under"},
		{"dotdot out of the root", rooted, ingest.NewSource{Location: filepath.Join(root, "..", filepath.Base(outside)), Kind: "dir"}, "not under"},
		{"private, not allowed", none, ingest.NewSource{Location: "https://example.org/feed.xml", Kind: "feed", AllowPrivate: true}, "allow-private"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Resolve(tc.ctx, tc.ns)
			switch {
			case tc.says == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.says != "" && (!errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), tc.says)):
				t.Fatalf("got %v, want a refusal saying %q", err, tc.says)
			}
		})
	}
	if err := kinds.CheckAllowPrivate(none, true); err == nil || !strings.Contains(err.Error(), "allow-private") {
		t.Fatalf("setting allow_private without admission: %v", err)
	}
	if err := kinds.CheckAllowPrivate(context.Background(), true); err != nil {
		t.Fatalf("the operator's own CLI: %v", err)
	}
	if err := kinds.CheckAllowPrivate(kinds.WithAdmission(context.Background(), kinds.Admission{AllowPrivate: true}), true); err != nil {
		t.Fatalf("an admission that allows it: %v", err)
	}
}

// A feed that is truncated or malformed when it is added is refused with
// the reason and the fix, never detected as a page (which would fail every
// run, even once the feed is fixed); named with --kind, it is added as
// given.
func TestResolveRefusesAFeedThatDoesNotParse(t *testing.T) {
	truncated := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>x</title>`)
	}
	s := kinds.New(kinds.Options{})
	srv := httptest.NewServer(http.HandlerFunc(truncated))
	defer srv.Close()
	ns, err := s.Resolve(context.Background(), ingest.NewSource{Location: srv.URL + "/feed.xml", AllowPrivate: true})
	if !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("resolved as %q (%v), want invalid input", ns.Kind, err)
	}
	msg := tidemark.NamedText(err, func(in tidemark.Input) string { return "--" + string(in) })
	for _, want := range []string{"looks like a feed", "application/xml", "does not parse", "truncated", "fix it or name the kind with --kind"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not say %q", msg, want)
		}
	}
	srv2 := httptest.NewServer(http.HandlerFunc(truncated))
	defer srv2.Close()
	ns, err = s.Resolve(context.Background(), ingest.NewSource{Location: srv2.URL + "/feed.xml", Kind: "feed", AllowPrivate: true})
	if err != nil || ns.Kind != "feed" || ns.Location != srv2.URL+"/feed.xml" {
		t.Fatalf("--kind feed: %+v, %v", ns, err)
	}
}

// The rule for a second source on one location (src.md #21): the same
// kind and location is a duplicate when the config is the same, or, for
// a feed (whose config selects no other entries), whatever the config.
func TestDuplicate(t *testing.T) {
	s := kinds.New(kinds.Options{})
	existing := []tidemark.Source{
		{Name: "blog", Kind: "feed", Location: "https://Example.org:443/feed.xml", Config: map[string]string{}},
		{Name: "api", Kind: "json", Location: "https://example.org/api", Config: map[string]string{"items": ".data[]"}},
		{Name: "site", Kind: "page", Location: "http://example.org", Config: nil},
	}
	for _, tc := range []struct {
		ns   ingest.NewSource
		want string
	}{
		{ingest.NewSource{Kind: "feed", Location: "https://example.org/feed.xml"}, "blog"},
		{ingest.NewSource{Kind: "feed", Location: "https://example.org/feed.xml", Config: map[string]string{"max_items": "5"}}, "blog"},
		{ingest.NewSource{Kind: "page", Location: "https://example.org/feed.xml"}, ""},
		{ingest.NewSource{Kind: "feed", Location: "https://example.org/feed.xml?page=2"}, ""},
		{ingest.NewSource{Kind: "json", Location: "https://example.org/api", Config: map[string]string{"items": " .data[] "}}, "api"},
		{ingest.NewSource{Kind: "json", Location: "https://example.org/api", Config: map[string]string{"items": ".other[]"}}, ""},
		{ingest.NewSource{Kind: "page", Location: "HTTP://example.org:80/", Config: map[string]string{"selector": ""}}, "site"},
		{ingest.NewSource{Kind: "page", Location: "http://example.org/", Config: map[string]string{"selector": "main"}}, ""},
	} {
		got, ok := s.Duplicate(existing, tc.ns)
		if (tc.want == "") == ok || got.Name != tc.want {
			t.Errorf("%s %s %v: duplicate of %q (%v), want %q", tc.ns.Kind, tc.ns.Location, tc.ns.Config, got.Name, ok, tc.want)
		}
	}
}

// Key follows Duplicate's rule, so that the database's unique index on it
// refuses what Duplicate refuses: one key for duplicates, another for
// sources that are not; a key is never empty and tells nothing of a
// location's credentials or config.
func TestKeyIsDuplicatesRule(t *testing.T) {
	s := kinds.New(kinds.Options{})
	key := func(kind, loc string, cfg map[string]string) string {
		return s.Key(ingest.NewSource{Kind: kind, Location: loc, Config: cfg})
	}
	feed := key("feed", "https://example.org/feed.xml", nil)
	api := key("json", "https://example.org/api", map[string]string{"items": ".data[]"})
	for _, tc := range []struct {
		got, want string
		same      bool
	}{
		{key("feed", "https://Example.org:443/feed.xml", map[string]string{}), feed, true},
		{key("feed", "https://example.org/feed.xml", map[string]string{"max_items": "5"}), feed, true},
		{key("page", "https://example.org/feed.xml", nil), feed, false},
		{key("feed", "https://example.org/feed.xml?page=2", nil), feed, false},
		{key("feed", "https://example.org/Feed.xml", nil), feed, false},
		{key("json", "https://example.org/api", map[string]string{"items": " .data[] ", "id": ""}), api, true},
		{key("json", "https://example.org/api", map[string]string{"items": ".other[]"}), api, false},
		{key("json", "https://example.org/api", map[string]string{"items": ".data[]", "id": "tag"}), api, false},
		{key("json", "https://example.org/api", map[string]string{"items=.data[]\x00id": ""}), api, false},
		{key("page", "HTTP://example.org:80/", map[string]string{"selector": ""}), key("page", "http://example.org", nil), true},
		{key("dir", "/srv/docs", nil), key("dir", "/srv/docs", map[string]string{"include": "*.md"}), false},
	} {
		if (tc.got == tc.want) != tc.same {
			t.Errorf("keys %s and %s: same %v, want %v", tc.got, tc.want, !tc.same, tc.same)
		}
		if len(tc.got) != 64 || strings.Contains(tc.got, "example") {
			t.Errorf("key %q: want a hex SHA-256", tc.got)
		}
	}
}

// A page whose announced feeds all fail is refused, with or without
// --kind feed, naming each and why (src.md #20); one whose later feed
// answers is added for that feed, and the others are named.
func TestResolveChecksDiscoveredFeeds(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/blog", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><head><link rel="alternate" type="application/rss+xml" href="/missing.xml"></head></html>`)
	})
	mux.HandleFunc("/blog2", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><head><link rel="alternate" type="application/atom+xml" title="Comments" href="/c.xml"><link rel="alternate" type="application/rss+xml" href="/rss.xml"></head></html>`)
	})
	rss := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprint(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>x</title></channel></rss>`)
	}
	mux.HandleFunc("/rss.xml", rss)
	mux.HandleFunc("/c.xml", rss)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var warned []string
	s := kinds.New(kinds.Options{Warn: func(m string) { warned = append(warned, m) }})
	for _, kind := range []string{"", "feed"} {
		ns, err := s.Resolve(context.Background(), ingest.NewSource{Location: srv.URL + "/blog", Kind: kind, AllowPrivate: true})
		if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "/missing.xml") || !strings.Contains(err.Error(), "404") {
			t.Errorf("kind %q: resolved %+v (%v), want invalid naming the 404", kind, ns, err)
		}
	}
	ns, err := s.Resolve(context.Background(), ingest.NewSource{Location: srv.URL + "/blog2", AllowPrivate: true})
	if err != nil || ns.Kind != "feed" || ns.Location != srv.URL+"/rss.xml" {
		t.Fatalf("blog2: %+v %v", ns, err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "/c.xml") {
		t.Fatalf("warnings: %q", warned)
	}
}

// ChangeConfig lets a git source follow another branch (one that exists),
// and refuses keys a kind does not let change on a source it has read.
func TestChangeConfig(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ctx := context.Background()
	s := kinds.New(kinds.Options{GitCache: t.TempDir()})
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "master"}, {"-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "one"},
		{"branch", "main"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	src := tidemark.Source{Name: "r", Kind: "git", Location: repo, Config: map[string]string{"branch": "master"}}
	cfg, err := s.ChangeConfig(ctx, src, map[string]string{"branch": "main"})
	if err != nil || cfg["branch"] != "main" {
		t.Fatalf("branch=main: %v, %v", cfg, err)
	}
	if cfg, err := s.ChangeConfig(ctx, src, map[string]string{"branch": ""}); err != nil || len(cfg) != 0 {
		t.Fatalf("branch unset (HEAD): %v, %v", cfg, err)
	}
	for change, want := range map[string]string{"branch=nope": "no such branch", "brnch=main": "not a git setting"} {
		k, v, _ := strings.Cut(change, "=")
		if _, err := s.ChangeConfig(ctx, src, map[string]string{k: v}); !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it invalid: %s", change, err, want)
		}
	}
	dirSrc := tidemark.Source{Name: "d", Kind: "dir", Location: t.TempDir()}
	if _, err := s.ChangeConfig(ctx, dirSrc, map[string]string{"include": "*.md"}); !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "cannot be changed") {
		t.Errorf("dir include: %v, want it refused: the cursor stands for what the old value selected", err)
	}
}

// A location is shown everywhere, the public wiki included, so one that
// carries a credential in its query (?token=, ?api_key=, a signature) is
// refused as one in its userinfo is, without repeating it; a query that
// only chooses what a feed lists is not.
func TestCheckLocationCredentialsRefusesQueryCredentials(t *testing.T) {
	for _, loc := range []string{
		"https://example.org/feed?token=SEKRET-qtok-5",
		"https://example.org/feed?category=go&API_KEY=SEKRET-qtok-6",
		"https://example.org/cal.ics?key=SEKRET-qtok-7",
		"https://bucket.example/f.xml?X-Amz-Signature=SEKRET-qtok-8",
		"https://example.org/f?access_token=SEKRET-qtok-9",
		"https://example.org/f?Password=SEKRET-qtok-10",
		"https://example.org/f?authorization=SEKRET-qtok-11",
		"https://example.org/f?jwt=SEKRET-qtok-12",
		"https://example.org/f?session=SEKRET-qtok-13",
		// Many servers read ; as &; Go's ParseQuery drops such a pair.
		"https://example.org/f?a=1;token=SEKRET-qtok-14",
		// A password url.Parse refuses unencoded is a password all the same.
		"https://u:SEKRET#qtok-15@example.org/f",
		"https://u:SEKRET/qtok-16@example.org/f",
	} {
		err := kinds.CheckLocationCredentials(loc)
		if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "credential") {
			t.Errorf("%s: %v; want a refusal saying why", loc, err)
		}
		if err != nil && strings.Contains(err.Error(), "SEKRET") {
			t.Errorf("%s: the refusal repeats the credential: %v", loc, err)
		}
	}
	for _, loc := range []string{"https://example.org/feed?category=go&author=me&page=2", "https://example.org/feed", "/srv/docs", "git@github.com:o/r.git",
		// Ordinary parameters of ordinary feeds (see redact.CredentialParam).
		"https://trac.example/timeline?ticket=on&changeset=on&format=rss", "https://example.org/f?code=US&hash=3f2a9c"} {
		if err := kinds.CheckLocationCredentials(loc); err != nil {
			t.Errorf("%s: %v", loc, err)
		}
	}
}

// A file:// URL of a local git repository is a git remote, as the docs
// list it, told apart without --kind git; one of a plain directory is not
// told as anything.
func TestResolveTellsAFileURLOfARepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	s := kinds.New(kinds.Options{GitCache: t.TempDir()})
	repo := gittest.Repo(t, "first")
	ns, err := s.Resolve(context.Background(), ingest.NewSource{Location: "file://" + repo})
	if err != nil || ns.Kind != "git" {
		t.Fatalf("file://%s: kind %q, %v; want git", repo, ns.Kind, err)
	}
	if _, err := s.Resolve(context.Background(), ingest.NewSource{Location: "file://" + t.TempDir()}); err == nil || !strings.Contains(err.Error(), "cannot tell its kind") {
		t.Fatalf("file:// of a plain directory: %v, want its kind not told", err)
	}
}
