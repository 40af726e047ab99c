package publish_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/publish"
)

func TestTextForms(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name string
		text func(io.Writer) error
		want string
	}{
		{"summaries", publish.SummaryList{
			{ID: "S2", EventID: "E1", Model: "extractive", PromptVersion: "v2", Text: "first line\nsecond", Current: true, PublishedAt: &now},
			{ID: "S1", EventID: "E1", Model: "extractive", PromptVersion: "v2", Text: strings.Repeat("x", 70), RejectedReason: "bad"},
		}.WriteText, "ID  EVENT  MODEL       PROMPT  STATE      TEXT\n" +
			"S2  E1     extractive  v2      published  first line\n" +
			"S1  E1     extractive  v2      rejected   " + strings.Repeat("x", 60) + "\n"},
		{"result", publish.Result{SummaryID: "S2", PageID: "P1", Key: "changes/P1.html", Generation: 3}.WriteText,
			"published summary S2 on page P1 (changes/P1.html, generation 3)\n"},
		{"result published elsewhere", publish.Result{SummaryID: "S2", PageID: "P1", Key: "changes/P1.html", Generation: 4, Elsewhere: true}.WriteText,
			"summary S2 is published on page P1 (changes/P1.html, generation 4): another worker published it meanwhile\n"},
		{"sweep", publish.SweepReport{Pages: 5, Republished: 1, Withdrawn: 2, Orphans: 3, Awaiting: 4, Superseded: 5, Failed: 1,
			Errors: []string{"page P1: boom"}, Listings: publish.ListingReport{Written: 2, Unchanged: 1, Collected: 1}}.WriteText,
			"pages 5: 1 republished, 2 withdrawn, 3 orphan objects deleted, 4 awaiting a new summary, 5 overtaken, 1 failed\n" +
				"listings: 2 written, 1 unchanged, 1 source cards collected\n  page P1: boom\n"},
	}
	for _, tc := range tests {
		var b strings.Builder
		if err := tc.text(&b); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, b.String(), tc.want)
		}
	}
}

// What lifting a rejection did is said alike by the CLI and the console:
// current again, or still superseded when the evidence has moved on.
func TestUnrejectedLine(t *testing.T) {
	cur := publish.UnrejectedLine(publish.Summary{ID: "s1", EventID: "e1", Current: true})
	old := publish.UnrejectedLine(publish.Summary{ID: "s1", EventID: "e1"})
	if !strings.Contains(cur, "summary s1 of event e1: it is current again") || !strings.Contains(old, "stays superseded") {
		t.Fatalf("lines %q and %q", cur, old)
	}
}
