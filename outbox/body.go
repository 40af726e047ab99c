package outbox

import (
	"strings"

	"github.com/tidemark/tidemark"
)

// PublicationBody is the body drafted for a published page: its title, its
// summary and a reference to the page (where it can be read, or else its
// id), separated by blank lines. The reference makes two pages with the
// same title and summary two different writes. It is a pure function of
// the publication.
func PublicationBody(p tidemark.Publication) string {
	ref := strings.TrimSpace(p.PageURL)
	if ref == "" && p.PageID != "" {
		ref = "page " + p.PageID
	}
	parts := []string{strings.TrimSpace(p.Title), summaryAfterTitle(p.Title, p.Summary), ref}
	var keep []string
	for _, s := range parts {
		if s != "" {
			keep = append(keep, s)
		}
	}
	return strings.Join(keep, "\n\n")
}

// summaryAfterTitle is the summary without its first line when that line
// is the title: an extractive summary begins with the change's headline,
// which a message already leads with.
func summaryAfterTitle(title, summary string) string {
	summary = strings.TrimSpace(summary)
	first, rest, _ := strings.Cut(summary, "\n")
	if t := strings.TrimSpace(title); t != "" && strings.TrimSpace(first) == t {
		return strings.TrimSpace(rest)
	}
	return summary
}
