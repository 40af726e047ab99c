package outbox

import (
	"strings"

	"github.com/tidemark/tidemark/outbox/provider"
)

// MatchSHA256 is what a lane of the provider kind tells two bodies apart
// by: the SHA-256 of the body as its listing gives it back. It is the
// body's own SHA-256 where the provider returns a write as sent; where it
// does not, the same fingerprint the provider joins its listing on
// (provider.Fingerprinter), so two bodies that one remote write could
// match are one identity when drafted, not a join key that is not unique
// later. The normalisations are the providers' own, written here so the
// outbox's rules import no provider; a test in outbox/providers holds
// them equal.
func MatchSHA256(kind string, body []byte) string {
	s := string(body)
	switch kind {
	case "slack":
		// Slack escapes & < > in the text it returns; white space collapsed.
		s = strings.Join(strings.Fields(strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(s)), " ")
	case "mastodon":
		// Mastodon returns HTML: its visible words.
		s = strings.Join(strings.Fields(s), " ")
	case "discord":
		// Discord trims a message's content.
		s = strings.TrimSpace(s)
	case "email":
		// A mail's text comes back with CRLF and a trailing line break.
		s = strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	default:
		return BodySHA256(body)
	}
	return provider.BodySHA256([]byte(s))
}
