package extractive_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
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
	d, err := extractive.Summarizer{}.Summarize(context.Background(), tidemark.Event{Title: "publish: refuse"}, []byte(commitEvidence))
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
	again, _ := extractive.Summarizer{}.Summarize(context.Background(), tidemark.Event{}, []byte(commitEvidence))
	if again.Text != d.Text {
		t.Fatal("not deterministic")
	}
}

func TestGeneric(t *testing.T) {
	d, err := extractive.Summarizer{}.Summarize(context.Background(), tidemark.Event{Title: "Release 2.0"},
		[]byte("Release 2.0\n\nFaster sync.\n\nFewer bugs.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Text != "Release 2.0\n\nFaster sync.\nFewer bugs." {
		t.Fatalf("text %q", d.Text)
	}
	if _, err := (extractive.Summarizer{}).Summarize(context.Background(), tidemark.Event{}, []byte("  \n")); err == nil {
		t.Fatal("empty evidence summarized")
	}
	long := strings.Repeat("x", 100000)
	d, _ = extractive.Summarizer{}.Summarize(context.Background(), tidemark.Event{}, []byte(long))
	if len(d.Text) > 300 {
		t.Fatalf("long line not cut: %d bytes", len(d.Text))
	}
}
