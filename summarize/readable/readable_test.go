package readable_test

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/summarize/readable"
)

// Hostile is upstream text that tries markup, scripts, unsafe links and
// terminal escapes; tests in this package and in publish use it.
const hostileHTML = `<p>Hello <b>world</b></p><script>alert(1)</script><img src=x onerror="alert(2)">` +
	`<a href="javascript:alert(3)">click</a><a href="https://ok.example/x" onclick="alert(4)">ok</a>` +
	"<div><p>unbalanced <i>tags\x1b[31m red\x1b]0;title\x07</div><style>body{}</style>"

func TestFeedItem(t *testing.T) {
	ev := `{"id":"second","title":"Release <b>2.0</b>\u001b[2J","link":"https://blog.example/r2","published":"2026-01-02T03:04:05Z",` +
		`"authors":["Ada"],"categories":["go","news"],"description":` + quote(hostileHTML) + `}`
	d := readable.Build(readable.Input{Kind: "feed", Evidence: []byte(ev)})
	if d.Headline != "Release <b>2.0</b>" {
		t.Fatalf("headline %q (markup is kept as text, escapes dropped)", d.Headline)
	}
	if d.Link != "https://blog.example/r2" || d.Author != "Ada" || d.Date.IsZero() || len(d.Categories) != 2 {
		t.Fatalf("meta %+v", d)
	}
	for _, bad := range []string{"<script", "alert(1)", "onerror", "javascript:", "onclick", "\x1b", "\x07", "<style", "<img"} {
		if strings.Contains(d.HTML, bad) {
			t.Errorf("safe HTML keeps %q: %s", bad, d.HTML)
		}
		if strings.Contains(strings.Join(d.Prose, "\n"), bad) && bad != "alert(1)" {
			t.Errorf("prose keeps %q: %q", bad, d.Prose)
		}
	}
	if strings.Contains(strings.Join(d.Prose, " "), "alert(1)") {
		t.Errorf("prose keeps the script's text: %q", d.Prose)
	}
	if !strings.Contains(d.HTML, `<a href="https://ok.example/x" rel="nofollow noreferrer">ok</a>`) || !strings.Contains(d.HTML, "<b>world</b>") {
		t.Errorf("safe HTML lost what is safe: %s", d.HTML)
	}
	if got := strings.Join(d.Prose, "|"); got != "Hello world|click ok|unbalanced tags red" {
		t.Errorf("prose %q", got)
	}
	text := d.Text()
	if !strings.HasPrefix(text, "Release <b>2.0</b>\n\nBy Ada, 2026-01-02 03:04 UTC.\n\nHello world") || !strings.HasSuffix(text, "https://blog.example/r2") {
		t.Errorf("text %q", text)
	}
}

// TestSafeHTMLIsBalanced: upstream's unclosed elements are closed inside
// the item, so they cannot reach the page around it.
func TestSafeHTMLIsBalanced(t *testing.T) {
	got := readable.SafeHTML("<div><p>closed until <b>further notice<p>use pier 2</div><ul><li>one")
	want := "<p>closed until <b>further notice</b></p><p><b>use pier 2</b></p><ul><li><b>one</b></li></ul>" // as a browser reads it
	if got != want {
		t.Fatalf("%s\nwant %s", got, want)
	}
}

func TestFeedRevisionDiff(t *testing.T) {
	old := `{"id":"a","title":"T","description":"<p>one</p><p>two</p>"}`
	cur := `{"id":"a","title":"T","description":"<p>one</p><p>three</p>"}`
	d := readable.Build(readable.Input{Kind: "feed", Evidence: []byte(cur), Previous: []byte(old)})
	if !d.Revised || !hasLine(d.Diff, "-", "two") || !hasLine(d.Diff, "+", "three") {
		t.Fatalf("diff %+v", d.Diff)
	}
}

func TestPage(t *testing.T) {
	ev := "page https://example.com/status\nsha256 abc\nprevious def\n\n--- text\nAll good\nNew line\n--- diff\n" +
		"--- previous\n+++ current\n@@ -1,2 +1,2 @@\n All good\n-Old line\n+New line\n"
	d := readable.Build(readable.Input{Kind: "page", Evidence: []byte(ev)})
	if d.Headline != "1 line added, 1 line removed: New line" {
		t.Fatalf("headline %q", d.Headline)
	}
	want := []readable.Line{{"@", "line 1"}, {" ", "All good"}, {"-", "Old line"}, {"+", "New line"}}
	if len(d.Diff) != len(want) {
		t.Fatalf("diff %+v", d.Diff)
	}
	for i := range want {
		if d.Diff[i] != want[i] {
			t.Fatalf("diff %+v", d.Diff)
		}
	}
	if d.Link != "https://example.com/status" {
		t.Fatalf("link %q", d.Link)
	}
	first := readable.Build(readable.Input{Kind: "page", Evidence: []byte("page https://e.x/\nsha256 a\n\n--- text\nHello\n--- diff\n(first capture)\n")})
	if first.DiffNote != "first capture" || first.Headline != "First capture: Hello" {
		t.Fatalf("first %+v", first)
	}
}

func TestJSON(t *testing.T) {
	old := `{"a":1,"b":{"c":"x","d":[1,2]},"gone":true}`
	cur := `{"a":2,"b":{"c":"x","d":[1,2,3]},"new key":null}`
	d := readable.Build(readable.Input{Kind: "json", Title: "svc", Evidence: []byte(cur), Previous: []byte(old)})
	got := map[string]readable.Field{}
	for _, f := range d.Fields {
		got[f.Path] = f
	}
	if f := got[".a"]; f.Change != "changed" || f.Old != "1" || f.New != "2" {
		t.Errorf(".a %+v", f)
	}
	if f := got[".b.d[2]"]; f.Change != "added" || f.New != "3" {
		t.Errorf(".b.d[2] %+v", f)
	}
	if f := got[".gone"]; f.Change != "removed" || f.Old != "true" {
		t.Errorf(".gone %+v", f)
	}
	if f := got[`."new key"`]; f.Change != "added" || f.New != "null" {
		t.Errorf("new key %+v (all %+v)", f, d.Fields)
	}
	if _, ok := got[".b.c"]; ok || len(d.Fields) != 4 {
		t.Errorf("unchanged value listed: %+v", d.Fields)
	}
	if d.Headline != "1 value changed, 2 values added, 1 value removed" {
		t.Errorf("headline %q", d.Headline)
	}
}

func TestDir(t *testing.T) {
	old := "file notes/a.txt\nchange added\nsha256 1\nsize 6\n\nalpha\n"
	cur := "file notes/a.txt\nchange changed\nsha256 2\nsize 11\nprevious 1\n\nalpha\nbeta\n"
	d := readable.Build(readable.Input{Kind: "dir", Evidence: []byte(cur), Previous: []byte(old)})
	if d.File == nil || d.File.Path != "notes/a.txt" || d.Headline != "Changed notes/a.txt (11 bytes): 1 line added, 0 lines removed" {
		t.Fatalf("doc %+v", d)
	}
	if !hasLine(d.Diff, "+", "beta") || hasLine(d.Diff, "-", "alpha") {
		t.Fatalf("diff %+v", d.Diff)
	}
	bin := readable.Build(readable.Input{Kind: "dir", Evidence: []byte("file x.bin\nchange added\nsha256 1\nsize 2048\n")})
	if bin.DiffNote == "" || bin.Headline != "Added x.bin (2.0 KiB)" {
		t.Fatalf("binary %+v", bin)
	}
}

func TestCommitURL(t *testing.T) {
	for loc, want := range map[string]string{
		"https://github.com/o/r.git":      "https://github.com/o/r/commit/abc",
		"git@github.com:o/r.git":          "https://github.com/o/r/commit/abc",
		"ssh://git@gitlab.com/g/sub/r":    "https://gitlab.com/g/sub/r/-/commit/abc",
		"https://codeberg.org/o/r":        "https://codeberg.org/o/r/commit/abc",
		"/home/me/repo":                   "",
		"file:///home/me/repo":            "",
		"https://git.internal.example/r":  "",
		"https://github.com/../etc/x.git": "",
	} {
		if got := readable.CommitURL(loc, "abc"); got != want {
			t.Errorf("%s: %q, want %q", loc, got, want)
		}
	}
	d := readable.Build(readable.Input{Kind: "git", Location: "https://github.com/o/r",
		Evidence: []byte("commit abc\nauthor Ada <a@x> 2026\n\n    fix: it\n    \n    Why.\n\n1 file changed, 1 insertion(+)\n1\t0\tx.go\n")})
	if d.Commit == nil || d.Commit.URL != "https://github.com/o/r/commit/abc" || d.Commit.Subject != "fix: it" || d.Author != "Ada" {
		t.Fatalf("commit %+v", d.Commit)
	}
}

func TestClean(t *testing.T) {
	if got := readable.Clean("a\x1b[31mb\x00c\u202ed\n\te"); got != "abcd\n\te" {
		t.Fatalf("%q", got)
	}
}

func hasLine(ls []readable.Line, op, text string) bool {
	for _, l := range ls {
		if l.Op == op && l.Text == text {
			return true
		}
	}
	return false
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\x1b", `\u001b`, "\x07", `\u0007`)
	return `"` + r.Replace(s) + `"`
}

// A commit body keeps its paragraphs and, within each, its lines: a list
// written as lines ("- one\n- two") is still one item a line.
func TestCommitBodyKeepsLines(t *testing.T) {
	ev := "commit abc\nauthor Ann <a@b> 2026-01-02T03:04:05Z\n\n" +
		"    Add bullets\n    \n    First paragraph,\n    hard-wrapped.\n    \n    - one\n    - two\n      continued\n"
	d := readable.Build(readable.Input{Kind: "git", Evidence: []byte(ev)})
	if d.Commit == nil {
		t.Fatal("no commit")
	}
	want := []string{"First paragraph,\nhard-wrapped.", "- one\n- two\n  continued"}
	if strings.Join(d.Commit.Body, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("body %q, want %q", d.Commit.Body, want)
	}
}
