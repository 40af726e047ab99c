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
	parts := []string{strings.TrimSpace(p.Title), strings.TrimSpace(p.Summary), ref}
	var keep []string
	for _, s := range parts {
		if s != "" {
			keep = append(keep, s)
		}
	}
	return strings.Join(keep, "\n\n")
}
