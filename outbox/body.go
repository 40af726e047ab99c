package outbox

import (
	"strings"

	"github.com/tidemark/tidemark"
)

// PublicationBody is the body drafted for a published page: its title, its
// summary and, when known, where it can be read, separated by blank lines.
// It is a pure function of the publication, so publishing the same page
// with the same summary again drafts the same identity (and nothing new).
func PublicationBody(p tidemark.Publication) string {
	parts := []string{strings.TrimSpace(p.Title), strings.TrimSpace(p.Summary), strings.TrimSpace(p.PageURL)}
	var keep []string
	for _, s := range parts {
		if s != "" {
			keep = append(keep, s)
		}
	}
	return strings.Join(keep, "\n\n")
}
