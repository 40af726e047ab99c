package publish

import (
	"fmt"
	"io"
	"strings"

	"github.com/tidemark/tidemark/internal/fieldtext"
)

// The text forms of publication's results, for people at a terminal (the
// CLI prints them; --json prints the same values as JSON).

// SummaryList is a listing of summaries.
type SummaryList []Summary

// WriteText writes a table of the summaries with the first line of each
// one's text.
func (l SummaryList) WriteText(w io.Writer) error {
	lines := []string{"ID\tEVENT\tMODEL\tPROMPT\tSTATE\tTEXT"}
	for _, s := range l {
		text, _, _ := strings.Cut(s.Text, "\n")
		lines = append(lines, fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", s.ID, s.EventID, s.Model, s.PromptVersion, s.State(), fieldtext.Cut(text, 60)))
	}
	return fieldtext.Table(w, lines...)
}

// WriteText says which page the summary was published on.
func (r Result) WriteText(w io.Writer) error {
	if r.Elsewhere {
		_, err := fmt.Fprintf(w, "summary %s is published on page %s (%s, generation %d): another worker published it meanwhile\n",
			r.SummaryID, r.PageID, r.Key, r.Generation)
		return err
	}
	_, err := fmt.Fprintf(w, "published summary %s on page %s (%s, generation %d)\n", r.SummaryID, r.PageID, r.Key, r.Generation)
	return err
}

// WriteText writes the sweep's counts and the errors of the pages that
// failed.
func (rep SweepReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "pages %d: %d republished, %d withdrawn, %d orphan objects deleted, %d awaiting a new summary, %d overtaken, %d failed\n",
		rep.Pages, rep.Republished, rep.Withdrawn, rep.Orphans, rep.Awaiting, rep.Superseded, rep.Failed)
	if rep.Restyled > 0 {
		fmt.Fprintf(w, "(%d of the republished pages were rendered by an earlier release, or before their source was renamed)\n", rep.Restyled)
	}
	switch {
	case rep.Missing == 1:
		fmt.Fprintln(w, "1 published page is missing from the object store and listed nowhere; the next sweep tries again")
	case rep.Missing > 1:
		fmt.Fprintf(w, "%d published pages are missing from the object store and listed nowhere; the next sweep tries again\n", rep.Missing)
	}
	fmt.Fprintf(w, "listings: %d written, %d unchanged, %d source cards collected\n", rep.Listings.Written, rep.Listings.Unchanged, rep.Listings.Collected)
	for _, e := range rep.Errors {
		if _, err := fmt.Fprintf(w, "  %s\n", e); err != nil {
			return err
		}
	}
	return nil
}

// UnrejectedLine says what lifting a summary's rejection did: what `publish
// unreject` prints and the console says after its Unreject.
func UnrejectedLine(s Summary) string {
	if !s.Current {
		return fmt.Sprintf("lifted the rejection of summary %s of event %s; it is of evidence the event no longer has, so it stays superseded", s.ID, s.EventID)
	}
	return fmt.Sprintf("lifted the rejection of summary %s of event %s: it is current again, and the next publishing round publishes its page", s.ID, s.EventID)
}
