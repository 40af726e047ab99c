package publish

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark/internal/fieldtext"
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
	// Elsewhere are those events (the first 20): whose claim each was,
	// and until when it held.
	Elsewhere []Elsewhere `json:"elsewhere,omitempty"`
	// Held counts the events the rounds held (each also failed);
	// Holding are the events held now, by these rounds or earlier ones
	// (the first MaxHolding): not summarized until their holds end.
	Held            int    `json:"held,omitempty"`
	Holding         []Held `json:"holding,omitempty"`
	SummariesFailed int    `json:"summaries_failed"`
	Published       int    `json:"published"`
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
	for _, c := range t.claimants() {
		fmt.Fprintf(w, "  being summarized by %s until %s: %s\n", c.holder, fieldtext.Day(c.until), events(c.events))
	}
	if len(t.Holding) > 0 {
		fmt.Fprintf(w, "  held (the summarizer keeps refusing them): %s, the first until %s\n",
			events(len(t.Holding)), fieldtext.Day(t.Holding[0].Until))
	}
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

// Undone says what the rounds left undone, one part each, or nothing when
// they did all they set out to do: the events not summarized and why (the
// summarizer failed them, they are held, another worker holds their claim:
// whose, until when) and the pages not published. Counts are as reported,
// so an event that failed in one round and was held is in both.
func (t Totals) Undone() []string {
	var parts []string
	if n := t.SummariesFailed - t.Held; n > 0 {
		parts = append(parts, fmt.Sprintf("%s not summarized: the summarizer failed %s", events(n), them(n)))
	}
	switch first := ""; len(t.Holding) {
	case 0:
	case 1:
		first = fieldtext.Day(t.Holding[0].Until)
		parts = append(parts, fmt.Sprintf("1 event held until %s: the summarizer keeps refusing it (it is asked again when its hold ends)", first))
	default:
		first = fieldtext.Day(t.Holding[0].Until)
		parts = append(parts, fmt.Sprintf("%s held, the first until %s: the summarizer keeps refusing them (each is asked again when its hold ends)",
			events(len(t.Holding)), first))
	}
	if t.ClaimedElsewhere > 0 {
		var by []string
		for _, c := range t.claimants() {
			by = append(by, fmt.Sprintf("%s until %s", c.holder, fieldtext.Day(c.until)))
		}
		parts = append(parts, fmt.Sprintf("%s not summarized: another worker was summarizing %s (%s); it publishes %s, or a later pass does once its claims end",
			events(t.ClaimedElsewhere), them(t.ClaimedElsewhere), strings.Join(by, ", "), them(t.ClaimedElsewhere)))
	}
	if n := t.PagesFailed - t.PagesRepaired; n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s not published (the first failure: %s)", n, plural(n, "page", "pages"), t.FirstPageError))
	}
	if n := t.PagesRepaired; n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s lost to a newer summary (the pages were repaired and show it)",
			n, plural(n, "publication", "publications")))
	}
	return parts
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// claimant is a worker whose claims the rounds passed over: how many
// events, and until when the last of its claims holds.
type claimant struct {
	holder string
	until  time.Time
	events int
}

// claimants groups Elsewhere by holder, in the order first met.
func (t Totals) claimants() []claimant {
	var out []claimant
	for _, e := range t.Elsewhere {
		i := slices.IndexFunc(out, func(c claimant) bool { return c.holder == e.Holder })
		if i < 0 {
			out = append(out, claimant{holder: e.Holder})
			i = len(out) - 1
		}
		out[i].events++
		if e.Until.After(out[i].until) {
			out[i].until = e.Until
		}
	}
	return out
}

// them is the pronoun of n things: "it" for one.
func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// events is n events, in words: "1 event", "2 events".
func events(n int) string {
	if n == 1 {
		return "1 event"
	}
	return fmt.Sprintf("%d events", n)
}

// Add counts a round in t: at most 20 errors are kept.
func (t *Totals) Add(r Round) {
	s, pr := r.Summarized, r.Published
	t.Accepted += s.Accepted
	t.Unchanged += s.Unchanged
	t.Reinstated += s.Reinstated
	t.ClaimedElsewhere += s.ClaimedElsewhere
	for _, e := range s.Elsewhere {
		if len(t.Elsewhere) < maxElsewhere {
			t.Elsewhere = append(t.Elsewhere, e)
		}
	}
	t.Held += len(s.Held)
	for _, h := range append(slices.Clone(s.Holding), s.Held...) {
		i := slices.IndexFunc(t.Holding, func(o Held) bool { return o.EventID == h.EventID })
		switch {
		case i >= 0:
			t.Holding[i] = h // the latest word on it
		case len(t.Holding) < MaxHolding:
			t.Holding = append(t.Holding, h)
		}
	}
	slices.SortStableFunc(t.Holding, func(a, b Held) int { return a.Until.Compare(b.Until) })
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
