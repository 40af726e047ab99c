package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/ingest/opml"
)

// mustTidemark runs the CLI in-process and fails unless it exits with want.
func mustTidemark(tb testing.TB, want int, args ...string) string {
	tb.Helper()
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != want {
		tb.Fatalf("tidemark %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out.String(), errb.String())
	}
	return out.String()
}

func newBlog(tb testing.TB) *httptest.Server {
	tb.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/blog/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><html><head><title>My blog</title><link rel="alternate" type="application/rss+xml" href="/blog/rss.xml"></head><body><p>posts</p></body></html>`)
	})
	mux.HandleFunc("/blog/rss.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprint(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>My blog</title>
<item><guid>p1</guid><title>Post one</title><description>one</description></item>
<item><guid>p2</guid><title>Post two</title><description>two</description></item></channel></rss>`)
	})
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"releases":[{"tag":"v1","body":"x"}]}`)
	})
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return srv
}

func TestSourceAddDetectsAndDiscoversFeeds(t *testing.T) {
	t.Setenv(AllowPrivateEnv, "1")
	srv := newBlog(t)
	home := t.TempDir()
	out := mustTidemark(t, 0, "--home", home, "source", "add", srv.URL+"/blog/", "--json")
	var src tidemark.Source
	if err := json.Unmarshal([]byte(out), &src); err != nil {
		t.Fatal(err)
	}
	if src.Kind != "feed" || src.Location != srv.URL+"/blog/rss.xml" || src.Name != "127.0.0.1-blog" {
		t.Fatalf("added %+v", src)
	}
	mustTidemark(t, 0, "--home", home, "source", "add", srv.URL+"/api", "--config", "items=.releases[]", "--config", "id=tag", "--name", "api")
	mustTidemark(t, 2, "--home", home, "source", "add", srv.URL+"/api", "--kind", "json", "--config", "items=.[", "--name", "api2")
	mustTidemark(t, 2, "--home", home, "source", "add", srv.URL+"/api", "--kind", "page", "--config", "colour=blue", "--name", "api3")
	docs := t.TempDir()
	mustTidemark(t, 0, "--home", home, "source", "add", docs)
	list := mustTidemark(t, 0, "--home", home, "source", "list", "--json")
	var srcs []tidemark.Source
	if err := json.Unmarshal([]byte(list), &srcs); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, s := range srcs {
		kinds[s.Name] = s.Kind
	}
	if kinds["api"] != "json" || kinds[filepath.Base(docs)] != "dir" || len(srcs) != 3 {
		t.Fatalf("sources: %v", kinds)
	}

	out = mustTidemark(t, 0, "--home", home, "run", "--once", "--json")
	if !strings.Contains(out, `"outcome": "items"`) {
		t.Fatalf("run: %s", out)
	}
}

func TestSourceTestShowsWithoutStoring(t *testing.T) {
	srv := newBlog(t)
	home := t.TempDir()
	// Without the allow setting the loopback server is refused at dial time.
	mustTidemark(t, 2, "--home", home, "source", "test", srv.URL+"/blog/rss.xml", "--kind", "feed")

	out := mustTidemark(t, 0, "--home", home, "source", "test", srv.URL+"/blog/rss.xml", "--allow-private", "--json", "--evidence")
	var rep ingest.TestReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Kind != "feed" || rep.Outcome != tidemark.OutcomeItems || len(rep.Items) != 2 || rep.Items[0].Key != "p1" ||
		!strings.Contains(rep.Items[1].Evidence, `"description":"two\n"`) || rep.Items[0].EvidenceSHA256 == "" {
		t.Fatalf("report: %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(home, "tidemark.db")); err == nil {
		t.Fatal("source test opened the database")
	}
	out = mustTidemark(t, 2, "--home", home, "source", "test", srv.URL+"/nowhere", "--kind", "page", "--allow-private")
	if !strings.Contains(out, "outcome:   invalid — ") || !strings.Contains(out, "HTTP 404") {
		t.Fatalf("404: %s", out)
	}
}

func TestOPMLImportExportRoundTrip(t *testing.T) {
	home := t.TempDir()
	subs := filepath.Join(t.TempDir(), "subs.opml")
	err := os.WriteFile(subs, []byte(`<?xml version="1.0" encoding="UTF-8"?>
<opml version="1.0"><head><title>subs</title></head><body>
<outline text="Tech"><outline type="rss" text="Go Blog" xmlUrl="https://go.dev/blog/feed.atom" htmlUrl="https://go.dev/blog"/>
<outline type="rss" text="Go Blog" xmlUrl="https://example.org/other.xml"/></outline>
<outline type="rss" text="Bad" xmlUrl="ftp://example.org/feed"/>
</body></opml>`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	out := mustTidemark(t, 0, "--home", home, "source", "import-opml", subs, "--json")
	var rep struct {
		Added, Skipped []opml.Feed
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Added) != 2 || rep.Added[0].Name != "go-blog" || rep.Added[1].Name != "go-blog-2" || len(rep.Skipped) != 1 {
		t.Fatalf("import: %+v", rep)
	}
	// A second import adds nothing.
	out = mustTidemark(t, 0, "--home", home, "source", "import-opml", subs)
	if !strings.Contains(out, "0 added, 3 skipped") {
		t.Fatalf("re-import: %s", out)
	}
	exported := mustTidemark(t, 0, "--home", home, "source", "export-opml")
	feeds, err := opml.Parse(strings.NewReader(exported))
	if err != nil || len(feeds) != 2 || feeds[0].Location != "https://go.dev/blog/feed.atom" {
		t.Fatalf("export: %v %+v\n%s", err, feeds, exported)
	}
	outFile := filepath.Join(t.TempDir(), "out.opml")
	mustTidemark(t, 0, "--home", home, "source", "export-opml", "--output", outFile)
	fh, err := os.Open(outFile)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if feeds, err := opml.Parse(fh); err != nil || len(feeds) != 2 {
		t.Fatalf("export to a file: %v %+v", err, feeds)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(outFile), ".*tmp*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	home2 := t.TempDir()
	out = mustTidemark(t, 0, "--home", home2, "source", "import-opml", subs, "--dry-run")
	if !strings.Contains(out, "2 would add, 1 skipped") {
		t.Fatalf("dry run: %s", out)
	}
	if list := mustTidemark(t, 0, "--home", home2, "source", "list", "--json"); strings.TrimSpace(list) != "[]" {
		t.Fatalf("dry run added sources: %s", list)
	}
}

// set, rename and remove: each audited; removal of a source with events
// is refused (exit 3, saying what would go) unless --force.
func TestSourceSetRenameRemove(t *testing.T) {
	home := t.TempDir()
	notes := t.TempDir()
	if err := os.WriteFile(filepath.Join(notes, "a.md"), []byte("# A\n\nabout a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustTidemark(t, 0, "--home", home, "source", "add", notes, "--name", "notes")
	mustTidemark(t, tidemark.ExitInvalid, "--home", home, "source", "set", "notes")
	mustTidemark(t, tidemark.ExitInvalid, "--home", home, "source", "set", "notes", "--retry-budget", "0")
	if out := mustTidemark(t, 0, "--home", home, "source", "set", "notes", "--interval", "1h", "--retry-budget", "7"); !strings.Contains(out, "every 1h0m0s, retry budget 7") {
		t.Fatalf("set: %s", out)
	}
	mustTidemark(t, 0, "--home", home, "source", "run", "notes")
	// The same directory again is refused, naming the source that watches
	// it; with another config it is another source.
	if out, code := runCLI(t, "--home", home, "source", "add", notes+"/", "--name", "other", "--kind", "dir"); code != tidemark.ExitConflict || !strings.Contains(out, `source "notes" already watches`) {
		t.Fatalf("a duplicate: exit %d: %s", code, out)
	}
	mustTidemark(t, 0, "--home", home, "source", "add", notes+"/", "--name", "other", "--kind", "dir", "--config", "include=*.md")
	mustTidemark(t, tidemark.ExitConflict, "--home", home, "source", "rename", "notes", "other")
	if out := mustTidemark(t, 0, "--home", home, "source", "rename", "notes", "journal"); !strings.Contains(out, "notes is now journal") {
		t.Fatalf("rename: %s", out)
	}
	var errb bytes.Buffer
	if code := run([]string{"--home", home, "source", "remove", "journal"}, &bytes.Buffer{}, &errb); code != tidemark.ExitConflict ||
		!strings.Contains(errb.String(), "1 events") || !strings.Contains(errb.String(), "--force") {
		t.Fatalf("unforced removal: exit %d: %s", code, errb.String())
	}
	if out := mustTidemark(t, 0, "--home", home, "source", "remove", "journal", "--force"); !strings.Contains(out, "removed journal and 1 events") {
		t.Fatalf("remove: %s", out)
	}
	mustTidemark(t, tidemark.ExitNotFound, "--home", home, "source", "show", "journal")
	if out := mustTidemark(t, 0, "--home", home, "source", "remove", "other"); strings.TrimSpace(out) != "removed other" {
		t.Fatalf("remove an empty source: %s", out)
	}
}

// An explicitly empty --name is refused as a blank one is, before anything
// is added; only a --name not given at all is derived from the location.
func TestSourceAddRefusesAnEmptyName(t *testing.T) {
	repo := mustGitRepo(t)
	home := t.TempDir()
	for _, name := range []string{"", "   "} {
		out, code := runCLI(t, "--home", home, "source", "add", repo, "--name", name)
		if code != tidemark.ExitInvalid || !strings.Contains(out, "invalid --name") || !strings.Contains(out, "must not be empty") {
			t.Errorf("--name %q: exit %d, want %d saying it must not be empty:\n%s", name, code, tidemark.ExitInvalid, out)
		}
	}
	if out := mustTidemark(t, 0, "--home", home, "source", "list", "--json"); strings.Contains(out, repo) {
		t.Fatalf("a source was added:\n%s", out)
	}
	var src tidemark.Source
	if err := json.Unmarshal([]byte(mustTidemark(t, 0, "--home", home, "source", "add", repo, "--json")), &src); err != nil || src.Name != filepath.Base(repo) {
		t.Fatalf("without --name: %v %+v, want the name %q", err, src, filepath.Base(repo))
	}
}

// The command line names its own inputs: an operation names what was
// wrong as the API does ("retry_budget", "to", "force"), and the CLI shows
// its flags instead.
func TestCLIErrorsNameTheirFlags(t *testing.T) {
	home := t.TempDir()
	stderr := func(want int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(append([]string{"--home", home}, args...), &out, &errb); code != want {
			t.Fatalf("tidemark %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out.String(), errb.String())
		}
		return errb.String()
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"source", "add", "https://example.org/a.xml", "--kind", "feed", "--name", "a", "--interval", "500ms"}, 2, `invalid --interval "500ms"`},
		{[]string{"source", "add", "https://example.org/a.xml", "--kind", "feed", "--name", "a", "--retry-budget", "0"}, 2, `invalid --retry-budget "0"`},
		{[]string{"source", "add", "https://example.org/a.xml", "--kind", "nope", "--name", "a"}, 2, `invalid --kind "nope"`},
	} {
		if got := stderr(tc.code, tc.args...); !strings.Contains(got, tc.want) {
			t.Errorf("tidemark %s: %q, want it to say %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
	stderr(0, "source", "add", "https://example.org/a.xml", "--kind", "feed", "--name", "a")
	if got := stderr(2, "source", "skip", "a"); !strings.Contains(got, "invalid --to: kind feed has no head") {
		t.Errorf("skip a feed without --to: %q", got)
	}
}

// `source test --cursor` with a value the kind cannot read is bad input
// (exit 2) that says what the kind's cursor looks like, never an internal
// error.
func TestSourceTestRefusesACursorTheKindCannotRead(t *testing.T) {
	notes := t.TempDir()
	if err := os.WriteFile(filepath.Join(notes, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runCLI(t, "--home", t.TempDir(), "source", "test", notes, "--cursor", "garbage")
	if code != 2 || !strings.Contains(out, "--cursor") || !strings.Contains(out, `{"files":{"PATH":"SHA256"`) || strings.Contains(out, "internal error") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
