package publish

import (
	"fmt"
	"io"
)

// Round is what one bounded round of summarizing and publishing did
// (pipeline.Pipeline.PublishRound).
type Round struct {
	Summarized SummarizeReport `json:"summarized"`
	Published  PublishReport   `json:"published"`
	// Index is where the wiki's index is; empty when nothing was
	// published.
	Index string `json:"index"`
	// More says the round was full (it considered as many events, or
	// published as many pages, as its limit allowed): more may be pending
	// for the next round.
	More bool `json:"more"`
}

// Totals adds up rounds (pipeline.Pipeline.PublishAll).
type Totals struct {
	Accepted  int `json:"accepted"`
	Unchanged int `json:"unchanged"`
	// Reinstated counts summaries made current again without asking the
	// summarizer: it made them before another superseded them.
	Reinstated int `json:"reinstated,omitempty"`
	// ClaimedElsewhere counts the events another worker was summarizing.
	ClaimedElsewhere int `json:"claimed_elsewhere,omitempty"`
	SummariesFailed  int `json:"summaries_failed"`
	Published        int `json:"published"`
	// PublishedElsewhere counts the pages the rounds set out to publish
	// that another publisher published with the same summary meanwhile:
	// not failures, and not counted in Published.
	PublishedElsewhere int `json:"published_elsewhere,omitempty"`
	PagesFailed        int `json:"pages_failed"`
	// PagesRepaired counts the failed publications (in PagesFailed) that
	// lost to a newer summary and repaired their page with it.
	PagesRepaired int `json:"pages_repaired,omitempty"`
	// FirstPageError is the first page's failure, for a message that says
	// what was left.
	FirstPageError string `json:"-"`
	// Restyled counts the pages republished because an earlier release
	// rendered them, or their source was renamed since (Store.Restyle).
	Restyled int `json:"restyled"`
	// Withdrawn counts the pages taken off the wiki: their summary was
	// rejected, or their source removed.
	Withdrawn int `json:"withdrawn"`
	// Restored counts the pages a sweep republished because the books
	// recorded them missing from the store; Missing, those still missing
	// after it (listed nowhere until a sweep republishes them).
	Restored int      `json:"restored,omitempty"`
	Missing  int      `json:"missing,omitempty"`
	Pages    int      `json:"pages"`
	Errors   []string `json:"errors,omitempty"`
	Index    string   `json:"index"`
	// More says the rounds stopped at their limit with work left.
	More bool `json:"more,omitempty"`
}

// WriteText writes the summaries and pages the round accounted for.
func (r Round) WriteText(w io.Writer) error { return r.Totals().WriteText(w) }

// WriteText writes what was summarized and published, the errors of what
// failed, and where the wiki is.
func (t Totals) WriteText(w io.Writer) error {
	reinstated, elsewhere := "", ""
	if t.Reinstated > 0 {
		reinstated = fmt.Sprintf(", %d reinstated", t.Reinstated)
	}
	if t.ClaimedElsewhere > 0 {
		elsewhere = fmt.Sprintf(" (%d being summarized by another worker)", t.ClaimedElsewhere)
	}
	fmt.Fprintf(w, "summaries: %d accepted%s, %d unchanged, %d failed%s\n", t.Accepted, reinstated, t.Unchanged, t.SummariesFailed, elsewhere)
	fmt.Fprintf(w, "pages:     %d published now%s%s, %d failed, %d in all\n", t.Published, t.RestyledNote(), t.ElsewhereNote(), t.PagesFailed, t.Pages)
	if t.Withdrawn > 0 {
		fmt.Fprintf(w, "withdrawn: %d pages taken off the wiki (rejected summaries, removed sources)\n", t.Withdrawn)
	}
	if t.Restored > 0 || t.Missing > 0 {
		fmt.Fprintf(w, "store:     %d pages missing from the object store republished", t.Restored)
		if t.Missing > 0 {
			fmt.Fprintf(w, ", %d still missing (listed nowhere; `tidemark publish sweep` tries again)", t.Missing)
		}
		fmt.Fprintln(w)
	}
	for _, e := range t.Errors {
		fmt.Fprintf(w, "  %s\n", e)
	}
	_, err := fmt.Fprintf(w, "wiki:      %s\n", t.Index)
	return err
}

// RestyledNote says how many pages the rounds republished in this
// release's style, after what they published: "" when none.
func (t Totals) RestyledNote() string {
	if t.Restyled == 0 {
		return ""
	}
	return fmt.Sprintf(" (and %d republished in this release's style)", t.Restyled)
}

// ElsewhereNote says how many pages the rounds found published by another
// publisher with the summary they set out to publish: "" when none.
func (t Totals) ElsewhereNote() string {
	if t.PublishedElsewhere == 0 {
		return ""
	}
	return fmt.Sprintf(" (and %d published meanwhile by another worker)", t.PublishedElsewhere)
}

// Totals are one round's counts as rounds add them up.
func (r Round) Totals() Totals {
	var t Totals
	t.Add(r)
	return t
}

// Add counts a round in t: at most 20 errors are kept.
func (t *Totals) Add(r Round) {
	s, pr := r.Summarized, r.Published
	t.Accepted += s.Accepted
	t.Unchanged += s.Unchanged
	t.Reinstated += s.Reinstated
	t.ClaimedElsewhere += s.ClaimedElsewhere
	t.SummariesFailed += s.Failed
	t.Published += pr.Published
	t.PublishedElsewhere += pr.PublishedElsewhere
	t.PagesFailed += pr.Failed
	t.PagesRepaired += pr.Repaired
	if t.FirstPageError == "" && len(pr.Errors) > 0 {
		t.FirstPageError = pr.Errors[0]
	}
	t.Restyled += pr.Restyled
	t.Withdrawn += pr.Withdrawn
	t.Pages = max(t.Pages, pr.Pages)
	if r.Index != "" {
		t.Index = r.Index
	}
	for _, e := range append(s.Errors, pr.Errors...) {
		if len(t.Errors) < 20 {
			t.Errors = append(t.Errors, e)
		}
	}
}
