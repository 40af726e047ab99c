package extractive_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/summarize"
	"github.com/tidemark/tidemark/summarize/extractive"
)

const commitEvidence = `commit 0123456789abcdef
parents fedcba
author Ada Lovelace <ada@example.com> 2026-01-02T03:04:05Z
committer Ada Lovelace <ada@example.com> 2026-01-02T03:04:05Z

    publish: refuse a superseded summary before any write
    
    The pre-check runs in SQL before the source card and the page body
    are written, so a stale worker changes nothing.
    
    Second paragraph is not included.

3 files changed, 120 insertions(+), 7 deletions(-)
10	2	docs/publish.md
100	5	publish/publish.go
10	0	publish/publish_test.go
`

func TestCommit(t *testing.T) {
	d, err := extractive.Summarizer{}.Summarize(context.Background(), summarize.Input{Event: tidemark.Event{Title: "publish: refuse"}, Evidence: []byte(commitEvidence)})
	if err != nil {
		t.Fatal(err)
	}
	want := "publish: refuse a superseded summary before any write\n\n" +
		"The pre-check runs in SQL before the source card and the page body are written, so a stale worker changes nothing.\n\n" +
		"3 files changed, 120 insertions(+), 7 deletions(-); mostly publish/publish.go, docs/publish.md, publish/publish_test.go.\n\n" +
		"By Ada Lovelace."
	if d.Text != want {
		t.Fatalf("text:\n%s\nwant:\n%s", d.Text, want)
	}
	if d.Model != extractive.Model || d.PromptVersion != extractive.PromptVersion {
		t.Fatalf("identity %s %s", d.Model, d.PromptVersion)
	}
	again, _ := extractive.Summarizer{}.Summarize(context.Background(), summarize.Input{Event: tidemark.Event{}, Evidence: []byte(commitEvidence)})
	if again.Text != d.Text {
		t.Fatal("not deterministic")
	}
}

func TestGeneric(t *testing.T) {
	d, err := extractive.Summarizer{}.Summarize(context.Background(), summarize.Input{Event: tidemark.Event{Title: "Release 2.0"}, Evidence: []byte("Release 2.0\n\nFaster sync.\n\nFewer bugs.\n")})
	if err != nil {
		t.Fatal(err)
	}
	if d.Text != "Release 2.0\n\nFaster sync.\nFewer bugs." {
		t.Fatalf("text %q", d.Text)
	}
	if _, err := (extractive.Summarizer{}).Summarize(context.Background(), summarize.Input{Event: tidemark.Event{}, Evidence: []byte("  \n")}); err == nil {
		t.Fatal("empty evidence summarized")
	}
	long := strings.Repeat("x", 100000)
	d, _ = extractive.Summarizer{}.Summarize(context.Background(), summarize.Input{Event: tidemark.Event{}, Evidence: []byte(long)})
	if len(d.Text) > 700 {
		t.Fatalf("long line not cut: %d bytes", len(d.Text))
	}
}

// TestKinds: each kind's summary is its readable form, and a new revision
// of the same event says what changed between revisions.
func TestKinds(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   summarize.Input
		want string
	}{
		{"feed", summarize.Input{Kind: "feed", Evidence: []byte(`{"id":"x","title":"Hello","link":"https://b.example/x","authors":["Ann"],"description":"<p>Body <script>bad()</script>text</p>"}`)},
			"Hello\n\nBy Ann.\n\nBody text\n\nhttps://b.example/x"},
		{"json", summarize.Input{Kind: "json", Event: tidemark.Event{Title: "api"}, Evidence: []byte(`{"v":2}`), Previous: []byte(`{"v":1}`)},
			".v: 1 → 2\n\n.v: 1 → 2"},
		{"git link", summarize.Input{Kind: "git", Location: "git@github.com:o/r.git", Evidence: []byte("commit abc\n\n    fix\n")},
			"fix\n\nhttps://github.com/o/r/commit/abc"},
	} {
		d, err := extractive.Summarizer{}.Summarize(context.Background(), tc.in)
		if err != nil || d.Text != tc.want {
			t.Errorf("%s: %q (%v), want %q", tc.name, d.Text, err, tc.want)
		}
	}
}
