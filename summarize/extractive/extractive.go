// Package extractive is the default summarizer: it needs no network, is
// deterministic (the same evidence always yields the same text), and writes
// the readable form of the change (package readable) as plain text: for a
// feed entry its title, author, date, text and link; for a page the
// headline and the lines added and removed; for JSON the changed values,
// old → new; for a file its change and diff; for a commit the subject, the
// first paragraph of the body, the diffstat with the most-changed files,
// the author and the upstream commit's link.
package extractive

import (
	"context"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/summarize"
	"github.com/tidemark/tidemark/summarize/readable"
)

const (
	// Model is the name extractive drafts carry.
	Model = "extractive"
	// PromptVersion changes whenever the extraction rules change, so
	// summaries of the old rules are superseded, not conflicted.
	// v2: readable content per kind (package readable), revision diffs.
	PromptVersion = "extractive-v2"
)

// Summarizer is the extractive summarizer.
type Summarizer struct{}

var _ summarize.Summarizer = Summarizer{}

// Identity implements summarize.Summarizer.
func (Summarizer) Identity() (string, string) { return Model, PromptVersion }

// Summarize implements summarize.Summarizer.
func (Summarizer) Summarize(ctx context.Context, in summarize.Input) (summarize.Draft, error) {
	d := readable.Build(readable.Input{Kind: in.Kind, Title: in.Event.Title, Location: in.Location,
		Evidence: in.Evidence, Previous: in.Previous})
	text := d.Text()
	if text == "" {
		return summarize.Draft{}, tidemark.Invalidf("evidence", in.Event.ID, "has nothing to summarize")
	}
	return summarize.Draft{Text: truncate(text, summarize.MaxTextBytes), Model: Model, PromptVersion: PromptVersion}, nil
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return summarize.Cut(s, n-len("…")) + "…"
}
