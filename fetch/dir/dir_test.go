package dir_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/dir"
	"github.com/tidemark/tidemark/fetch/internal/fetchtest"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

func mustWrite(tb testing.TB, root, rel, content string) {
	tb.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func TestDirAddedChangedRemovedFiles(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		root := t.TempDir()
		mustWrite(t, root, "a.txt", "alpha\r\n")
		mustWrite(t, root, "sub/b.md", "# bravo\n")
		mustWrite(t, root, ".hidden/secret", "x")
		mustWrite(t, root, "bin.dat", "\x00\x01\x02")
		if err := os.Symlink("/etc/passwd", filepath.Join(root, "link")); err != nil {
			t.Fatal(err)
		}
		h := fetchtest.MustHarness(t, b, "dir", root, nil, &dir.Fetcher{})

		rep := h.MustRun(t, tidemark.OutcomeItems)
		evs := h.Events(t)
		if rep.EventsNew != 3 || len(evs) != 3 || evs["sub/b.md"].Title != "added sub/b.md" {
			t.Fatalf("first run: %+v %v", rep, evs)
		}
		if ev := h.Evidence(t, evs["a.txt"].ID, 0); !strings.HasPrefix(ev, "file a.txt\nchange added\nsha256 ") || !strings.HasSuffix(ev, "\nalpha\n") {
			t.Fatalf("evidence:\n%s", ev)
		}
		if ev := h.Evidence(t, evs["bin.dat"].ID, 0); strings.Contains(ev, "\x00") {
			t.Fatalf("binary content inlined: %q", ev)
		}
		h.MustRun(t, tidemark.OutcomeEmpty)

		mustWrite(t, root, "a.txt", "alpha two\n")
		if err := os.Remove(filepath.Join(root, "sub/b.md")); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, root, "c.txt", "charlie\n")
		rep = h.MustRun(t, tidemark.OutcomeItems)
		if rep.EventsNew != 1 || rep.EventsChanged != 2 {
			t.Fatalf("change run: %+v", rep)
		}
		evs = h.Events(t)
		if ev := h.Evidence(t, evs["sub/b.md"].ID, 0); !strings.Contains(ev, "change removed\nprevious ") || evs["sub/b.md"].Title != "removed sub/b.md" {
			t.Fatalf("removal evidence:\n%s", ev)
		}
		if evs["a.txt"].Revision != 2 || !strings.Contains(h.Evidence(t, evs["a.txt"].ID, 0), "change changed") {
			t.Fatalf("change: %+v", evs["a.txt"])
		}
		m, err := dir.DecodeManifest(h.Current(t).Cursor)
		if err != nil || len(m.Files) != 3 || m.Files["sub/b.md"] != "" {
			t.Fatalf("manifest: %v %+v", err, m)
		}

		// Re-adding the removed file with its old content is a change too.
		mustWrite(t, root, "sub/b.md", "# bravo\n")
		rep = h.MustRun(t, tidemark.OutcomeItems)
		if rep.EventsChanged != 1 || h.Events(t)["sub/b.md"].Revision != 3 {
			t.Fatalf("re-add: %+v", rep)
		}
	})
}

func TestDirLimitsAndFailures(t *testing.T) {
	b := sqltest.Backends()[0]
	root := t.TempDir()
	for _, n := range []string{"1.txt", "2.txt", "3.log"} {
		mustWrite(t, root, n, n)
	}
	h := fetchtest.MustHarness(t, b, "dir", root, map[string]string{dir.ConfigMaxFiles: "2"}, &dir.Fetcher{})
	rep := h.MustRun(t, tidemark.OutcomeInvalid)
	if !strings.Contains(rep.Error, "more than 2 files") || h.Current(t).Cursor != "" {
		t.Fatalf("over the limit: %q", rep.Error)
	}

	h = fetchtest.MustHarness(t, b, "dir", root, map[string]string{dir.ConfigMaxFiles: "2", dir.ConfigInclude: "*.txt"}, &dir.Fetcher{})
	if rep := h.MustRun(t, tidemark.OutcomeItems); rep.EventsNew != 2 {
		t.Fatalf("include: %+v", rep)
	}

	// A directory this worker cannot see may be another worker's (a
	// volume mounted there): error, the budget unspent, the worker named.
	h = fetchtest.MustHarness(t, b, "dir", filepath.Join(root, "missing"), nil, &dir.Fetcher{})
	for range 3 {
		h.Env.Clock.Advance(time.Hour)
		h.MustRun(t, tidemark.OutcomeError)
	}
	if cur := h.Current(t); cur.WindowAttempts != 0 || cur.Window != tidemark.WindowOpen {
		t.Fatalf("a missing directory spent the budget: %d attempts, window %s", cur.WindowAttempts, cur.Window)
	}
	d, err := ingest.SourceDetail(context.Background(), h.Store, h.Source.ID, 10, h.Env.Clock.Now())
	if err != nil || len(d.UnservedBy) != 1 || d.UnservedBy[0].Holder != "test" || !strings.Contains(d.UnservedBy[0].Reason, "not found on this worker") {
		t.Fatalf("unserved by: %+v %v", d.UnservedBy, err)
	}
}

// A file swapped for a symbolic link between listing and open is never
// read through the link: nothing outside the root leaks into evidence.
func TestDirNeverReadsThroughALinkSwappedInAfterListing(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	mustWrite(t, outside, "secret", "TOP SECRET\n")
	mustWrite(t, root, "a.txt", "alpha\n")
	mustWrite(t, root, "inside.txt", "inside\n")
	for _, target := range []string{filepath.Join(outside, "secret"), filepath.Join(root, "inside.txt")} {
		f := &dir.Fetcher{}
		f.SetBeforeOpen(func(rel string) {
			if rel != "a.txt" {
				return
			}
			p := filepath.Join(root, "a.txt")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		})
		res, err := f.Fetch(context.Background(), tidemark.Source{Kind: "dir", Location: root}, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range res.Items {
			if strings.Contains(string(it.Evidence), "SECRET") || (it.Key == "a.txt" && strings.Contains(string(it.Evidence), "inside")) {
				t.Fatalf("read through a link to %s: %s", target, it.Evidence)
			}
		}
		if m, _ := dir.DecodeManifest(res.Cursor); m.Files["a.txt"] != "" {
			t.Fatalf("a link to %s is in the manifest", target)
		}
		if err := os.Remove(filepath.Join(root, "a.txt")); err != nil { // the link, not its target
			t.Fatal(err)
		}
		mustWrite(t, root, "a.txt", "alpha\n")
	}
}

// mustRealDir is a new temporary directory by its resolved path (no link
// anywhere in it), as a dir source's location is stored.
func mustRealDir(tb testing.TB) string {
	tb.Helper()
	d, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// A root that is now a symbolic link (the directory replaced by one after
// the source was added, or a directory on its path replaced by one) is
// never read: the run is invalid, says what to do, and the cursor stays.
// A root that is missing is this worker's inability to serve it (error);
// one that is a file is invalid. None is ever empty.
func TestDirRootThatBecameALinkIsRefused(t *testing.T) {
	b := sqltest.Backends()[0]
	base, outside := mustRealDir(t), mustRealDir(t)
	mustWrite(t, outside, "secret", "TOP SECRET\n")
	mustWrite(t, outside, "notes/secret", "TOP SECRET\n")
	root := filepath.Join(base, "notes")
	mustWrite(t, root, "a.txt", "alpha\n")
	h := fetchtest.MustHarness(t, b, "dir", root, nil, &dir.Fetcher{})
	h.MustRun(t, tidemark.OutcomeItems)
	before := h.Current(t).Cursor

	// The root itself replaced by a link to the outside.
	if err := os.Rename(root, root+".bak"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, root); err != nil {
		t.Fatal(err)
	}
	rep := h.MustRun(t, tidemark.OutcomeInvalid)
	if !strings.Contains(rep.Error, "is now a symbolic link") || !strings.Contains(rep.Error, outside) || !strings.Contains(rep.Error, "replace the link with the directory") {
		t.Errorf("root replaced by a link: %q", rep.Error)
	}
	if h.Current(t).Cursor != before || len(h.Events(t)) != 1 {
		t.Fatalf("a root that is a link moved the cursor or froze evidence: %q, %d events", h.Current(t).Cursor, len(h.Events(t)))
	}
	// Even a link back to the very directory is refused: the stored
	// location is what is read, never a link's target.
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root+".bak", root); err != nil {
		t.Fatal(err)
	}
	h.Env.Clock.Advance(time.Hour)
	h.MustRun(t, tidemark.OutcomeInvalid)

	// A directory on the root's path replaced by a link: the stored path
	// now leads elsewhere.
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(root+".bak", root); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(base, base+".bak"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(base); os.Rename(base+".bak", base) })
	if err := os.Symlink(outside, base); err != nil {
		t.Fatal(err)
	}
	res, err := (&dir.Fetcher{}).Fetch(context.Background(), tidemark.Source{Kind: "dir", Location: root}, before)
	if o, reason, _ := tidemark.Classify(err); err == nil || o != tidemark.OutcomeInvalid || !strings.Contains(reason, "reached through a symbolic link") {
		t.Errorf("root reached through a link: %v, %+v", err, res.Items)
	}

	file := filepath.Join(outside, "secret")
	for loc, want := range map[string]tidemark.Outcome{filepath.Join(outside, "missing"): tidemark.OutcomeError, file: tidemark.OutcomeInvalid} {
		_, err := (&dir.Fetcher{}).Fetch(context.Background(), tidemark.Source{Kind: "dir", Location: loc}, "")
		if o, _, _ := tidemark.Classify(err); err == nil || o != want {
			t.Errorf("%s: %v, want %s", loc, err, want)
		}
	}
}

// A directory swapped for a link to the outside between listing and
// reading is never read through: the run fails (and is retried) or skips
// it, and nothing outside the root leaks.
func TestDirNeverDescendsThroughALinkSwappedInAfterListing(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	mustWrite(t, outside, "secret", "TOP SECRET\n")
	mustWrite(t, root, "sub/x.txt", "x\n")
	f := &dir.Fetcher{}
	f.SetBeforeOpen(func(rel string) {
		if rel != "sub" {
			return
		}
		if err := os.RemoveAll(filepath.Join(root, "sub")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(root, "sub")); err != nil {
			t.Fatal(err)
		}
	})
	res, err := f.Fetch(context.Background(), tidemark.Source{Kind: "dir", Location: root}, "")
	for _, it := range res.Items {
		if strings.Contains(string(it.Evidence), "SECRET") {
			t.Fatalf("read through a directory link: %s", it.Evidence)
		}
	}
	if o, _, _ := tidemark.Classify(err); err != nil && o.Advances() {
		t.Fatalf("outcome %s", o)
	}
	t.Logf("items %d, err %v", len(res.Items), err)
}

// File names that are not UTF-8 round-trip through the manifest exactly:
// an unchanged directory is empty, an edit is a change of the file's own
// event, and a name is never confused with another (\xff.txt and
// \xfe.txt, and the UTF-8 name %FF.txt spelled like \xff.txt's escape).
func TestDirNamesThatAreNotUTF8(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		root := mustRealDir(t)
		for _, n := range []string{"\xff.txt", "\xfe.txt", "%FF.txt", "sub\xff/a%.txt"} {
			mustWrite(t, root, n, "content of "+n+"\n")
		}
		h := fetchtest.MustHarness(t, b, "dir", root, nil, &dir.Fetcher{})
		if rep := h.MustRun(t, tidemark.OutcomeItems); rep.EventsNew != 4 {
			t.Fatalf("first run: %+v", rep)
		}
		h.MustRun(t, tidemark.OutcomeEmpty)
		m, err := dir.DecodeManifest(h.Current(t).Cursor)
		if err != nil || len(m.Files) != 4 {
			t.Fatalf("manifest %v: %s", err, h.Current(t).Cursor)
		}
		names := map[string]bool{}
		for key := range m.Files {
			name, err := dir.Name(key)
			if err != nil || !utf8.ValidString(key) || dir.Key(name) != key {
				t.Fatalf("key %q: name %q, %v", key, name, err)
			}
			names[name] = true
		}
		for _, n := range []string{"\xff.txt", "\xfe.txt", "%FF.txt", "sub\xff/a%.txt"} {
			if !names[n] {
				t.Errorf("%q is not in the manifest %v", n, m.Files)
			}
		}
		evs := h.Events(t)
		key := dir.Key("\xff.txt")
		if key == "%FF.txt" || evs[key].ID == "" || evs["%FF.txt"].ID == "" {
			t.Fatalf("keys: %q; events %v", key, evs)
		}
		mustWrite(t, root, "\xff.txt", "changed\n")
		if rep := h.MustRun(t, tidemark.OutcomeItems); rep.EventsNew != 0 || rep.EventsChanged != 1 {
			t.Fatalf("edit: %+v", rep)
		}
		ev := h.Evidence(t, evs[key].ID, 0)
		if !strings.HasPrefix(ev, "file "+key+"\nchange changed\n") || !utf8.ValidString(ev) {
			t.Fatalf("evidence of an edit:\n%q", ev)
		}
		if h.Events(t)[key].Revision != 2 {
			t.Fatalf("revision %d", h.Events(t)[key].Revision)
		}
	})
}

// A manifest written before names that are not UTF-8 were escaped keeps
// its meaning: the same files are unchanged.
func TestDirManifestOfTheCurrentReleaseKeepsItsMeaning(t *testing.T) {
	root := mustRealDir(t)
	mustWrite(t, root, "a b.txt", "alpha\n")
	mustWrite(t, root, "100%.txt", "all\n")
	mustWrite(t, root, "d/<x>&.md", "x\n")
	res, err := (&dir.Fetcher{}).Fetch(context.Background(), tidemark.Source{Kind: "dir", Location: root}, "")
	if err != nil {
		t.Fatal(err)
	}
	old := `{"files":{"100%.txt":"` + sha("all\n") + `","a b.txt":"` + sha("alpha\n") + `","d/\u003cx\u003e\u0026.md":"` + sha("x\n") + `"}}`
	if res.Cursor != old {
		t.Fatalf("cursor\n%s\nwant\n%s", res.Cursor, old)
	}
	res, err = (&dir.Fetcher{}).Fetch(context.Background(), tidemark.Source{Kind: "dir", Location: root}, old)
	if err != nil || len(res.Items) != 0 {
		t.Fatalf("unchanged files from an old manifest: %v %+v", err, res.Items)
	}
}

// A manifest written before names that are not UTF-8 were escaped (1
// December 2026) holds such a name as JSON wrote it, each byte of no
// UTF-8 character a U+FFFD. Its file, unchanged, is the same file under
// its new key: no "added" for it and no "removed" for the old key, which
// would each be an event (and, with a channel, a post) for a file nobody
// touched. A file that changed meanwhile, or an old key two names could
// have made, is not taken for it.
func TestDirManifestOfAnEarlierReleaseKeepsNamesThatAreNotUTF8(t *testing.T) {
	root := mustRealDir(t)
	mustWrite(t, root, "caf\xe9.txt", "hello\n")
	mustWrite(t, root, "ok.txt", "plain\n")
	mustWrite(t, root, "x\xff.txt", "new content\n")
	old := `{"files":{"caf\ufffd.txt":"` + sha("hello\n") + `","ok.txt":"` + sha("plain\n") + `","x\ufffd.txt":"` + sha("old content\n") + `"}}`
	res, err := (&dir.Fetcher{}).Fetch(context.Background(), tidemark.Source{Kind: "dir", Location: root}, old)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range res.Items {
		got = append(got, it.Title)
	}
	want := []string{"added " + dir.Key("x\xff.txt"), "removed x\ufffd.txt"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("items %q, want %q: the unchanged file is the same file, the changed one is not taken for its old key", got, want)
	}
	m, err := dir.DecodeManifest(res.Cursor)
	if err != nil || m.Files[dir.Key("caf\xe9.txt")] != sha("hello\n") || len(m.Files) != 3 {
		t.Fatalf("manifest %v %v: want every file under its key of this release", m.Files, err)
	}
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// A skip target is a manifest the kind could read back: every key a clean
// path relative to the root (or the escape of one that is not UTF-8), every
// hash a SHA-256 in hex. Anything else is refused and never stored.
func TestDirSkipTargetIsAManifest(t *testing.T) {
	h := sha("x")
	for _, to := range []string{
		`{"files":{}}`,
		`{"files":{"a.txt":"` + h + `","sub/b c.md":"` + h + `","%FF.txt":"` + h + `"}}`,
		`{"files":{"./%FF.txt":"` + h + `","./a/%FE%25.txt":"` + h + `"}}`,
	} {
		if got, err := (&dir.Fetcher{}).ResolveCursor(context.Background(), tidemark.Source{Kind: "dir"}, to); err != nil || got != to {
			t.Errorf("%s refused: %v", to, err)
		}
	}
	for to, says := range map[string]string{
		`{"files":{"../../etc/passwd":"` + h + `"}}`:       `"../../etc/passwd"`,
		`{"files":{"/etc/passwd":"` + h + `"}}`:            `"/etc/passwd"`,
		`{"files":{"a/./b":"` + h + `"}}`:                  `"a/./b"`,
		`{"files":{"a//b":"` + h + `"}}`:                   `"a//b"`,
		`{"files":{"a/":"` + h + `"}}`:                     `"a/"`,
		`{"files":{"":"` + h + `"}}`:                       `""`,
		`{"files":{".":"` + h + `"}}`:                      `"."`,
		`{"files":{"a\u0000b":"` + h + `"}}`:               `"a\x00b"`,
		`{"files":{"./%41.txt":"` + h + `"}}`:              `"./%41.txt"`,
		`{"files":{"./%ff.txt":"` + h + `"}}`:              `"./%ff.txt"`,
		`{"files":{"./%F":"` + h + `"}}`:                   `"./%F"`,
		`{"files":{"./../%FF":"` + h + `"}}`:               `"./../%FF"`,
		`{"files":{"a.txt":"zz"}}`:                         `"zz"`,
		`{"files":{"a.txt":"00"}}`:                         `"00"`,
		`{"files":{"a.txt":"` + strings.ToUpper(h) + `"}}`: "SHA-256",
	} {
		_, err := (&dir.Fetcher{}).ResolveCursor(context.Background(), tidemark.Source{Kind: "dir"}, to)
		if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want a refusal naming %s", to, err, says)
		}
	}
	// A run over a stored manifest the kind could not read back fails; it
	// never freezes a phantom "removed ../../etc/passwd".
	res, err := (&dir.Fetcher{}).Fetch(context.Background(), tidemark.Source{Kind: "dir", Location: mustRealDir(t)}, `{"files":{"../../etc/passwd":"`+h+`"}}`)
	if err == nil {
		t.Fatalf("a run over a nonsense manifest: %+v", res.Items)
	}
}

// A test fetch from a cursor the kind cannot read (`source test
// --cursor`) is the caller's bad input, naming what a dir cursor looks
// like, not a failed fetch; a manifest is fetched from.
func TestDirTestFetchRefusesACursorItCannotRead(t *testing.T) {
	root := mustRealDir(t)
	mustWrite(t, root, "a.txt", "alpha\n")
	src := tidemark.Source{Kind: "dir", Location: root}
	for _, cursor := range []string{"garbage", `{"files":{"../x":"` + sha("x") + `"}}`, `{"files":[]}`} {
		rep, err := ingest.TestFetch(context.Background(), &dir.Fetcher{}, src, cursor, false)
		if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), `a dir cursor is the manifest`) || !strings.Contains(err.Error(), `{"files":{"PATH":"SHA256"`) {
			t.Errorf("cursor %q: %v (report %+v)", cursor, err, rep)
		}
	}
	rep, err := ingest.TestFetch(context.Background(), &dir.Fetcher{}, src, `{"files":{"a.txt":"`+sha("alpha\n")+`"}}`, false)
	if err != nil || rep.Outcome != tidemark.OutcomeEmpty {
		t.Fatalf("from a manifest: %v %+v", err, rep)
	}
}

// A dir source's config is checked as a whole: a glob that is malformed or
// cannot match anything, and a hidden that is not a boolean, are refused
// with the key and what is accepted; what can match is accepted.
func TestDirConfigIsChecked(t *testing.T) {
	for _, cfg := range []map[string]string{
		{},
		{dir.ConfigInclude: "*.md, docs, a/**, **/*.txt, a/**/b/*.go, [a-c]?.md"},
		{dir.ConfigExclude: ".git, node_modules, **/*.tmp, a/b"},
		{dir.ConfigHidden: "true", dir.ConfigInclude: ".github/**"},
		{dir.ConfigHidden: "false"},
	} {
		if err := dir.CheckConfig(cfg); err != nil {
			t.Errorf("%v refused: %v", cfg, err)
		}
	}
	for _, tc := range []struct {
		cfg  map[string]string
		says []string
	}{
		{map[string]string{dir.ConfigInclude: "*.md,["}, []string{`"include=["`, "syntax error"}},
		{map[string]string{dir.ConfigExclude: `a/[b`}, []string{`"exclude=a/[b"`, "syntax error"}},
		{map[string]string{dir.ConfigInclude: `a\`}, []string{`"include=a\\"`, "syntax error"}},
		{map[string]string{dir.ConfigHidden: "yes"}, []string{`"hidden=yes"`, "true or false"}},
		{map[string]string{dir.ConfigHidden: "1"}, []string{`"hidden=1"`, "true or false"}},
		{map[string]string{dir.ConfigInclude: "/srv/notes/*.md"}, []string{`"include=/srv/notes/*.md"`, "relative to the root"}},
		{map[string]string{dir.ConfigInclude: "./docs"}, []string{`"include=./docs"`, "relative to the root"}},
		{map[string]string{dir.ConfigExclude: "../x"}, []string{`"exclude=../x"`, "relative to the root"}},
		{map[string]string{dir.ConfigInclude: "docs/"}, []string{`"include=docs/"`, "relative to the root"}},
		{map[string]string{dir.ConfigInclude: "a//b"}, []string{`"include=a//b"`, "relative to the root"}},
		{map[string]string{dir.ConfigInclude: "a**.md"}, []string{`"include=a**.md"`, "whole path element"}},
		{map[string]string{dir.ConfigInclude: ".github/**"}, []string{`"include=.github/**"`, "hidden=true"}},
		{map[string]string{dir.ConfigInclude: "docs/.drafts/*"}, []string{`"include=docs/.drafts/*"`, "hidden=true"}},
	} {
		err := dir.CheckConfig(tc.cfg)
		if !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%v: %v, want invalid", tc.cfg, err)
			continue
		}
		for _, w := range tc.says {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q does not say %q", tc.cfg, err, w)
			}
		}
	}
	// A config that slipped past `source add` fails the run: never an
	// empty directory that only looks unchanged.
	root := mustRealDir(t)
	mustWrite(t, root, "a.md", "a\n")
	_, err := (&dir.Fetcher{}).Fetch(context.Background(), tidemark.Source{Kind: "dir", Location: root, Config: map[string]string{dir.ConfigInclude: "["}}, "")
	if err == nil || !strings.Contains(err.Error(), "include=[") {
		t.Fatalf("a malformed include at run time: %v", err)
	}
}

// What the patterns match: a path relative to the root, or (a pattern
// without a slash) a base name; `**` as a whole element matches any
// number of directories; an include that matches a directory watches
// everything under it, as an exclude that matches one skips it.
func TestDirPatterns(t *testing.T) {
	root := mustRealDir(t)
	for _, n := range []string{"top.md", "top.txt", "a/x.md", "a/b/y.md", "a/b/c/z.txt", "docs/d.md", "docs/sub/e.txt", "x/a/f.md"} {
		mustWrite(t, root, n, n)
	}
	for _, tc := range []struct {
		include, exclude string
		want             string
	}{
		{"", "", "a/b/c/z.txt a/b/y.md a/x.md docs/d.md docs/sub/e.txt top.md top.txt x/a/f.md"},
		{"*.md", "", "a/b/y.md a/x.md docs/d.md top.md x/a/f.md"},
		{"a", "", "a/b/c/z.txt a/b/y.md a/x.md x/a/f.md"},
		{"a/**", "", "a/b/c/z.txt a/b/y.md a/x.md"},
		{"a/*", "", "a/b/c/z.txt a/b/y.md a/x.md"},
		{"**/*.txt", "", "a/b/c/z.txt docs/sub/e.txt top.txt"},
		{"a/**/*.md", "", "a/b/y.md a/x.md"},
		{"docs", "docs/sub", "docs/d.md"},
		{"", "a, *.txt", "docs/d.md top.md"},
		{"", "**/b", "a/x.md docs/d.md docs/sub/e.txt top.md top.txt x/a/f.md"},
	} {
		res, err := (&dir.Fetcher{}).Fetch(context.Background(), tidemark.Source{Kind: "dir", Location: root,
			Config: map[string]string{dir.ConfigInclude: tc.include, dir.ConfigExclude: tc.exclude}}, "")
		if err != nil {
			t.Fatalf("include %q exclude %q: %v", tc.include, tc.exclude, err)
		}
		var got []string
		for _, it := range res.Items {
			got = append(got, it.Key)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("include %q exclude %q: %v, want %s", tc.include, tc.exclude, got, tc.want)
		}
	}
}

// A file or subdirectory this worker may not read fails the run as
// invalid (the directory as it stands cannot be read in full), naming it
// and the exclude that leaves it out; the cursor stays, nothing is skipped
// silently. With that exclude the rest is watched.
func TestDirUnreadableFileOrDirectoryIsNamed(t *testing.T) {
	b := sqltest.Backends()[0]
	for _, tc := range []struct{ locked, exclude string }{
		{"locked,*.txt", `locked?\*.txt`},
		{"sub/lost+found", "sub/lost+found"},
	} {
		root := mustRealDir(t)
		mustWrite(t, root, "a.txt", "alpha\n")
		mustWrite(t, root, "sub/b.txt", "bravo\n")
		p := filepath.Join(root, filepath.FromSlash(tc.locked))
		if strings.Contains(tc.locked, "lost") {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		} else {
			mustWrite(t, root, tc.locked, "locked\n")
		}
		if err := os.Chmod(p, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(p, 0o755) })
		if f, err := os.Open(p); err == nil {
			f.Close()
			t.Skip("this process reads files without permission (root with CAP_DAC_OVERRIDE); run as another user to test")
		}
		h := fetchtest.MustHarness(t, b, "dir", root, nil, &dir.Fetcher{})
		rep := h.MustRun(t, tidemark.OutcomeInvalid)
		for _, want := range []string{"cannot read " + tc.locked, "permission denied", "exclude=" + tc.exclude} {
			if !strings.Contains(rep.Error, want) {
				t.Errorf("%s: %q does not say %q", tc.locked, rep.Error, want)
			}
		}
		if h.Current(t).Cursor != "" || len(h.Events(t)) != 0 {
			t.Fatalf("%s: the cursor moved past an unread file: %q", tc.locked, h.Current(t).Cursor)
		}
		h = fetchtest.MustHarness(t, b, "dir", root, map[string]string{dir.ConfigExclude: tc.exclude}, &dir.Fetcher{})
		if rep := h.MustRun(t, tidemark.OutcomeItems); rep.EventsNew != 2 {
			t.Fatalf("%s excluded: %+v", tc.locked, rep)
		}
	}
}

// The exclude an unreadable file's refusal suggests is a pattern
// CheckConfig accepts and that leaves out that file alone.
func TestDirExcludePatternMatchesItsNameAlone(t *testing.T) {
	for _, name := range []string{" lead", "trail ", "a, b", "[x]*?", `back\slash`, "\xff,é", "sub/a**b", "sub/.x/y"} {
		root := mustRealDir(t)
		mustWrite(t, root, name, "x\n")
		mustWrite(t, root, "other.txt", "o\n")
		pat := dir.ExcludePattern(name)
		cfg := map[string]string{dir.ConfigExclude: pat, dir.ConfigHidden: "true"}
		if err := dir.CheckConfig(cfg); err != nil {
			t.Errorf("%q: %q refused: %v", name, pat, err)
			continue
		}
		res, err := (&dir.Fetcher{}).Fetch(context.Background(), tidemark.Source{Kind: "dir", Location: root, Config: cfg}, "")
		if err != nil || len(res.Items) != 1 || res.Items[0].Key != "other.txt" {
			t.Errorf("%q excluded with %q: %v %d items", name, pat, err, len(res.Items))
		}
	}
}
